//! `bf16_dot`'s FMA loop on CPUs with AVX2 and FMA but no AVX-512 (AMD Zen 2 and 3, Intel before
//! Skylake-SP): the sums of `bf16_dot::Fma` in 256-bit registers, so the same bits.
//!
//! A panel's pair row is 16 columns' (even, odd) pairs: 64 bytes, two registers of 8 columns.
//! Each register is widened to f32 to the values AVX-512's loop widens its one to (even values
//! moved up by a byte shuffle, odd ones masked) and every column's lane adds odd then even by FMA,
//! so every output is the same chain of operations. AVX2 has 16 registers, not 32: a pass takes
//! up to `PASS` rows through one panel (10 accumulators, the widened pair row's four, one
//! broadcast at a time), where AVX-512's takes 8 rows through both. Ten independent FMA chains
//! hide the FMA's latency (4 cycles at two per cycle on Intel, 5 on Zen 2 and 3); with 4 rows
//! the loop ran slower, with 6 it spilled (results/perf/step.md, "bf16 products on AVX2"). A
//! group's rows go by in passes, each reading the panel again; above `FEW` rows the panel's part
//! of k (16 KB) stays in L1 between them. A single row goes through both panels at once: four
//! chains, not two.

use std::arch::x86_64::*;

use super::{Inner, AHEAD};
use crate::kernels::bf16_pack::RoundedRows;

/// Rows one pass over a panel takes at most.
const PASS: usize = 5;

/// f32 FMAs in 256-bit registers against the panel widened in registers and x's rounded values.
pub(crate) struct Fma256;

impl Inner for Fma256 {
    const ROWS: usize = 2 * PASS;
    type Rows = RoundedRows;
    #[target_feature(enable = "avx2,fma")]
    unsafe fn panel_rows(
        (p0, p1): (&[u16], &[u16]),
        (x, stride): (&[[f32; 2]], usize),
        kn: usize,
        rows: usize,
        add: bool,
        acc: &mut [[f32; 32]],
    ) {
        if rows == 1 {
            return panels_rows::<1, 2>([p0, p1], (x, stride), kn, add, (acc, [0, 16]));
        }
        // Passes of at most PASS rows, as even as they go (6 rows: 3 + 3, not 5 + 1).
        let passes = rows.div_ceil(PASS);
        for (half, panel) in [p0, p1].into_iter().enumerate() {
            let mut r0 = 0;
            for pass in 0..passes {
                let n = (rows - r0) / (passes - pass);
                let x = (&x[(r0 * stride).min(x.len())..], stride);
                let acc = (&mut acc[r0..], [half * 16]);
                match n {
                    1 => panels_rows::<1, 1>([panel], x, kn, add, acc),
                    2 => panels_rows::<2, 1>([panel], x, kn, add, acc),
                    3 => panels_rows::<3, 1>([panel], x, kn, add, acc),
                    4 => panels_rows::<4, 1>([panel], x, kn, add, acc),
                    5 => panels_rows::<5, 1>([panel], x, kn, add, acc),
                    r => unreachable!("{r} rows in a pass of {PASS}"),
                }
                r0 += n;
            }
        }
    }
}

/// acc[r][col .. col + 16] (+)= the first `kn` pair rows of P panels (each with its column col in
/// acc) against R rows of pairs (row r's at x[r * stride ..]); from acc's values if `add`, else
/// from zero.
#[target_feature(enable = "avx2,fma")]
#[inline]
fn panels_rows<const R: usize, const P: usize>(
    panels: [&[u16]; P],
    (x, stride): (&[[f32; 2]], usize),
    kn: usize,
    add: bool,
    (acc, cols): (&mut [[f32; 32]], [usize; P]),
) {
    assert!(panels.iter().all(|p| p.len() >= kn * 32) && cols.iter().all(|&c| c <= 16));
    assert!(acc.len() >= R && (kn == 0 || x.len() >= (R - 1) * stride + kn));
    // Row r's columns cols[p] .. + 8 and cols[p] + 8 .. + 16.
    let mut sums = [[[_mm256_setzero_ps(); 2]; P]; R];
    if add {
        for (s, a) in sums.iter_mut().zip(acc.iter()) {
            for (s, &c) in s.iter_mut().zip(&cols) {
                for (s, h) in s.iter_mut().zip([0, 8]) {
                    // SAFETY: a holds 32 f32 and c <= 16.
                    *s = unsafe { _mm256_loadu_ps(a[c + h..].as_ptr()) };
                }
            }
        }
    }
    let high = _mm256_set1_epi32(0xffff_0000_u32 as i32);
    // Each 32-bit lane's low 16 bits moved up and its low half zeroed (a byte index of -128
    // writes zero): AVX-512's 16-bit shift by a shuffle, which Intel's cores run on port 5 and
    // not on the FMA ports 0 and 1. The update and decoding at batch 16 ran faster for it
    // (results/perf/step.md, "bf16 products on AVX2").
    let z = -128i8;
    let lift = _mm256_setr_epi8(
        z, z, 0, 1, z, z, 4, 5, z, z, 8, 9, z, z, 12, 13, z, z, 0, 1, z, z, 4, 5, z, z, 8, 9, z, z,
        12, 13,
    );
    // 8 (even, odd) bf16 pairs as two vectors of f32: evens, odds.
    let widen = |v: __m256i| {
        (
            _mm256_castsi256_ps(_mm256_shuffle_epi8(v, lift)),
            _mm256_castsi256_ps(_mm256_and_si256(v, high)),
        )
    };
    let (w, x) = (panels.map(|p| p.as_ptr()), x.as_ptr());
    for i in 0..kn {
        // SAFETY: pair row i of each panel is 32 values inside it, and pair i of row r lies at
        // r * stride + i inside x (both asserted above).
        unsafe {
            // A prefetch reads nothing and never faults, so its address may lie past the panel.
            for w in w {
                _mm_prefetch::<_MM_HINT_T0>(w.wrapping_add((i + AHEAD) * 32) as *const i8);
            }
            let mut wide = [[(_mm256_setzero_ps(), _mm256_setzero_ps()); 2]; P];
            for (wide, w) in wide.iter_mut().zip(w) {
                for (wide, h) in wide.iter_mut().zip([0, 16]) {
                    *wide = widen(_mm256_loadu_si256(w.add(i * 32 + h).cast()));
                }
            }
            for (r, s) in sums.iter_mut().enumerate() {
                let [xe, xo] = *x.add(r * stride + i);
                // Odd, then even: `vdpbf16ps`'s order, as `bf16_dot::Fma` adds them. One
                // broadcast at a time leaves the registers to the sums.
                let xo = _mm256_set1_ps(xo);
                for (s, w) in s.iter_mut().zip(&wide) {
                    for (s, (_, o)) in s.iter_mut().zip(w) {
                        *s = _mm256_fmadd_ps(*o, xo, *s);
                    }
                }
                let xe = _mm256_set1_ps(xe);
                for (s, w) in s.iter_mut().zip(&wide) {
                    for (s, (e, _)) in s.iter_mut().zip(w) {
                        *s = _mm256_fmadd_ps(*e, xe, *s);
                    }
                }
            }
        }
    }
    for (s, a) in sums.iter().zip(acc.iter_mut()) {
        for (s, &c) in s.iter().zip(&cols) {
            for (s, h) in s.iter().zip([0, 8]) {
                // SAFETY: a holds 32 f32 and c <= 16.
                unsafe { _mm256_storeu_ps(a[c + h..].as_mut_ptr(), *s) };
            }
        }
    }
}
