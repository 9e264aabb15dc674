//! Loading an HF model folder: `config.json`, `model.safetensors` (or shards listed in
//! `model.safetensors.index.json`) with the usual Llama/Qwen2/Qwen3/Mistral/Gemma 3 tensor names.

use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};

use candle_core::{DType, Device, Tensor};

use super::model_config::{HfConfig, ModelConfig};
use super::weights::{model_err, LayerWeights, Proj, Weights};
use crate::error::{Error, Result};

/// The safetensors files of a folder: the single file, or the shards of the index.
pub fn weight_files(dir: &Path) -> Result<Vec<PathBuf>> {
    let single = dir.join("model.safetensors");
    if single.is_file() {
        return Ok(vec![single]);
    }
    let index = dir.join("model.safetensors.index.json");
    if !index.is_file() {
        return Err(model_err(
            dir,
            "no model.safetensors or model.safetensors.index.json in this folder",
        ));
    }
    let text = std::fs::read_to_string(&index).map_err(|e| Error::io(&index, e))?;
    let v: serde_json::Value = serde_json::from_str(&text).map_err(|e| {
        Error::input(
            &index,
            format!("line {}", e.line()),
            format!("not valid JSON: {e}"),
        )
    })?;
    let map = v
        .get("weight_map")
        .and_then(|m| m.as_object())
        .ok_or_else(|| Error::input(&index, "weight_map", "missing or not an object"))?;
    let files: BTreeSet<&str> = map.values().filter_map(|f| f.as_str()).collect();
    // Shards live in the folder itself: a name with a separator or `..` could reach any file.
    if let Some(bad) = files
        .iter()
        .find(|f| f.is_empty() || f.contains(['/', '\\']) || **f == ".." || **f == ".")
    {
        return Err(Error::input(
            &index,
            "weight_map",
            format!(
                "shard {bad:?} is not a file name in this folder; shards must sit beside the index"
            ),
        ));
    }
    Ok(files.into_iter().map(|f| dir.join(f)).collect())
}

/// Reads every tensor of `files` into one map, converted to `dtype`.
pub fn read_tensors(
    files: &[PathBuf],
    dtype: DType,
    device: &Device,
) -> Result<HashMap<String, Tensor>> {
    let mut all = HashMap::new();
    for f in files {
        if !f.is_file() {
            return Err(model_err(f, "weight file not found"));
        }
        let tensors = candle_core::safetensors::load(f, device)
            .map_err(|e| model_err(f, format!("cannot read safetensors: {e}")))?;
        for (name, t) in tensors {
            all.insert(name, t.to_dtype(dtype)?);
        }
    }
    Ok(all)
}

/// Loads config and weights of an HF folder (tokenizer and template are loaded by the caller).
pub fn load_hf(dir: &Path, dtype: DType, device: &Device) -> Result<(ModelConfig, Weights)> {
    let cfg_path = dir.join("config.json");
    if !cfg_path.is_file() {
        return Err(model_err(
            &cfg_path,
            "config.json not found in the model folder",
        ));
    }
    let cfg = HfConfig::read(&cfg_path)?.validate(&cfg_path)?;
    let files = weight_files(dir)?;
    let mut bytes = 0u64;
    for f in &files {
        bytes += std::fs::metadata(f).map_err(|e| Error::io(f, e))?.len();
    }
    // One shard named, or the folder for several.
    let weights = match files.as_slice() {
        [one] => one.clone(),
        _ => dir.join("model.safetensors.index.json"),
    };
    cfg.check_limits(&cfg_path, &weights, bytes)?;
    let mut t = read_tensors(&files, dtype, device)?;
    let file = files.first().cloned().unwrap_or_else(|| dir.to_path_buf());
    let weights = take_weights(&mut t, &cfg, &file)?;
    weights.check(&cfg, &file)?;
    Ok((cfg, weights))
}

/// The HF names of a block's norms besides `input_layernorm`: Llama's `post_attention_layernorm`
/// is the norm before the MLP; Gemma 3 calls that one `pre_feedforward_layernorm` and has one
/// after attention and one after the MLP.
struct NormNames {
    mlp: &'static str,
    post: Option<(&'static str, &'static str)>,
}

impl NormNames {
    fn of(cfg: &ModelConfig) -> Self {
        if cfg.gemma.as_ref().is_some_and(|g| g.sandwich_norms) {
            NormNames {
                mlp: "pre_feedforward_layernorm",
                post: Some(("post_attention_layernorm", "post_feedforward_layernorm")),
            }
        } else {
            NormNames {
                mlp: "post_attention_layernorm",
                post: None,
            }
        }
    }
}

/// A norm weight as the network applies it (`delta` 1) or as HF stores it (`delta` -1): Gemma
/// stores w for a scale of (1 + w), computed in f32 like transformers' Gemma3RMSNorm; other
/// families store the scale itself.
fn shift_norm(w: &Tensor, cfg: &ModelConfig, delta: f64) -> Result<Tensor> {
    if !cfg.gemma.as_ref().is_some_and(|g| g.norm_plus_one) {
        return Ok(w.clone());
    }
    let dtype = w.dtype();
    Ok(w.to_dtype(DType::F32)?
        .affine(1.0, delta)?
        .to_dtype(dtype)?)
}

fn take_weights(
    t: &mut HashMap<String, Tensor>,
    cfg: &ModelConfig,
    file: &Path,
) -> Result<Weights> {
    let mut take = |name: &str| {
        t.remove(name)
            .ok_or_else(|| model_err(file, format!("tensor {name} is missing")))
    };
    let embed = take("model.embed_tokens.weight")?;
    let norm = shift_norm(&take("model.norm.weight")?, cfg, 1.0)?;
    let names = NormNames::of(cfg);
    let mut layers = Vec::with_capacity(cfg.num_layers);
    for i in 0..cfg.num_layers {
        let p = format!("model.layers.{i}");
        let mut proj = |name: &str, bias: bool| -> Result<Proj> {
            let weight = take(&format!("{p}.{name}.weight"))?;
            let bias = if bias {
                Some(take(&format!("{p}.{name}.bias"))?)
            } else {
                None
            };
            Ok(Proj { weight, bias })
        };
        let q = proj("self_attn.q_proj", cfg.qkv_bias)?;
        let k = proj("self_attn.k_proj", cfg.qkv_bias)?;
        let v = proj("self_attn.v_proj", cfg.qkv_bias)?;
        let o = proj("self_attn.o_proj", false)?;
        let gate = proj("mlp.gate_proj", false)?;
        let up = proj("mlp.up_proj", false)?;
        let down = proj("mlp.down_proj", false)?;
        let mut norm = |name: &str| -> Result<Tensor> {
            shift_norm(&take(&format!("{p}.{name}.weight"))?, cfg, 1.0)
        };
        let attn_norm = norm("input_layernorm")?;
        let mlp_norm = norm(names.mlp)?;
        let (q_norm, k_norm) = if cfg.qk_norm {
            (
                Some(norm("self_attn.q_norm")?),
                Some(norm("self_attn.k_norm")?),
            )
        } else {
            (None, None)
        };
        let (post_attn_norm, post_mlp_norm) = match names.post {
            Some((after_attn, after_mlp)) => (Some(norm(after_attn)?), Some(norm(after_mlp)?)),
            None => (None, None),
        };
        layers.push(LayerWeights {
            attn_norm,
            q,
            k,
            v,
            o,
            mlp_norm,
            gate,
            up,
            down,
            q_norm,
            k_norm,
            post_attn_norm,
            post_mlp_norm,
        });
    }
    let lm_head = if cfg.tie_word_embeddings {
        None
    } else {
        Some(take("lm_head.weight")?)
    };
    Ok(Weights {
        embed,
        norm,
        lm_head,
        layers,
    })
}

/// HF tensor names for the weights, in the layout `export` writes (inverse of `take_weights`).
pub fn hf_names(w: &Weights, cfg: &ModelConfig) -> Result<Vec<(String, Tensor)>> {
    let mut out = vec![
        ("model.embed_tokens.weight".to_string(), w.embed.clone()),
        (
            "model.norm.weight".to_string(),
            shift_norm(&w.norm, cfg, -1.0)?,
        ),
    ];
    if let Some(h) = &w.lm_head {
        out.push(("lm_head.weight".to_string(), h.clone()));
    }
    let names = NormNames::of(cfg);
    let (after_attn, after_mlp) = names.post.unzip();
    for (i, l) in w.layers.iter().enumerate() {
        let p = format!("model.layers.{i}");
        let norms = [
            (Some("input_layernorm"), Some(&l.attn_norm)),
            (Some(names.mlp), Some(&l.mlp_norm)),
            (Some("self_attn.q_norm"), l.q_norm.as_ref()),
            (Some("self_attn.k_norm"), l.k_norm.as_ref()),
            (after_attn, l.post_attn_norm.as_ref()),
            (after_mlp, l.post_mlp_norm.as_ref()),
        ];
        for (name, norm) in norms {
            if let (Some(name), Some(w)) = (name, norm) {
                out.push((format!("{p}.{name}.weight"), shift_norm(w, cfg, -1.0)?));
            }
        }
        let projs = [
            ("self_attn.q_proj", &l.q),
            ("self_attn.k_proj", &l.k),
            ("self_attn.v_proj", &l.v),
            ("self_attn.o_proj", &l.o),
            ("mlp.gate_proj", &l.gate),
            ("mlp.up_proj", &l.up),
            ("mlp.down_proj", &l.down),
        ];
        for (name, pr) in projs {
            out.push((format!("{p}.{name}.weight"), pr.weight.clone()));
            if let Some(b) = &pr.bias {
                out.push((format!("{p}.{name}.bias"), b.clone()));
            }
        }
    }
    Ok(out)
}
