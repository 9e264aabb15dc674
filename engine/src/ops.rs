//! Differentiable building blocks for the TRAINING forward pass.
//!
//! candle's fused kernels (`rms_norm`, `softmax_last_dim`, `rope`, `rope_i`) have no backward: they
//! run through `apply_op*_no_bwd` and silently detach their output (their results carry no
//! gradient). The training
//! forward therefore uses the functions here, which are built from differentiable tensor ops and
//! agree with the fused kernels in the forward direction (unit tests in `ops/tests.rs` pin that).
//! On CPU (f32/f64) they run as custom ops with hand-written backward (`ops/cpu_ops.rs`); elsewhere
//! (CUDA, half precision) as the "portable" ops of `ops/portable.rs`: candle's fused forward kernels and a
//! backward from tensor ops, keeping the same tensors alive as the CPU kernels. The compositions
//! (`*_composed`) are the reference both are tested against.
//!
//! `frozen_matmul` and `frozen_embedding` exist for memory and time: candle's matmul backward
//! always computes the gradient of both operands, so with LoRA every frozen projection (and the
//! tied lm-head, a [49152, 576] table) got a full weight gradient, making LoRA as costly as full
//! fine-tuning. `frozen_matmul` is a custom op whose backward returns only the input gradient.
//! Its forward calls the backend's own matmul, so it is the same kernel on CPU and CUDA; with a
//! weight packed for bf16 products (`model.cpu_matmul: bf16`, `ops/bf16_weight.rs`), its products
//! are bf16 products instead (AMX where the CPU has it, AVX-512 or AVX2 otherwise), as are the
//! LoRA op's and the inference projections'.

mod attention;
mod bf16_weight;
mod cpu_ops;
mod decode_attention;
#[cfg(test)]
mod decode_attention_tests;
mod frozen;
mod lora_linear;
mod lora_linear_cpu;
#[cfg(test)]
mod lora_linear_tests;
mod portable;
#[cfg(test)]
mod portable_tests;
#[cfg(x86_kernels)]
mod skinny;
#[cfg(all(test, x86_kernels))]
mod skinny_tests;
mod swiglu;
mod target_logprob;
#[cfg(test)]
pub(crate) mod tests;

use std::sync::Arc;

use candle_core::{DType, Result, Tensor, D};

pub use bf16_weight::Bf16Weight;

use attention::Attention;
use cpu_ops::{RmsNormCpu, RopeCpu, SoftmaxLastDimTrain};
use decode_attention::DecodeAttention;
use frozen::FrozenMatmul;
use lora_linear::LoraLinear;
use swiglu::SwiGlu;
use target_logprob::TargetLogprob;

/// Whether the CPU kernels run for `x`: in a build with the feature `cpu-kernels` unless
/// `EMPATHY_ENGINE_KERNELS=portable` (`kernels/choice.rs`), on the CPU in f32 or f64 (`portable`
/// handles the rest).
fn cpu_kernel(x: &Tensor) -> bool {
    cfg!(feature = "cpu-kernels")
        && crate::kernels::choice::choice() != crate::kernels::choice::KernelChoice::Portable
        && x.device().is_cpu()
        && matches!(x.dtype(), DType::F32 | DType::F64)
}

/// Internal dtype for reductions: half types are upcast to f32 (as candle's `rms_norm_slow` does).
fn internal_dtype(dtype: DType) -> DType {
    match dtype {
        DType::F16 | DType::BF16 => DType::F32,
        d => d,
    }
}

/// RMSNorm built from differentiable ops (candle's fused rms_norm detaches its output).
///
/// y = x / sqrt(mean(x^2, last dim) + eps) * weight (Zhang & Sennrich 2019, eq. 4), computed in
/// f32 for half-precision inputs and cast back.
pub fn rms_norm_train(x: &Tensor, weight: &Tensor, eps: f64) -> Result<Tensor> {
    let hidden = x.dim(D::Minus1)?;
    if weight.dims() != [hidden] {
        candle_core::bail!(
            "rms_norm_train: weight shape {:?} does not match hidden size {hidden} of x {:?}",
            weight.shape(),
            x.shape()
        )
    }
    if cpu_kernel(x) {
        let w = weight.to_dtype(x.dtype())?;
        return x.contiguous()?.apply_op2(&w, RmsNormCpu { eps });
    }
    if x.dtype() == DType::F64 {
        // candle's fused rms_norm, which the portable op runs forward, has no f64 kernel.
        return rms_norm_composed(x, weight, eps);
    }
    portable::rms_norm(x, weight, eps)
}

/// RMSNorm from candle ops only: the reference of the tests, and the path for f64 without the
/// CPU kernels.
fn rms_norm_composed(x: &Tensor, weight: &Tensor, eps: f64) -> Result<Tensor> {
    let x_dtype = x.dtype();
    let xf = x.to_dtype(internal_dtype(x_dtype))?;
    let mean_sq = xf.sqr()?.mean_keepdim(D::Minus1)?;
    let inv_rms = (mean_sq + eps)?.sqrt()?.recip()?;
    let normed = xf.broadcast_mul(&inv_rms)?.to_dtype(x_dtype)?;
    normed.broadcast_mul(&weight.to_dtype(x_dtype)?)
}

/// Rotary embedding with backward. `cos`/`sin`: [seq, head_dim/2], already narrowed to the
/// positions of x. x: [batch, heads, seq, head_dim]. `interleaved = true` for GGUF weights
/// (pairs (2i, 2i+1)), false for HF safetensors (halves).
///
/// Each pair (x0, x1) rotates by the angle of its position and frequency (Su et al. 2021, RoFormer
/// eq. 34): y0 = x0 cos - x1 sin, y1 = x0 sin + x1 cos. Interleaved pairs are (x[2i], x[2i+1])
/// (candle's `rope_i`); half-split pairs are (x[i], x[i + d/2]) (candle's `rope`).
///
/// The result is multiplied by `scale` (attention's 1/sqrt(d) rides on q's rope), with the bits
/// of rope followed by `x * scale` but without that product's input kept for backward: one fewer
/// q-sized tensor per layer. Pass 1.0 for plain rope.
pub fn rope_train(
    x: &Tensor,
    cos: &Tensor,
    sin: &Tensor,
    interleaved: bool,
    scale: f64,
) -> Result<Tensor> {
    let (_b, _h, t, d) = x.dims4()?;
    let half = d / 2;
    for (name, table) in [("cos", cos), ("sin", sin)] {
        if d % 2 != 0 || table.dims() != [t, half] {
            candle_core::bail!(
                "rope_train: {name} has shape {:?}, expected [{t}, {half}] for x {:?} \
                 (narrow the table to the positions of x)",
                table.shape(),
                x.shape()
            )
        }
    }
    if cpu_kernel(x) {
        let table = |t: &Tensor| -> Result<std::sync::Arc<[f64]>> {
            Ok(t.to_dtype(DType::F64)?
                .flatten_all()?
                .to_vec1::<f64>()?
                .into())
        };
        let op = RopeCpu {
            cos: table(cos)?,
            sin: table(sin)?,
            interleaved,
            scale,
            inverse: false,
        };
        return rows_contiguous(x)?.apply_op1(op);
    }
    portable::rope(x, cos, sin, interleaved, scale)
}

/// x * s, as candle's `x * s` rounds; x itself for s = 1 (so plain rope keeps its bits).
pub(crate) fn times(x: Tensor, s: f64) -> Result<Tensor> {
    if s == 1.0 {
        Ok(x)
    } else {
        x.affine(s, 0.0)
    }
}

/// Rope from candle ops only: the reference of the tests.
#[cfg(test)]
fn rope_composed(x: &Tensor, cos: &Tensor, sin: &Tensor, interleaved: bool) -> Result<Tensor> {
    let (b, h, t, d) = x.dims4()?;
    let half = d / 2;
    let cos = cos.to_dtype(x.dtype())?;
    let sin = sin.to_dtype(x.dtype())?;
    if interleaved {
        let cos = cos.reshape((1, 1, t, half, 1))?;
        let sin = sin.reshape((1, 1, t, half, 1))?;
        let xp = x.reshape((b, h, t, half, 2))?;
        let x0 = xp.narrow(D::Minus1, 0, 1)?;
        let x1 = xp.narrow(D::Minus1, 1, 1)?;
        let y0 = (x0.broadcast_mul(&cos)? - x1.broadcast_mul(&sin)?)?;
        let y1 = (x0.broadcast_mul(&sin)? + x1.broadcast_mul(&cos)?)?;
        Tensor::cat(&[y0, y1], D::Minus1)?.reshape((b, h, t, d))
    } else {
        let cos = cos.reshape((1, 1, t, half))?;
        let sin = sin.reshape((1, 1, t, half))?;
        let x0 = x.narrow(D::Minus1, 0, half)?;
        let x1 = x.narrow(D::Minus1, half, half)?;
        let y0 = (x0.broadcast_mul(&cos)? - x1.broadcast_mul(&sin)?)?;
        let y1 = (x0.broadcast_mul(&sin)? + x1.broadcast_mul(&cos)?)?;
        Tensor::cat(&[y0, y1], D::Minus1)
    }
}

/// Softmax over the last dim with backward (numerically stable).
///
/// softmax(x) = exp(x - m) / sum exp(x - m) with m the row max. On CPU (f32/f64) this is a custom
/// op whose backward is dx = y * (g - sum(g * y)) from the saved output y: it keeps only x and y
/// alive and runs several times faster than the composition of candle ops. Elsewhere candle's
/// fused softmax with the same backward (`ops/portable.rs`). Half-precision inputs are computed in
/// f32 and cast back.
pub fn softmax_train(x: &Tensor) -> Result<Tensor> {
    if cpu_kernel(x) {
        return x.contiguous()?.apply_op1(SoftmaxLastDimTrain);
    }
    portable::softmax(x)
}

/// Attention softmax(q k^T + mask) v with backward, for the training forward, its heads merged.
///
/// q: [b, g, m, d] (already scaled by 1/sqrt(d)), k and v: [b, g, n, d], mask: [.., r, n]
/// additive (0 or -inf; leading dims 1), added to row i of every [m, n] block of scores as its
/// row i % r -> [b, r, g * (m / r) * d], the [`merge_heads`] of the [b, g, m, d] result. On CPU
/// (f32/f64) one custom op (`ops/attention.rs`) that multiplies only the keys the mask lets
/// through, keeps no probabilities (the backward recomputes them), reads q, k and v in place and
/// writes the merged layout itself; elsewhere the probabilities from candle's matmul and fused
/// softmax, then a matmul with v, as one portable op that keeps no probabilities either
/// (`ops/portable.rs`). Both give the values and gradients of [`attention_probs_composed`] times v,
/// up to summation order.
pub fn attention_train(q: &Tensor, k: &Tensor, v: &Tensor, mask: &Tensor) -> Result<Tensor> {
    let (r, n) = (mask.dim(D::Minus2)?, mask.dim(D::Minus1)?);
    if mask.elem_count() != r * n {
        candle_core::bail!(
            "attention_train: one [t, keys] mask for every row and head expected, got {:?}",
            mask.dims()
        )
    }
    if cpu_kernel(q) {
        let op = Attention {
            mask: mask.to_dtype(q.dtype())?.reshape((r, n))?.contiguous()?,
        };
        return rows_contiguous(q)?.apply_op3(&rows_contiguous(k)?, &rows_contiguous(v)?, op);
    }
    merge_heads(&portable::attention(q, k, v, &mask.reshape((r, n))?)?, r)
}

/// Attention at inference, softmax(q k^T + mask) v, for q [b, g, m, d] (grouped-query heads
/// stacked as in [`attention_train`]), k and v [b, g, n, d] and an additive mask whose last two
/// dims are [r, n] (r new positions per row), shared by the rows or one per row ([b, .., r, n]).
/// Returns [b, r, heads * d], the heads side by side. On the CPU in f32/f64, for one new position
/// (decoding), one op that reads the KV cache in place and multiplies only the keys of each row's
/// visible range (`ops/decode_attention.rs`); elsewhere (prefills, CUDA, half precision) the
/// composition [`attention_infer_composed`], where v must be a matrix per head that candle's
/// matmul reads (contiguous, or the KV cache's view).
pub fn attention_infer(q: &Tensor, k: &Tensor, v: &Tensor, mask: &Tensor) -> Result<Tensor> {
    let b = q.dim(0)?;
    let (r, n) = (mask.dim(D::Minus2)?, mask.dim(D::Minus1)?);
    let mb = mask.elem_count() / (r * n).max(1);
    if cpu_kernel(q) && r == 1 && (mb == 1 || mb == b) {
        let op = DecodeAttention {
            mask: mask
                .to_dtype(q.dtype())?
                .reshape((mb, r, n))?
                .contiguous()?,
        };
        return rows_contiguous(q)?.apply_op3_no_bwd(
            &rows_contiguous(k)?,
            &rows_contiguous(v)?,
            &op,
        );
    }
    attention_infer_composed(q, k, v, mask)
}

/// [`attention_infer`] from candle ops: q k^T, the mask add, the fused softmax, P v, the heads
/// merged. The reference of the decode op and the path everywhere else.
pub fn attention_infer_composed(
    q: &Tensor,
    k: &Tensor,
    v: &Tensor,
    mask: &Tensor,
) -> Result<Tensor> {
    let (b, g, m, _) = q.dims4()?;
    let (r, n) = (mask.dim(D::Minus2)?, mask.dim(D::Minus1)?);
    let scores = q.matmul(&k.t()?)?;
    let scores = scores
        .reshape((b, g, m / r, r, n))?
        .broadcast_add(&mask.to_dtype(scores.dtype())?)?;
    let y = candle_nn::ops::softmax_last_dim(&scores)?
        .reshape((b, g, m, n))?
        .matmul(v)?;
    merge_heads(&y, r)
}

/// Attention's output [b, g, m, d], whose groups stack `m / r` query heads of `r` rows each
/// (grouped-query attention), as [b, r, g * (m / r) * d]: each position's heads side by side, the
/// o projection's input.
pub fn merge_heads(y: &Tensor, r: usize) -> Result<Tensor> {
    let (b, g, m, d) = y.dims4()?;
    let heads = g * (m / r);
    y.reshape((b, heads, r, d))?
        .transpose(1, 2)?
        .reshape((b, r, heads * d))
}

/// x itself when its last dim is contiguous (the CPU kernels read such rows in place), else a
/// contiguous copy.
fn rows_contiguous(x: &Tensor) -> Result<Tensor> {
    match x.stride().last() {
        Some(1) => Ok(x.clone()),
        _ => x.contiguous(),
    }
}

/// (r, n) of the [r, n] attention mask for m query rows per block; r must divide m (a block's
/// query rows are r-row groups that share the mask).
fn mask_rows(m: usize, mask: &Tensor) -> Result<(usize, usize)> {
    let (r, n) = mask.dims2()?;
    if r == 0 || !m.is_multiple_of(r) {
        candle_core::bail!("attention_train: mask rows {r} do not divide query rows {m}")
    }
    Ok((r, n))
}

/// The attention probabilities composed: matmul, mask add, [`softmax_train`]; mask [r, n]. The
/// reference of the tests, public for the benchmark that compares it with the CPU op.
pub fn attention_probs_composed(q: &Tensor, k: &Tensor, mask: &Tensor) -> Result<Tensor> {
    let (b, g, m, _) = q.dims4()?;
    let (r, n) = mask_rows(m, mask)?;
    let scores = q.matmul(&k.t()?)?.reshape((b, g, m / r, r, n))?;
    softmax_train(&scores.broadcast_add(mask)?)?.reshape((b, g, m, n))
}

/// Softmax from candle ops only, max detached (the result does not depend on it, so its gradient
/// through the max is exactly zero): the reference of the tests.
#[cfg(test)]
fn softmax_composed(x: &Tensor) -> Result<Tensor> {
    let x_dtype = x.dtype();
    let xf = x.to_dtype(internal_dtype(x_dtype))?;
    let max = xf.max_keepdim(D::Minus1)?.detach();
    let num = xf.broadcast_sub(&max)?.exp()?;
    let den = num.sum_keepdim(D::Minus1)?;
    num.broadcast_div(&den)?.to_dtype(x_dtype)
}

/// The SwiGLU product silu(gate) * up with backward (Shazeer 2020, eq. 6). On CPU (f32/f64) one op
/// that keeps only gate and up for backward and makes one pass each way (`ops/swiglu.rs`); its
/// values equal the composition's bit for bit. Elsewhere the same from candle ops, keeping gate
/// and up only (`ops/portable.rs`).
pub fn swiglu_train(gate: &Tensor, up: &Tensor) -> Result<Tensor> {
    if cpu_kernel(gate) {
        return gate.contiguous()?.apply_op2(&up.contiguous()?, SwiGlu);
    }
    portable::swiglu(gate, up)
}

/// Rows for which [`head_matmul_gemm`] computes (w x^T)^T: faster at 4 to 16 rows, level at 1 and
/// 32; kept to the range below 16 that decoding batches use (results/perf/step.md, "The
/// vocabulary head as (E x^T)^T at 2-15 rows").
const HEAD_TRANSPOSED_ROWS: std::ops::Range<usize> = 2..16;

/// x @ w^T for the vocabulary head at inference (x: [m, hidden], w: [vocab, hidden]): bf16
/// products when `bf16` packs w ([`bf16_product`]), else the few-rows op of
/// `ops/skinny.rs` where it applies (up to 32 rows of x in f32 on a CPU with AVX-512 or AVX2), else
/// [`head_matmul_gemm`].
pub fn head_matmul(x: &Tensor, w: &Tensor, bf16: Option<&Arc<Bf16Weight>>) -> Result<Tensor> {
    if let Some(y) = bf16_product(x, bf16)? {
        return Ok(y);
    }
    match skinny_matmul(x, w)? {
        Some(y) => Ok(y),
        None => head_matmul_gemm(x, w),
    }
}

/// The head by candle's matmul. For a few rows of a row-major f32 w on the CPU it computes
/// (w x^T)^T: gemm then takes the long w as its left operand in place rather than reading w^T
/// strided, faster at 4 to 16 rows, level at one row, and equal bit for bit (results/perf/step.md,
/// "The vocabulary head as (E x^T)^T at 2-15 rows"; `ops::tests` pins the bits).
fn head_matmul_gemm(x: &Tensor, w: &Tensor) -> Result<Tensor> {
    let cpu_f32 = w.device().is_cpu() && w.dtype() == DType::F32 && w.is_contiguous();
    if cpu_f32 && HEAD_TRANSPOSED_ROWS.contains(&x.dim(0)?) {
        return w.matmul(&x.t()?)?.t()?.contiguous();
    }
    x.matmul(&w.t()?)
}

/// x @ w^T at inference (x: [m, in], w: [out, in]): bf16 products when `bf16` packs w
/// ([`bf16_product`]); else for the few rows of a decode step or a turn's prefill, on a CPU with
/// AVX-512 or AVX2 in f32, one op that streams w once (`ops/skinny.rs`); elsewhere candle's
/// matmul.
pub fn linear_infer(x: &Tensor, w: &Tensor, bf16: Option<&Arc<Bf16Weight>>) -> Result<Tensor> {
    if let Some(y) = bf16_product(x, bf16)? {
        return Ok(y);
    }
    match skinny_matmul(x, w)? {
        Some(y) => Ok(y),
        None => x.matmul(&w.t()?),
    }
}

/// x @ w^T in bf16 products (`ops/bf16_weight.rs`) when w is packed.
fn bf16_product(x: &Tensor, bf16: Option<&Arc<Bf16Weight>>) -> Result<Option<Tensor>> {
    bf16.map(|p| p.product(&x.contiguous()?, true)).transpose()
}

/// x @ w^T by `ops/skinny.rs` where it applies (`skinny::applies`: up to 96 rows of x for a
/// column-major w, 32 for a row-major one, in f32 on a CPU with AVX-512 or AVX2). Values equal candle's
/// matmul up to summation order.
#[cfg(x86_kernels)]
fn skinny_matmul(x: &Tensor, w: &Tensor) -> Result<Option<Tensor>> {
    if skinny::applies(x, w)? {
        return Ok(Some(
            x.contiguous()?.apply_op2_no_bwd(w, &skinny::SkinnyMatmul)?,
        ));
    }
    Ok(None)
}

/// Without the x86 kernels every product is candle's matmul.
#[cfg(not(x86_kernels))]
fn skinny_matmul(_x: &Tensor, _w: &Tensor) -> Result<Option<Tensor>> {
    Ok(None)
}

/// w + scale (u v) as a new contiguous tensor, for w [m, n] contiguous, u [m, r] and v [r, n]
/// (any strides), all f32 on the CPU: w copied once and the product added into the copy by gemm
/// (dst's columns split between the threads), so no [m, n] product or scaled product is written.
/// scale multiplies u first: for a power of two, as LoRA's alpha / r usually is, the same
/// values as scale (u v). A merged weight's transpose (`LoraLinear::set_merged`).
pub fn plus_low_rank(w: &Tensor, u: &Tensor, v: &Tensor, scale: f64) -> Result<Tensor> {
    let (m, n) = w.dims2()?;
    let r = u.dim(1)?;
    if u.dims2()? != (m, r) || v.dims2()? != (r, n) || !w.is_contiguous() {
        candle_core::bail!(
            "plus_low_rank: w {:?} (contiguous), u {:?} and v {:?} do not fit together",
            w.dims(),
            u.dims(),
            v.dims()
        )
    }
    let mut dst = w.flatten_all()?.to_vec1::<f32>()?;
    let u = (u * scale)?;
    let ((us, ul), (vs, vl)) = (u.storage_and_layout(), v.storage_and_layout());
    let (u, v) = (
        crate::kernels::view::View::of_cpu(&us, ul, "plus_low_rank")?,
        crate::kernels::view::View::of_cpu(&vs, vl, "plus_low_rank")?,
    );
    crate::kernels::view::gemm_into_par(&mut dst, n, true, (u, v), (m, n, r));
    Tensor::from_vec(dst, (m, n), w.device())
}

/// x @ w^T where w is frozen: backward returns the gradient for x only and never computes or
/// stores a gradient for w. x: [..., in], w: [out, in] -> [..., out]. With `bf16` (w packed),
/// both products are bf16 products ([`Bf16Weight`]).
pub fn frozen_matmul(x: &Tensor, w: &Tensor, bf16: Option<&Arc<Bf16Weight>>) -> Result<Tensor> {
    let (out_dim, in_dim) = w.dims2()?;
    let dims = x.dims();
    if dims.is_empty() || dims[dims.len() - 1] != in_dim {
        candle_core::bail!(
            "frozen_matmul: x {:?} does not end in the in-dim {in_dim} of w {:?}",
            x.shape(),
            w.shape()
        )
    }
    let mut out_dims = dims.to_vec();
    let last = out_dims.len() - 1;
    out_dims[last] = out_dim;
    let m = x.elem_count() / in_dim;
    let x2 = x.contiguous()?.reshape((m, in_dim))?;
    x2.apply_op2(&frozen_weight(w, bf16)?, FrozenMatmul(bf16.cloned()))?
        .reshape(out_dims)
}

/// A frozen weight as the ops take it: detached, so that autograd never walks into it (even when
/// it happens to be a Var). A column-major w (how LoraLinear stores weights on the CPU) is used in
/// place: the matmul reads either layout, and a row-major copy would be kept per layer until
/// backward.
fn frozen_weight(w: &Tensor, bf16: Option<&Arc<Bf16Weight>>) -> Result<Tensor> {
    // Packed: the products read the pack, and w is the stand-in `LoraLinear::pack_bf16` leaves.
    let in_place = bf16.is_some() || w.is_contiguous() || w.t()?.is_contiguous();
    Ok(if in_place {
        w.detach()
    } else {
        w.contiguous()?.detach()
    })
}

/// A LoRA projection of the training forward, y = x W^T (+ b) + scale (x A^T) B^T, with W and b
/// frozen (Hu et al. 2021, eq. 3): one op that keeps only x, A, B and y for backward, where the
/// composition of candle ops keeps every product (`ops/lora_linear.rs`). Its values equal the
/// composition's bit for bit (the same kernels in the same order) on every backend. x [rows, in],
/// W [out, in] in either memory order, b [out]; A [r, in] and B [out, r] in f32 whatever x's
/// dtype (the adapter branch computes in f32 and casts its result back). With `bf16` (W packed),
/// the base's two products are bf16 products, the adapter's stay f32.
pub fn lora_linear_train(
    x: &Tensor,
    (w, bf16): (&Tensor, Option<&Arc<Bf16Weight>>),
    bias: Option<&Tensor>,
    a: &Tensor,
    b: &Tensor,
    scale: f64,
) -> Result<Tensor> {
    let weight = frozen_weight(w, bf16)?;
    let bias = match bias {
        Some(b) => Some(b.to_dtype(x.dtype())?.contiguous()?.detach()),
        None => None,
    };
    let op = LoraLinear {
        weight,
        bias,
        scale,
        hs: Default::default(),
        bf16: bf16.cloned(),
    };
    x.contiguous()?
        .apply_op3(&a.contiguous()?, &b.contiguous()?, op)
}

/// Embedding lookup whose backward produces no gradient for the (frozen) table.
///
/// ids: any shape of u32/i64 token ids; table: [vocab, hidden] -> [ids..., hidden]. The table is
/// detached, so the lookup is a leaf of the graph: nothing flows into the table.
pub fn frozen_embedding(ids: &Tensor, table: &Tensor) -> Result<Tensor> {
    let (_vocab, hidden) = table.dims2()?;
    let mut out_dims = ids.dims().to_vec();
    out_dims.push(hidden);
    let flat = ids.flatten_all()?.contiguous()?;
    table.detach().index_select(&flat, 0)?.reshape(out_dims)
}

/// log p(target) per row: logits [rows, vocab] (computed in f32), targets [rows] u32 -> [rows] f32.
///
/// log p(t) = x_t - logsumexp(x). On CPU in f32/f64 this is a custom op (`ops/target_logprob.rs`) that
/// keeps only the f32 logits alive for backward and makes one pass each way; elsewhere the
/// composition below, run outside the graph a block of rows at a time, with the same backward
/// (`ops/portable.rs`). The portable op keeps the logits in their own dtype: converted to f32 first, bf16
/// logits would stay alive under the conversion as well as the f32 copy the op kept.
pub fn target_logprobs(logits: &Tensor, targets: &Tensor) -> Result<Tensor> {
    if cpu_kernel(logits) {
        return logits
            .to_dtype(DType::F32)?
            .contiguous()?
            .apply_op2(&targets.contiguous()?, TargetLogprob);
    }
    portable::target_logprobs(logits, targets)
}

/// log p(target) from candle ops only, max detached (logsumexp does not depend on it, so its
/// gradient through the max is exactly zero): the reference of the tests, and what the CPU op
/// replaced there (the lora_ops benchmark compares the two).
pub fn target_logprobs_composed(logits: &Tensor, targets: &Tensor) -> Result<Tensor> {
    let logits = logits.to_dtype(DType::F32)?;
    let max = logits.max_keepdim(D::Minus1)?.detach();
    let lse = (logits
        .broadcast_sub(&max)?
        .exp()?
        .sum_keepdim(D::Minus1)?
        .log()?
        + max)?;
    let picked = logits.gather(&targets.contiguous()?.unsqueeze(D::Minus1)?, D::Minus1)?;
    (picked - lse)?.squeeze(D::Minus1)
}
