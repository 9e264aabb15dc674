//! `empathy-gym eval empathy`: the SAGE-style empathy score of a model and its checkpoints, side by side.

use std::path::{Path, PathBuf};

use clap::{Args, Subcommand};
use empathy_gym::episode::{EpisodeWriter, ModelPolicy};
use empathy_gym::eval::empathy::{per_profile_table, run_empathy, score, summary_table};
use empathy_gym::model::{default_policy_path, load_model, ChatModel, LoadOptions, SamplingParams};
use empathy_gym::profile::{Catalog, Split};

use super::common::load_simulator;

#[derive(Debug, Subcommand)]
pub enum EvalCommand {
    /// SAGE protocol on a split: start 40, changes clamped to +-10, at most 10 turns.
    Empathy(EmpathyArgs),
}

#[derive(Debug, Args)]
pub struct EmpathyArgs {
    /// The base model: an HF folder or a GGUF file (default: SmolLM2-135M-Instruct from models/).
    #[arg(long)]
    pub model: Option<PathBuf>,
    /// A run directory (latest checkpoint) or a checkpoint directory; repeat for several.
    #[arg(long)]
    pub checkpoint: Vec<PathBuf>,
    /// Skip the base model (only the checkpoints).
    #[arg(long)]
    pub no_base: bool,
    #[arg(long, default_value = "test")]
    pub split: Split,
    /// Only the first N profiles of the split (quick checks).
    #[arg(long)]
    pub limit: Option<usize>,
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    #[arg(long, default_value_t = 0.7)]
    pub temperature: f64,
    #[arg(long, default_value_t = 0.9)]
    pub top_p: f64,
    #[arg(long, default_value_t = 80)]
    pub max_new_tokens: usize,
    /// Folder for empathy.md, empathy.csv and one episodes JSONL per model.
    #[arg(long, default_value = "results/eval-empathy")]
    pub out: PathBuf,
}

pub fn run(catalog_root: &Path, cmd: EvalCommand) -> anyhow::Result<()> {
    match cmd {
        EvalCommand::Empathy(args) => empathy(catalog_root, &args),
    }
}

fn empathy(catalog_root: &Path, args: &EmpathyArgs) -> anyhow::Result<()> {
    let catalog = Catalog::load(catalog_root)?;
    let mut ids = catalog.split(args.split).to_vec();
    ids.truncate(args.limit.unwrap_or(ids.len()));
    let sim = load_simulator(catalog_root)?;
    let profiles = ids
        .iter()
        .map(|id| {
            catalog.profile(
                id,
                empathy_gym::profile::Difficulty::Moderate,
                &empathy_gym::eval::empathy::sage_overrides(),
            )
        })
        .collect::<empathy_gym::Result<Vec<_>>>()?;
    sim.prepare(&profiles)?;
    let mut models: Vec<(String, ChatModel, Option<String>)> = Vec::new();
    if !args.no_base {
        let path = args.model.clone().unwrap_or_else(default_policy_path);
        models.push((
            "base".into(),
            load_model(&path, &candle_core::Device::Cpu, &LoadOptions::default())?,
            None,
        ));
    }
    for dir in &args.checkpoint {
        let (model, ckpt) = empathy_gym::train::load_checkpoint_policy(dir)?;
        models.push((
            dir.display().to_string(),
            model,
            Some(ckpt.display().to_string()),
        ));
    }
    std::fs::create_dir_all(&args.out)?;
    let params = SamplingParams {
        temperature: args.temperature,
        top_p: args.top_p,
        max_new_tokens: args.max_new_tokens,
        greedy: args.temperature <= 0.0,
    };
    let (mut scores, mut rows) = (Vec::new(), Vec::new());
    for (i, (name, model, ckpt)) in models.iter().enumerate() {
        eprintln!("evaluating {name} on {} profiles", ids.len());
        let mut policy = ModelPolicy::new(model, params.clone(), args.seed);
        policy.checkpoint = ckpt.clone();
        let records = run_empathy(&sim, &catalog, &mut policy, &ids, args.seed, true)?;
        let mut w = EpisodeWriter::create(&args.out.join(format!("episodes-{i}.jsonl")))?;
        for r in &records {
            w.write(r)?;
            rows.push((name.clone(), r.clone()));
        }
        scores.push(score(name, &records));
    }
    let summary = summary_table(&scores);
    std::fs::write(args.out.join("empathy.md"), summary.to_markdown())?;
    std::fs::write(
        args.out.join("empathy.csv"),
        per_profile_table(&rows).to_csv(),
    )?;
    println!("{}", summary.to_markdown());
    println!(
        "written to {} (empathy.md, empathy.csv, episodes-N.jsonl in model order)",
        args.out.display()
    );
    Ok(())
}
