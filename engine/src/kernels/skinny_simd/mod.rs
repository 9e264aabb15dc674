//! The kernels of `skinny.rs`: one band of outputs of x [m, k] @ w^T, written [m, width], for
//! AVX-512 (16 f32 lanes per register, 32 registers) and AVX2 with FMA (8 lanes, 16 registers).
//! The two compute every output by the same operations in the same order, so they give the same
//! bits (tested): a column-major w's output is one chain of fused multiply-adds over k; a
//! row-major w's is a dot product in 16 lanes (one AVX-512 register, two AVX2 ones) summed in one
//! fixed tree (`Isa::total`), then the last k % 16 terms in order. Only the register tiles, sized
//! to each register file, differ. `Kernels` runs the set the CPU has.

mod avx2;
mod avx512;

use std::arch::x86_64::*;

use avx2::Avx2;
use avx512::Avx512;

/// How the op finds w [n, k] in its slice.
#[derive(Clone, Copy)]
pub(crate) enum Weight {
    /// Row-major: w_j at j * k.
    Rows,
    /// Column-major: the slice is w^T [k, n], row-major.
    Columns,
}

/// Partial sums of a row-major dot product: one AVX-512 register, two AVX2 ones.
const LANES: usize = 16;

/// What a kernel needs of an instruction set: a register of f32 lanes, 16 lanes of partial sums,
/// and the tile shapes that fit its registers. The functions are only inlined into the
/// `#[target_feature]` entry points below.
pub(super) trait Isa {
    /// One register of `N` f32 lanes.
    type V: Copy;
    const N: usize;
    /// 16 f32 lanes (a row-major dot product's partial sums) in one or two registers.
    type S: Copy;
    /// Rows of x and of a row-major w one block of `band_rows` multiplies.
    const BLOCK: usize;
    /// Registers of outputs a column tile spans at one or two rows of x, and at more.
    const WIDE: usize;
    const TALL: usize;
    /// Rows of x a column tile takes at more than two rows, the most first.
    const ROWS: &'static [usize];
    unsafe fn zero() -> Self::V;
    unsafe fn load(p: *const f32) -> Self::V;
    unsafe fn splat(v: f32) -> Self::V;
    /// a b + c, rounded once.
    unsafe fn fma(a: Self::V, b: Self::V, c: Self::V) -> Self::V;
    unsafe fn store(v: Self::V, p: *mut f32);
    unsafe fn zero16() -> Self::S;
    unsafe fn load16(p: *const f32) -> Self::S;
    /// a b + c lane by lane, rounded once.
    unsafe fn fma16(a: Self::S, b: Self::S, c: Self::S) -> Self::S;
    /// The 16 lanes summed: lane l + 8 into lane l, then l + 4, l + 2 and l + 1
    /// (`rows::total`'s tree, and that of `_mm512_reduce_add_ps`).
    unsafe fn total(s: Self::S) -> f32;
}

/// `Isa::total`'s tree from its second step: 8 lanes, lane l + 4 into lane l, then l + 2 and
/// l + 1.
#[inline(always)]
pub(super) unsafe fn total8(v: __m256) -> f32 {
    let v = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps::<1>(v));
    let v = _mm_add_ps(v, _mm_movehl_ps(v, v));
    _mm_cvtss_f32(_mm_add_ss(v, _mm_movehdup_ps(v)))
}

/// The kernels a CPU runs: AVX-512's where it has them and the build has the feature `avx512`
/// (`isa.rs`), else AVX2's. Made only by `here` and `all`, so a value proves the CPU has its
/// features.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Kernels(Which);

#[derive(Clone, Copy, Debug, PartialEq)]
enum Which {
    Avx512,
    Avx2,
}

impl Kernels {
    /// The fastest kernels this CPU runs; `None` without AVX2 and FMA. std caches the CPUID
    /// answers, so this costs a few loads per product.
    pub(crate) fn here() -> Option<Self> {
        match (super::isa::avx512(), super::isa::avx2()) {
            (true, _) => Some(Kernels(Which::Avx512)),
            (false, true) => Some(Kernels(Which::Avx2)),
            (false, false) => None,
        }
    }

    /// Every set of kernels this CPU runs, the fastest first.
    #[cfg(test)]
    pub(crate) fn all() -> Vec<Self> {
        [
            (super::isa::avx512(), Which::Avx512),
            (super::isa::avx2(), Which::Avx2),
        ]
        .into_iter()
        .filter_map(|(runs, which)| runs.then_some(Kernels(which)))
        .collect()
    }

    /// The instruction set's name.
    #[cfg(test)]
    pub(crate) fn name(self) -> &'static str {
        match self.0 {
            Which::Avx512 => "AVX-512",
            Which::Avx2 => "AVX2",
        }
    }

    /// Outputs one tile covers for m rows of x (a band is a whole number of tiles): a block's
    /// rows of a row-major w; a column tile's columns of a column-major one.
    pub(crate) fn tile(self, layout: Weight, m: usize) -> usize {
        match (self.0, layout) {
            (Which::Avx512, Weight::Rows) => Avx512::BLOCK,
            (Which::Avx2, Weight::Rows) => Avx2::BLOCK,
            (Which::Avx512, Weight::Columns) => tile_columns::<Avx512>(m),
            (Which::Avx2, Weight::Columns) => tile_columns::<Avx2>(m),
        }
    }

    /// out [m, width] = x [m, k] @ w^T for the `width` rows of a row-major w (its band).
    pub(crate) fn band_rows(self, x: &[f32], w: &[f32], m: usize, k: usize, out: &mut [f32]) {
        // SAFETY: self was made where the CPU has the features its kernels are compiled for.
        unsafe {
            match self.0 {
                Which::Avx512 => avx512::band_rows(x, w, m, k, out),
                Which::Avx2 => avx2::band_rows(x, w, m, k, out),
            }
        }
    }

    /// out [m, width] = x [m, k] @ the first `width` columns of wt (w^T [k, n] row-major, from
    /// the band's first column).
    pub(crate) fn band_columns(
        self,
        x: &[f32],
        wt: &[f32],
        (m, n, k): (usize, usize, usize),
        out: &mut [f32],
    ) {
        // SAFETY: as in `band_rows`.
        unsafe {
            match self.0 {
                Which::Avx512 => avx512::band_columns(x, wt, m, n, k, out),
                Which::Avx2 => avx2::band_columns(x, wt, m, n, k, out),
            }
        }
    }
}

fn tile_columns<I: Isa>(m: usize) -> usize {
    I::N * if m <= 2 { I::WIDE } else { I::TALL }
}

/// out [m, width] = x [m, k] @ w^T for the `width` rows of a row-major w (its band): blocks of up
/// to `Isa::BLOCK` x `Isa::BLOCK` dot products.
#[inline(always)]
pub(super) fn band_rows<I: Isa>(x: &[f32], w: &[f32], m: usize, k: usize, out: &mut [f32]) {
    const MOST: usize = 4;
    let width = w.len() / k;
    for j in (0..width).step_by(I::BLOCK) {
        let nw = I::BLOCK.min(width - j);
        for i in (0..m).step_by(I::BLOCK) {
            let nx = I::BLOCK.min(m - i);
            let (xs, ws) = (&x[i * k..], &w[j * k..]);
            let mut dots = [[0f32; MOST]; MOST];
            macro_rules! blocks {
                ($(($r:literal, $c:literal)),*) => {
                    match (nx, nw) {
                        $(($r, $c) => {
                            let block = dot_block::<I, $r, $c>(xs, ws, k);
                            for (d, b) in dots.iter_mut().zip(block) {
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
/// 16 lanes, the lanes summed (`Isa::total`), then the last k % 16 terms in order.
#[inline(always)]
fn dot_block<I: Isa, const XB: usize, const WB: usize>(
    x: &[f32],
    w: &[f32],
    k: usize,
) -> [[f32; WB]; XB] {
    assert!(x.len() >= XB * k && w.len() >= WB * k);
    let steps = k / LANES;
    // SAFETY: each load reads 16 floats ending at a * k + s * 16 + 15 < XB * k <= x.len() (b and
    // WB for w), by the assert above; the caller enables I's features.
    unsafe {
        let mut acc = [[I::zero16(); WB]; XB];
        for s in 0..steps {
            let wv: [I::S; WB] =
                std::array::from_fn(|b| I::load16(w.as_ptr().add(b * k + s * LANES)));
            for (a, acc) in acc.iter_mut().enumerate() {
                let xv = I::load16(x.as_ptr().add(a * k + s * LANES));
                for (acc, &wv) in acc.iter_mut().zip(&wv) {
                    *acc = I::fma16(xv, wv, *acc);
                }
            }
        }
        let mut out = [[0f32; WB]; XB];
        for (a, (o, acc)) in out.iter_mut().zip(&acc).enumerate() {
            for (b, (o, &acc)) in o.iter_mut().zip(acc).enumerate() {
                let mut s = I::total(acc);
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
/// band's first column): tiles of up to `Isa::ROWS` rows by `tile_columns`, the accumulators in
/// registers over all of k; the last columns (fewer than a register) one at a time.
#[inline(always)]
pub(super) fn band_columns<I: Isa>(
    x: &[f32],
    wt: &[f32],
    m: usize,
    n: usize,
    k: usize,
    out: &mut [f32],
) {
    let width = out.len() / m;
    let most = tile_columns::<I>(m) / I::N;
    let mut j = 0;
    while j < width {
        let vecs = ((width - j) / I::N).min(most);
        let mut i = 0;
        while i < m {
            let rows = I::ROWS.iter().copied().find(|&r| r <= m - i).unwrap_or(1);
            let (xs, ws, os) = (&x[i * k..], &wt[j..], &mut out[i * width + j..]);
            macro_rules! tiles {
                ($(($r:literal, $v:literal)),*) => {
                    match (rows, vecs) {
                        $(($r, $v) => column_tile::<I, $r, $v>(xs, k, ws, n, os, width),)*
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
            v => v * I::N,
        };
    }
}

/// How many shared indices ahead `column_tile` prefetches W^T's rows, into the L2 cache
/// (prefetcht2). Its tile reads 64-192 bytes of each row, one row (2.3-6 KB) apart: a stride
/// Intel's hardware prefetchers do not follow (the L1 stride prefetcher stops at 2 KB, the L2
/// streamer at the 4 KB page). On Intel, 8 rows ahead into L1 made decoding at batch 8-16 faster
/// than none, and 32 ahead into L2 faster again: the L2 tracks more misses in flight than L1's
/// fill buffers (results/perf/step.md, "Decoding's column tiles prefetch" and "... further
/// ahead, into L2"). Zen 4 follows the stride, and 8 ahead there was no faster than none.
const PF: usize = 32;

/// out[a * ow + c] = sum over t of x[a * k + t] wt[t * n + c], for the XB rows of x and the
/// N * WV columns of wt: one fused multiply-add per t, in order.
#[inline(always)]
fn column_tile<I: Isa, const XB: usize, const WV: usize>(
    x: &[f32],
    k: usize,
    wt: &[f32],
    n: usize,
    out: &mut [f32],
    ow: usize,
) {
    assert!(k > 0 && x.len() >= XB * k && wt.len() >= (k - 1) * n + WV * I::N);
    assert!(out.len() >= (XB - 1) * ow + WV * I::N);
    // SAFETY: the loads read x[a * k + t] (a < XB, t < k) and wt[t * n + v * N..][..N] (v <
    // WV), the stores out[a * ow + v * N..][..N], all inside the slices by the asserts above;
    // the caller enables I's features. A prefetch reads nothing and never faults, so its address
    // (wrapping_add) may lie past the slice.
    unsafe {
        let mut acc = [[I::zero(); WV]; XB];
        for t in 0..k {
            let ahead = wt.as_ptr().wrapping_add((t + PF) * n);
            for v in 0..WV {
                _mm_prefetch::<_MM_HINT_T2>(ahead.wrapping_add(v * I::N) as *const i8);
            }
            let w: [I::V; WV] = std::array::from_fn(|v| I::load(wt.as_ptr().add(t * n + v * I::N)));
            for (a, acc) in acc.iter_mut().enumerate() {
                let xa = I::splat(*x.get_unchecked(a * k + t));
                for (acc, &w) in acc.iter_mut().zip(&w) {
                    *acc = I::fma(xa, w, *acc);
                }
            }
        }
        for (a, acc) in acc.iter().enumerate() {
            for (v, &acc) in acc.iter().enumerate() {
                I::store(acc, out.as_mut_ptr().add(a * ow + v * I::N));
            }
        }
    }
}

/// `column_tile` for the last `cols` columns (fewer than a register) of a band, one output at a
/// time in the same order.
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
