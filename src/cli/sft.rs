//! `empathy-gym sft`: LoRA fine-tuning of the policy on the supporter turns of human support
//! dialogues (docs/DESIGN.md section 24), the warm start before `train`.

use clap::Args;
use empathy_gym::learning::sft::{
    read_corpus, read_rows, SftParts, SftRow, SftTrainer, SFT_FILE, SFT_SVG,
};
use empathy_gym::learning::train::run_files::CONFIG_FILE;
use empathy_gym::learning::train::{device, load_policy};

use super::loading::loading;
use super::run_args::RunArgs;

#[derive(Debug, Args)]
pub struct SftArgs {
    #[command(flatten)]
    pub run: RunArgs,
}

pub fn run(args: SftArgs) -> anyhow::Result<()> {
    let (cfg, cfg_path) = args.run.config()?;
    let args = args.run;
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
    let span = |what: &str, pick: fn(&SftRow) -> Option<f64>| {
        let points: Vec<(u64, f64)> = rows
            .iter()
            .filter_map(|r| Some((r.step, pick(r)?)))
            .collect();
        if let (Some(a), Some(b)) = (points.first(), points.last()) {
            println!(
                "loss on {what}: {:.3} at step {} -> {:.3} at step {}",
                a.1, a.0, b.1, b.0
            );
        }
    };
    span("the training batch", |r| r.loss);
    span("the held-out dialogues", |r| r.validation_loss);
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
