//! What `train` and `sft` share on the command line: a config file or a run to resume, `--set`
//! overrides, where to stop, quiet; and how they become the run's validated config.

use std::path::PathBuf;

use anyhow::Context;
use clap::Args;
use empathy_gym::learning::train::run_files::CONFIG_FILE;
use empathy_gym::learning::train::{Override, TrainConfig};

#[derive(Debug, Args)]
pub struct RunArgs {
    /// The run's YAML config (see configs/quickstart.yaml, configs/sft.yaml).
    #[arg(long, required_unless_present = "resume")]
    pub config: Option<PathBuf>,
    /// Override a config key before validation, e.g. --set grpo.steps=20 (repeatable).
    #[arg(long = "set", value_name = "KEY=VALUE")]
    pub sets: Vec<String>,
    /// Continue the run in this directory from its latest checkpoint (its config.yaml is used).
    #[arg(long, value_name = "RUN_DIR", conflicts_with = "config")]
    pub resume: Option<PathBuf>,
    /// Stop (with a checkpoint) after this step; continue later with --resume.
    #[arg(long, value_name = "STEP")]
    pub stop_after: Option<u64>,
    /// No progress bars.
    #[arg(long)]
    pub quiet: bool,
}

impl RunArgs {
    /// The validated config and the file it was read from. On resume, `--set` overrides are
    /// written back into the run's config.yaml, so that it stays the run's resolved config.
    pub fn config(&self) -> anyhow::Result<(TrainConfig, PathBuf)> {
        let sets = self
            .sets
            .iter()
            .map(|s| Override::parse(s))
            .collect::<Result<Vec<_>, _>>()?;
        match (&self.resume, &self.config) {
            (Some(dir), _) => {
                let path = dir.join(CONFIG_FILE);
                let mut cfg = TrainConfig::load(&path, &sets)?;
                cfg.run_dir = dir.clone();
                if !sets.is_empty() {
                    std::fs::write(&path, cfg.to_yaml()?)
                        .with_context(|| format!("rewriting {}", path.display()))?;
                    eprintln!("note: {} updated with the --set overrides", path.display());
                }
                Ok((cfg, path))
            }
            (None, Some(file)) => Ok((TrainConfig::load(file, &sets)?, file.clone())),
            (None, None) => {
                anyhow::bail!("say what to train: --config FILE.yaml or --resume RUN_DIR")
            }
        }
    }
}
