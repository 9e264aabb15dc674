//! The few-row kernels on AVX2 with FMA: 8 f32 lanes per register, 16 registers.

use std::arch::x86_64::*;

use super::{band_columns as columns, band_rows as rows, total8, Isa};

/// AVX2 and FMA.
pub(super) struct Avx2;

impl Isa for Avx2 {
    type V = __m256;
    const N: usize = 8;
    type S = [__m256; 2];
    // 2 x 2 dot products: 8 accumulators, 4 registers of w and 2 of x.
    const BLOCK: usize = 2;
    // 8 accumulators at one or two rows, 12 at 4 rows (of the 16 registers). With AVX2 emulated
    // on an AVX-512 CPU (results/perf/step.md, "Decoding's products on AVX2"), 4 x 3 decoded
    // faster at batch 16-32 than 4 x 2; 6 registers at one or two rows, no faster than 4.
    const WIDE: usize = 4;
    const TALL: usize = 3;
    const ROWS: &'static [usize] = &[4, 2, 1];
    #[inline(always)]
    unsafe fn zero() -> __m256 {
        _mm256_setzero_ps()
    }
    #[inline(always)]
    unsafe fn load(p: *const f32) -> __m256 {
        _mm256_loadu_ps(p)
    }
    #[inline(always)]
    unsafe fn splat(v: f32) -> __m256 {
        _mm256_set1_ps(v)
    }
    #[inline(always)]
    unsafe fn fma(a: __m256, b: __m256, c: __m256) -> __m256 {
        _mm256_fmadd_ps(a, b, c)
    }
    #[inline(always)]
    unsafe fn store(v: __m256, p: *mut f32) {
        _mm256_storeu_ps(p, v)
    }
    #[inline(always)]
    unsafe fn zero16() -> [__m256; 2] {
        [_mm256_setzero_ps(); 2]
    }
    #[inline(always)]
    unsafe fn load16(p: *const f32) -> [__m256; 2] {
        [_mm256_loadu_ps(p), _mm256_loadu_ps(p.add(8))]
    }
    #[inline(always)]
    unsafe fn fma16(a: [__m256; 2], b: [__m256; 2], c: [__m256; 2]) -> [__m256; 2] {
        [
            _mm256_fmadd_ps(a[0], b[0], c[0]),
            _mm256_fmadd_ps(a[1], b[1], c[1]),
        ]
    }
    #[inline(always)]
    unsafe fn total(s: [__m256; 2]) -> f32 {
        total8(_mm256_add_ps(s[0], s[1]))
    }
}

#[target_feature(enable = "avx2,fma")]
pub(super) fn band_rows(x: &[f32], w: &[f32], m: usize, k: usize, out: &mut [f32]) {
    rows::<Avx2>(x, w, m, k, out)
}

#[target_feature(enable = "avx2,fma")]
pub(super) fn band_columns(x: &[f32], wt: &[f32], m: usize, n: usize, k: usize, out: &mut [f32]) {
    columns::<Avx2>(x, wt, m, n, k, out)
}
