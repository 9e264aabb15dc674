//! `export`: the policy of a run's latest checkpoint with its adapters merged into the base
//! weights, as an HF folder that transformers, vLLM and `load_model` read (docs/DESIGN.md
//! section 9).

use std::path::{Path, PathBuf};

use candle_core::Device;

use super::checkpoint::{latest_checkpoint, ADAPTERS_FILE};
use super::config::TrainConfig;
use super::config_file::{CpuMatmul, WeightDtype};
use super::run_files::CONFIG_FILE;
use super::setup::load_policy;
use crate::error::{Error, Result};
use crate::model::ChatModel;

/// Loads the policy of a run with trained adapters on the CPU in f32, whatever the run's
/// `model.device`, `model.dtype` and `model.cpu_matmul`: a run trained on a GPU in bf16 is
/// exported, evaluated and served on any machine. `dir` is a run directory (its latest
/// checkpoint is used) or one checkpoint directory `<run>/checkpoints/step-N`. Returns the model
/// and the checkpoint used.
pub fn load_checkpoint_policy(dir: &Path) -> Result<(ChatModel, PathBuf)> {
    let (run_dir, ckpt) = if dir.join(ADAPTERS_FILE).is_file() {
        let run = dir
            .parent()
            .and_then(Path::parent)
            .unwrap_or(dir)
            .to_path_buf();
        (run, dir.to_path_buf())
    } else {
        let ckpt = latest_checkpoint(dir)?.ok_or_else(|| {
            Error::input(
                dir,
                "checkpoints",
                "the run has no checkpoint yet; train at least checkpoint.every steps first",
            )
        })?;
        (dir.to_path_buf(), ckpt)
    };
    let mut cfg = TrainConfig::load(&run_dir.join(CONFIG_FILE), &[])?;
    // Training settings: the trained policy is exported, evaluated and served on the CPU with
    // f32 weights and products (docs/DESIGN.md, "bf16 products on the CPU", "Determinism").
    cfg.file.model.cpu_matmul = CpuMatmul::F32;
    cfg.file.model.dtype = WeightDtype::F32;
    let mut model = load_policy(&cfg, &Device::Cpu)?;
    model.load_adapters(&ckpt.join(ADAPTERS_FILE))?;
    Ok((model, ckpt))
}

/// Merges the latest checkpoint of `run_dir` into an HF folder `out`; returns the checkpoint used.
pub fn export_run(run_dir: &Path, out: &Path) -> Result<PathBuf> {
    let (model, ckpt) = load_checkpoint_policy(run_dir)?;
    model.export_merged(out)?;
    Ok(ckpt)
}
