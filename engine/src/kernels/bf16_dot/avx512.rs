//! The bf16 products' inner loops on AVX-512: `Dot` by AVX512-BF16's `vdpbf16ps` against x's bf16
//! pairs, `Fma` by f32 FMAs against the panel widened in registers.

use std::arch::x86_64::*;

use super::{Inner, AHEAD, BLOCK};
use crate::kernels::bf16_pack::{BfRows, RoundedRows};

/// `vdpbf16ps` against x's bf16 pairs.
pub(super) struct Dot;
/// f32 FMAs against the panel widened in registers and x's rounded f32 values.
pub(super) struct Fma;

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
