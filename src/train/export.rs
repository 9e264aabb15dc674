//! `export`: the policy of a run's latest checkpoint with its adapters merged into the base
//! weights, as an HF folder that transformers, vLLM and `load_model` read (DESIGN section 5).

use std::path::{Path, PathBuf};

use super::config::TrainConfig;
use super::load::{device, load_policy};
use super::run_files::CONFIG_FILE;
use crate::error::{Error, Result};
use crate::grpo::{checkpoint::ADAPTERS_FILE, latest_checkpoint};

/// Merges the latest checkpoint of `run_dir` into an HF folder `out`; returns the checkpoint used.
pub fn export_run(run_dir: &Path, out: &Path) -> Result<PathBuf> {
    let cfg = TrainConfig::load(&run_dir.join(CONFIG_FILE), &[])?;
    let ckpt = latest_checkpoint(run_dir)?.ok_or_else(|| {
        Error::input(
            run_dir,
            "checkpoints",
            "the run has no checkpoint yet; train at least checkpoint.every steps first",
        )
    })?;
    let dev = device(&cfg)?;
    let mut model = load_policy(&cfg, &dev)?;
    model.load_adapters(&ckpt.join(ADAPTERS_FILE))?;
    model.export_merged(out)?;
    Ok(ckpt)
}
