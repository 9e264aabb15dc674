//! The attention probabilities of the training forward as one CPU op: softmax(q k^T + mask).
//!
//! Composed from candle ops, autograd keeps three score-sized tensors per layer alive until the
//! backward: the scores q k^T (input of the mask add), the masked scores (input of the softmax)
//! and the probabilities. At 4 x 512 tokens that is 3 x 37.7 MB per layer of SmolLM2-135M, 3.4 GB
//! over 30 layers. This op computes the scores with the backend's matmul, adds the mask and takes
//! the softmax in the same buffer, and keeps only its inputs (q, k, already alive) and the
//! probabilities. Its backward is the composition's, op for op (softmax backward, then the two
//! matmul gradients as candle's matmul backward forms them), so values and gradients are the ones
//! the composed path gives.

use candle_core::backend::BackendStorage;
use candle_core::{CpuStorage, CustomOp3, Layout, Result, Shape, Tensor};
use rayon::prelude::*;

use super::kernels::{
    contiguous_slice, softmax_in_place, KernelFloat, SoftmaxLastDimBwd, MIN_ROWS,
};

/// softmax(q k^T + mask) for q [b, g, m, d] and k [b, g, n, d]; the mask [r, n] is added to row
/// i of every [m, n] block as its row i % r (r divides m: grouped-query heads stack their t query
/// rows, Ainslie et al. 2023). Output [b, g, m, n].
pub(super) struct AttentionProbs;

impl AttentionProbs {
    /// Adds the mask row and takes the softmax of every row of `scores`, in place, rows in
    /// parallel.
    fn mask_softmax<T: KernelFloat>(scores: &mut [T], mask: &[T], n: usize) {
        let r = mask.len() / n.max(1);
        scores
            .par_chunks_exact_mut(n.max(1))
            .with_min_len(MIN_ROWS)
            .enumerate()
            .for_each(|(i, row)| {
                let m = &mask[(i % r) * n..(i % r + 1) * n];
                row.iter_mut().zip(m).for_each(|(v, &m)| *v += m);
                softmax_in_place(row);
            });
    }
}

impl CustomOp3 for AttentionProbs {
    fn name(&self) -> &'static str {
        "attention-probs-train"
    }

    fn cpu_fwd(
        &self,
        qs: &CpuStorage,
        ql: &Layout,
        ks: &CpuStorage,
        kl: &Layout,
        ms: &CpuStorage,
        ml: &Layout,
    ) -> Result<(CpuStorage, Shape)> {
        let (b, g, m, d) = ql.shape().dims4()?;
        let (b2, g2, n, d2) = kl.shape().dims4()?;
        let (r, n2) = ml.shape().dims2()?;
        if (b, g, d, n) != (b2, g2, d2, n2) || r == 0 || m % r != 0 {
            candle_core::bail!(
                "attention_probs_train: q {:?}, k {:?} and mask {:?} do not fit together",
                ql.dims(),
                kl.dims(),
                ml.dims()
            )
        }
        let kt = kl.transpose(2, 3)?;
        let scores = qs.matmul(ks, (b * g, m, n, d), ql, &kt)?;
        let out = match scores {
            CpuStorage::F32(mut v) => {
                Self::mask_softmax(&mut v, contiguous_slice::<f32>(ms, ml)?, n);
                CpuStorage::F32(v)
            }
            CpuStorage::F64(mut v) => {
                Self::mask_softmax(&mut v, contiguous_slice::<f64>(ms, ml)?, n);
                CpuStorage::F64(v)
            }
            _ => candle_core::bail!("attention_probs_train: the CPU op handles f32 and f64 only"),
        };
        Ok((out, Shape::from((b, g, m, n))))
    }

    fn bwd(
        &self,
        q: &Tensor,
        k: &Tensor,
        _mask: &Tensor,
        probs: &Tensor,
        grad: &Tensor,
    ) -> Result<(Option<Tensor>, Option<Tensor>, Option<Tensor>)> {
        // d scores = probs * (grad - sum(grad * probs)); the mask add passes it through unchanged.
        let ds = grad
            .contiguous()?
            .apply_op2_no_bwd(probs, &SoftmaxLastDimBwd)?;
        let (dq, dk) = score_grads(q, k, &ds)?;
        Ok((Some(dq), Some(dk), None))
    }
}

/// The gradients of q and k from ds, the gradient of the scores q k^T. With kt = k^T, candle's
/// matmul backward gives dq = ds @ kt^T and dkt = q^T @ ds, and the transpose's backward
/// dk = dkt^T; the same operations here, so the values are the composition's.
pub(super) fn score_grads(q: &Tensor, k: &Tensor, ds: &Tensor) -> Result<(Tensor, Tensor)> {
    Ok((ds.matmul(k)?, q.t()?.matmul(ds)?.t()?))
}
