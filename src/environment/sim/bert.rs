//! The BERT encoder that all-MiniLM-L6-v2 is (Devlin et al., 2019; Wang et al., "MiniLM", 2020):
//! token, position and segment embeddings, then post-norm layers of self-attention and a GELU
//! feed-forward. Only the forward pass the sentence embedder needs: no dropout (inference), no
//! pooler, f32. Built from candle-nn's layers in the order the reference implementations apply
//! them, so the embeddings are the ones the learned heads under `data/` were fit on (pinned by the
//! `embedder` integration test against stored vectors).

use candle_core::{DType, Module, Tensor, D};
use candle_nn::{embedding, layer_norm, linear, Embedding, LayerNorm, Linear, VarBuilder};
use serde::Deserialize;

/// The fields of a Hugging Face BERT `config.json` the forward pass reads.
#[derive(Clone, Debug, Deserialize)]
pub struct BertConfig {
    pub vocab_size: usize,
    pub hidden_size: usize,
    pub num_hidden_layers: usize,
    pub num_attention_heads: usize,
    pub intermediate_size: usize,
    /// Only `gelu` (the exact, erf form) is read.
    pub hidden_act: String,
    pub max_position_embeddings: usize,
    pub type_vocab_size: usize,
    pub layer_norm_eps: f64,
}

struct Layer {
    query: Linear,
    key: Linear,
    value: Linear,
    attention_out: Linear,
    attention_norm: LayerNorm,
    intermediate: Linear,
    output: Linear,
    output_norm: LayerNorm,
}

/// The loaded encoder.
pub struct Bert {
    words: Embedding,
    positions: Embedding,
    segments: Embedding,
    embeddings_norm: LayerNorm,
    layers: Vec<Layer>,
    heads: usize,
    head_size: usize,
}

impl Layer {
    fn load(vb: VarBuilder, c: &BertConfig) -> candle_core::Result<Self> {
        let (h, i) = (c.hidden_size, c.intermediate_size);
        let att = vb.pp("attention");
        Ok(Layer {
            query: linear(h, h, att.pp("self").pp("query"))?,
            key: linear(h, h, att.pp("self").pp("key"))?,
            value: linear(h, h, att.pp("self").pp("value"))?,
            attention_out: linear(h, h, att.pp("output").pp("dense"))?,
            attention_norm: layer_norm(h, c.layer_norm_eps, att.pp("output").pp("LayerNorm"))?,
            intermediate: linear(h, i, vb.pp("intermediate").pp("dense"))?,
            output: linear(i, h, vb.pp("output").pp("dense"))?,
            output_norm: layer_norm(h, c.layer_norm_eps, vb.pp("output").pp("LayerNorm"))?,
        })
    }

    /// One layer over `x` [n, len, hidden] with the additive mask [n, 1, 1, len].
    fn forward(
        &self,
        x: &Tensor,
        mask: &Tensor,
        heads: usize,
        head_size: usize,
    ) -> candle_core::Result<Tensor> {
        let split = |t: Tensor| -> candle_core::Result<Tensor> {
            let (n, len, _) = t.dims3()?;
            t.reshape((n, len, heads, head_size))?
                .transpose(1, 2)?
                .contiguous()
        };
        let q = split(self.query.forward(x)?)?;
        let k = split(self.key.forward(x)?)?;
        let v = split(self.value.forward(x)?)?;
        let scores = (q.matmul(&k.t()?)? / (head_size as f64).sqrt())?.broadcast_add(mask)?;
        let probs = candle_nn::ops::softmax(&scores, D::Minus1)?;
        let context = probs
            .matmul(&v)?
            .transpose(1, 2)?
            .contiguous()?
            .flatten_from(D::Minus2)?;
        let attended = self
            .attention_norm
            .forward(&(self.attention_out.forward(&context)? + x)?)?;
        let inner = self.intermediate.forward(&attended)?.gelu_erf()?;
        self.output_norm
            .forward(&(self.output.forward(&inner)? + attended)?)
    }
}

impl Bert {
    /// Loads the weights under `vb`, named as Hugging Face names them, with or without a leading
    /// `bert.`.
    pub fn load(vb: VarBuilder, c: &BertConfig) -> candle_core::Result<Self> {
        if c.hidden_act != "gelu" {
            candle_core::bail!(
                "hidden_act `{}` is not supported: only `gelu` is",
                c.hidden_act
            );
        }
        if c.num_attention_heads == 0 || !c.hidden_size.is_multiple_of(c.num_attention_heads) {
            candle_core::bail!(
                "hidden_size {} is not a multiple of num_attention_heads {}",
                c.hidden_size,
                c.num_attention_heads
            );
        }
        let vb = match vb.contains_tensor("embeddings.word_embeddings.weight") {
            true => vb,
            false => vb.pp("bert"),
        };
        let e = vb.pp("embeddings");
        let h = c.hidden_size;
        Ok(Bert {
            words: embedding(c.vocab_size, h, e.pp("word_embeddings"))?,
            positions: embedding(c.max_position_embeddings, h, e.pp("position_embeddings"))?,
            segments: embedding(c.type_vocab_size, h, e.pp("token_type_embeddings"))?,
            embeddings_norm: layer_norm(h, c.layer_norm_eps, e.pp("LayerNorm"))?,
            layers: (0..c.num_hidden_layers)
                .map(|i| Layer::load(vb.pp(format!("encoder.layer.{i}")), c))
                .collect::<candle_core::Result<_>>()?,
            heads: c.num_attention_heads,
            head_size: h / c.num_attention_heads,
        })
    }

    /// The last layer's states [n, len, hidden] of the token ids [n, len] in segment 0, where
    /// `mask` [n, len] is 1 for a real token and 0 for padding.
    pub fn forward(&self, ids: &Tensor, mask: &Tensor) -> candle_core::Result<Tensor> {
        let len = ids.dim(1)?;
        let positions = Tensor::arange(0u32, len as u32, ids.device())?;
        let x = (self.words.forward(ids)? + self.segments.forward(&ids.zeros_like()?)?)?
            .broadcast_add(&self.positions.forward(&positions)?)?;
        let mut x = self.embeddings_norm.forward(&x)?;
        // Padding gets the lowest f32 added to its scores, so softmax gives it no weight.
        let mask = mask.unsqueeze(1)?.unsqueeze(1)?.to_dtype(DType::F32)?;
        let mask =
            (mask.ones_like()? - &mask)?.broadcast_mul(&Tensor::new(f32::MIN, ids.device())?)?;
        for layer in &self.layers {
            x = layer.forward(&x, &mask, self.heads, self.head_size)?;
        }
        Ok(x)
    }
}
