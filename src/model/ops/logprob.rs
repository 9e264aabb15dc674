//! log p(target) of each row of logits, as a CPU custom op with a one-pass backward.
//!
//! Per row x (length V) and target t: out = x_t - lse(x), lse(x) = m + ln sum_j exp(x_j - m) with
//! m = max_j x_j. The gradient is d out / d x_j = [j = t] - softmax(x)_j, so the backward needs
//! only x and lse, and lse = x_t - out is recovered from the saved output: nothing of size V is
//! kept besides the logits themselves. The composition of candle ops keeps x - m and exp(x - m)
//! alive for backward (two more [rows, V] tensors: 2 x 100 MB for 512 tokens of a 49k vocabulary)
//! and makes four passes over them; this makes one pass forward and one backward, rows in
//! parallel.

use candle_core::{CpuStorage, CustomOp2, Layout, Result, Shape, Tensor};
use rayon::prelude::*;

use super::kernels::contiguous_slice;

/// (logits [rows, V] f32, targets [rows] u32) -> log p(target) [rows] f32.
pub(super) struct TargetLogprob;

/// lse of one row: exponentials in f32 as the composition computes them, summed in f64.
fn row_lse(row: &[f32]) -> f64 {
    let m = row.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    if m == f32::NEG_INFINITY {
        return f64::NEG_INFINITY;
    }
    let s: f64 = row.iter().map(|&x| f64::from((x - m).exp())).sum();
    f64::from(m) + s.ln()
}

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
        let mut dx = vec![0f32; x.len()];
        dx.par_chunks_exact_mut(vocab.max(1))
            .zip(x.par_chunks_exact(vocab.max(1)))
            .zip(og.par_chunks_exact(2).zip(self.targets.par_iter()))
            .for_each(|((d, row), (og, &t))| {
                let (out, g) = (og[0], og[1]);
                if g == 0.0 {
                    return; // masked (padding) rows contribute exact zeros
                }
                let lse = row[t as usize] - out;
                for (d, &x) in d.iter_mut().zip(row) {
                    *d = -g * (x - lse).exp();
                }
                d[t as usize] += g;
            });
        Ok((CpuStorage::F32(dx), xl.shape().clone()))
    }
}
