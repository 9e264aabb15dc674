//! `empathy-gym sft`: LoRA fine-tuning of the policy on the supporter turns of human support
//! dialogues (docs/DESIGN.md section 24), the warm start before `train`.

use std::path::PathBuf;

use anyhow::Context;
use clap::Args;
use empathy_gym::learning::sft::{read_corpus, read_rows, SftParts, SftTrainer, SFT_FILE, SFT_SVG};
use empathy_gym::learning::train::run_files::CONFIG_FILE;
use empathy_gym::learning::train::{device, load_policy, Override, TrainConfig};

use super::loading::loading;

#[derive(Debug, Args)]
pub struct SftArgs {
    /// The run's YAML config, with its `sft:` section (see configs/sft.yaml).
    #[arg(long, required_unless_present = "resume")]
    pub config: Option<PathBuf>,
    /// Override a config key before validation, e.g. --set sft.steps=20 (repeatable).
    #[arg(long = "set", value_name = "KEY=VALUE")]
    pub sets: Vec<String>,
    /// Continue the run in this directory from its latest checkpoint (its config.yaml is used).
    #[arg(long, value_name = "RUN_DIR", conflicts_with = "config")]
    pub resume: Option<PathBuf>,
    /// Stop (with a checkpoint) after this step; continue later with --resume.
    #[arg(long, value_name = "STEP")]
    pub stop_after: Option<u64>,
    /// No progress bar.
    #[arg(long)]
    pub quiet: bool,
}

pub fn run(args: SftArgs) -> anyhow::Result<()> {
    let sets = args
        .sets
        .iter()
        .map(|s| Override::parse(s))
        .collect::<Result<Vec<_>, _>>()?;
    let (cfg, cfg_path) = match (&args.resume, &args.config) {
        (Some(dir), _) => {
            let path = dir.join(CONFIG_FILE);
            let mut cfg = TrainConfig::load(&path, &sets)?;
            cfg.run_dir = dir.clone();
            if !sets.is_empty() {
                std::fs::write(&path, cfg.to_yaml()?)
                    .with_context(|| format!("rewriting {}", path.display()))?;
                eprintln!("note: {} updated with the --set overrides", path.display());
            }
            (cfg, path)
        }
        (None, Some(file)) => (TrainConfig::load(file, &sets)?, file.clone()),
        (None, None) => anyhow::bail!("say what to train: --config FILE.yaml or --resume RUN_DIR"),
    };
    let corpus = read_corpus(&cfg.file.sft, cfg.file.seed, &cfg_path)?;
    for (source, n) in &corpus.sources {
        eprintln!("read {n} dialogues from {source}");
    }
    let dev = device(&cfg)?;
    let model = loading(args.quiet, "policy: loading the model", || {
        load_policy(&cfg, &dev)
    })?;
    let parts = SftParts {
        cfg,
        model,
        corpus,
        progress: !args.quiet,
    };
    let mut trainer = match &args.resume {
        Some(_) => SftTrainer::resume(parts)?,
        None => SftTrainer::start(parts)?,
    };
    let (train, validation, too_long) = trainer.sizes();
    eprintln!(
        "fine-tuning {} on {train} examples ({validation} held out; {too_long} left out as longer \
         than sft.max_tokens) -> {}",
        trainer.model().name,
        trainer.run_dir().display()
    );
    if trainer.steps_done() > 0 {
        eprintln!("resumed after step {}", trainer.steps_done());
    }
    trainer.run(args.stop_after)?;
    let dir = trainer.run_dir().to_path_buf();
    let rows = read_rows(&dir.join(SFT_FILE))?;
    if let (Some(first), Some(last)) = (rows.first(), rows.last()) {
        println!(
            "loss on the training batch: {:.3} at step {} -> {:.3} at step {}",
            first.loss, first.step, last.loss, last.step
        );
    }
    let held: Vec<_> = rows
        .iter()
        .filter_map(|r| Some((r.step, r.validation_loss?)))
        .collect();
    if let (Some(a), Some(b)) = (held.first(), held.last()) {
        println!(
            "loss on the held-out dialogues: {:.3} at step {} -> {:.3} at step {}",
            a.1, a.0, b.1, b.0
        );
    }
    let show = |f: &str| dir.join(f).display().to_string();
    println!(
        "after {} steps, results are in {}:",
        trainer.steps_done(),
        dir.display()
    );
    println!("  {}  the resolved configuration", show(CONFIG_FILE));
    println!(
        "  {}  one row per step (loss, tokens, learning rate)",
        show(SFT_FILE)
    );
    println!("  {}  the training and held-out losses", show(SFT_SVG));
    println!("  {}  adapters and optimizer state", show("checkpoints/"));
    println!(
        "merge the adapters with `empathy-gym export {} --out DIR`, then start GRPO from DIR \
         (model.path in the train config)",
        dir.display()
    );
    Ok(())
}
