//! Which vector kernels run: AVX-512's where the CPU has AVX-512 and the build has the feature
//! `avx512` (a default), else AVX2's. The feature also turns on gemm's AVX-512 kernels
//! (Cargo.toml), so a build without it (`--no-default-features`) runs every product and row loop
//! as a CPU with AVX2 only would: how `ISA=avx2 benches/compare_torch/run.sh` measures such CPUs
//! (AMD Zen 2 and 3, Intel before Skylake-SP) on an AVX-512 machine.

/// Whether the project's AVX-512 kernels run here (not with `EMPATHY_ENGINE_KERNELS=avx2` or
/// `portable`: `choice.rs`). std caches the CPUID answer.
pub(crate) fn avx512() -> bool {
    cfg!(feature = "avx512")
        && super::choice::choice() == super::choice::KernelChoice::All
        && std::arch::is_x86_feature_detected!("avx512f")
}

/// Whether this CPU runs the project's AVX2 kernels (AVX2 and FMA: Intel from Haswell, AMD from
/// Zen 1; not with `EMPATHY_ENGINE_KERNELS=portable`). std caches the CPUID answers.
pub(crate) fn avx2() -> bool {
    super::choice::choice() != super::choice::KernelChoice::Portable
        && std::arch::is_x86_feature_detected!("avx2")
        && std::arch::is_x86_feature_detected!("fma")
}
