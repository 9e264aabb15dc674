//! bf16 products by AVX512-BF16's `vdpbf16ps` (Intel SDM vol. 2, "VDPBF16PS": each f32 lane adds
//! the products of one bf16 pair) with a weight packed once (`bf16_pack::PackedB`). A packed panel
//! row holds, for 16 columns, the pair (b[2 kp][j], b[2 kp + 1][j]); one 64-byte load of it against
//! a row's pair (x[2 kp], x[2 kp + 1]) broadcast to every lane adds 32 products into 16 results.
//!
//! It runs every product with a packed weight on a CPU with AVX512-BF16 but no AMX (AMD Zen 4 and
//! 5), where one `vdpbf16ps` does the multiply-adds of two f32 FMAs, and at a decoding step's few
//! rows the half-size weight halves the bytes streamed.
//!
//! Above 32 rows the product runs passes of `KC` values of k over `MC` rows; in a pass, each group
//! of 8 rows goes through the two panels of every 32-column block of the task. A pass starts from
//! the sums the pass before stored (f32, loaded back exactly), so each result is the same
//! sequence of operations in the same order whatever m, the passes and the threads: a row's values
//! do not depend on the other rows of its product.

use std::arch::x86_64::*;

use super::bf16_pack::{BfRows, PackedB};
use super::view::{par_runs, Shared, View};

/// Rows of x one pass over two panels takes (16 accumulators of the 32 registers).
const BLOCK: usize = 8;
/// Values of k per pass: the two panels' 512 values are 32 KB, which stay in L1 or L2 while the
/// pass's row groups go by.
const KC: usize = 512;
/// Rows per pass: their 512 values of k are 256 KB of bf16 (in L2) for the task's every block.
const MC: usize = 256;
/// Rows up to which (a decoding step's) the product takes one pass over all of k: the passes keep
/// many rows' values in cache, and at a few rows would only cut the weight's stream into pieces
/// (decoding at batch 1 ran ~5% slower with them).
const FEW: usize = 32;

/// Whether this CPU runs `product` (AVX512-BF16: Intel Cooper Lake and Sapphire Rapids on, AMD
/// Zen 4 on).
pub(crate) fn available() -> bool {
    is_x86_feature_detected!("avx512f") && is_x86_feature_detected!("avx512bf16")
}

/// x b as a new row-major [m, n] matrix for x [m, k] (any strides), rounded to bf16 here; b's
/// 32-column blocks split between candle's CPU threads. The caller checks `available()`.
pub(crate) fn product(x: View<f32>, m: usize, b: &PackedB) -> Vec<f32> {
    assert!(
        available(),
        "bf16_dot::product on a CPU without AVX512-BF16"
    );
    let (k, n) = b.dims();
    let mut out = Vec::with_capacity(m * n);
    if m == 0 || n == 0 {
        return out;
    }
    let rows = BfRows::new(x, m, k, 1);
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
                    for r0 in (m0..(m0 + MC).min(m)).step_by(BLOCK) {
                        let rows = BLOCK.min(m - r0);
                        let mut acc = [[0f32; 32]; BLOCK];
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
                        // SAFETY: available() holds (asserted above).
                        unsafe { panel_rows(panels, (x, kp), kn, rows, k0 > 0, &mut acc) };
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

/// acc[r] (+)= the 32 columns of two panels' first `kn` pair rows against `rows` rows of pairs
/// (row r's at x[r * stride ..]); from acc's values if `add`, else from zero. One instance per
/// row count, so that the accumulators stay in registers.
#[target_feature(enable = "avx512f,avx512bf16")]
fn panel_rows(
    panels: (&[u16], &[u16]),
    x: (&[u32], usize),
    kn: usize,
    rows: usize,
    add: bool,
    acc: &mut [[f32; 32]; BLOCK],
) {
    match rows {
        1 => rows_of::<1>(panels, x, kn, add, acc),
        2 => rows_of::<2>(panels, x, kn, add, acc),
        3 => rows_of::<3>(panels, x, kn, add, acc),
        4 => rows_of::<4>(panels, x, kn, add, acc),
        5 => rows_of::<5>(panels, x, kn, add, acc),
        6 => rows_of::<6>(panels, x, kn, add, acc),
        7 => rows_of::<7>(panels, x, kn, add, acc),
        8 => rows_of::<8>(panels, x, kn, add, acc),
        _ => unreachable!("{rows} rows in a group of {BLOCK}"),
    }
}

/// `panel_rows` for R rows.
#[target_feature(enable = "avx512f,avx512bf16")]
#[inline]
fn rows_of<const R: usize>(
    (p0, p1): (&[u16], &[u16]),
    (x, stride): (&[u32], usize),
    kn: usize,
    add: bool,
    acc: &mut [[f32; 32]; BLOCK],
) {
    assert!(p0.len() >= kn * 32 && p1.len() >= kn * 32);
    assert!(R <= BLOCK && (kn == 0 || x.len() >= (R - 1) * stride + kn));
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
    for r in 0..R {
        // SAFETY: acc[r] holds 32 f32.
        unsafe {
            _mm512_storeu_ps(acc[r].as_mut_ptr(), lo[r]);
            _mm512_storeu_ps(acc[r][16..].as_mut_ptr(), hi[r]);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::bf16_pack::tests::{check_with, rows_independent_with};
    use super::*;

    #[test]
    fn products_equal_f64_sums_of_the_rounded_values() {
        if !available() {
            eprintln!("no AVX512-BF16 on this CPU: bf16_dot::product not run");
            return;
        }
        check_with(product, (1, 64, 32), false);
        check_with(product, (8, 576, 48), false); // a decoding step's 8 rows
        check_with(product, (17, 50, 40), false); // two groups of rows, k and columns past a panel
        check_with(product, (32, 40, 24), true); // x read transposed
        check_with(product, (3, 0, 20), false); // k = 0: zeros
        check_with(product, (300, 1100, 70), false); // three passes over k, two over rows
    }

    /// Each row's values do not depend on the others in its product (a decoding step's rows are
    /// sampled alike whatever the batch; the scoring pass equals the training pass), also across
    /// passes over k and rows.
    #[test]
    fn a_row_of_a_product_equals_the_row_alone() {
        if !available() {
            return;
        }
        rows_independent_with(
            product,
            (MC + 11, KC + 70, 40),
            &[0, 7, 8, 200, MC, MC + 10],
        );
    }
}
