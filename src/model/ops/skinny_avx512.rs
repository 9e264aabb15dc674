//! The AVX-512 kernels of `skinny.rs`: one band of outputs of x [m, k] @ w^T, written [m, width].
//! Every function here needs a CPU with AVX-512 (`skinny::available`).

use std::arch::x86_64::*;

use super::skinny::Weight;

/// Lanes of an AVX-512 f32 register.
const LANES: usize = 16;

/// Rows of x and of a row-major w one block of `band_rows` multiplies: 4 x 4 accumulators.
const BLOCK: usize = 4;

/// Outputs one register tile covers for m rows of x (a band is a whole number of tiles): 4 weight
/// rows (row-major); 96 columns for one or two rows, else 48 (column-major: 12 or up to 24
/// accumulators).
pub(super) fn tile_columns(layout: Weight, m: usize) -> usize {
    match layout {
        Weight::Rows => BLOCK,
        Weight::Columns if m <= 2 => 6 * LANES,
        Weight::Columns => 3 * LANES,
    }
}

/// out [m, width] = x [m, k] @ w^T for the `width` rows of a row-major w (its band): blocks of up
/// to 4 x 4 dot products.
#[target_feature(enable = "avx512f")]
pub(super) fn band_rows(x: &[f32], w: &[f32], m: usize, k: usize, out: &mut [f32]) {
    let width = w.len() / k;
    for j in (0..width).step_by(BLOCK) {
        let nw = BLOCK.min(width - j);
        for i in (0..m).step_by(BLOCK) {
            let nx = BLOCK.min(m - i);
            let (xs, ws) = (&x[i * k..], &w[j * k..]);
            let mut dots = [[0f32; BLOCK]; BLOCK];
            macro_rules! blocks {
                ($(($r:literal, $c:literal)),*) => {
                    match (nx, nw) {
                        $(($r, $c) => {
                            for (d, b) in dots.iter_mut().zip(dot_block::<$r, $c>(xs, ws, k)) {
                                d[..$c].copy_from_slice(&b);
                            }
                        })*
                        _ => unreachable!("blocks cover 1-4 x 1-4"),
                    }
                };
            }
            blocks!(
                (4, 4),
                (3, 4),
                (2, 4),
                (1, 4),
                (4, 3),
                (3, 3),
                (2, 3),
                (1, 3),
                (4, 2),
                (3, 2),
                (2, 2),
                (1, 2),
                (4, 1),
                (3, 1),
                (2, 1),
                (1, 1)
            );
            for (a, d) in dots.iter().enumerate().take(nx) {
                out[(i + a) * width + j..][..nw].copy_from_slice(&d[..nw]);
            }
        }
    }
}

/// The XB x WB dot products of rows x_a and w_b (both of stride k): fused multiply-adds over k in
/// 16 lanes, the lanes summed, then the last k % 16 terms in order.
#[inline(always)]
fn dot_block<const XB: usize, const WB: usize>(x: &[f32], w: &[f32], k: usize) -> [[f32; WB]; XB] {
    assert!(x.len() >= XB * k && w.len() >= WB * k);
    let steps = k / LANES;
    // SAFETY: each load reads 16 floats ending at a * k + s * 16 + 15 < XB * k <= x.len() (b and
    // WB for w), by the assert above; the caller enables avx512f.
    unsafe {
        let mut acc = [[_mm512_setzero_ps(); WB]; XB];
        for s in 0..steps {
            let wv: [__m512; WB] =
                std::array::from_fn(|b| _mm512_loadu_ps(w.as_ptr().add(b * k + s * LANES)));
            for (a, acc) in acc.iter_mut().enumerate() {
                let xv = _mm512_loadu_ps(x.as_ptr().add(a * k + s * LANES));
                for (acc, &wv) in acc.iter_mut().zip(&wv) {
                    *acc = _mm512_fmadd_ps(xv, wv, *acc);
                }
            }
        }
        let mut out = [[0f32; WB]; XB];
        for (a, (o, acc)) in out.iter_mut().zip(&acc).enumerate() {
            for (b, (o, &acc)) in o.iter_mut().zip(acc).enumerate() {
                let mut s = _mm512_reduce_add_ps(acc);
                for t in steps * LANES..k {
                    s = x[a * k + t].mul_add(w[b * k + t], s);
                }
                *o = s;
            }
        }
        out
    }
}

/// out [m, width] = x [m, k] @ the first `width` columns of wt (w^T [k, n] row-major, from the
/// band's first column): tiles of up to 8 rows by `tile_columns`, the accumulators in registers
/// over all of k; the last columns (fewer than 16) one at a time.
#[target_feature(enable = "avx512f")]
pub(super) fn band_columns(x: &[f32], wt: &[f32], m: usize, n: usize, k: usize, out: &mut [f32]) {
    let width = out.len() / m;
    let most = tile_columns(Weight::Columns, m) / LANES;
    let mut j = 0;
    while j < width {
        let vecs = ((width - j) / LANES).min(most);
        let mut i = 0;
        while i < m {
            let rows = [8, 4, 2, 1].into_iter().find(|&r| r <= m - i).unwrap_or(1);
            let (xs, ws, os) = (&x[i * k..], &wt[j..], &mut out[i * width + j..]);
            macro_rules! tiles {
                ($(($r:literal, $v:literal)),*) => {
                    match (rows, vecs) {
                        $(($r, $v) => column_tile::<$r, $v>(xs, k, ws, n, os, width),)*
                        (_, 0) => column_tail(&xs[..rows * k], k, ws, n, os, width, width - j),
                        _ => unreachable!("tiles cover 8, 4, 2 or 1 rows by 1-3 registers, 1-2 rows by 4-6"),
                    }
                };
            }
            tiles!(
                (2, 6),
                (1, 6),
                (2, 5),
                (1, 5),
                (2, 4),
                (1, 4),
                (8, 3),
                (4, 3),
                (2, 3),
                (1, 3),
                (8, 2),
                (4, 2),
                (2, 2),
                (1, 2),
                (8, 1),
                (4, 1),
                (2, 1),
                (1, 1)
            );
            i += rows;
        }
        j += match vecs {
            0 => width - j,
            v => v * LANES,
        };
    }
}

/// How many shared indices ahead `column_tile` prefetches W^T's rows, into the L2 cache
/// (prefetcht2). Its tile reads 64-192 bytes of each row, one row (2.3-6 KB) apart: a stride
/// Intel's hardware prefetchers do not follow (the L1 stride prefetcher stops at 2 KB, the L2
/// streamer at the 4 KB page). On a 2-core Xeon 8 rows ahead into L1 made decoding at batch 8-16
/// 1.2x faster than none, and 32 ahead into L2 another 1.15-1.24x: the L2 tracks more misses in
/// flight than L1's fill buffers (results/perf/step.md, "Decoding's column tiles prefetch" and
/// "... further ahead, into L2"). On Zen 4, which follows the stride, 8 ahead measured within
/// noise of none.
const PF: usize = 32;

/// out[a * ow + c] = sum over t of x[a * k + t] wt[t * n + c], for the XB rows of x and the
/// 16 * WV columns of wt: one fused multiply-add per t, in order.
#[inline(always)]
fn column_tile<const XB: usize, const WV: usize>(
    x: &[f32],
    k: usize,
    wt: &[f32],
    n: usize,
    out: &mut [f32],
    ow: usize,
) {
    assert!(k > 0 && x.len() >= XB * k && wt.len() >= (k - 1) * n + WV * LANES);
    assert!(out.len() >= (XB - 1) * ow + WV * LANES);
    // SAFETY: the loads read x[a * k + t] (a < XB, t < k) and wt[t * n + v * 16..][..16] (v <
    // WV), the stores out[a * ow + v * 16..][..16], all inside the slices by the asserts above;
    // the caller enables avx512f. A prefetch reads nothing and never faults, so its address
    // (wrapping_add) may lie past the slice.
    unsafe {
        let mut acc = [[_mm512_setzero_ps(); WV]; XB];
        for t in 0..k {
            let ahead = wt.as_ptr().wrapping_add((t + PF) * n);
            for v in 0..WV {
                _mm_prefetch::<_MM_HINT_T2>(ahead.wrapping_add(v * LANES) as *const i8);
            }
            let w: [__m512; WV] =
                std::array::from_fn(|v| _mm512_loadu_ps(wt.as_ptr().add(t * n + v * LANES)));
            for (a, acc) in acc.iter_mut().enumerate() {
                let xa = _mm512_set1_ps(*x.get_unchecked(a * k + t));
                for (acc, &w) in acc.iter_mut().zip(&w) {
                    *acc = _mm512_fmadd_ps(xa, w, *acc);
                }
            }
        }
        for (a, acc) in acc.iter().enumerate() {
            for (v, &acc) in acc.iter().enumerate() {
                _mm512_storeu_ps(out.as_mut_ptr().add(a * ow + v * LANES), acc);
            }
        }
    }
}

/// `column_tile` for the last `cols` columns (fewer than 16) of a band, one output at a time in
/// the same order.
#[inline(always)]
fn column_tail(x: &[f32], k: usize, wt: &[f32], n: usize, out: &mut [f32], ow: usize, cols: usize) {
    for (a, xa) in x.chunks_exact(k).enumerate() {
        for c in 0..cols {
            let s = xa
                .iter()
                .enumerate()
                .fold(0f32, |s, (t, &xv)| xv.mul_add(wt[t * n + c], s));
            out[a * ow + c] = s;
        }
    }
}
