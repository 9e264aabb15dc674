//! `load_model`: one entry point for an HF folder or a GGUF file, returning a ready `ChatModel`
//! (network, tokenizer, chat template, stop tokens, optional LoRA adapters), and the default
//! policy's path.

use std::path::{Path, PathBuf};

use candle_core::{DType, Device};
use tokenizers::Tokenizer;

use super::chat_model::{ChatModel, ModelSource};
use super::chat_template::ChatTemplate;
use super::gguf::{gguf_config, gguf_weights, GgufFile};
use super::hf::load_hf;
use super::llama::Llama;
use super::lora::LoraConfig;
use super::model_config::ModelConfig;
use super::tokenizer::{tokenizer_from_gguf, tokenizer_from_json_file};
use super::weights::model_err;
use crate::error::Result;

use super::locate::ModelSearch;
pub use super::locate::DEFAULT_POLICY;

/// Path of the default policy model: in the first models folder that holds it, else where the
/// first models folder would hold it (loading it then fails listing every place tried).
pub fn default_policy_path() -> PathBuf {
    let search = ModelSearch::from_env();
    search
        .find(Path::new(DEFAULT_POLICY))
        .unwrap_or_else(|_| search.dir().join(DEFAULT_POLICY))
}

/// How to load a model.
#[derive(Clone, Debug, PartialEq)]
pub struct LoadOptions {
    /// Attach LoRA adapters with this configuration (None: no adapters).
    pub lora: Option<LoraConfig>,
    /// Make every projection's base weight trainable (full fine-tuning).
    pub full_finetune: bool,
    /// Seed for adapter initialisation.
    pub seed: u64,
    /// Weight dtype (F32 on CPU; BF16 is an option on GPUs).
    pub dtype: DType,
    /// Run the frozen weights' products in bf16 on the CPU's AMX, AVX-512 or AVX2
    /// (`Llama::use_bf16_products`; `model.cpu_matmul: bf16`).
    pub bf16_products: bool,
}

impl Default for LoadOptions {
    fn default() -> Self {
        LoadOptions {
            lora: None,
            full_finetune: false,
            seed: 0,
            dtype: DType::F32,
            bf16_products: false,
        }
    }
}

/// Loads an HF folder (config.json, safetensors, tokenizer.json) or a `.gguf` file.
pub fn load_model(path: &Path, device: &Device, opts: &LoadOptions) -> Result<ChatModel> {
    if !path.exists() {
        if path.ends_with(DEFAULT_POLICY) {
            return Err(ModelSearch::from_env().not_found(Path::new(DEFAULT_POLICY)));
        }
        return Err(model_err(path, "model not found; pass an HF model folder or a .gguf file, or run scripts/fetch-models.sh for the default models"));
    }
    let (mut model, tokenizer, template, source, name) = if path.is_dir() {
        load_hf_parts(path, device, opts.dtype)?
    } else if path
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("gguf"))
    {
        load_gguf_parts(path, device, opts.dtype)?
    } else {
        return Err(model_err(
            path,
            "expected an HF model folder or a .gguf file",
        ));
    };
    if let Some(lora) = &opts.lora {
        model.attach_lora(lora, opts.seed)?;
    }
    if opts.full_finetune {
        model.make_projections_trainable()?;
    }
    if opts.bf16_products {
        model.use_bf16_products()?;
    }
    let stop_tokens = stop_tokens(&model.cfg, &tokenizer, &template);
    let config = model.cfg.clone();
    Ok(ChatModel {
        model,
        tokenizer,
        template,
        config,
        device: device.clone(),
        name,
        stop_tokens,
        source,
        lora: opts.lora.clone(),
    })
}

type Parts = (Llama, Tokenizer, ChatTemplate, ModelSource, String);

fn load_hf_parts(dir: &Path, device: &Device, dtype: DType) -> Result<Parts> {
    let (cfg, weights) = load_hf(dir, dtype, device)?;
    let tok_path = dir.join("tokenizer.json");
    if !tok_path.is_file() {
        return Err(model_err(
            &tok_path,
            "tokenizer.json not found in the model folder",
        ));
    }
    let tokenizer = tokenizer_from_json_file(&tok_path)?;
    check_vocab_fits(&tokenizer, &cfg, &tok_path)?;
    let template = hf_template(dir, &tokenizer)?;
    let name = dir
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let model = Llama::new(cfg, weights, device)?;
    Ok((
        model,
        tokenizer,
        template,
        ModelSource::HfFolder(dir.to_path_buf()),
        name,
    ))
}

fn load_gguf_parts(path: &Path, device: &Device, dtype: DType) -> Result<Parts> {
    let mut g = GgufFile::open(path)?;
    let cfg = gguf_config(&g)?;
    let bytes = std::fs::metadata(path)
        .map_err(|e| crate::error::Error::io(path, e))?
        .len();
    cfg.check_limits(path, path, bytes)?;
    let tokenizer = tokenizer_from_gguf(&g)?;
    check_vocab_fits(&tokenizer, &cfg, path)?;
    let template = match g
        .meta_str("tokenizer.chat_template")
        .ok()
        .and_then(ChatTemplate::from_jinja)
    {
        Some(t) => t,
        None => template_from_vocab(&tokenizer, path)?,
    };
    // The file's own name (SmolLM2-135M-Instruct.Q4_1), not general.name, which converters fill
    // with title-cased build tags ("Smollm2 135M 8k Lc100K Mix1 Ep2").
    let name = path
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    let weights = gguf_weights(&mut g, &cfg, dtype, device)?;
    let model = Llama::new(cfg, weights, device)?;
    Ok((
        model,
        tokenizer,
        template,
        ModelSource::Gguf(path.to_path_buf()),
        name,
    ))
}

/// Every token id must index a row of the embedding table.
fn check_vocab_fits(tok: &Tokenizer, cfg: &ModelConfig, file: &Path) -> Result<()> {
    let n = tok
        .get_vocab(true)
        .values()
        .copied()
        .max()
        .map_or(0, |m| m as usize + 1);
    if n > cfg.vocab_size {
        return Err(model_err(file, format!("the tokenizer has ids up to {} but the model's embedding has only {} rows; this tokenizer does not belong to this model", n - 1, cfg.vocab_size)));
    }
    Ok(())
}

fn template_from_vocab(tok: &Tokenizer, file: &Path) -> Result<ChatTemplate> {
    ChatTemplate::from_special_tokens(|s| tok.token_to_id(s).is_some())
        .ok_or_else(|| model_err(file, "no supported chat template (ChatML or Llama 3) found in the model's template or special tokens"))
}

fn hf_template(dir: &Path, tok: &Tokenizer) -> Result<ChatTemplate> {
    let tc = dir.join("tokenizer_config.json");
    if let Ok(text) = std::fs::read_to_string(&tc) {
        let v: serde_json::Value = serde_json::from_str(&text).map_err(|e| {
            crate::error::Error::input(
                &tc,
                format!("line {}", e.line()),
                format!("not valid JSON: {e}"),
            )
        })?;
        if let Some(t) = v
            .get("chat_template")
            .and_then(|t| t.as_str())
            .and_then(ChatTemplate::from_jinja)
        {
            return Ok(t);
        }
    }
    template_from_vocab(tok, &dir.join("tokenizer.json"))
}

/// The template's end-of-turn tokens that exist in the vocabulary, plus the config's EOS ids.
fn stop_tokens(cfg: &ModelConfig, tok: &Tokenizer, template: &ChatTemplate) -> Vec<u32> {
    let mut out: Vec<u32> = template
        .stop_strings()
        .iter()
        .filter_map(|s| tok.token_to_id(s))
        .collect();
    for &e in &cfg.eos_token_ids {
        if !out.contains(&e) {
            out.push(e);
        }
    }
    out
}
