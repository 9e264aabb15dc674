//! log p(target) of each row of logits, as a CPU custom op with a one-pass backward.
//!
//! Per row x (length V) and target t: out = x_t - lse(x), lse(x) = m + ln sum_j exp(x_j - m) with
//! m = max_j x_j. The gradient is d out / d x_j = [j = t] - softmax(x)_j, so the backward needs
//! only x and lse, and lse = x_t - out is recovered from the saved output: nothing of size V is
//! kept besides the logits themselves. The composition of candle ops keeps x - m and exp(x - m)
//! alive for backward (two more [rows, V] tensors: 2 x 100 MB for 512 tokens of a 49k vocabulary)
//! and makes four passes over them; this makes one pass forward and one backward, rows in
//! parallel.

use std::mem::MaybeUninit;

use candle_core::{CpuStorage, CustomOp2, Layout, Result, Shape, Tensor};
use rayon::prelude::*;

use crate::kernels::cpu::{contiguous_slice, par_rows};
use crate::kernels::rows::{dispatch, exp_f32, total, LANES};

/// (logits [rows, V] f32, targets [rows] u32) -> log p(target) [rows] f32.
pub(super) struct TargetLogprob;

/// lse of one row: the max and the sum of exp(x - max) in `LANES` partial results (the sum in
/// f64), exp the vectorizing polynomial of `rows.rs`.
#[inline(always)]
fn lse_body(row: &[f32]) -> f64 {
    let (full, rest) = row.as_chunks::<LANES>();
    let mut mx = [f32::NEG_INFINITY; LANES];
    for c in full {
        for l in 0..LANES {
            mx[l] = mx[l].max(c[l]);
        }
    }
    for (l, &v) in rest.iter().enumerate() {
        mx[l] = mx[l].max(v);
    }
    let m = total(mx, f32::max);
    if m == f32::NEG_INFINITY {
        return f64::NEG_INFINITY;
    }
    let mut acc = [0f64; LANES];
    for c in full {
        for l in 0..LANES {
            acc[l] += f64::from(exp_f32(c[l] - m));
        }
    }
    for (l, &v) in rest.iter().enumerate() {
        acc[l] += f64::from(exp_f32(v - m));
    }
    f64::from(m) + total(acc, |a, b| a + b).ln()
}

dispatch!(
    /// log sum_j exp(x_j) of one row (-inf for an empty row or one of -inf only).
    row_lse = lse_body(row: &[f32]) -> f64
);

/// d_j = -g exp(x_j - lse): the backward of one row but for its target's `+ g`.
#[inline(always)]
fn grad_body(row: &[f32], d: &mut [MaybeUninit<f32>], lse: f32, g: f32) {
    for (d, &x) in d.iter_mut().zip(row) {
        d.write(-g * exp_f32(x - lse));
    }
}

dispatch!(
    /// Writes d_j = -g exp(x_j - lse) for every j of `row` into `d` (of the same length).
    row_grad = grad_body(row: &[f32], d: &mut [MaybeUninit<f32>], lse: f32, g: f32)
);

/// (logits, targets) as slices with the vocabulary size; checks the shapes.
fn parts<'a>(
    xs: &'a CpuStorage,
    xl: &Layout,
    ts: &'a CpuStorage,
    tl: &Layout,
) -> Result<(&'a [f32], &'a [u32], usize)> {
    let (rows, vocab) = xl.shape().dims2()?;
    let n = tl.shape().dims1()?;
    if n != rows {
        candle_core::bail!("target_logprobs: {rows} rows of logits but {n} targets")
    }
    let targets = contiguous_slice::<u32>(ts, tl)?;
    if let Some(bad) = targets.iter().find(|&&t| t as usize >= vocab) {
        candle_core::bail!("target_logprobs: target {bad} outside the vocabulary of {vocab}")
    }
    Ok((contiguous_slice::<f32>(xs, xl)?, targets, vocab))
}

impl CustomOp2 for TargetLogprob {
    fn name(&self) -> &'static str {
        "target-logprob"
    }

    fn cpu_fwd(
        &self,
        xs: &CpuStorage,
        xl: &Layout,
        ts: &CpuStorage,
        tl: &Layout,
    ) -> Result<(CpuStorage, Shape)> {
        let (x, t, vocab) = parts(xs, xl, ts, tl)?;
        let out: Vec<f32> = x
            .par_chunks_exact(vocab.max(1))
            .zip(t.par_iter())
            .map(|(row, &t)| (row[t as usize] as f64 - row_lse(row)) as f32)
            .collect();
        Ok((CpuStorage::F32(out), Shape::from(t.len())))
    }

    fn bwd(
        &self,
        logits: &Tensor,
        targets: &Tensor,
        out: &Tensor,
        grad: &Tensor,
    ) -> Result<(Option<Tensor>, Option<Tensor>)> {
        // Pack (out, grad) as [rows, 2] so the backward kernel is one binary op over logits.
        let og = Tensor::stack(&[out.detach(), grad.contiguous()?], 1)?;
        let dx = logits.apply_op2_no_bwd(
            &og.contiguous()?,
            &TargetLogprobBwd {
                targets: targets.flatten_all()?.to_vec1::<u32>()?,
            },
        )?;
        Ok((Some(dx), None))
    }
}

/// Backward kernel: (logits, [out, grad] per row) -> g * ([j = t] - exp(x_j - lse)).
struct TargetLogprobBwd {
    targets: Vec<u32>,
}

impl CustomOp2 for TargetLogprobBwd {
    fn name(&self) -> &'static str {
        "target-logprob-bwd"
    }

    fn cpu_fwd(
        &self,
        xs: &CpuStorage,
        xl: &Layout,
        ogs: &CpuStorage,
        ogl: &Layout,
    ) -> Result<(CpuStorage, Shape)> {
        let (_, vocab) = xl.shape().dims2()?;
        let x = contiguous_slice::<f32>(xs, xl)?;
        let og = contiguous_slice::<f32>(ogs, ogl)?;
        let dx = par_rows(x.len(), vocab, |r, d| {
            let (row, (out, g)) = (&x[r * vocab..][..d.len()], (og[2 * r], og[2 * r + 1]));
            if g == 0.0 {
                d.fill(MaybeUninit::new(0.0)); // masked (padding) rows contribute exact zeros
                return;
            }
            let t = self.targets[r] as usize;
            let lse = row[t] - out;
            row_grad(row, d, lse, g);
            d[t].write(-g * exp_f32(row[t] - lse) + g);
        });
        Ok((CpuStorage::F32(dx), xl.shape().clone()))
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::{read_written as read, test_rows, uninit};
    use super::*;

    /// The AVX-512, AVX2 and plain builds give the same bits (the plain bodies called directly),
    /// and lse is that of libm's exp summed left to right, within rounding.
    #[test]
    fn every_build_gives_the_same_bits() {
        let n = 531;
        let [x, _, _] = test_rows(n);
        let lse = row_lse(&x);
        assert_eq!(lse.to_bits(), lse_body(&x).to_bits());
        let m = x.iter().copied().fold(f32::NEG_INFINITY, f32::max);
        let slow = f64::from(m)
            + x.iter()
                .map(|&v| f64::from((v - m).exp()))
                .sum::<f64>()
                .ln();
        assert!((lse - slow).abs() < 1e-6 * slow.abs(), "{lse} vs {slow}");
        assert_eq!(row_lse(&[]), f64::NEG_INFINITY);
        let (mut a, mut b) = (uninit(n), uninit(n));
        row_grad(&x, &mut a, lse as f32, 0.75);
        grad_body(&x, &mut b, lse as f32, 0.75);
        assert_eq!(read(a), read(b));
    }
}
