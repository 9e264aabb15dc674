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
//! - `Fma256` (`bf16_dot_avx2.rs`): `Fma`'s widened values and FMAs in AVX2's 256-bit
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

use std::arch::x86_64::*;

use super::bf16_dot_avx2::Fma256;
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
/// in a build with the feature `avx512` (`isa.rs`), or else AVX2 and FMA (`bf16_dot_avx2.rs`).
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

/// `vdpbf16ps` against x's bf16 pairs.
struct Dot;
/// f32 FMAs against the panel widened in registers and x's rounded f32 values.
struct Fma;

/// `$rows_of::<R>(...)` for the run-time row count `$rows` (1-8): one instance per count, so that
/// the accumulators stay in registers.
macro_rules! by_rows {
    ($rows_of:ident, $rows:expr, $($arg:expr),*) => {
        match $rows {
            1 => $rows_of::<1>($($arg),*),
            2 => $rows_of::<2>($($arg),*),
            3 => $rows_of::<3>($($arg),*),
            4 => $rows_of::<4>($($arg),*),
            5 => $rows_of::<5>($($arg),*),
            6 => $rows_of::<6>($($arg),*),
            7 => $rows_of::<7>($($arg),*),
            8 => $rows_of::<8>($($arg),*),
            r => unreachable!("{r} rows in a group of {BLOCK}"),
        }
    };
}

impl Inner for Dot {
    const ROWS: usize = BLOCK;
    type Rows = BfRows;
    #[target_feature(enable = "avx512f,avx512bf16")]
    unsafe fn panel_rows(
        panels: (&[u16], &[u16]),
        x: (&[u32], usize),
        kn: usize,
        rows: usize,
        add: bool,
        acc: &mut [[f32; 32]],
    ) {
        by_rows!(dot_rows, rows, panels, x, kn, add, acc)
    }
}

impl Inner for Fma {
    const ROWS: usize = BLOCK;
    type Rows = RoundedRows;
    #[target_feature(enable = "avx512f")]
    unsafe fn panel_rows(
        panels: (&[u16], &[u16]),
        x: (&[[f32; 2]], usize),
        kn: usize,
        rows: usize,
        add: bool,
        acc: &mut [[f32; 32]],
    ) {
        by_rows!(fma_rows, rows, panels, x, kn, add, acc)
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

/// 32 bf16 values in a register, as `vdpbf16ps` takes them.
#[inline(always)]
fn bh(v: __m512i) -> __m512bh {
    // SAFETY: both are 512 bits of plain data.
    unsafe { std::mem::transmute::<__m512i, __m512bh>(v) }
}

/// The accumulators of both loops' R rows, columns 0-15 (lo) and 16-31 (hi): acc's values if
/// `add`, else zeros.
#[target_feature(enable = "avx512f")]
#[inline]
fn start_rows<const R: usize>(acc: &[[f32; 32]], add: bool) -> ([__m512; R], [__m512; R]) {
    let (mut lo, mut hi) = ([_mm512_setzero_ps(); R], [_mm512_setzero_ps(); R]);
    if add {
        for r in 0..R {
            // SAFETY: acc[r] holds 32 f32.
            unsafe {
                lo[r] = _mm512_loadu_ps(acc[r].as_ptr());
                hi[r] = _mm512_loadu_ps(acc[r][16..].as_ptr());
            }
        }
    }
    (lo, hi)
}

/// Stores the R rows' accumulators (`start_rows`) back into acc.
#[target_feature(enable = "avx512f")]
#[inline]
fn store_rows<const R: usize>(acc: &mut [[f32; 32]], lo: &[__m512; R], hi: &[__m512; R]) {
    for r in 0..R {
        // SAFETY: acc[r] holds 32 f32.
        unsafe {
            _mm512_storeu_ps(acc[r].as_mut_ptr(), lo[r]);
            _mm512_storeu_ps(acc[r][16..].as_mut_ptr(), hi[r]);
        }
    }
}

/// `Dot::panel_rows` for R rows.
#[target_feature(enable = "avx512f,avx512bf16")]
#[inline]
fn dot_rows<const R: usize>(
    (p0, p1): (&[u16], &[u16]),
    (x, stride): (&[u32], usize),
    kn: usize,
    add: bool,
    acc: &mut [[f32; 32]],
) {
    assert!(p0.len() >= kn * 32 && p1.len() >= kn * 32);
    assert!(R <= acc.len() && (kn == 0 || x.len() >= (R - 1) * stride + kn));
    let (mut lo, mut hi) = start_rows::<R>(acc, add);
    let (w0, w1, x) = (p0.as_ptr(), p1.as_ptr(), x.as_ptr());
    for i in 0..kn {
        // SAFETY: pair row i of each panel is 32 values inside it, and pair i of row r lies at
        // r * stride + i inside x (both asserted above).
        unsafe {
            let (b0, b1) = (
                bh(_mm512_loadu_si512(w0.add(i * 32).cast())),
                bh(_mm512_loadu_si512(w1.add(i * 32).cast())),
            );
            for r in 0..R {
                let a = bh(_mm512_set1_epi32(*x.add(r * stride + i) as i32));
                lo[r] = _mm512_dpbf16_ps(lo[r], a, b0);
                hi[r] = _mm512_dpbf16_ps(hi[r], a, b1);
            }
        }
    }
    store_rows(acc, &lo, &hi);
}

/// How many pair rows (64-byte lines) ahead `fma_rows` prefetches each panel into L1: decoding
/// streams the packs from memory, and the hardware's prefetchers alone left the loop short of
/// one row's bandwidth at 8 rows. 32 ahead made decoding faster at batches 1 to 16 and left the
/// update unchanged (results/perf/step.md, "bf16 products by f32 FMAs").
pub(crate) const AHEAD: usize = 32;

/// `Fma::panel_rows` for R rows: the sums of `dot_rows`, each pair row of a panel widened to f32
/// once (even values shifted up, odd ones masked) for all R rows.
#[target_feature(enable = "avx512f")]
#[inline]
fn fma_rows<const R: usize>(
    (p0, p1): (&[u16], &[u16]),
    (x, stride): (&[[f32; 2]], usize),
    kn: usize,
    add: bool,
    acc: &mut [[f32; 32]],
) {
    assert!(p0.len() >= kn * 32 && p1.len() >= kn * 32);
    assert!(R <= acc.len() && (kn == 0 || x.len() >= (R - 1) * stride + kn));
    let (mut lo, mut hi) = start_rows::<R>(acc, add);
    let high = _mm512_set1_epi32(0xffff_0000_u32 as i32);
    // A pair row's 16 (even, odd) bf16 pairs as two vectors of f32: evens, odds.
    let widen = |v: __m512i| {
        (
            _mm512_castsi512_ps(_mm512_slli_epi32::<16>(v)),
            _mm512_castsi512_ps(_mm512_and_si512(v, high)),
        )
    };
    let (w0, w1, x) = (p0.as_ptr(), p1.as_ptr(), x.as_ptr());
    for i in 0..kn {
        // SAFETY: pair row i of each panel is 32 values inside it, and pair i of row r lies at
        // r * stride + i inside x (both asserted above).
        unsafe {
            // A prefetch reads nothing and never faults, so its address may lie past the panel.
            _mm_prefetch::<_MM_HINT_T0>(w0.wrapping_add((i + AHEAD) * 32) as *const i8);
            _mm_prefetch::<_MM_HINT_T0>(w1.wrapping_add((i + AHEAD) * 32) as *const i8);
            let (e0, o0) = widen(_mm512_loadu_si512(w0.add(i * 32).cast()));
            let (e1, o1) = widen(_mm512_loadu_si512(w1.add(i * 32).cast()));
            for r in 0..R {
                let [xe, xo] = *x.add(r * stride + i);
                let (xe, xo) = (_mm512_set1_ps(xe), _mm512_set1_ps(xo));
                // Odd, then even: `vdpbf16ps`'s order.
                lo[r] = _mm512_fmadd_ps(e0, xe, _mm512_fmadd_ps(o0, xo, lo[r]));
                hi[r] = _mm512_fmadd_ps(e1, xe, _mm512_fmadd_ps(o1, xo, hi[r]));
            }
        }
    }
    store_rows(acc, &lo, &hi);
}

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
