//! The attention op's row loops, vectorized: the softmax of a row and its backward; and what the
//! other vectorized row loops share (`exp_f32`, `dispatch!`, `total`: the log-prob, SwiGLU and
//! RMSNorm).
//!
//! The ops of `ops/cpu_ops.rs` sum a row left to right (the compositions' order, so that their
//! values are candle's) and call libm's exp once per element, which keeps them scalar. Here a
//! row's max, sums and dot products run in `LANES` partial results combined in a fixed order, and
//! exp is a polynomial without branches, so the loops vectorize. The functions are compiled for
//! AVX-512 and AVX2 as well and pick at run time; the operations are the same element by element
//! (no fused multiply-add, no reassociation), so every path gives the same bits, whatever the CPU
//! or thread count. Against the left-to-right kernels they differ by rounding (tests: 1e-6
//! relative).

use crate::kernels::cpu::KernelFloat;

/// Partial results per row: a multiple of every vector width (4 lanes of f32 in SSE, 8 in AVX2,
/// 16 in AVX-512).
pub(crate) const LANES: usize = 16;

/// e^x for f32 with neither branch nor call, so that a loop of it vectorizes (Cephes' `expf`,
/// Moshier 1989): x = n ln 2 + r with n = round(x log2 e) and |r| <= ln 2 / 2, e^r from a degree-6
/// polynomial, 2^n put into the exponent bits. Within 2 ulp of e^x for x in [-87.33, 88]
/// (tested); 0 below -87.33 (where 2^n would be subnormal) and for -inf; NaN for NaN.
#[inline(always)]
pub(crate) fn exp_f32(x: f32) -> f32 {
    /// Below this, e^x < 2^-126, the smallest normal f32.
    const LOW: f32 = -87.336_55;
    /// ln 2 split so that n * LN2_HI is exact (Cody & Waite 1980).
    const LN2_HI: f32 = 0.693_359_4;
    const LN2_LO: f32 = -2.121_944_4e-4;
    /// 1.5 * 2^23: x log2 e + ROUND rounds to an integer n (ties to even), held in the low
    /// mantissa bits.
    const ROUND: f32 = 12_582_912.0;
    let t = x * std::f32::consts::LOG2_E + ROUND;
    let n = t - ROUND;
    let r = x - n * LN2_HI - n * LN2_LO;
    let mut p = 1.987_569_1e-4_f32;
    p = p * r + 1.398_199_9e-3;
    p = p * r + 8.333_452e-3;
    p = p * r + 4.166_579_6e-2;
    p = p * r + 1.666_666_5e-1;
    p = p * r + 0.5; // Cephes writes 5.0000001201e-1: the same f32
    let er = p * r * r + r + 1.0;
    let n_int = t.to_bits() as i32 - ROUND.to_bits() as i32;
    let two_n = f32::from_bits(((n_int + 127) << 23) as u32);
    if x < LOW {
        0.0
    } else {
        er * two_n
    }
}

/// The exp of the vectorized loops: [`exp_f32`] for f32; libm's for f64 (not vectorized).
pub(crate) trait LaneFloat: KernelFloat {
    fn exp_lane(self) -> Self;
}

impl LaneFloat for f32 {
    #[inline(always)]
    fn exp_lane(self) -> Self {
        exp_f32(self)
    }
}

impl LaneFloat for f64 {
    #[inline(always)]
    fn exp_lane(self) -> Self {
        self.exp()
    }
}

/// The lanes combined in a fixed tree: lane l + w into lane l, halving w.
#[inline(always)]
pub(crate) fn total<T: LaneFloat>(mut acc: [T; LANES], add: impl Fn(T, T) -> T) -> T {
    let mut w = LANES;
    while w > 1 {
        w /= 2;
        for l in 0..w {
            acc[l] = add(acc[l], acc[l + w]);
        }
    }
    acc[0]
}

/// The larger of two (the first when either is NaN, as `kernels::softmax_in_place` folds).
#[inline(always)]
fn larger<T: LaneFloat>(m: T, v: T) -> T {
    if v > m {
        v
    } else {
        m
    }
}

#[inline(always)]
fn softmax_body<T: LaneFloat>(row: &mut [T]) {
    let Some(&first) = row.first() else { return };
    let (full, rest) = row.as_chunks_mut::<LANES>();
    let mut mx = [first; LANES];
    for c in full.iter() {
        for l in 0..LANES {
            mx[l] = larger(mx[l], c[l]);
        }
    }
    for (l, &v) in rest.iter().enumerate() {
        mx[l] = larger(mx[l], v);
    }
    let max = total(mx, larger);
    let mut acc = [T::from_f64_k(0.0); LANES];
    for c in full.iter_mut() {
        for l in 0..LANES {
            c[l] = (c[l] - max).exp_lane();
            acc[l] += c[l];
        }
    }
    for (l, v) in rest.iter_mut().enumerate() {
        *v = (*v - max).exp_lane();
        acc[l] += *v;
    }
    let inv = T::from_f64_k(1.0) / total(acc, |a, b| a + b);
    row.iter_mut().for_each(|v| *v *= inv);
}

/// g <- p (g - sum(p g)): the softmax's backward for the output p and its gradient g, in place.
#[inline(always)]
fn softmax_grad_body<T: LaneFloat>(p: &[T], g: &mut [T]) {
    let n = p.len().min(g.len());
    let (p, g) = (&p[..n], &mut g[..n]);
    let (pf, pr) = p.as_chunks::<LANES>();
    let (gf, gr) = g.as_chunks::<LANES>();
    let mut acc = [T::from_f64_k(0.0); LANES];
    for (p, g) in pf.iter().zip(gf) {
        for l in 0..LANES {
            acc[l] += p[l] * g[l];
        }
    }
    for (l, (&p, &g)) in pr.iter().zip(gr).enumerate() {
        acc[l] += p * g;
    }
    let dot = total(acc, |a, b| a + b);
    g.iter_mut().zip(p).for_each(|(g, &p)| *g = p * (*g - dot));
}

/// Defines `$name`, which runs `$body` compiled for AVX-512 or AVX2 when the CPU has them (the
/// row loops of this file, of the log-prob, SwiGLU and RMSNorm).
macro_rules! dispatch {
    ($(#[$doc:meta])* $name:ident$(<$g:ident: $bound:path>)? =
        $body:ident($($arg:ident: $ty:ty),*) $(-> $ret:ty)?) => {
        $(#[$doc])*
        pub(crate) fn $name$(<$g: $bound>)?($($arg: $ty),*) $(-> $ret)? {
            #[cfg(x86_kernels)]
            {
                #[target_feature(enable = "avx512f")]
                fn avx512$(<$g: $bound>)?($($arg: $ty),*) $(-> $ret)? {
                    $body($($arg),*)
                }
                #[target_feature(enable = "avx2")]
                fn avx2$(<$g: $bound>)?($($arg: $ty),*) $(-> $ret)? {
                    $body($($arg),*)
                }
                if $crate::kernels::isa::avx512() {
                    // SAFETY: the CPU has the feature `avx512` is compiled for.
                    return unsafe { avx512($($arg),*) };
                }
                if $crate::kernels::isa::avx2() {
                    // SAFETY: the CPU has the feature `avx2` is compiled for.
                    return unsafe { avx2($($arg),*) };
                }
            }
            $body($($arg),*)
        }
    };
}
pub(crate) use dispatch;

dispatch!(
    /// Softmax of one row in place: exp(v - max) / sum.
    softmax_row<T: LaneFloat> = softmax_body(row: &mut [T])
);

dispatch!(
    /// The softmax's backward in place: g <- p (g - sum(p g)) over the shorter of the two.
    softmax_grad_row<T: LaneFloat> = softmax_grad_body(p: &[T], g: &mut [T])
);

#[cfg(test)]
mod tests {
    use super::*;

    /// Units in the last place between a and the correctly rounded e^x.
    fn ulps(a: f32, x: f32) -> f64 {
        let exact = (x as f64).exp();
        let ulp = (exact as f32).abs() * f32::EPSILON;
        (a as f64 - exact).abs() / ulp as f64
    }

    #[test]
    fn exp_f32_within_two_ulp_and_exact_where_it_must_be() {
        assert_eq!(exp_f32(0.0), 1.0);
        assert_eq!(exp_f32(f32::NEG_INFINITY), 0.0);
        assert_eq!(exp_f32(-88.0), 0.0);
        assert!(exp_f32(f32::NAN).is_nan());
        // e^1 = 2.7182817 (f32 rounding of 2.718281828...), e^-1 = 0.36787945.
        assert!(
            ulps(exp_f32(1.0), 1.0) <= 1.0 && (exp_f32(1.0) - std::f32::consts::E).abs() < 3e-7
        );
        assert!((exp_f32(-1.0) - 0.367_879_45).abs() < 1e-7);
        let worst = (0..=200_000)
            .map(|i| -87.3 + 175.3 * i as f32 / 200_000.0)
            .map(|x| ulps(exp_f32(x), x))
            .fold(0.0, f64::max);
        assert!(worst <= 2.0, "worst error {worst} ulp");
    }

    #[test]
    fn softmax_row_hand_computed_and_close_to_the_left_to_right_kernel() {
        // [0, ln 3]: e^0 = 1, e^ln 3 = 3 -> [1/4, 3/4]; a -inf entry gets exactly 0.
        let mut row = [0.0f32, 3f32.ln(), f32::NEG_INFINITY];
        softmax_row(&mut row);
        assert!((row[0] - 0.25).abs() < 1e-7 && (row[1] - 0.75).abs() < 1e-7 && row[2] == 0.0);
        // 37 entries: two full lanes and a remainder.
        let x: Vec<f32> = (0..37)
            .map(|i| ((i * 7919) % 97) as f32 / 9.0 - 5.0)
            .collect();
        let (mut fast, mut slow) = (x.clone(), x.clone());
        softmax_row(&mut fast);
        crate::kernels::cpu::softmax_in_place(&mut slow);
        for (a, b) in fast.iter().zip(&slow) {
            assert!((a - b).abs() <= 1e-6 * b.abs().max(1e-3), "{a} vs {b}");
        }
    }

    #[test]
    fn softmax_grad_row_hand_computed() {
        // p = [0.25, 0.75], g = [1, 3]: sum(p g) = 2.5 -> [0.25 * -1.5, 0.75 * 0.5].
        let mut g = [1.0f64, 3.0];
        softmax_grad_row(&[0.25, 0.75], &mut g);
        assert_eq!(g, [-0.375, 0.375]);
        // 37 entries against the left-to-right sum.
        let p: Vec<f32> = (0..37).map(|i| 1.0 / (i + 2) as f32).collect();
        let g0: Vec<f32> = (0..37).map(|i| (i as f32 * 0.37).sin()).collect();
        let dot: f32 = p.iter().zip(&g0).map(|(p, g)| p * g).sum();
        let mut g = g0.clone();
        softmax_grad_row(&p, &mut g);
        for ((a, p), g) in g.iter().zip(&p).zip(&g0) {
            assert!((a - p * (g - dot)).abs() < 1e-6, "{a}");
        }
    }

    /// The AVX-512, AVX2 and plain builds give the same bits (the plain one is called directly).
    #[test]
    fn every_build_gives_the_same_bits() {
        let x: Vec<f32> = (0..531)
            .map(|i| ((i * 7919) % 1013) as f32 / 50.0 - 12.0)
            .collect();
        let mut dispatched = x.clone();
        softmax_row(&mut dispatched);
        let mut plain = x.clone();
        softmax_body(&mut plain);
        assert_eq!(dispatched, plain);
        let mut g1 = x.clone();
        softmax_grad_row(&dispatched, &mut g1);
        let mut g2 = x;
        softmax_grad_body(&plain, &mut g2);
        assert_eq!(g1, g2);
    }
}
