//! `empathy-gym redteam search`: the adaptive attacker. Evolves template policies from the
//! grammar on the train split with the reward as its only feedback, then plays the best ones on
//! the test split beside the honest references and checks the margins; writes OUT/summary.md,
//! OUT/trace.csv, OUT/rows.csv, OUT/config.yaml, OUT/episodes.jsonl (the found policies' test
//! dialogues) and OUT/found/*.yaml (playable scripts) (docs/REDTEAM.md, "The search"). After each
//! generation it writes OUT/search-state.yaml, from which `--resume` continues a stopped run, and
//! removes it when the run is done.

use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::Context;
use clap::Args;
use empathy_gym::environment::episode::EpisodeWriter;
use empathy_gym::environment::profile::{Catalog, Difficulty, Split};
use empathy_gym::redteam::search::{self, Grammar, SearchPlan, SearchState};
use empathy_gym::redteam::{self, tables, Plan, Side};
use empathy_gym::report::Table;
use indicatif::{ProgressBar, ProgressStyle};
use serde::Serialize;

use super::common::{load_chosen_simulator, under, SimulatorArgs};

#[derive(Debug, Args)]
pub struct SearchArgs {
    /// The grammar of phrase banks, relative to the catalog.
    #[arg(long, default_value = "configs/redteam-search/grammar.yaml")]
    pub grammar: PathBuf,
    /// Honest reference scripts, played on the test split beside the found policies.
    #[arg(long, default_value = "configs/baselines")]
    pub references: PathBuf,
    /// Difficulties searched on and reported (comma-separated).
    #[arg(
        long = "difficulty",
        value_delimiter = ',',
        default_value = "easy,moderate"
    )]
    pub difficulties: Vec<Difficulty>,
    /// Generations of the search.
    #[arg(long, default_value_t = 20)]
    pub generations: usize,
    /// Policies kept per generation.
    #[arg(long, default_value_t = 8)]
    pub population: usize,
    /// New policies tried per generation.
    #[arg(long, default_value_t = 12)]
    pub children: usize,
    /// Train profiles per evaluation (one per scenario first).
    #[arg(long, default_value_t = 40)]
    pub limit: usize,
    /// Found policies played on the test split.
    #[arg(long, default_value_t = 3)]
    pub keep: usize,
    /// Dialogues per test profile.
    #[arg(long, default_value_t = 2)]
    pub repeats: u64,
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Where the results go (relative to the working directory).
    #[arg(long, default_value = "results/redteam/search")]
    pub out: PathBuf,
    /// Found policies of earlier runs (OUT/found/*.yaml) to start from: each joins the starting
    /// population, read back into the grammar's phrases.
    #[arg(long = "start-from", num_args = 1..)]
    pub start_from: Vec<PathBuf>,
    /// Continue the stopped search whose checkpoint is OUT/search-state.yaml (the same flags, or
    /// more generations).
    #[arg(long)]
    pub resume: bool,
    /// Policies played at once, each on its own thread (default: the machine's cores). The
    /// search finds the same policies with any number.
    #[arg(long)]
    pub workers: Option<usize>,
    #[command(flatten)]
    pub sim: SimulatorArgs,
}

#[derive(Serialize)]
struct Resolved<'a> {
    command: String,
    grammar: String,
    references: String,
    difficulties: Vec<String>,
    generations: usize,
    population: usize,
    children: usize,
    train_profiles_per_evaluation: usize,
    train_repeats: u64,
    keep: usize,
    test_repeats: u64,
    seed: u64,
    /// The found policies the starting population took in.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    start_from: Vec<String>,
    simulator: &'a str,
    /// Policies played at once: the time depends on it, the results do not.
    workers: usize,
    /// The fingerprint of the rule files the simulator read: the reward version searched.
    rules: Option<String>,
}

pub fn run(root: &Path, args: SearchArgs) -> anyhow::Result<()> {
    let catalog = Catalog::load(root)?;
    let grammar = Grammar::load(&under(root, &args.grammar))?;
    let start = args
        .start_from
        .iter()
        .map(|p| search::read_found(p, &grammar))
        .collect::<empathy_gym::Result<Vec<_>>>()?;
    let sim = load_chosen_simulator(root, &args.sim)?;
    let mut profiles = Vec::new();
    for s in [Split::Train, Split::Test] {
        for id in redteam::pick_profiles(&catalog, s, None) {
            profiles.push(catalog.profile(&id, Difficulty::Moderate, &Default::default())?);
        }
    }
    std::fs::create_dir_all(args.out.join("found"))
        .with_context(|| format!("cannot create {}", args.out.display()))?;
    let plan = SearchPlan {
        difficulties: args.difficulties.clone(),
        limit: Some(args.limit),
        repeats: 1,
        seed: args.seed,
        generations: args.generations,
        population: args.population,
        children: args.children,
        start,
    };
    let state_path = args.out.join("search-state.yaml");
    let resume = match (args.resume, state_path.exists()) {
        (true, true) => Some((state_path.as_path(), SearchState::read(&state_path)?)),
        (true, false) => anyhow::bail!(
            "nothing to resume: {} does not exist (run without --resume to start a search)",
            state_path.display()
        ),
        (false, true) => anyhow::bail!(
            "{} holds a stopped search: continue it with --resume, or remove the file to start \
             a new one",
            state_path.display()
        ),
        (false, false) => None,
    };
    let bar = ProgressBar::new(args.generations as u64 + 1);
    if let Ok(style) = ProgressStyle::with_template(
        "redteam search [{bar:30}] {pos}/{len} generations {elapsed_precise} eta {eta} {msg}",
    ) {
        bar.set_style(style.progress_chars("=> "));
    }
    if let Some((_, cp)) = &resume {
        bar.set_position(cp.generation() as u64 + 1);
        eprintln!(
            "redteam search: continuing after generation {} of {} ({:.0} s searched so far)",
            cp.generation(),
            args.generations,
            cp.seconds
        );
    }
    let workers = args.workers.unwrap_or_else(|| {
        std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get)
    });
    let last = search::search(
        sim.as_ref(),
        &catalog,
        &grammar,
        &plan,
        workers,
        resume,
        |cp| {
            cp.write(&state_path)?;
            if let Some(g) = cp.trace.last() {
                if bar.is_hidden() {
                    eprintln!(
                        "redteam search: generation {} of {}: best {:.1}, mean {:.1} ({}); {} \
                     policies evaluated, {:.0} s",
                        g.index,
                        args.generations,
                        g.best,
                        g.mean,
                        g.best_policy,
                        g.evaluated,
                        cp.seconds
                    );
                }
                bar.set_message(format!("best {:.1} ({})", g.best, g.best_policy));
            }
            bar.set_position(cp.generation() as u64 + 1);
            Ok(())
        },
    )?;
    bar.finish_and_clear();
    let best = &last.population;
    let search_s = last.seconds;
    let evaluated = last.seen.len();
    let mut trace = Table::new([
        "generation",
        "evaluated",
        "best_train",
        "mean_train",
        "best_policy",
    ]);
    for g in &last.trace {
        trace.push_row([
            g.index.to_string(),
            g.evaluated.to_string(),
            format!("{:.1}", g.best),
            format!("{:.1}", g.mean),
            g.best_policy.clone(),
        ]);
    }
    trace.write_csv(&args.out.join("trace.csv"))?;

    // The found policies on the test split, beside the references.
    let start = Instant::now();
    let mut entries = redteam::load_dir(&under(root, &args.references), Side::Reference, &catalog)?;
    let found = search::entries(best, args.keep, &grammar, &catalog)?;
    for (s, e) in best.iter().zip(&found) {
        let header = format!(
            "# Found by `redteam search` (seed {}): {}; train fitness {:.1}.",
            args.seed,
            s.genome.describe(&grammar),
            s.fitness
        );
        std::fs::write(
            args.out.join("found").join(format!("{}.yaml", e.name)),
            search::script_yaml(s, &grammar, &header)?,
        )?;
    }
    entries.extend(found);
    let test = Plan {
        splits: vec![Split::Test],
        difficulties: args.difficulties.clone(),
        repeats: args.repeats,
        seed: args.seed,
        limit: None,
    };
    let mut writer = EpisodeWriter::create(&args.out.join("episodes.jsonl"))?;
    let rows = redteam::play(
        sim.as_ref(),
        &catalog,
        &mut entries,
        &test,
        |entry, recs| {
            if entry.side == Side::Adversary {
                for r in recs {
                    writer.write(r)?;
                }
            }
            Ok(())
        },
    )?;
    let seconds = search_s + start.elapsed().as_secs_f64();
    let violations = redteam::check(&rows);
    tables::rows_table(&rows).write_csv(&args.out.join("rows.csv"))?;
    let command = std::iter::once("empathy-gym".to_string())
        .chain(std::env::args().skip(1))
        .collect::<Vec<_>>()
        .join(" ");
    let resolved = Resolved {
        command: command.clone(),
        grammar: args.grammar.display().to_string(),
        references: args.references.display().to_string(),
        difficulties: args.difficulties.iter().map(|d| d.to_string()).collect(),
        generations: args.generations,
        population: args.population,
        children: args.children,
        train_profiles_per_evaluation: args.limit,
        train_repeats: plan.repeats,
        keep: args.keep,
        test_repeats: args.repeats,
        seed: args.seed,
        start_from: args
            .start_from
            .iter()
            .map(|p| p.display().to_string())
            .collect(),
        simulator: args.sim.simulator.as_str(),
        workers,
        rules: sim.info().data,
    };
    std::fs::write(
        args.out.join("config.yaml"),
        serde_yaml::to_string(&resolved)?,
    )?;
    let mut md = String::from("# The adaptive attacker\n\n");
    md.push_str(&format!(
        "Written by `{command}`. The search evolved template policies from `{}` for {} \
         generations ({} policies kept, {} children each; {evaluated} distinct policies \
         evaluated) against the rules {}, each scored by its mean final emotion on {} train profiles at {}, one \
         dialogue each, seed {}: {search_s:.0} s on this machine, {seconds:.0} s in all. The {} \
         best were then played on every test profile, {} dialogues each, beside the references; \
         their scripts are in `found/`, their test dialogues in `episodes.jsonl`.\n\n",
        args.grammar.display(),
        args.generations,
        args.population,
        args.children,
        resolved.rules.as_deref().unwrap_or("(not fingerprinted)"),
        args.limit,
        resolved.difficulties.join(" and "),
        args.seed,
        args.keep,
        args.repeats,
    ));
    md.push_str("## Margins on the test split\n\n");
    md.push_str(&tables::verdict(&violations));
    md.push_str(
        "\n\n## Test split, behavior reward\n\nMean final emotion, with resolved / left / \
         unsafe dialogues in brackets.\n\n",
    );
    md.push_str(&tables::behavior_table(&rows, Split::Test, &args.difficulties).to_markdown());
    md.push_str("\n## The found policies\n\n");
    for (s, e) in best
        .iter()
        .zip(entries.iter().filter(|e| e.side == Side::Adversary))
    {
        md.push_str(&format!(
            "- `{}`: {} (train fitness {:.1}); its first reply's template: \"{}\"\n",
            e.name,
            s.genome.describe(&grammar),
            s.fitness,
            e.policy.reply(1)
        ));
    }
    md.push_str("\n## The search, generation by generation (train split)\n\n");
    md.push_str(&trace.to_markdown());
    std::fs::write(args.out.join("summary.md"), &md)?;
    std::fs::remove_file(&state_path)
        .with_context(|| format!("cannot remove {}", state_path.display()))?;
    print!(
        "{}",
        tables::behavior_table(&rows, Split::Test, &args.difficulties).to_markdown()
    );
    println!("\n{}", tables::verdict(&violations));
    println!(
        "search {search_s:.0} s, {seconds:.0} s in all; written to {}/summary.md",
        args.out.display()
    );
    Ok(())
}
