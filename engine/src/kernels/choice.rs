//! Which of the CPU speed work a process runs, chosen at run time by `EMPATHY_ENGINE_KERNELS`,
//! so that one build can test every path a CPU or build may take:
//! - `all` (or unset): every kernel the build has and the CPU runs;
//! - `avx2`: the project's kernels as on a CPU with AVX2 and FMA only (no AVX-512, no AMX);
//! - `portable`: no CPU kernels at all; every op runs as its composition of candle ops, as in a
//!   build without the feature `cpu-kernels`.
//!
//! The builds without the features (`scripts/test-full.sh`) differ from these only in gemm's
//! own AVX-512 products, which a build's features choose and this switch does not.

use std::sync::OnceLock;

/// The variable read, once per process.
pub const VAR: &str = "EMPATHY_ENGINE_KERNELS";

/// The kernels a process runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KernelChoice {
    All,
    Avx2,
    Portable,
}

impl KernelChoice {
    /// Parses the variable's value; `None` for a value it does not know.
    pub fn parse(value: &str) -> Option<Self> {
        match value.trim() {
            "" | "all" => Some(KernelChoice::All),
            "avx2" => Some(KernelChoice::Avx2),
            "portable" => Some(KernelChoice::Portable),
            _ => None,
        }
    }
}

/// This process's choice. A value it does not know stops the process with a message naming the
/// variable and its values: silently running other kernels than asked would test the wrong path.
pub fn choice() -> KernelChoice {
    static CHOICE: OnceLock<KernelChoice> = OnceLock::new();
    *CHOICE.get_or_init(|| {
        let value = std::env::var(VAR).unwrap_or_default();
        KernelChoice::parse(&value).unwrap_or_else(|| {
            panic!(
                "{VAR}={value:?} is not a kernel choice: use all, avx2 or portable (or unset it)"
            )
        })
    })
}

/// Whether this process runs without the CPU kernels (`portable`): the tests of a kernel itself
/// return early then, as they are compiled out of a build without the feature `cpu-kernels`.
#[cfg(test)]
pub fn portable() -> bool {
    choice() == KernelChoice::Portable
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_three_choices_parse_and_others_do_not() {
        assert_eq!(KernelChoice::parse(""), Some(KernelChoice::All));
        assert_eq!(KernelChoice::parse("all"), Some(KernelChoice::All));
        assert_eq!(KernelChoice::parse(" avx2 "), Some(KernelChoice::Avx2));
        assert_eq!(
            KernelChoice::parse("portable"),
            Some(KernelChoice::Portable)
        );
        assert_eq!(KernelChoice::parse("AVX2"), None);
        assert_eq!(KernelChoice::parse("none"), None);
    }
}
