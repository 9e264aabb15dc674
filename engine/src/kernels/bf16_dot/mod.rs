//! bf16 products with a weight packed once (`bf16_pack::PackedB`) by one of three inner loops
//! that compute the same sums. A packed panel row holds, for 16 columns, the pair (b[2 kp][j],
//! b[2 kp + 1][j]); a row of x meets it as its pair (x[2 kp], x[2 kp + 1]):
//! - `Dot`: AVX512-BF16's `vdpbf16ps` (Intel SDM vol. 2, "VDPBF16PS": each f32 lane adds the
//!   product of the odd values, then that of the even ones) of one 64-byte load of the panel row
//!   against the row's pair broadcast to every lane: 32 products into 16 sums;
//! - `Fma`: the panel row widened to f32 in registers (a shift for the even values, a mask for
//!   the odd ones) and two f32 FMAs per row, odd then even, against the row's rounded values
//!   broadcast from memory. A product of two bf16 values is exact in f32, so an FMA adds it as
//!   `vdpbf16ps` does and the two loops give the same bits (tested), except that `vdpbf16ps`
//!   reads denormals as zero and flushes denormal sums;
//! - `Fma256` (`avx2.rs`): `Fma`'s widened values and FMAs in AVX2's 256-bit
//!   registers, the same bits (tested).
//!
//! A CPU runs one of them for every product: `Dot` on AMD (Zen 4 and 5, where one `vdpbf16ps`
//! does the multiply-adds of two f32 FMAs), `Fma` on Intel without AMX, where `vdpbf16ps` runs
//! below two FMA ports' rate and the FMA loop trains faster (results/perf/step.md, "bf16
//! products without AMX" and "bf16 products by f32 FMAs"), and on CPUs with AVX-512 but not
//! AVX512-BF16, and `Fma256` on CPUs with AVX2 and FMA only (AMD Zen 2 and 3, Intel before
//! Skylake-SP; or a build without the feature `avx512`). At a decoding step's few rows each
//! streams the half-size weight, half the bytes of f32's.
//!
//! Above 32 rows the product runs passes of `KC` values of k over `MC` rows; in a pass, each group
//! of rows (`Inner::ROWS`: 8 with AVX-512, 10 with AVX2) goes through the two panels of every
//! 32-column block of the task. A pass starts from the sums the pass before stored (f32, loaded
//! back exactly), so each result is the same sequence of operations in the same order whatever m,
//! the passes and the threads: a row's values do not depend on the other rows of its product.

mod avx2;
mod avx512;

use std::arch::x86_64::__cpuid;

use avx2::Fma256;
use avx512::{Dot, Fma};

use super::bf16_pack::{BfRows, PackedB, RoundedRows};
use super::view::{par_runs, Shared, View};

/// Rows of x one pass of AVX-512's loops over two panels takes (16 accumulators of the 32
/// registers).
const BLOCK: usize = 8;
/// The most rows of any loop's group (`Inner::ROWS`).
const MAX_ROWS: usize = 12;
/// Values of k per pass: the two panels' 512 values are 32 KB, which stay in L1 or L2 while the
/// pass's row groups go by.
const KC: usize = 512;
/// Rows per pass: their 512 values of k are 256 KB of bf16 (in L2) for the task's every block.
const MC: usize = 256;
/// Rows up to which (a decoding step's) the product takes one pass over all of k: the passes keep
/// many rows' values in cache, and at a few rows would only cut the weight's stream into pieces
/// (decoding at batch 1 ran slower with them: results/perf/step.md, "bf16 products without AMX").
const FEW: usize = 32;

/// Whether this CPU runs `product`: AVX-512 (Intel Skylake-SP and later, AMD Zen 4 and later)
/// in a build with the feature `avx512` (`isa.rs`), or else AVX2 and FMA (`avx2.rs`).
pub(crate) fn available() -> bool {
    here().is_some()
}

/// The inner loops, by name.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Loop {
    Dot,
    Fma,
    Fma256,
}

/// The loop this CPU's products run (see the module's doc): `Dot` where it has AVX512-BF16 and is
/// not Intel's, `Fma` with AVX-512, `Fma256` with AVX2 and FMA only. Asked once: CPUID in a
/// virtual machine exits to the hypervisor, which, asked per product, slowed decoding at batch 1
/// markedly (results/perf/step.md, "bf16 products by f32 FMAs").
fn here() -> Option<Loop> {
    static HERE: std::sync::OnceLock<Option<Loop>> = std::sync::OnceLock::new();
    *HERE.get_or_init(|| {
        let dot = is_x86_feature_detected!("avx512bf16") && !intel();
        match (super::isa::avx512(), super::isa::avx2()) {
            (true, _) if dot => Some(Loop::Dot),
            (true, _) => Some(Loop::Fma),
            (false, true) => Some(Loop::Fma256),
            (false, false) => None,
        }
    })
}

/// Whether CPUID's vendor string is "GenuineIntel".
fn intel() -> bool {
    let id = __cpuid(0);
    (id.ebx, id.edx, id.ecx) == (0x756e_6547, 0x4965_6e69, 0x6c65_746e)
}

/// x b as a new row-major [m, n] matrix for x [m, k] (any strides), rounded to bf16 here; b's
/// 32-column blocks split between candle's CPU threads. The caller checks `available()`.
pub(crate) fn product(x: View<f32>, m: usize, b: &PackedB) -> Vec<f32> {
    match here() {
        Some(Loop::Dot) => product_by::<Dot>(x, m, b),
        Some(Loop::Fma) => product_by::<Fma>(x, m, b),
        Some(Loop::Fma256) => product_by::<Fma256>(x, m, b),
        None => panic!("bf16_dot::product on a CPU without AVX2 and FMA"),
    }
}

/// One of the inner loops and the rounded rows it reads.
pub(crate) trait Inner {
    /// Rows of x a group takes through a 32-column block (at most `MAX_ROWS`).
    const ROWS: usize;
    /// x's rows rounded, as the loop reads them.
    type Rows: PairRows;
    /// acc[r] (+)= the 32 columns of two panels' first `kn` pair rows against `rows` rows of
    /// pairs (row r's at x[r * stride ..]); from acc's values if `add`, else from zero.
    ///
    /// # Safety
    /// The CPU runs the loop's instructions (`product_by`'s callers check).
    unsafe fn panel_rows(
        panels: (&[u16], &[u16]),
        x: (&[<Self::Rows as PairRows>::Pair], usize),
        kn: usize,
        rows: usize,
        add: bool,
        acc: &mut [[f32; 32]],
    );
}

/// x [m, k] rounded to bf16, k padded to k_pad, as (even, odd) pairs of k row after row.
pub(crate) trait PairRows {
    /// One pair of x's rounded values, as a loop reads it.
    type Pair: Sync;
    fn round(x: View<f32>, m: usize, k: usize) -> Self;
    fn pairs(&self) -> &[Self::Pair];
}

/// `Dot`'s: bf16 pairs.
impl PairRows for BfRows {
    type Pair = u32;
    fn round(x: View<f32>, m: usize, k: usize) -> Self {
        BfRows::new(x, m, k, 1)
    }
    fn pairs(&self) -> &[u32] {
        BfRows::pairs(self)
    }
}

/// The FMA loops': the rounded values as f32, which they broadcast from memory.
impl PairRows for RoundedRows {
    type Pair = [f32; 2];
    fn round(x: View<f32>, m: usize, k: usize) -> Self {
        RoundedRows::new(x, m, k)
    }
    fn pairs(&self) -> &[[f32; 2]] {
        RoundedRows::pairs(self)
    }
}

/// `product` by the inner loop I. The caller checks that the CPU runs I's instructions.
fn product_by<I: Inner>(x: View<f32>, m: usize, b: &PackedB) -> Vec<f32> {
    let (k, n) = b.dims();
    let mut out = Vec::with_capacity(m * n);
    if m == 0 || n == 0 {
        return out;
    }
    let rows = I::Rows::round(x, m, k);
    let (pairs, kp) = (rows.pairs(), b.k_pad() / 2);
    // Pairs per pass; k = 0 still takes one pass, which writes the zeros.
    let kc = match m > FEW {
        true => KC / 2,
        false => kp.max(1),
    };
    // The tasks write disjoint columns of out (their blocks'), which outlives the parallel loop.
    let dst = Shared(out.as_mut_ptr());
    par_runs(n.div_ceil(32), |run| {
        let dst = &dst;
        for k0 in (0..kp.max(1)).step_by(kc) {
            let kn = (kp - k0).min(kc);
            for m0 in (0..m).step_by(MC) {
                for c in run.clone() {
                    let cols = 32.min(n - c * 32);
                    let (p0, p1) = b.panels(c);
                    let panels = (&p0[k0 * 32..], &p1[k0 * 32..]);
                    let end = (m0 + MC).min(m);
                    for r0 in (m0..end).step_by(I::ROWS) {
                        let rows = I::ROWS.min(end - r0);
                        let mut acc = [[0f32; 32]; MAX_ROWS];
                        // SAFETY (both copies): rows r0 .. r0 + rows, columns c * 32 .. + cols
                        // lie inside out's m x n values, only this task touches these columns,
                        // and the pass before wrote them.
                        let at = |r: usize| unsafe { dst.0.add((r0 + r) * n + c * 32) };
                        if k0 > 0 {
                            for (r, a) in acc.iter_mut().enumerate().take(rows) {
                                unsafe {
                                    std::ptr::copy_nonoverlapping(at(r), a.as_mut_ptr(), cols)
                                };
                            }
                        }
                        let x = &pairs[r0 * kp + k0..];
                        // SAFETY: the caller checked that the CPU runs I's loop.
                        unsafe { I::panel_rows(panels, (x, kp), kn, rows, k0 > 0, &mut acc) };
                        for (r, a) in acc.iter().enumerate().take(rows) {
                            unsafe { std::ptr::copy_nonoverlapping(a.as_ptr(), at(r), cols) };
                        }
                    }
                }
            }
        }
    });
    // SAFETY: the first pass wrote every element.
    unsafe { out.set_len(m * n) };
    out
}

/// How many pair rows (64-byte lines) ahead `fma_rows` prefetches each panel into L1: decoding
/// streams the packs from memory, and the hardware's prefetchers alone left the loop short of
/// one row's bandwidth at 8 rows. 32 ahead made decoding faster at batches 1 to 16 and left the
/// update unchanged (results/perf/step.md, "bf16 products by f32 FMAs").
pub(crate) const AHEAD: usize = 32;

#[cfg(test)]
mod tests {
    use super::super::bf16_pack::tests::{check_with, rows_independent_with, Product};
    use super::*;

    /// The inner loops this CPU runs, by name.
    fn loops() -> Vec<(&'static str, Product)> {
        let avx512 = super::super::isa::avx512();
        let all: [(&str, Product, bool); 3] = [
            ("Fma", product_by::<Fma>, avx512),
            (
                "Dot",
                product_by::<Dot>,
                avx512 && is_x86_feature_detected!("avx512bf16"),
            ),
            ("Fma256", product_by::<Fma256>, super::super::isa::avx2()),
        ];
        let loops: Vec<_> = all.iter().filter(|l| l.2).map(|l| (l.0, l.1)).collect();
        if loops.len() < all.len() {
            eprintln!(
                "this CPU and build run {} of bf16_dot's {} inner loops",
                loops.len(),
                all.len()
            );
        }
        loops
    }

    #[test]
    fn products_equal_f64_sums_of_the_rounded_values() {
        for (name, product) in loops() {
            eprintln!("{name}");
            check_with(product, (1, 64, 32), false);
            check_with(product, (8, 576, 48), false); // a decoding step's 8 rows
            check_with(product, (17, 50, 40), false); // two groups of rows, k, columns past a panel
            check_with(product, (32, 40, 24), true); // x read transposed
            check_with(product, (3, 0, 20), false); // k = 0: zeros
            check_with(product, (300, 1100, 70), false); // three passes over k, two over rows
        }
    }

    /// Each row's values do not depend on the others in its product (a decoding step's rows are
    /// sampled alike whatever the batch; the scoring pass equals the training pass), also across
    /// passes over k and rows.
    #[test]
    fn a_row_of_a_product_equals_the_row_alone() {
        for (name, product) in loops() {
            eprintln!("{name}");
            rows_independent_with(
                product,
                (MC + 11, KC + 70, 40),
                &[0, 7, 8, 200, MC, MC + 10],
            );
        }
    }

    /// `intel()` reads CPUID's vendor as Linux does (/proc/cpuinfo's vendor_id).
    #[test]
    fn the_vendor_is_read_as_linux_reads_it() {
        let Ok(info) = std::fs::read_to_string("/proc/cpuinfo") else {
            return;
        };
        let vendor = info.lines().find_map(|l| l.strip_prefix("vendor_id"));
        let vendor = vendor.map(|v| v.trim_start_matches([' ', '\t', ':']));
        assert_eq!(intel(), vendor == Some("GenuineIntel"), "{vendor:?}");
    }

    /// The FMA loops add each product as `vdpbf16ps` does, odd then even: every loop gives the
    /// same bits, at few rows and across passes (values of every sign and scale, no denormals).
    #[test]
    fn every_loop_gives_the_same_bits() {
        if crate::kernels::choice::portable() {
            return;
        }
        let loops = loops();
        let val = |i: usize| {
            let h = (i as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 40;
            (h % 2001) as f32 / 1000.0 - 1.0 + (h % 7) as f32 * 1e-3
        };
        for (m, k, n) in [(1, 576, 64), (7, 1536, 48), (300, 1100, 70)] {
            let x: Vec<f32> = (0..m * k).map(|i| val(i) * 8.0).collect();
            let w: Vec<f32> = (0..k * n).map(|i| val(i + 99) / 16.0).collect();
            let b = PackedB::new(View::rows(&w, 0, n), k, n);
            let x = View::rows(&x, 0, k);
            let first = loops[0].1(x, m, &b);
            for (name, product) in &loops[1..] {
                let same = product(x, m, &b)
                    .iter()
                    .zip(&first)
                    .filter(|(a, b)| a.to_bits() == b.to_bits())
                    .count();
                assert_eq!(
                    same,
                    m * n,
                    "{name} against {} at ({m}, {k}, {n})",
                    loops[0].0
                );
            }
        }
    }
}
