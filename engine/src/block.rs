//! One decoder block: pre-norm grouped-query attention and a gated MLP (SwiGLU, or Gemma's GeGLU),
//! each added to the residual stream (Gemma 3 norms each output before adding it). `Pass::Infer`
//! uses candle's fused kernels (rms_norm, rope, softmax_last_dim) and the KV cache; `Pass::Train`
//! uses the differentiable compositions from `ops`.

use candle_core::Tensor;

use super::kv_cache::KvCache;
use super::lora::{AdapterMode, LoraLinear, Pass};
use super::model_config::{MlpAct, RopeLayout};
use super::ops;
use crate::error::Result;

/// Rotary angles for the tokens of one forward: [t, d/2] (all rows share positions) or
/// [batch, t, d/2] (per-row positions, left-padded decoding; inference only).
pub struct RopeSlice {
    /// cos of the angles.
    pub cos: Tensor,
    /// sin of the angles.
    pub sin: Tensor,
}

/// Shapes and numerics one block needs.
#[derive(Clone, Copy, Debug)]
pub struct BlockDims<'a> {
    /// Query heads.
    pub heads: usize,
    /// Key/value heads.
    pub kv_heads: usize,
    /// Width of one head.
    pub head_dim: usize,
    /// RMSNorm epsilon.
    pub eps: f64,
    /// Rotary pairing of the q/k weights.
    pub rope: RopeLayout,
    /// Per layer, whether it attends through the sliding window (`Step::window_mask`).
    pub windows: &'a [bool],
    /// The gated MLP's activation.
    pub act: MlpAct,
    /// Multiplies q k^T: head_dim^-1/2, or Gemma 3's query_pre_attn_scalar^-1/2.
    pub attn_scale: f64,
}

/// Weights of one block with their (optional) adapters.
pub struct Block {
    /// RMSNorm weight before attention.
    pub attn_norm: Tensor,
    /// Query projection.
    pub q: LoraLinear,
    /// Key projection.
    pub k: LoraLinear,
    /// Value projection.
    pub v: LoraLinear,
    /// Attention output projection.
    pub o: LoraLinear,
    /// RMSNorm weight before the MLP.
    pub mlp_norm: Tensor,
    /// SwiGLU gate.
    pub gate: LoraLinear,
    /// SwiGLU up.
    pub up: LoraLinear,
    /// SwiGLU down.
    pub down: LoraLinear,
    /// RMSNorm of each query head (Qwen3, Gemma 3).
    pub q_norm: Option<Tensor>,
    /// RMSNorm of each key head (Qwen3, Gemma 3).
    pub k_norm: Option<Tensor>,
    /// Gemma 3's norm of the attention output.
    pub post_attn_norm: Option<Tensor>,
    /// Gemma 3's norm of the MLP output.
    pub post_mlp_norm: Option<Tensor>,
}

/// Settings shared by every block of one forward call.
pub struct Step<'a> {
    /// Rotary angles of the new tokens.
    pub rope: &'a RopeSlice,
    /// Gemma 3's angles for its sliding-window layers (their own rotary base).
    pub local_rope: Option<&'a RopeSlice>,
    /// Additive mask [batch or 1, 1, 1, t, keys].
    pub mask: &'a Tensor,
    /// The same mask with the sliding window applied, for the layers that attend through one.
    pub window_mask: Option<&'a Tensor>,
    /// Adapters on or off.
    pub mode: AdapterMode,
    /// Fused inference or differentiable training numerics.
    pub pass: Pass,
}

/// RMSNorm (Zhang & Sennrich 2019): fused for inference, differentiable for training.
pub fn rms_norm(x: &Tensor, w: &Tensor, eps: f64, pass: Pass) -> Result<Tensor> {
    Ok(match pass {
        Pass::Infer => candle_nn::ops::rms_norm(x, w, eps as f32)?,
        Pass::Train => ops::rms_norm_train(x, w, eps)?,
    })
}

impl Block {
    /// x + attn(norm(x)), then + mlp(norm(.)). `cache` (inference only) holds earlier keys.
    pub fn forward(
        &self,
        x: &Tensor,
        dims: &BlockDims,
        layer: usize,
        cache: Option<&mut KvCache>,
        step: &Step,
    ) -> Result<Tensor> {
        let post = |y: Tensor, norm: &Option<Tensor>| -> Result<Tensor> {
            match norm {
                Some(w) => rms_norm(&y, w, dims.eps, step.pass),
                None => Ok(y),
            }
        };
        let h = rms_norm(x, &self.attn_norm, dims.eps, step.pass)?;
        let attn = self.attention(&h, dims, layer, cache, step)?;
        let x = (x + post(attn, &self.post_attn_norm)?)?;
        let h = rms_norm(&x, &self.mlp_norm, dims.eps, step.pass)?;
        let gate = self.gate.forward(&h, step.mode, step.pass)?;
        let up = self.up.forward(&h, step.mode, step.pass)?;
        let act = match (dims.act, step.pass) {
            (MlpAct::Silu, Pass::Infer) => (gate.silu()? * up)?,
            (MlpAct::Silu, Pass::Train) => ops::swiglu_train(&gate, &up)?,
            // candle's gelu is the tanh approximation, with a backward.
            (MlpAct::GeluTanh, _) => (gate.gelu()? * up)?,
        };
        let mlp = self.down.forward(&act, step.mode, step.pass)?;
        Ok((x + post(mlp, &self.post_mlp_norm)?)?)
    }

    fn attention(
        &self,
        x: &Tensor,
        dims: &BlockDims,
        layer: usize,
        cache: Option<&mut KvCache>,
        step: &Step,
    ) -> Result<Tensor> {
        let (b, t, _) = x.dims3()?;
        let (hd, kvh) = (dims.head_dim, dims.kv_heads);
        let heads = |p: &LoraLinear, n: usize| -> Result<Tensor> {
            Ok(p.forward(x, step.mode, step.pass)?
                .reshape((b, t, n, hd))?
                .transpose(1, 2)?)
        };
        // Qwen3 and Gemma 3 norm each head before the rotary embedding (transformers'
        // Qwen3Attention).
        let normed = |p: &LoraLinear, n: usize, norm: &Option<Tensor>| -> Result<Tensor> {
            match norm {
                None => heads(p, n),
                Some(w) => {
                    let y = p.forward(x, step.mode, step.pass)?.reshape((b, t, n, hd))?;
                    Ok(rms_norm(&y, w, dims.eps, step.pass)?.transpose(1, 2)?)
                }
            }
        };
        // Scaling q (t x d) rather than the scores (t x keys) keeps one fewer score-sized tensor
        // alive for backward; scaling inside q's rope keeps no extra q-sized one.
        let sliding = dims.windows.get(layer).copied().unwrap_or(false);
        let angles = match (sliding, step.local_rope) {
            (true, Some(local)) => local,
            _ => step.rope,
        };
        let q = rope(
            &normed(&self.q, dims.heads, &self.q_norm)?,
            angles,
            step.pass,
            dims.rope,
            dims.attn_scale,
        )?;
        let k = rope(
            &normed(&self.k, kvh, &self.k_norm)?,
            angles,
            step.pass,
            dims.rope,
            1.0,
        )?;
        // The training op reads v's heads view in place; inference's matmul and cache take it
        // contiguous.
        let v = match step.pass {
            Pass::Train => heads(&self.v, kvh)?,
            Pass::Infer => heads(&self.v, kvh)?.contiguous()?,
        };
        let (k, v) = match cache {
            Some(c) => c.append(layer, &k, &v)?,
            None => (k, v),
        };
        let rep = dims.heads / kvh;
        let mask = match (sliding, step.window_mask) {
            (true, Some(m)) => m,
            _ => step.mask,
        };
        // Grouped-query attention without copying K/V: query head j uses KV head j / rep, so the
        // rep query heads of one group stack along the query axis (Ainslie et al. 2023).
        let q = q.reshape((b, kvh, rep * t, hd))?;
        let y = match step.pass {
            // Decoding: one op per (row, KV head) over the cached keys each row sees
            // (ops/decode_attention.rs); prefills: candle's ops.
            Pass::Infer => ops::attention_infer(&q, &k, &v, mask)?,
            // One op over the keys the mask lets through, keeping no probabilities for backward
            // and writing the heads merged (ops/attention.rs).
            Pass::Train => ops::attention_train(&q, &k, &v, mask)?,
        };
        Ok(self.o.forward(&y, step.mode, step.pass)?)
    }

    /// This block's projections with their names relative to the block.
    pub fn projections(&self) -> [(&'static str, &LoraLinear); 7] {
        [
            ("attn.q_proj", &self.q),
            ("attn.k_proj", &self.k),
            ("attn.v_proj", &self.v),
            ("attn.o_proj", &self.o),
            ("mlp.gate_proj", &self.gate),
            ("mlp.up_proj", &self.up),
            ("mlp.down_proj", &self.down),
        ]
    }

    /// The seven projections, to change, in the order of `projections`.
    pub(super) fn projections_mut(&mut self) -> [&mut LoraLinear; 7] {
        let b = self;
        [
            &mut b.q,
            &mut b.k,
            &mut b.v,
            &mut b.o,
            &mut b.gate,
            &mut b.up,
            &mut b.down,
        ]
    }
}

/// Rotary embedding on [b, heads, t, d] times `scale`: fused kernel then the product for
/// inference, `ops::rope_train` (the same bits) for training.
fn rope(x: &Tensor, r: &RopeSlice, pass: Pass, layout: RopeLayout, scale: f64) -> Result<Tensor> {
    let interleaved = layout == RopeLayout::Interleaved;
    let rotated = match (pass, interleaved) {
        (Pass::Train, _) => return Ok(ops::rope_train(x, &r.cos, &r.sin, interleaved, scale)?),
        (Pass::Infer, true) => candle_nn::rotary_emb::rope_i(&x.contiguous()?, &r.cos, &r.sin)?,
        (Pass::Infer, false) => candle_nn::rotary_emb::rope(&x.contiguous()?, &r.cos, &r.sin)?,
    };
    Ok(ops::times(rotated, scale)?)
}

/// Causal additive mask [1, 1, 1, t, t] for a cache-less forward (0 on and below the diagonal).
pub fn causal_mask(t: usize, device: &candle_core::Device) -> Result<Tensor> {
    windowed_causal_mask(t, None, device)
}

/// [`causal_mask`] where query i sees key j only if j > i - `window` too: itself and the
/// `window - 1` keys before it (Mistral's sliding window; transformers' `sliding_window_overlay`).
pub fn windowed_causal_mask(
    t: usize,
    window: Option<usize>,
    device: &candle_core::Device,
) -> Result<Tensor> {
    let m: Vec<f32> = (0..t * t)
        .map(|i| {
            let (query, key) = (i / t, i % t);
            if key <= query && window.is_none_or(|w| query - key < w) {
                0.0
            } else {
                f32::NEG_INFINITY
            }
        })
        .collect();
    Ok(Tensor::from_vec(m, (1, 1, 1, t, t), device)?)
}
