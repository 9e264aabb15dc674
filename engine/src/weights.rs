//! Typed base weights of a Llama-family decoder, as the HF and GGUF loaders hand them over, and
//! the shape check that turns a mismatched file into a clear error instead of a panic later.

use std::path::Path;

use candle_core::Tensor;

use super::model_config::ModelConfig;
use crate::error::{Error, Result};

/// A projection's weight [out, in] and optional bias [out].
#[derive(Clone, Debug)]
pub struct Proj {
    /// [out, in].
    pub weight: Tensor,
    /// [out].
    pub bias: Option<Tensor>,
}

impl Proj {
    /// A projection without bias.
    pub fn new(weight: Tensor) -> Self {
        Proj { weight, bias: None }
    }
}

/// One decoder block.
#[derive(Clone, Debug)]
pub struct LayerWeights {
    /// RMSNorm before attention [hidden].
    pub attn_norm: Tensor,
    /// Query projection [heads * head_dim, hidden].
    pub q: Proj,
    /// Key projection [kv_heads * head_dim, hidden].
    pub k: Proj,
    /// Value projection [kv_heads * head_dim, hidden].
    pub v: Proj,
    /// Output projection [hidden, heads * head_dim].
    pub o: Proj,
    /// RMSNorm before the MLP [hidden].
    pub mlp_norm: Tensor,
    /// SwiGLU gate [intermediate, hidden].
    pub gate: Proj,
    /// SwiGLU up [intermediate, hidden].
    pub up: Proj,
    /// SwiGLU down [hidden, intermediate].
    pub down: Proj,
    /// RMSNorm of each query head [head_dim] (Qwen3, Gemma 3).
    pub q_norm: Option<Tensor>,
    /// RMSNorm of each key head [head_dim] (Qwen3, Gemma 3).
    pub k_norm: Option<Tensor>,
    /// Gemma 3's norm of the attention output [hidden], before the residual add.
    pub post_attn_norm: Option<Tensor>,
    /// Gemma 3's norm of the MLP output [hidden], before the residual add.
    pub post_mlp_norm: Option<Tensor>,
}

/// All base weights.
#[derive(Clone, Debug)]
pub struct Weights {
    /// Token embeddings [vocab, hidden].
    pub embed: Tensor,
    /// Final RMSNorm [hidden].
    pub norm: Tensor,
    /// Output projection [vocab, hidden]; None when tied to `embed`.
    pub lm_head: Option<Tensor>,
    /// Blocks in order.
    pub layers: Vec<LayerWeights>,
}

impl Weights {
    /// Checks every shape against `cfg`; `file` names the weights in the error.
    pub fn check(&self, cfg: &ModelConfig, file: &Path) -> Result<()> {
        let (h, v, i) = (cfg.hidden_size, cfg.vocab_size, cfg.intermediate_size);
        let qd = cfg.num_heads * cfg.head_dim;
        let kvd = cfg.num_kv_heads * cfg.head_dim;
        expect(file, "embedding", &self.embed, &[v, h])?;
        expect(file, "final norm", &self.norm, &[h])?;
        if let Some(w) = &self.lm_head {
            expect(file, "output projection", w, &[v, h])?;
        }
        if self.layers.len() != cfg.num_layers {
            return Err(model_err(
                file,
                format!(
                    "has {} layers, config says {}",
                    self.layers.len(),
                    cfg.num_layers
                ),
            ));
        }
        for (n, l) in self.layers.iter().enumerate() {
            let name = |p: &str| format!("layer {n} {p}");
            expect(file, &name("attn norm"), &l.attn_norm, &[h])?;
            expect(file, &name("mlp norm"), &l.mlp_norm, &[h])?;
            expect_proj(file, &name("q"), &l.q, qd, h, cfg.qkv_bias)?;
            expect_proj(file, &name("k"), &l.k, kvd, h, cfg.qkv_bias)?;
            expect_proj(file, &name("v"), &l.v, kvd, h, cfg.qkv_bias)?;
            expect_proj(file, &name("o"), &l.o, h, qd, false)?;
            expect_proj(file, &name("gate"), &l.gate, i, h, false)?;
            expect_proj(file, &name("up"), &l.up, i, h, false)?;
            expect_proj(file, &name("down"), &l.down, h, i, false)?;
            let sandwich = cfg.gemma.as_ref().is_some_and(|g| g.sandwich_norms);
            let norms = [
                ("q norm", &l.q_norm, cfg.qk_norm, cfg.head_dim),
                ("k norm", &l.k_norm, cfg.qk_norm, cfg.head_dim),
                ("post-attention norm", &l.post_attn_norm, sandwich, h),
                ("post-MLP norm", &l.post_mlp_norm, sandwich, h),
            ];
            for (what, norm, wanted, width) in norms {
                match (norm, wanted) {
                    (Some(w), true) => expect(file, &name(what), w, &[width])?,
                    (None, false) => {}
                    (None, true) => {
                        return Err(model_err(
                            file,
                            format!("{} is missing (this architecture has one)", name(what)),
                        ))
                    }
                    (Some(_), false) => {
                        return Err(model_err(
                            file,
                            format!("{} is not part of this architecture", name(what)),
                        ))
                    }
                }
            }
        }
        Ok(())
    }
}

fn expect_proj(
    file: &Path,
    name: &str,
    p: &Proj,
    out: usize,
    inp: usize,
    bias: bool,
) -> Result<()> {
    expect(file, name, &p.weight, &[out, inp])?;
    match (&p.bias, bias) {
        (Some(b), true) => expect(file, &format!("{name} bias"), b, &[out]),
        (None, false) => Ok(()),
        (None, true) => Err(model_err(
            file,
            format!("{name} bias is missing (the config asks for q/k/v bias)"),
        )),
        (Some(_), false) => Err(model_err(
            file,
            format!("{name} has a bias the config does not declare"),
        )),
    }
}

fn expect(file: &Path, name: &str, t: &Tensor, dims: &[usize]) -> Result<()> {
    if t.dims() == dims {
        Ok(())
    } else {
        Err(model_err(
            file,
            format!(
                "{name} has shape {:?}, expected {dims:?} from the config",
                t.dims()
            ),
        ))
    }
}

/// An `Error::Model` for `file`.
pub fn model_err(file: &Path, message: impl Into<String>) -> Error {
    Error::Model {
        path: file.to_path_buf(),
        message: message.into(),
    }
}
