//! What the tests and benchmarks share. The one way they find a fetched model: the library's
//! search (`$EMPATHY_GYM_MODELS`, else `./models`, else the per-user cache). A model found nowhere
//! is an error naming every place tried, so a benchmark exits non-zero and a test fails instead of
//! printing "skipped" and passing (tests/integration/locate.rs checks this with an empty models
//! folder). And, for the model benchmarks, the training case's setup and the peak resident memory.

pub mod fuzz;
pub mod tiny_model;

use std::path::PathBuf;

use anyhow::Context;
use candle_core::Device;
use candle_core::{backprop::GradStore, DType, Tensor};
use candle_nn::{Optimizer as _, ParamsAdamW};
use empathy_engine::{load_model, ChatModel, LoadOptions, LoraConfig};
use empathy_gym::learning::optimize::adamw::{AdamW, AdamWConfig};

/// Tokens per row of the training case.
pub const TRAIN_LEN: usize = 512;

/// `rel` (a file or folder relative to a models folder, e.g. `DEFAULT_POLICY`) in the first
/// models folder that holds it, or an error listing every place tried and how to fetch it.
pub fn bench_model(rel: &str) -> anyhow::Result<PathBuf> {
    empathy_engine::find_model(rel).with_context(|| format!("this benchmark needs the model {rel}"))
}

/// `rel` as [`bench_model`] finds it, for a test: a panic naming every place tried and how to
/// fetch the model when it is nowhere, so that a test needing it fails rather than passes.
pub fn require_model(rel: &str) -> PathBuf {
    match bench_model(rel) {
        Ok(path) => path,
        Err(e) => panic!("{e:#}"),
    }
}

/// Peak resident memory of this process in MiB (VmHWM; Linux, NaN elsewhere).
pub fn peak_rss_mib() -> f64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find(|l| l.starts_with("VmHWM:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|kb| kb.parse::<f64>().ok())
        .map_or(f64::NAN, |kb| kb / 1024.0)
}

/// The dtype the environment variable `key` names, f32 or bf16; f32 when it is unset.
pub fn dtype_from_env(key: &str) -> anyhow::Result<DType> {
    match std::env::var(key).as_deref() {
        Ok("f32") | Err(_) => Ok(DType::F32),
        Ok("bf16") => Ok(DType::BF16),
        Ok(other) => anyhow::bail!("{key}={other}: expected f32 or bf16"),
    }
}

/// The optimizer of the training cases: the trainer's own AdamW (optimize::adamw: the norm, the
/// clip, the non-finite guard), or with BENCH_OPTIMIZER=candle_nn candle_nn's AdamW, which the
/// benchmarks used first (one parameter at a time, no norm).
pub enum BenchOptimizer {
    Project(AdamW),
    CandleNn(candle_nn::AdamW),
}

impl BenchOptimizer {
    /// One update from `grads`, the gradients of `loss`.
    pub fn step(&mut self, loss: &Tensor, grads: &GradStore) -> anyhow::Result<()> {
        match self {
            // As the trainer does: the loss read back, for the non-finite guard.
            Self::Project(opt) => {
                let value = loss.to_dtype(DType::F64)?.to_scalar::<f64>()?;
                opt.step(value, grads)?;
            }
            Self::CandleNn(opt) => opt.step(grads)?,
        }
        Ok(())
    }

    /// Backward from `loss`, then [`step`](Self::step).
    pub fn backward_step(&mut self, loss: &Tensor) -> anyhow::Result<()> {
        let grads = loss.backward()?;
        self.step(loss, &grads)
    }
}

/// The training case of the model benchmarks: the model at `path` with rank-16 LoRA on every
/// projection (`base`'s dtype), one row of `TRAIN_LEN` token ids, and AdamW over the adapters
/// at rate 1e-5 (BenchOptimizer).
pub fn lora_training(
    path: &std::path::Path,
    dev: &Device,
    base: &LoadOptions,
) -> anyhow::Result<(ChatModel, Vec<u32>, BenchOptimizer)> {
    let opts = LoadOptions {
        lora: Some(LoraConfig {
            rank: 16,
            ..LoraConfig::default()
        }),
        ..base.clone()
    };
    let m = load_model(path, dev, &opts)?;
    let mut ids = m.encode(&"I hear how much this hurts. ".repeat(200))?;
    ids.truncate(TRAIN_LEN);
    let vars = m.trainable();
    let opt = match std::env::var("BENCH_OPTIMIZER").as_deref() {
        Ok("candle_nn") => {
            let vars = vars.into_iter().map(|(_, v)| v).collect();
            let params = ParamsAdamW {
                lr: 1e-5,
                ..ParamsAdamW::default()
            };
            BenchOptimizer::CandleNn(candle_nn::AdamW::new(vars, params)?)
        }
        Ok("project") | Err(_) => {
            let cfg = AdamWConfig {
                lr: 1e-5,
                ..AdamWConfig::default()
            };
            BenchOptimizer::Project(AdamW::new(vars, cfg)?)
        }
        Ok(other) => anyhow::bail!("BENCH_OPTIMIZER={other}: use project or candle_nn"),
    };
    Ok((m, ids, opt))
}
