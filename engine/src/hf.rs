//! Loading an HF model folder: `config.json`, `model.safetensors` (or shards listed in
//! `model.safetensors.index.json`) with the usual Llama/Qwen2 tensor names.

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
    let norm = take("model.norm.weight")?;
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
        let attn_norm = take(&format!("{p}.input_layernorm.weight"))?;
        let mlp_norm = take(&format!("{p}.post_attention_layernorm.weight"))?;
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
pub fn hf_names(w: &Weights) -> Vec<(String, Tensor)> {
    let mut out = vec![
        ("model.embed_tokens.weight".to_string(), w.embed.clone()),
        ("model.norm.weight".to_string(), w.norm.clone()),
    ];
    if let Some(h) = &w.lm_head {
        out.push(("lm_head.weight".to_string(), h.clone()));
    }
    for (i, l) in w.layers.iter().enumerate() {
        let p = format!("model.layers.{i}");
        out.push((format!("{p}.input_layernorm.weight"), l.attn_norm.clone()));
        out.push((
            format!("{p}.post_attention_layernorm.weight"),
            l.mlp_norm.clone(),
        ));
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
    out
}
