//! `empathy-gym train`: GRPO training of the policy against the simulated user (docs/DESIGN.md
//! section 9).

use std::path::Path;

use clap::Args;
use empathy_gym::environment::episode::read_episodes;
use empathy_gym::environment::profile::Catalog;
use empathy_gym::environment::sim::SimulatorKind;
use empathy_gym::learning::train::run_files::{
    CONFIG_FILE, DIFFICULTY_SVG, EMOTION_SVG, EPISODES_FILE, METRICS_FILE, REWARD_SVG,
};
use empathy_gym::learning::train::run_summary::end_summary;
use empathy_gym::learning::train::{
    device, difficulty_plan, load_policy, profiles, read_metrics, simulator_device, EnvReward,
    StepMetrics, TrainConfig, Trainer, TrainerParts,
};

use super::common::build_simulator;
use super::loading::loading;
use super::run_args::RunArgs;

#[derive(Debug, Args)]
pub struct TrainArgs {
    #[command(flatten)]
    pub run: RunArgs,
}

pub fn run(catalog_root: &Path, args: TrainArgs) -> anyhow::Result<()> {
    let (cfg, _) = args.run.config()?;
    let a = &args.run;
    train(catalog_root, cfg, a.resume.is_some(), a.stop_after, a.quiet)?;
    Ok(())
}

/// Trains `cfg` (continuing its run directory when `resume`), prints the summary and where the
/// files are; returns the steps done. `sweep cell` trains through this too.
pub fn train(
    catalog_root: &Path,
    cfg: TrainConfig,
    resume: bool,
    stop_after: Option<u64>,
    quiet: bool,
) -> anyhow::Result<u64> {
    let catalog = Catalog::load(catalog_root)?;
    let profiles = profiles(&catalog, &cfg)?;
    let simulator = &cfg.file.simulator;
    let dev = device(&cfg)?;
    let sim = build_simulator(
        catalog_root,
        simulator.kind,
        simulator.config.as_deref(),
        &simulator_device(&cfg, &dev)?,
        empathy_gym::environment::sim::embed::DEFAULT_CACHE_ENTRIES,
    )?;
    let sim_kind = simulator.kind;
    if let Some(d) = sim.info().device {
        eprintln!("simulator: appraiser, sentence embeddings on {d} (simulator.device)");
    }
    let model = loading(quiet, "policy: loading the model", || {
        load_policy(&cfg, &dev)
    })?;
    let g = &cfg.file.grpo;
    eprintln!(
        "training {} on {} profiles ({}, {}): {} step{} of {} profiles x {} dialogues -> {}",
        model.name,
        profiles.len(),
        cfg.file.env.split,
        cfg.file.env.difficulty,
        g.steps,
        if g.steps == 1 { "" } else { "s" },
        g.profiles_per_step,
        g.group_size,
        cfg.run_dir.display()
    );
    let run_dir = cfg.run_dir.clone();
    let difficulty = difficulty_plan(&catalog, &cfg);
    let parts = TrainerParts {
        cfg,
        model,
        sim: sim.as_ref(),
        reward: &EnvReward,
        profiles,
        difficulty,
        progress: !quiet,
    };
    let mut trainer = if resume {
        Trainer::resume(parts)?
    } else {
        Trainer::start(parts)?
    };
    let resumed_at = trainer.steps_done();
    if resumed_at > 0 {
        eprintln!("resumed after step {resumed_at}");
    }
    trainer.run(stop_after)?;
    let rows = read_metrics(&run_dir.join(METRICS_FILE))?;
    print_summary(&run_dir, &rows)?;
    if sim_kind == SimulatorKind::Llm {
        let failures: u64 = rows.iter().map(|m| m.sim_failures).sum();
        println!(
            "LLM simulator: {failures} malformed or failed answers over the run (metrics.csv \
             sim_failures); each is logged in the turn's appraisal.llm"
        );
    }
    print_where(&run_dir, trainer.steps_done());
    Ok(trainer.steps_done())
}

/// The end summary: the first and last quarter of the steps, the reward curve, and a typical
/// dialogue of the first step beside one of the last (`train::run_summary`).
fn print_summary(run_dir: &Path, rows: &[StepMetrics]) -> anyhow::Result<()> {
    let log = read_episodes(&run_dir.join(EPISODES_FILE))?;
    let episodes: Vec<_> = log.records.into_iter().map(|(_, r)| r).collect();
    println!();
    println!("{}", end_summary(rows, &episodes));
    Ok(())
}

fn print_where(dir: &Path, steps: u64) {
    let show = |f: &str| dir.join(f).display().to_string();
    println!("after {steps} steps, results are in {}:", dir.display());
    println!("  {}  the resolved configuration", show(CONFIG_FILE));
    println!(
        "  {}  one row per step (reward, emotion, KL, clipping, timings)",
        show(METRICS_FILE)
    );
    println!(
        "  {}  every dialogue; read them with `empathy-gym replay show`",
        show(EPISODES_FILE)
    );
    println!(
        "  {}, {}, {}  reward, final emotion and difficulty per step",
        show(REWARD_SVG),
        show(EMOTION_SVG),
        show(DIFFICULTY_SVG)
    );
    println!(
        "  {}  adapters, optimizer and RNG state",
        show("checkpoints/")
    );
    println!(
        "export the policy with `empathy-gym export {} --out DIR`",
        dir.display()
    );
}
