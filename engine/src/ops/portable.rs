//! The training ops where no CPU kernel runs (CUDA; half precision on any device): the forward from
//! candle's fused kernels, the backward from candle tensor ops, and only what the backward needs
//! kept alive.
//!
//! A composition of candle ops keeps every intermediate alive until the backward and launches one
//! kernel per elementwise op each way. Here the forward runs outside the graph (on detached inputs,
//! with the fused kernels the inference forward uses: `rms_norm`, `softmax_last_dim`, `rope`,
//! `rope_i`), so its intermediates are freed at once; a custom op then puts the result into the
//! graph with a backward written from the op's derivative. Its forward hands the precomputed
//! result's storage over as the op's output (a custom op must return a storage it owns; candle's
//! `Tensor::into_storage_and_layout`, patched in, moves it out without a copy), and the graph
//! keeps the op's inputs and output only, as the CPU ops do (`cpu_ops.rs`).
//!
//! Backward arithmetic runs in f32 for half-precision inputs (as `rms_norm_slow` computes its
//! forward) and gradients come back in the input's dtype.

use std::sync::Mutex;

use candle_core::{
    CpuStorage, CudaStorage, CustomOp1, CustomOp2, CustomOp3, DType, Layout, Result, Shape,
    Storage, Tensor, D,
};

use super::{internal_dtype, times};

/// A forward result computed outside the graph, handed to the op's forward exactly once.
pub(super) struct Precomputed(Mutex<Option<Tensor>>);

impl Precomputed {
    /// `out` must own its storage from offset 0 (a fresh result of a candle op, or a reshape of
    /// one): the op's forward takes that storage over (or copies it, if another tensor holds it).
    pub(super) fn new(out: Tensor) -> Self {
        Self(Mutex::new(Some(out)))
    }

    /// The result, taken out: the op's output becomes the only copy kept.
    fn take(&self) -> Result<Tensor> {
        let out = self
            .0
            .lock()
            .map_err(|_| candle_core::Error::Msg("portable op: a poisoned lock".into()))?
            .take();
        out.ok_or_else(|| candle_core::Error::Msg("portable op: forward ran twice".into()))
    }

    /// The result's storage and its shape: moved out when nothing else holds the result (it is
    /// a fresh one), else a copy.
    fn storage(&self) -> Result<(Storage, Shape)> {
        let out = self.take()?;
        let layout = out.layout();
        if !layout.is_contiguous() || layout.start_offset() != 0 {
            candle_core::bail!("portable op: the precomputed result does not own its storage")
        }
        let shape = layout.shape().clone();
        let storage = match out.into_storage_and_layout() {
            Ok((storage, _)) => storage,
            Err(shared) => {
                let (s, layout) = shared.storage_and_layout();
                s.try_clone(layout)?
            }
        };
        Ok((storage, shape))
    }

    pub(super) fn cpu(&self) -> Result<(CpuStorage, Shape)> {
        match self.storage()? {
            (Storage::Cpu(s), shape) => Ok((s, shape)),
            _ => candle_core::bail!("portable op: the precomputed result is on another device"),
        }
    }

    fn cuda(&self) -> Result<(CudaStorage, Shape)> {
        match self.storage()? {
            (Storage::Cuda(s), shape) => Ok((s, shape)),
            _ => candle_core::bail!("portable op: the precomputed result is on another device"),
        }
    }
}

/// `cpu_fwd` and `cuda_fwd` of a portable op (one storage and layout per argument): a copy of the
/// precomputed result, whatever the arguments hold.
macro_rules! precomputed_fwd {
    ($($s:ident $l:ident),+) => {
        fn cpu_fwd(&self, $($s: &CpuStorage, $l: &Layout),+) -> Result<(CpuStorage, Shape)> {
            self.out.cpu()
        }

        fn cuda_fwd(&self, $($s: &CudaStorage, $l: &Layout),+) -> Result<(CudaStorage, Shape)> {
            self.out.cuda()
        }
    };
}

/// `x` in the dtype the backward computes in.
fn up(x: &Tensor) -> Result<Tensor> {
    x.to_dtype(internal_dtype(x.dtype()))
}

/// softmax backward from the output y: dx = y * (g - sum(g * y)) over the last dim, in y's dtype.
fn softmax_grad(y: &Tensor, grad: &Tensor) -> Result<Tensor> {
    let (yf, gf) = (up(y)?, up(grad)?);
    let dot = (&gf * &yf)?.sum_keepdim(D::Minus1)?;
    (yf * gf.broadcast_sub(&dot)?)?.to_dtype(y.dtype())
}

/// RMSNorm: y = x r w with r = (mean(x^2) + eps)^(-1/2) (Zhang & Sennrich 2019, eq. 4).
pub(super) fn rms_norm(x: &Tensor, w: &Tensor, eps: f64) -> Result<Tensor> {
    let (x, w) = (x.contiguous()?, w.to_dtype(x.dtype())?.contiguous()?);
    let y = candle_nn::ops::rms_norm(&x.detach(), &w.detach(), eps as f32)?;
    x.apply_op2(
        &w,
        RmsNorm {
            eps,
            out: Precomputed::new(y),
        },
    )
}

struct RmsNorm {
    eps: f64,
    out: Precomputed,
}

impl CustomOp2 for RmsNorm {
    fn name(&self) -> &'static str {
        "rms-norm-train-portable"
    }

    precomputed_fwd!(_s1 _l1, _s2 _l2);

    /// Per row, with dot = sum_j w_j g_j x_j: dx = r (w g - x r^2 dot / d) and dw = sum over rows
    /// of g x r (the CPU kernel's formulas, `kernels::RmsNormCpu`).
    fn bwd(
        &self,
        x: &Tensor,
        w: &Tensor,
        _y: &Tensor,
        grad: &Tensor,
    ) -> Result<(Option<Tensor>, Option<Tensor>)> {
        let (xf, wf, gf) = (up(x)?, up(w)?, up(grad)?);
        let d = xf.dim(D::Minus1)? as f64;
        let r = (xf.sqr()?.mean_keepdim(D::Minus1)? + self.eps)?
            .sqrt()?
            .recip()?;
        let wg = gf.broadcast_mul(&wf)?;
        let dot = (&wg * &xf)?.sum_keepdim(D::Minus1)?;
        let c = ((r.sqr()? * dot)? / d)?;
        let dx = (wg - xf.broadcast_mul(&c)?)?.broadcast_mul(&r)?;
        let dw = if w.track_op() {
            let rows = xf.elem_count() / xf.dim(D::Minus1)?;
            let gxr = (gf * xf.broadcast_mul(&r)?)?;
            Some(gxr.reshape((rows, ()))?.sum(0)?.to_dtype(w.dtype())?)
        } else {
            None
        };
        Ok((Some(dx.to_dtype(x.dtype())?), dw))
    }
}

/// Rotary embedding of x [b, h, t, d] by the tables cos, sin [t, d/2] (RoFormer eq. 34); its
/// backward rotates the gradient by the opposite angle (R^T = R(-angle)).
pub(super) fn rope(
    x: &Tensor,
    cos: &Tensor,
    sin: &Tensor,
    interleaved: bool,
    scale: f64,
) -> Result<Tensor> {
    let x = x.contiguous()?;
    let cos = cos.to_dtype(x.dtype())?.contiguous()?;
    let sin = sin.to_dtype(x.dtype())?.contiguous()?;
    let y = times(rotate(&x.detach(), &cos, &sin, interleaved)?, scale)?;
    x.apply_op1(Rope {
        cos,
        neg_sin: sin.neg()?,
        interleaved,
        scale,
        out: Precomputed::new(y),
    })
}

/// candle's fused rope kernel of the layout (no graph).
fn rotate(x: &Tensor, cos: &Tensor, sin: &Tensor, interleaved: bool) -> Result<Tensor> {
    if interleaved {
        candle_nn::rotary_emb::rope_i(x, cos, sin)
    } else {
        candle_nn::rotary_emb::rope(x, cos, sin)
    }
}

/// s R x; backward R^T (s dy).
struct Rope {
    cos: Tensor,
    neg_sin: Tensor,
    interleaved: bool,
    scale: f64,
    out: Precomputed,
}

impl CustomOp1 for Rope {
    fn name(&self) -> &'static str {
        "rope-train-portable"
    }

    precomputed_fwd!(_s1 _l1);

    fn bwd(&self, _x: &Tensor, _y: &Tensor, grad: &Tensor) -> Result<Option<Tensor>> {
        let g = times(grad.contiguous()?, self.scale)?;
        Ok(Some(rotate(
            &g,
            &self.cos,
            &self.neg_sin,
            self.interleaved,
        )?))
    }
}

/// Softmax over the last dim (candle's fused kernel, in f32 for half-precision inputs).
pub(super) fn softmax(x: &Tensor) -> Result<Tensor> {
    let x = x.contiguous()?;
    let y = candle_nn::ops::softmax_last_dim(&up(&x.detach())?)?.to_dtype(x.dtype())?;
    x.apply_op1(Softmax {
        out: Precomputed::new(y),
    })
}

struct Softmax {
    out: Precomputed,
}

impl CustomOp1 for Softmax {
    fn name(&self) -> &'static str {
        "softmax-train-portable"
    }

    precomputed_fwd!(_s1 _l1);

    fn bwd(&self, _x: &Tensor, y: &Tensor, grad: &Tensor) -> Result<Option<Tensor>> {
        Ok(Some(softmax_grad(y, grad)?))
    }
}

/// softmax(q k^T + mask) v for q [b, g, m, d], k and v [b, g, n, d] and mask [r, n] (row i of
/// every [m, n] block gets mask row i % r), as `super::attention_train` describes. The mask is
/// added in q's internal dtype (f32 for half precision): the f32 mask the model's forward makes
/// is then used as it is, shared by the layers, where a converted copy was kept per layer.
///
/// The graph keeps q, k and v only, as the CPU op does (`attention.rs`): the backward recomputes
/// the probabilities from them with the forward's kernels (FlashAttention's recomputation, Dao et
/// al. 2022, sec. 3.1), which gives them the same bits. Keeping them instead held [b, heads, t,
/// keys] per layer until the backward: 566 MB in bf16 at 4 x 512 tokens over SmolLM2-135M's 30
/// layers, against one more q k^T and softmax per layer.
pub(super) fn attention(q: &Tensor, k: &Tensor, v: &Tensor, mask: &Tensor) -> Result<Tensor> {
    let (q, k, v) = (q.contiguous()?, k.contiguous()?, v.contiguous()?);
    let mask = mask.to_dtype(internal_dtype(q.dtype()))?.contiguous()?;
    let y = probs(&q.detach(), &k.detach(), &mask)?.matmul(&v.detach())?;
    q.apply_op3(
        &k,
        &v,
        Attention {
            mask,
            out: Precomputed::new(y),
        },
    )
}

/// The probabilities softmax(q k^T + mask) in q's dtype, outside the graph: the scores in q's
/// dtype, the mask (in the internal dtype) added and the fused softmax in the internal dtype.
fn probs(q: &Tensor, k: &Tensor, mask: &Tensor) -> Result<Tensor> {
    let (b, g, m, _) = q.dims4()?;
    let (r, n) = super::mask_rows(m, mask)?;
    let scores = q.matmul(&k.t()?)?;
    let masked = up(&scores.reshape((b, g, m / r, r, n))?)?.broadcast_add(mask)?;
    candle_nn::ops::softmax_last_dim(&masked)?
        .to_dtype(q.dtype())?
        .reshape((b, g, m, n))
}

struct Attention {
    /// The additive mask [r, n] in the internal dtype, contiguous.
    mask: Tensor,
    out: Precomputed,
}

impl CustomOp3 for Attention {
    fn name(&self) -> &'static str {
        "attention-train-portable"
    }

    precomputed_fwd!(_s1 _l1, _s2 _l2, _s3 _l3);

    /// With p recomputed, the products' gradients as candle's matmul backward writes them
    /// (y = p v: dp = dy v^T, dv = p^T dy; s = q k^T: dq = ds k, and dk = ds^T q, the transpose
    /// of the rule's (q^T ds)^T with the same sums, in k's layout where the rule's transposed view
    /// took a copy when stored) and the softmax's between them (ds = p (dp - sum(dp p))): the
    /// bits of the composition that kept p.
    fn bwd(
        &self,
        q: &Tensor,
        k: &Tensor,
        v: &Tensor,
        _y: &Tensor,
        grad: &Tensor,
    ) -> Result<(Option<Tensor>, Option<Tensor>, Option<Tensor>)> {
        let (q, k, v) = (q.detach(), k.detach(), v.detach());
        let p = probs(&q, &k, &self.mask)?;
        let dv = p.t()?.matmul(grad)?;
        let ds = softmax_grad(&p, &grad.matmul(&v.t()?)?)?;
        drop(p);
        Ok((Some(ds.matmul(&k)?), Some(ds.t()?.matmul(&q)?), Some(dv)))
    }
}

/// silu(gate) * up (Shazeer 2020, eq. 6); keeps gate and up for the backward.
pub(super) fn swiglu(gate: &Tensor, up_: &Tensor) -> Result<Tensor> {
    let (gate, up_) = (gate.contiguous()?, up_.contiguous()?);
    let y = (gate.detach().silu()? * up_.detach())?;
    gate.apply_op2(
        &up_,
        SwiGlu {
            out: Precomputed::new(y),
        },
    )
}

struct SwiGlu {
    out: Precomputed,
}

impl CustomOp2 for SwiGlu {
    fn name(&self) -> &'static str {
        "swiglu-train-portable"
    }

    precomputed_fwd!(_s1 _l1, _s2 _l2);

    /// With s = sigmoid(gate) and y = gate s: dgate = grad up (s (1 - y) + y), dup = grad y
    /// (`swiglu.rs`).
    fn bwd(
        &self,
        gate: &Tensor,
        up_: &Tensor,
        _out: &Tensor,
        grad: &Tensor,
    ) -> Result<(Option<Tensor>, Option<Tensor>)> {
        let (g, u, gr) = (up(gate)?, up(up_)?, up(grad)?);
        // candle's fused sigmoid: 1 / (1 + exp(-g)), the same operations as neg, exp, + 1 and
        // recip (the same bits on the CPU, checked once; the same expression in its CUDA
        // kernel), one kernel for four.
        let s = candle_nn::ops::sigmoid(&g)?;
        let y = (&g * &s)?;
        let dsilu = ((&s * (1.0 - &y)?)? + &y)?;
        let dgate = ((&gr * u)? * dsilu)?.to_dtype(gate.dtype())?;
        let dup = (gr * y)?.to_dtype(up_.dtype())?;
        Ok((Some(dgate), Some(dup)))
    }
}

/// Rows of the logits the log-prob op takes at a time: its [rows, vocab] temporaries are then
/// 48 MB each for SmolLM2's 49152-token vocabulary, not 403 MB at 4 x 512 tokens.
const LOGPROB_BLOCK_ROWS: usize = 256;

/// log p(target) per row of logits [rows, vocab] in f32: out = x_t - lse(x), computed outside
/// the graph by the composition (`super::target_logprobs_composed`, which converts to f32) a block
/// of rows at a time, so its intermediates are freed at once and stay small. The graph keeps the
/// logits in their own dtype (201 MB in bf16 at 4 x 512 tokens, where bf16 logits converted to
/// f32 first kept those and a 403 MB f32 copy). The backward also goes by blocks, in f32.
pub(super) fn target_logprobs(logits: &Tensor, targets: &Tensor) -> Result<Tensor> {
    target_logprobs_in_blocks(logits, targets, LOGPROB_BLOCK_ROWS)
}

/// [`target_logprobs`] `block_rows` rows at a time. Every row is computed by the same kernels
/// whatever the block, so the result has the same bits for any `block_rows` (tested).
pub(super) fn target_logprobs_in_blocks(
    logits: &Tensor,
    targets: &Tensor,
    block_rows: usize,
) -> Result<Tensor> {
    let (logits, targets) = (logits.contiguous()?, targets.contiguous()?);
    let detached = logits.detach();
    let out = row_blocks(logits.dim(0)?, block_rows)
        .map(|(r0, n)| {
            super::target_logprobs_composed(&detached.narrow(0, r0, n)?, &targets.narrow(0, r0, n)?)
        })
        .collect::<Result<Vec<_>>>()?;
    let out = Tensor::cat(&out, 0)?.contiguous()?;
    logits.apply_op2(
        &targets,
        TargetLogprob {
            out: Precomputed::new(out),
            block_rows,
        },
    )
}

/// (first row, rows) of each block of at most `block_rows` rows of `rows`.
fn row_blocks(rows: usize, block_rows: usize) -> impl Iterator<Item = (usize, usize)> {
    let block_rows = block_rows.max(1);
    (0..rows)
        .step_by(block_rows)
        .map(move |r0| (r0, block_rows.min(rows - r0)))
}

struct TargetLogprob {
    out: Precomputed,
    block_rows: usize,
}

impl CustomOp2 for TargetLogprob {
    fn name(&self) -> &'static str {
        "target-logprob-portable"
    }

    precomputed_fwd!(_s1 _l1, _s2 _l2);

    /// d out / d x_j = [j = t] - exp(x_j - lse), with lse = x_t - out recovered from the output
    /// (`logprob.rs`): nothing of the vocabulary's size is kept besides the logits. This runs
    /// first in the backward, while every activation is still alive, so it goes by blocks of
    /// rows into one gradient tensor: besides that, only a block's temporaries are alive (at
    /// 4 x 512 tokens it held three of 403 MB each; results/perf/gpu.md, "The log-prob op goes
    /// by blocks of 256 rows").
    fn bwd(
        &self,
        logits: &Tensor,
        targets: &Tensor,
        out: &Tensor,
        grad: &Tensor,
    ) -> Result<(Option<Tensor>, Option<Tensor>)> {
        let f32_ = |x: &Tensor| x.to_dtype(DType::F32);
        let t = targets.unsqueeze(D::Minus1)?;
        let g = f32_(grad)?.unsqueeze(D::Minus1)?;
        let lse = (f32_(&logits.gather(&t, D::Minus1)?)? - out.unsqueeze(D::Minus1)?)?;
        let dx = logits.zeros_like()?;
        for (r0, n) in row_blocks(logits.dim(0)?, self.block_rows) {
            let (t, g) = (t.narrow(0, r0, n)?, g.narrow(0, r0, n)?);
            let block = {
                let p = f32_(&logits.narrow(0, r0, n)?)?
                    .broadcast_sub(&lse.narrow(0, r0, n)?)?
                    .exp()?;
                p.broadcast_mul(&g.neg()?)?
            };
            block.scatter_add_set(&t, &g, D::Minus1)?;
            // The gradient in the logits' dtype, as a conversion to f32 would pass it back.
            dx.slice_set(&block.to_dtype(logits.dtype())?, 0, r0)?;
        }
        Ok((Some(dx), None))
    }
}
