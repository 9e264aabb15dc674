//! The few-row kernels on AVX-512F: 16 f32 lanes per register, 32 registers.

use std::arch::x86_64::*;

use super::{band_columns as columns, band_rows as rows, total8, Isa};

/// AVX-512F.
pub(super) struct Avx512;

impl Isa for Avx512 {
    type V = __m512;
    const N: usize = 16;
    type S = __m512;
    // 4 x 4 dot products: 16 accumulators.
    const BLOCK: usize = 4;
    // 12 accumulators at one or two rows, 24 at 8 rows (of the 32 registers).
    const WIDE: usize = 6;
    const TALL: usize = 3;
    const ROWS: &'static [usize] = &[8, 4, 2, 1];
    #[inline(always)]
    unsafe fn zero() -> __m512 {
        _mm512_setzero_ps()
    }
    #[inline(always)]
    unsafe fn load(p: *const f32) -> __m512 {
        _mm512_loadu_ps(p)
    }
    #[inline(always)]
    unsafe fn splat(v: f32) -> __m512 {
        _mm512_set1_ps(v)
    }
    #[inline(always)]
    unsafe fn fma(a: __m512, b: __m512, c: __m512) -> __m512 {
        _mm512_fmadd_ps(a, b, c)
    }
    #[inline(always)]
    unsafe fn store(v: __m512, p: *mut f32) {
        _mm512_storeu_ps(p, v)
    }
    // 16 lanes are one register.
    #[inline(always)]
    unsafe fn zero16() -> __m512 {
        Self::zero()
    }
    #[inline(always)]
    unsafe fn load16(p: *const f32) -> __m512 {
        Self::load(p)
    }
    #[inline(always)]
    unsafe fn fma16(a: __m512, b: __m512, c: __m512) -> __m512 {
        Self::fma(a, b, c)
    }
    #[inline(always)]
    unsafe fn total(s: __m512) -> f32 {
        let lo = _mm512_castps512_ps256(s);
        let hi = _mm256_castpd_ps(_mm512_extractf64x4_pd::<1>(_mm512_castps_pd(s)));
        total8(_mm256_add_ps(lo, hi))
    }
}

#[target_feature(enable = "avx512f")]
pub(super) fn band_rows(x: &[f32], w: &[f32], m: usize, k: usize, out: &mut [f32]) {
    rows::<Avx512>(x, w, m, k, out)
}

#[target_feature(enable = "avx512f")]
pub(super) fn band_columns(x: &[f32], wt: &[f32], m: usize, n: usize, k: usize, out: &mut [f32]) {
    columns::<Avx512>(x, wt, m, n, k, out)
}
