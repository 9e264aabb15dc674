//! RMSNorm's row loops, vectorized (the CPU kernel `kernels::RmsNormCpu`).
//!
//! Per row x of length d: r = (mean(x^2) + eps)^(-1/2), y = x r w; backward dx_k = r (w_k g_k -
//! x_k r^2 dot / d) with dot = sum_j w_j g_j x_j (Zhang & Sennrich 2019). The sums run in
//! f64 in `LANES` partial results combined in a fixed order (`rows::total`), so the loops
//! vectorize where a left-to-right f64 sum is one dependent add per element (4 cycles each;
//! results/perf/step.md, "The log-prob's, SwiGLU's and RMSNorm's row loops vectorized"). In f64
//! the order moves a sum by ~1e-16 relative, below the f32 results' rounding.

use std::mem::MaybeUninit;

use super::rows::{dispatch, total, LaneFloat, LANES};

/// sum of x_j^2 in `LANES` partial f64 sums.
#[inline(always)]
fn sum_sq<T: LaneFloat>(x: &[T]) -> f64 {
    let (full, rest) = x.as_chunks::<LANES>();
    let mut acc = [0f64; LANES];
    for c in full {
        for l in 0..LANES {
            acc[l] += c[l].to_f64_k() * c[l].to_f64_k();
        }
    }
    for (l, v) in rest.iter().enumerate() {
        acc[l] += v.to_f64_k() * v.to_f64_k();
    }
    total(acc, |a, b| a + b)
}

/// sum of w_j g_j x_j over three rows of one length, in `LANES` partial f64 sums.
#[inline(always)]
fn dot3<T: LaneFloat>(w: &[T], g: &[T], x: &[T]) -> f64 {
    let (wf, wr) = w.as_chunks::<LANES>();
    let (gf, gr) = g.as_chunks::<LANES>();
    let (xf, xr) = x.as_chunks::<LANES>();
    let mut acc = [0f64; LANES];
    for ((w, g), x) in wf.iter().zip(gf).zip(xf) {
        for l in 0..LANES {
            acc[l] += w[l].to_f64_k() * g[l].to_f64_k() * x[l].to_f64_k();
        }
    }
    for (l, ((w, g), x)) in wr.iter().zip(gr).zip(xr).enumerate() {
        acc[l] += w.to_f64_k() * g.to_f64_k() * x.to_f64_k();
    }
    total(acc, |a, b| a + b)
}

/// 1 / sqrt(mean(row^2) + eps).
#[inline(always)]
fn inv_rms_body<T: LaneFloat>(row: &[T], eps: f64) -> f64 {
    1.0 / (sum_sq(row) / row.len() as f64 + eps).sqrt()
}

dispatch!(
    /// 1 / sqrt(mean(row^2) + eps) of one row.
    inv_rms<T: LaneFloat> = inv_rms_body(row: &[T], eps: f64) -> f64
);

#[inline(always)]
fn forward_body<T: LaneFloat>(x: &[T], w: &[T], out: &mut [MaybeUninit<T>], eps: f64) {
    let inv = inv_rms_body(x, eps);
    for ((o, x), w) in out.iter_mut().zip(x).zip(w) {
        o.write(T::from_f64_k(x.to_f64_k() * inv * w.to_f64_k()));
    }
}

dispatch!(
    /// y = x r w of one row into `out` (x, w and out of one length).
    forward_row<T: LaneFloat> = forward_body(x: &[T], w: &[T], out: &mut [MaybeUninit<T>], eps: f64)
);

#[inline(always)]
fn input_grad_body<T: LaneFloat>(g: &[T], x: &[T], w: &[T], out: &mut [MaybeUninit<T>], eps: f64) {
    let d = x.len();
    let (g, w) = (&g[..d], &w[..d]);
    let inv = inv_rms_body(x, eps);
    let dot = dot3(w, g, x);
    let c = inv * inv * dot / d as f64;
    for (((o, w), g), x) in out.iter_mut().zip(w).zip(g).zip(x) {
        o.write(T::from_f64_k(
            inv * (w.to_f64_k() * g.to_f64_k() - x.to_f64_k() * c),
        ));
    }
}

dispatch!(
    /// dx of one row into `out` from its output gradient g, input x and the weight w (all of one
    /// length).
    input_grad_row<T: LaneFloat> = input_grad_body(
        g: &[T],
        x: &[T],
        w: &[T],
        out: &mut [MaybeUninit<T>],
        eps: f64
    )
);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ops::tests::{read_written as read, test_rows, uninit};

    /// The AVX-512, AVX2 and plain builds give the same bits (the plain bodies called directly),
    /// over a row with a remainder past the vector widths; r and dx are those of left-to-right
    /// sums within rounding.
    #[test]
    fn every_build_gives_the_same_bits() {
        let d = 531;
        let [x, w, g] = test_rows(d);
        let eps = 1e-5;
        let inv = inv_rms(&x, eps);
        assert_eq!(inv.to_bits(), inv_rms_body(&x, eps).to_bits());
        let ms = x.iter().map(|&v| f64::from(v) * f64::from(v)).sum::<f64>() / d as f64;
        let slow = 1.0 / (ms + eps).sqrt();
        assert!((inv - slow).abs() < 1e-14 * slow, "{inv} vs {slow}");
        let (mut a, mut b) = (uninit(d), uninit(d));
        forward_row(&x, &w, &mut a, eps);
        forward_body(&x, &w, &mut b, eps);
        assert_eq!(read(a), read(b));
        let (mut a, mut b) = (uninit(d), uninit(d));
        input_grad_row(&g, &x, &w, &mut a, eps);
        input_grad_body(&g, &x, &w, &mut b, eps);
        let dx = read(a);
        assert_eq!(dx, read(b));
        // dx_k = r (w_k g_k - x_k r^2 dot / d), the sums left to right.
        let f = f64::from;
        let dot: f64 = (0..d).map(|j| f(w[j]) * f(g[j]) * f(x[j])).sum();
        for (k, &v) in dx.iter().enumerate() {
            let want = slow * (f(w[k]) * f(g[k]) - f(x[k]) * slow * slow * dot / d as f64);
            assert!(
                (f(v) - want).abs() <= 1e-6 * want.abs().max(1e-3),
                "dx_{k}: {v} vs {want}"
            );
        }
    }
}
