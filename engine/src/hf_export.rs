//! Export of the current policy as an HF folder (config.json, model.safetensors, tokenizer.json,
//! tokenizer_config.json) with LoRA merged into the base weights (W + (alpha/r) B A) and q/k rows
//! in HF's half-split rotary layout, so transformers, vLLM and `load_model` read it alike.

use std::collections::HashMap;
use std::path::Path;

use candle_core::{DType, Tensor};
use tokenizers::Tokenizer;

use super::chat_template::ChatTemplate;
use super::gguf::unpermute_rows;
use super::hf::hf_names;
use super::llama::Llama;
use super::lora::LoraLinear;
use super::model_config::{ModelConfig, RopeLayout};
use super::weights::{model_err, LayerWeights, Proj, Weights};
use crate::error::{Error, Result};

fn merged(p: &LoraLinear) -> Result<Proj> {
    Ok(Proj {
        weight: p.merged_weight()?,
        bias: p.bias().cloned(),
    })
}

/// q/k projection in HF layout: rows un-permuted when the weights came from a GGUF.
fn rope_rows(p: Proj, heads: usize, cfg: &ModelConfig) -> Result<Proj> {
    if cfg.rope_layout == RopeLayout::Half {
        return Ok(p);
    }
    Ok(Proj {
        weight: unpermute_rows(&p.weight, heads)?,
        bias: p.bias.map(|b| unpermute_rows(&b, heads)).transpose()?,
    })
}

/// The merged weights in HF layout.
pub fn merged_weights(model: &Llama) -> Result<Weights> {
    let cfg = &model.cfg;
    let mut layers = Vec::with_capacity(cfg.num_layers);
    for b in model.blocks() {
        layers.push(LayerWeights {
            attn_norm: b.attn_norm.clone(),
            q: rope_rows(merged(&b.q)?, cfg.num_heads, cfg)?,
            k: rope_rows(merged(&b.k)?, cfg.num_kv_heads, cfg)?,
            v: merged(&b.v)?,
            o: merged(&b.o)?,
            mlp_norm: b.mlp_norm.clone(),
            gate: merged(&b.gate)?,
            up: merged(&b.up)?,
            down: merged(&b.down)?,
            q_norm: b.q_norm.clone(),
            k_norm: b.k_norm.clone(),
            post_attn_norm: b.post_attn_norm.clone(),
            post_mlp_norm: b.post_mlp_norm.clone(),
        });
    }
    Ok(Weights {
        embed: model.embedding().clone(),
        norm: model.final_norm().clone(),
        lm_head: model.lm_head().cloned(),
        layers,
    })
}

fn write_json(path: &Path, v: &serde_json::Value) -> Result<()> {
    let text = serde_json::to_string_pretty(v).map_err(|e| Error::Other(format!("json: {e}")))?;
    std::fs::write(path, text).map_err(|e| Error::io(path, e))
}

/// Writes the HF folder `dir` (created if needed).
pub fn export_merged(
    model: &Llama,
    tokenizer: &Tokenizer,
    template: &ChatTemplate,
    dir: &Path,
) -> Result<()> {
    std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
    let mut hf_cfg = model.cfg.clone();
    hf_cfg.rope_layout = RopeLayout::Half;
    write_json(&dir.join("config.json"), &hf_cfg.to_hf())?;
    let w = merged_weights(model)?;
    let tensors: HashMap<String, Tensor> = hf_names(&w, &model.cfg)?
        .into_iter()
        .map(|(n, t)| Ok((n, t.to_dtype(DType::F32)?.contiguous()?)))
        .collect::<Result<_>>()?;
    let st = dir.join("model.safetensors");
    candle_core::safetensors::save(&tensors, &st)
        .map_err(|e| model_err(&st, format!("cannot write: {e}")))?;
    readable_by_all(&st)?;
    let tok = dir.join("tokenizer.json");
    tokenizer
        .save(&tok, false)
        .map_err(|e| model_err(&tok, format!("cannot write: {e}")))?;
    let eos = template
        .stop_strings()
        .iter()
        .find(|s| tokenizer.token_to_id(s).is_some());
    let tc = serde_json::json!({
        "tokenizer_class": "PreTrainedTokenizerFast",
        "chat_template": template.to_jinja(),
        "eos_token": eos,
        "add_bos_token": false,
        "clean_up_tokenization_spaces": false,
    });
    write_json(&dir.join("tokenizer_config.json"), &tc)
}

/// The safetensors writer creates its file owner-only (0600); an exported model is meant to be
/// shared like the other files of the folder.
fn readable_by_all(path: &Path) -> Result<()> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o644))
            .map_err(|e| Error::io(path, e))?;
    }
    Ok(())
}
