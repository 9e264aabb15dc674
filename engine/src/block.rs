//! One decoder block: pre-norm grouped-query attention and a SwiGLU MLP, each added to the
//! residual stream. `Pass::Infer` uses candle's fused kernels (rms_norm, rope, softmax_last_dim)
//! and the KV cache; `Pass::Train` uses the differentiable compositions from `ops`.

use candle_core::Tensor;

use super::kv_cache::KvCache;
use super::lora::{AdapterMode, LoraLinear, Pass};
use super::model_config::RopeLayout;
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
pub struct BlockDims {
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
}

/// Settings shared by every block of one forward call.
pub struct Step<'a> {
    /// Rotary angles of the new tokens.
    pub rope: &'a RopeSlice,
    /// Additive mask [batch or 1, 1, 1, t, keys].
    pub mask: &'a Tensor,
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
        let h = rms_norm(x, &self.attn_norm, dims.eps, step.pass)?;
        let x = (x + self.attention(&h, dims, layer, cache, step)?)?;
        let h = rms_norm(&x, &self.mlp_norm, dims.eps, step.pass)?;
        let gate = self.gate.forward(&h, step.mode, step.pass)?;
        let up = self.up.forward(&h, step.mode, step.pass)?;
        let act = match step.pass {
            Pass::Infer => (gate.silu()? * up)?,
            Pass::Train => ops::swiglu_train(&gate, &up)?,
        };
        let mlp = self.down.forward(&act, step.mode, step.pass)?;
        Ok((x + mlp)?)
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
        // Scaling q (t x d) rather than the scores (t x keys) keeps one fewer score-sized tensor
        // alive for backward; scaling inside q's rope keeps no extra q-sized one.
        let scale = 1.0 / (hd as f64).sqrt();
        let q = rope(&heads(&self.q, dims.heads)?, step, dims.rope, scale)?;
        let k = rope(&heads(&self.k, kvh)?, step, dims.rope, 1.0)?;
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
        // Grouped-query attention without copying K/V: query head j uses KV head j / rep, so the
        // rep query heads of one group stack along the query axis (Ainslie et al. 2023).
        let q = q.reshape((b, kvh, rep * t, hd))?;
        let y = match step.pass {
            // Decoding: one op per (row, KV head) over the cached keys each row sees
            // (ops/decode_attention.rs); prefills: candle's ops.
            Pass::Infer => ops::attention_infer(&q, &k, &v, step.mask)?,
            // One op over the keys the mask lets through, keeping no probabilities for backward
            // and writing the heads merged (ops/attention.rs).
            Pass::Train => ops::attention_train(&q, &k, &v, step.mask)?,
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
fn rope(x: &Tensor, step: &Step, layout: RopeLayout, scale: f64) -> Result<Tensor> {
    let (r, interleaved) = (step.rope, layout == RopeLayout::Interleaved);
    let rotated = match (step.pass, interleaved) {
        (Pass::Train, _) => return Ok(ops::rope_train(x, &r.cos, &r.sin, interleaved, scale)?),
        (Pass::Infer, true) => candle_nn::rotary_emb::rope_i(&x.contiguous()?, &r.cos, &r.sin)?,
        (Pass::Infer, false) => candle_nn::rotary_emb::rope(&x.contiguous()?, &r.cos, &r.sin)?,
    };
    Ok(ops::times(rotated, scale)?)
}

/// Causal additive mask [1, 1, 1, t, t] for a cache-less forward (0 on and below the diagonal).
pub fn causal_mask(t: usize, device: &candle_core::Device) -> Result<Tensor> {
    let m: Vec<f32> = (0..t * t)
        .map(|i| {
            if i % t <= i / t {
                0.0
            } else {
                f32::NEG_INFINITY
            }
        })
        .collect();
    Ok(Tensor::from_vec(m, (1, 1, 1, t, t), device)?)
}
