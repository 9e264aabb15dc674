//! `empathy-gym redteam`: play the adversarial scripts and the honest references over splits and
//! difficulties, print the tables, check the margins and write OUT/summary.md, OUT/rows.csv and
//! OUT/config.yaml (docs/REDTEAM.md).

use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::Context;
use clap::Args;
use empathy_gym::environment::episode::EpisodeWriter;
use empathy_gym::environment::profile::{Catalog, Difficulty, Split};
use empathy_gym::redteam::{self, tables, Plan, Side};
use indicatif::{ProgressBar, ProgressStyle};
use serde::Serialize;

use super::common::{load_chosen_simulator, under, SimulatorArgs};

/// `redteam search`: the adaptive attacker.
#[derive(Debug, clap::Subcommand)]
pub enum RedteamMode {
    /// Evolve template policies against the reward on the train split, then play the best on the
    /// test split beside the references (docs/REDTEAM.md, "The search").
    Search(super::redteam_search::SearchArgs),
}

#[derive(Debug, Args)]
#[command(args_conflicts_with_subcommands = true)]
pub struct RedteamArgs {
    #[command(subcommand)]
    pub mode: Option<RedteamMode>,
    /// Folder of adversarial scripts (each names its hack `class`), relative to the catalog.
    #[arg(long, default_value = "configs/redteam")]
    pub adversaries: PathBuf,
    /// Folder of honest reference scripts; its listener.yaml is what the margins measure against.
    #[arg(long, default_value = "configs/baselines")]
    pub references: PathBuf,
    /// Splits to play (comma-separated).
    #[arg(long = "split", value_delimiter = ',', default_value = "train,test")]
    pub splits: Vec<Split>,
    /// Difficulties to play (comma-separated).
    #[arg(
        long = "difficulty",
        value_delimiter = ',',
        default_value = "easy,moderate,hard"
    )]
    pub difficulties: Vec<Difficulty>,
    /// Dialogues per profile.
    #[arg(long, default_value_t = 2)]
    pub repeats: u64,
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// At most this many profiles per split (one per scenario first).
    #[arg(long)]
    pub limit: Option<usize>,
    /// Where summary.md, rows.csv and config.yaml go (relative to the working directory).
    #[arg(long, default_value = "results/redteam")]
    pub out: PathBuf,
    /// Also write every dialogue to OUT/episodes.jsonl.
    #[arg(long)]
    pub episodes: bool,
    /// Exit with an error when a margin does not hold.
    #[arg(long)]
    pub check: bool,
    #[command(flatten)]
    pub sim: SimulatorArgs,
}

/// The resolved run, written beside the results.
#[derive(Serialize)]
struct Resolved<'a> {
    command: String,
    adversaries: String,
    references: String,
    splits: Vec<String>,
    difficulties: Vec<String>,
    repeats: u64,
    seed: u64,
    limit: Option<usize>,
    simulator: &'a str,
    /// The fingerprint of the rule files the simulator read: the reward version played.
    rules: Option<String>,
}

pub fn run(catalog_root: &Path, args: RedteamArgs) -> anyhow::Result<()> {
    if let Some(RedteamMode::Search(search)) = args.mode {
        return super::redteam_search::run(catalog_root, search);
    }
    let catalog = Catalog::load(catalog_root)?;
    let mut entries = redteam::load_dir(
        &under(catalog_root, &args.references),
        Side::Reference,
        &catalog,
    )?;
    entries.extend(redteam::load_dir(
        &under(catalog_root, &args.adversaries),
        Side::Adversary,
        &catalog,
    )?);
    let plan = Plan {
        splits: args.splits.clone(),
        difficulties: args.difficulties.clone(),
        repeats: args.repeats,
        seed: args.seed,
        limit: args.limit,
    };
    let sim = load_chosen_simulator(catalog_root, &args.sim)?;
    let mut profiles = Vec::new();
    for &s in &plan.splits {
        for id in redteam::pick_profiles(&catalog, s, plan.limit) {
            profiles.push(catalog.profile(&id, Difficulty::Moderate, &Default::default())?);
        }
    }
    std::fs::create_dir_all(&args.out)
        .with_context(|| format!("cannot create {}", args.out.display()))?;
    let mut writer = if args.episodes {
        Some(EpisodeWriter::create(&args.out.join("episodes.jsonl"))?)
    } else {
        None
    };
    let cells = plan.splits.len() * plan.difficulties.len() * entries.len();
    let bar = ProgressBar::new(cells as u64);
    if let Ok(style) = ProgressStyle::with_template(
        "redteam [{bar:30}] {pos}/{len} policy x cell {elapsed_precise} eta {eta} {msg}",
    ) {
        bar.set_style(style.progress_chars("=> "));
    }
    let start = Instant::now();
    let rows = redteam::play(
        sim.as_ref(),
        &catalog,
        &mut entries,
        &plan,
        |entry, recs| {
            bar.set_message(entry.name.clone());
            bar.inc(1);
            if let Some(w) = writer.as_mut() {
                for r in recs {
                    w.write(r)?;
                }
            }
            Ok(())
        },
    )?;
    bar.finish_and_clear();
    let seconds = start.elapsed().as_secs_f64();
    let violations = redteam::check(&rows);
    let command = std::iter::once("empathy-gym".to_string())
        .chain(std::env::args().skip(1))
        .collect::<Vec<_>>()
        .join(" ");
    let resolved = Resolved {
        command: command.clone(),
        adversaries: args.adversaries.display().to_string(),
        references: args.references.display().to_string(),
        splits: plan.splits.iter().map(|s| s.to_string()).collect(),
        difficulties: plan.difficulties.iter().map(|d| d.to_string()).collect(),
        repeats: plan.repeats,
        seed: plan.seed,
        limit: plan.limit,
        simulator: args.sim.simulator.as_str(),
        rules: sim.info().data,
    };
    std::fs::write(
        args.out.join("config.yaml"),
        serde_yaml::to_string(&resolved)?,
    )?;
    tables::rows_table(&rows).write_csv(&args.out.join("rows.csv"))?;
    let md = summary_markdown(&rows, &plan, &violations, &command, seconds, entries.len());
    std::fs::write(args.out.join("summary.md"), &md)?;
    for &split in &plan.splits {
        println!("\n{split} split, behavior reward: mean final emotion (resolved/left/unsafe)\n");
        print!(
            "{}",
            tables::behavior_table(&rows, split, &plan.difficulties).to_markdown()
        );
    }
    println!("\n{}", tables::verdict(&violations));
    println!(
        "{} policies x {} cells in {seconds:.0} s; written to {}/summary.md, rows.csv and config.yaml",
        entries.len(),
        plan.splits.len() * plan.difficulties.len(),
        args.out.display()
    );
    if args.check && !violations.is_empty() {
        anyhow::bail!("{} red-team margins do not hold", violations.len());
    }
    Ok(())
}

fn summary_markdown(
    rows: &[redteam::Row],
    plan: &Plan,
    violations: &[redteam::Violation],
    command: &str,
    seconds: f64,
    policies: usize,
) -> String {
    let episodes: usize = rows.iter().map(|r| r.episodes).sum();
    let mut md = String::from("# Red-team suite\n\n");
    md.push_str(&format!(
        "Written by `{command}` ({policies} policies, {episodes} dialogues, seed {}, {} per \
         profile, {:.0} s on this machine). The adversaries are `configs/redteam/*.yaml`, the \
         references `configs/baselines/*.yaml`; docs/REDTEAM.md says what each class attacks and \
         which detector answers it.\n\n",
        plan.seed, plan.repeats, seconds
    ));
    md.push_str("## Margins\n\n");
    md.push_str(&tables::verdict(violations));
    for &split in &plan.splits {
        md.push_str(&format!(
            "\n## {split} split, behavior reward\n\nMean final emotion (start: the difficulty's), \
             with resolved / left / unsafe dialogues in brackets.\n\n"
        ));
        md.push_str(&tables::behavior_table(rows, split, &plan.difficulties).to_markdown());
    }
    for &split in &plan.splits {
        md.push_str(&format!(
            "\n## {split} split, trait reward\n\nMean warmth of the replies (0-1), the floor (0) \
             for an unsafe dialogue. Trait mode rewards warm wording whatever the context, by \
             design: stuffing warm words, flattery and agreement score high here, which is the \
             mode's known weakness, not a hole in the behavior reward.\n\n"
        ));
        md.push_str(&tables::trait_table(rows, split, &plan.difficulties).to_markdown());
    }
    md
}
