//! bf16 products of a few rows (a decoding step's 1-32) with a weight packed for AMX
//! (`amx::PackedB`), by AVX512-BF16's `vdpbf16ps` (Intel SDM vol. 2, "VDPBF16PS": each f32 lane
//! adds the products of one bf16 pair). A packed panel row holds, for 16 columns, the pair
//! (b[2 kp][j], b[2 kp + 1][j]); one 64-byte load of it against a row's pair (x[2 kp], x[2 kp + 1])
//! broadcast to every lane adds 32 products into 16 results. At a few rows the product streams
//! the weight once, so bf16's half-size weight halves the bytes read.

use std::arch::x86_64::*;

use super::amx::{bf16_bits, PackedB};
use super::view::{par_runs, Shared, View};

/// Rows of x one pass over two panels takes (16 accumulators of the 32 registers).
const BLOCK: usize = 8;

/// Whether this CPU runs `product` (AVX512-BF16: Intel Cooper Lake and Sapphire Rapids on, AMD
/// Zen 4 on).
pub(crate) fn available() -> bool {
    is_x86_feature_detected!("avx512f") && is_x86_feature_detected!("avx512bf16")
}

/// x b as a new row-major [m, n] matrix for x [m, k] (any strides), m small; b's panels split
/// between candle's CPU threads. The caller checks `available()`.
pub(crate) fn product(x: View<f32>, m: usize, b: &PackedB) -> Vec<f32> {
    assert!(
        available(),
        "bf16_few_rows::product on a CPU without AVX512-BF16"
    );
    let (k, n) = b.dims();
    let k_pad = b.k_pad();
    if k > 0 && m > 0 {
        let last = x.off + (m - 1) * x.rs + (k - 1) * x.cs;
        assert!(
            last < x.data.len(),
            "bf16_few_rows::product: x outside its tensor"
        );
    }
    // Each row as k_pad / 2 pairs of bf16, the lower half the even value of k.
    let mut pairs = vec![0u32; m * k_pad / 2];
    for (i, row) in pairs.chunks_mut((k_pad / 2).max(1)).enumerate().take(m) {
        for (kp, pair) in row.iter_mut().enumerate() {
            let v = |l: usize| match l < k {
                true => bf16_bits(x.data[x.off + i * x.rs + l * x.cs]) as u32,
                false => 0,
            };
            *pair = v(2 * kp) | v(2 * kp + 1) << 16;
        }
    }
    let mut out = vec![0f32; m * n];
    // The tasks write disjoint columns of out (their panels'), which outlives the parallel loop.
    let dst = Shared(out.as_mut_ptr());
    par_runs(n.div_ceil(32), |run| {
        let dst = &dst;
        for c in run {
            let cols = 32.min(n - c * 32);
            for r0 in (0..m).step_by(BLOCK) {
                let rows = BLOCK.min(m - r0);
                let mut acc = [[0f32; 32]; BLOCK];
                let (p0, p1) = b.panels(c);
                // SAFETY: available() holds (asserted above).
                unsafe {
                    panel_rows(
                        (p0, p1),
                        &pairs[r0 * k_pad / 2..],
                        k_pad / 2,
                        rows,
                        &mut acc,
                    )
                };
                for (r, a) in acc.iter().enumerate().take(rows) {
                    // SAFETY: row r0 + r, columns c * 32 .. + cols lie inside out's m x n values,
                    // and only this task writes these columns.
                    unsafe {
                        std::ptr::copy_nonoverlapping(
                            a.as_ptr(),
                            dst.0.add((r0 + r) * n + c * 32),
                            cols,
                        )
                    };
                }
            }
        }
    });
    out
}

/// 32 bf16 values in a register, as `vdpbf16ps` takes them.
#[inline(always)]
fn bh(v: __m512i) -> __m512bh {
    // SAFETY: both are 512 bits of plain data.
    unsafe { std::mem::transmute::<__m512i, __m512bh>(v) }
}

/// acc[r] = the 32 columns of two panels for `rows` rows of pairs (each `kp` pairs long).
#[target_feature(enable = "avx512f,avx512bf16")]
fn panel_rows(
    (p0, p1): (&[u16], &[u16]),
    pairs: &[u32],
    kp: usize,
    rows: usize,
    acc: &mut [[f32; 32]; BLOCK],
) {
    assert!(p0.len() >= kp * 32 && p1.len() >= kp * 32);
    assert!(pairs.len() >= rows * kp && rows <= BLOCK);
    let mut lo = [_mm512_setzero_ps(); BLOCK];
    let mut hi = [_mm512_setzero_ps(); BLOCK];
    for i in 0..kp {
        // SAFETY: row i of each panel is 32 values inside it (asserted above).
        let (w0, w1) = unsafe {
            (
                bh(_mm512_loadu_si512(p0[i * 32..].as_ptr().cast())),
                bh(_mm512_loadu_si512(p1[i * 32..].as_ptr().cast())),
            )
        };
        for r in 0..rows {
            // SAFETY: as above.
            let x: __m512bh =
                unsafe { std::mem::transmute(_mm512_set1_epi32(pairs[r * kp + i] as i32)) };
            lo[r] = _mm512_dpbf16_ps(lo[r], x, w0);
            hi[r] = _mm512_dpbf16_ps(hi[r], x, w1);
        }
    }
    for (r, a) in acc.iter_mut().enumerate().take(rows) {
        // SAFETY: a holds 32 f32.
        unsafe {
            _mm512_storeu_ps(a.as_mut_ptr(), lo[r]);
            _mm512_storeu_ps(a[16..].as_mut_ptr(), hi[r]);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::amx::tests::check_with;
    use super::*;

    #[test]
    fn few_rows_equal_f64_sums_of_the_rounded_values() {
        if !available() {
            eprintln!("no AVX512-BF16 on this CPU: bf16_few_rows::product not run");
            return;
        }
        check_with(product, (1, 64, 32), false);
        check_with(product, (8, 576, 48), false); // a decoding step's 8 rows
        check_with(product, (17, 50, 40), false); // two blocks of rows, k and columns past a panel
        check_with(product, (32, 40, 24), true); // x read transposed
        check_with(product, (3, 0, 20), false); // k = 0: zeros
    }

    /// Each row's values do not depend on the others in its batch (a decoding step's rows are
    /// sampled alike whatever the batch).
    #[test]
    fn a_row_of_a_batch_equals_the_row_alone() {
        if !available() {
            return;
        }
        let (m, k, n) = (11, 70, 40);
        let x: Vec<f32> = (0..m * k)
            .map(|i| ((i * 37) % 101) as f32 / 50.0 - 1.0)
            .collect();
        let w: Vec<f32> = (0..k * n)
            .map(|i| ((i * 53) % 97) as f32 / 48.0 - 1.0)
            .collect();
        let b = PackedB::new(View::rows(&w, 0, n), k, n);
        let batch = product(View::rows(&x, 0, k), m, &b);
        for i in 0..m {
            let alone = product(View::rows(&x, i, k), 1, &b);
            assert_eq!(alone, batch[i * n..(i + 1) * n], "row {i}");
        }
    }
}
