//! `empathy-gym replay show|verify|rescore FILE.jsonl`, `replay stats FILE.jsonl...`,
//! `replay html FILE.jsonl... --out report.html`, and the blind rating page
//! `replay html --rate FILE.jsonl... | --pair BASE TRAINED --out rate.html`.

use std::path::{Path, PathBuf};

use candle_core::Device;
use clap::{Args, Subcommand};
use empathy_gym::environment::episode::{read_episodes, EpisodeLog, EpisodeRecord, EpisodeWriter};
use empathy_gym::environment::profile::{Catalog, Difficulty};
use empathy_gym::environment::reward::{Aggregate, RewardMode};
use empathy_gym::environment::sim::lexicon::Lexicon;
use empathy_gym::replay::rate::{render_rate_page, write_key, LoggedEpisode, Study, StudyOptions};
use empathy_gym::replay::{
    episode_stats, measure, quote, realism_table, render_html, render_transcript, rerun, verify,
    By, Realism, RerunSettings, StatsOptions,
};

use super::common::{build_simulator, load_chosen_simulator, SimulatorArgs};
use super::summary::print_summary;

#[derive(Debug, Subcommand)]
pub enum ReplayCommand {
    /// Print transcripts with the emotion curve.
    Show { file: PathBuf },
    /// Re-run the simulator on the logged assistant turns; fail on any difference. An LLM
    /// simulator re-runs identically only at temperature 0 on a deterministic backend.
    Verify {
        file: PathBuf,
        #[command(flatten)]
        sim: SimulatorArgs,
    },
    /// Re-score the logged assistant turns under another difficulty or reward mode.
    Rescore(RescoreArgs),
    /// Aggregate logs by profile, scenario, persona, difficulty, reward mode, end and step range:
    /// mean reward, mean final emotion, ends, mean reply length.
    Stats(StatsArgs),
    /// One self-contained HTML page: the episodes with filters, each transcript beside its
    /// emotion curve, and the run overview by step. With --rate: a blind rating page for people
    /// and its key.
    Html(HtmlArgs),
    /// How the simulated user talks: distinct sentences per dialogue, the within-dialogue repeat
    /// rate, and how often the user answers the policy's questions and suggestions
    /// (docs/SCENARIOS.md, "Measuring the user").
    User(UserArgs),
}

#[derive(Debug, Args)]
pub struct UserArgs {
    /// Episode logs (JSONL): one row each.
    #[arg(required = true)]
    pub files: Vec<PathBuf>,
    /// Also print this many dialogues of each log (spread evenly over it), every question and
    /// suggestion marked with the rule's verdict, for a spot check.
    #[arg(long, default_value_t = 0)]
    pub quote: usize,
    /// Also write the table as CSV here.
    #[arg(long)]
    pub csv: Option<PathBuf>,
    /// List this many of each log's stock sentences (said by users of several scenarios and
    /// personas), the most widespread first.
    #[arg(long, default_value_t = 0)]
    pub stock: usize,
}

#[derive(Debug, Args)]
pub struct RescoreArgs {
    pub file: PathBuf,
    #[arg(long)]
    pub difficulty: Option<Difficulty>,
    #[arg(long)]
    pub reward_mode: Option<RewardMode>,
    #[arg(long)]
    pub aggregate: Option<Aggregate>,
    /// Write the re-scored episodes here.
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Re-judge with this simulator (`--simulator llm`: an LLM plays the user again).
    #[command(flatten)]
    pub sim: SimulatorArgs,
}

#[derive(Debug, Args)]
pub struct StatsArgs {
    /// Episode logs (JSONL), read together.
    #[arg(required = true)]
    pub files: Vec<PathBuf>,
    /// Group by these, comma separated: profile, scenario, persona, difficulty, reward_mode, end,
    /// step (default: all of them).
    #[arg(long, value_delimiter = ',')]
    pub by: Vec<By>,
    /// Steps per step range (default: about ten ranges over the logged steps).
    #[arg(long)]
    pub step_bin: Option<u64>,
    /// Also write the table as CSV here.
    #[arg(long)]
    pub csv: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct HtmlArgs {
    /// Episode logs (JSONL), shown together.
    #[arg(required_unless_present = "pair", conflicts_with = "pair")]
    pub files: Vec<PathBuf>,
    /// The page to write.
    #[arg(long)]
    pub out: PathBuf,
    /// The page's title (default: the log names; with --rate: "Rating study").
    #[arg(long)]
    pub title: Option<String>,
    /// Write a blind rating page instead: only the dialogues' text, in a seeded order under opaque
    /// ids, rated by people on 1-5 scales; its key goes beside it (see --key).
    #[arg(long)]
    pub rate: bool,
    /// With --rate: rate A/B pairs, a dialogue of BASE beside one of TRAINED with the same profile,
    /// the sides drawn per pair.
    #[arg(long, num_args = 2, value_names = ["BASE", "TRAINED"], requires = "rate")]
    pub pair: Option<Vec<PathBuf>>,
    /// With --rate: seeds the item ids, their order and the A/B sides.
    #[arg(long, default_value_t = 0, requires = "rate")]
    pub seed: u64,
    /// With --rate: keep only this many items (the first of the seeded order).
    #[arg(long, requires = "rate")]
    pub items: Option<usize>,
    /// With --rate: where the key goes (default: beside the page, `rate.html` -> `rate.key.csv`).
    /// Keep it from the raters; `judge agreement` reads it.
    #[arg(long, requires = "rate")]
    pub key: Option<PathBuf>,
}

pub fn run(catalog_root: &Path, cmd: ReplayCommand) -> anyhow::Result<()> {
    let file = match cmd {
        ReplayCommand::Stats(args) => return stats(args),
        ReplayCommand::Html(args) => return html(args),
        ReplayCommand::User(args) => return user(catalog_root, args),
        ReplayCommand::Show { ref file } | ReplayCommand::Verify { ref file, .. } => file.clone(),
        ReplayCommand::Rescore(ref a) => a.file.clone(),
    };
    let log = read_episodes(&file)?;
    let result = match cmd {
        ReplayCommand::Show { .. } => {
            for (line, r) in &log.records {
                println!("{}", render_transcript(*line, r));
            }
            Ok(())
        }
        ReplayCommand::Verify { ref sim, .. } => verify_all(catalog_root, &file, &log.records, sim),
        ReplayCommand::Rescore(args) => rescore_all(catalog_root, &log.records, &args),
        ReplayCommand::Stats(_) | ReplayCommand::Html(_) | ReplayCommand::User(_) => {
            unreachable!("handled above")
        }
    };
    finish(log, result)
}

/// A log with bad lines: every good episode was processed; name every bad line, then fail.
fn finish(mut log: EpisodeLog, result: anyhow::Result<()>) -> anyhow::Result<()> {
    let bad = log.errors.len();
    if let Some(first) = log.first_error() {
        eprintln!(
            "processed the {} good episodes; {bad} bad line(s):",
            log.records.len()
        );
        eprintln!("  {first}");
        for e in &log.errors {
            eprintln!("  {e}");
        }
        result?;
        return Err(first.into());
    }
    result
}

/// Every record of every log with its log's index and its line; a bad line anywhere fails the
/// whole command, naming file and line.
fn read_all(files: &[PathBuf]) -> anyhow::Result<Vec<(usize, usize, EpisodeRecord)>> {
    let mut out = Vec::new();
    for (i, f) in files.iter().enumerate() {
        let mut log = read_episodes(f)?;
        if let Some(err) = log.first_error() {
            return Err(err.into());
        }
        out.extend(log.records.into_iter().map(|(line, r)| (i, line, r)));
    }
    Ok(out)
}

fn html(args: HtmlArgs) -> anyhow::Result<()> {
    if args.rate {
        return rate_page(args);
    }
    let episodes = read_all(&args.files)?;
    let logs: Vec<String> = args.files.iter().map(|f| f.display().to_string()).collect();
    let title = args.title.clone().unwrap_or_else(|| logs.join(", "));
    let page = render_html(&title, &logs, &episodes);
    std::fs::write(&args.out, page).map_err(|e| empathy_gym::Error::io(&args.out, e))?;
    println!(
        "{} episodes from {} logs written to {}",
        episodes.len(),
        logs.len(),
        args.out.display()
    );
    Ok(())
}

/// The logs' episodes as the study reads them, with each log's name as given.
fn logged_episodes(files: &[PathBuf]) -> anyhow::Result<Vec<LoggedEpisode>> {
    Ok(read_all(files)?
        .into_iter()
        .map(|(log, line, record)| LoggedEpisode {
            log: files[log].display().to_string(),
            line,
            record,
        })
        .collect())
}

fn rate_page(args: HtmlArgs) -> anyhow::Result<()> {
    let opts = StudyOptions {
        seed: args.seed,
        items: args.items,
    };
    let study = match &args.pair {
        Some(pair) => Study::paired(
            &logged_episodes(&pair[..1])?,
            &logged_episodes(&pair[1..])?,
            opts,
        ),
        None => Study::single(&logged_episodes(&args.files)?, opts),
    };
    if study.items.is_empty() {
        anyhow::bail!(
            "no dialogues to rate: {}",
            if args.items == Some(0) {
                "--items is 0"
            } else if args.pair.is_some() {
                "no profile is played in both logs"
            } else {
                "the logs are empty"
            }
        );
    }
    let title = args.title.as_deref().unwrap_or("Rating study");
    let page = render_rate_page(title, &study);
    let key = args
        .key
        .clone()
        .unwrap_or_else(|| args.out.with_extension("key.csv"));
    if key == args.out {
        anyhow::bail!(
            "--key and --out are both {}; the key must not be the page",
            key.display()
        );
    }
    for file in [&args.out, &key] {
        if let Some(dir) = file.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(|e| empathy_gym::Error::io(dir, e))?;
        }
    }
    std::fs::write(&args.out, page).map_err(|e| empathy_gym::Error::io(&args.out, e))?;
    let rows = study.key_rows();
    write_key(&key, &rows)?;
    println!(
        "{} items ({} dialogues) of study {} written to {}; the key, to keep from the raters, to {}",
        study.items.len(),
        rows.len(),
        study.id,
        args.out.display(),
        key.display()
    );
    if study.unpaired > 0 {
        println!(
            "{} episodes left out: the other log has no episode of their profile left to pair with",
            study.unpaired
        );
    }
    Ok(())
}

fn user(catalog_root: &Path, args: UserArgs) -> anyhow::Result<()> {
    let catalog = Catalog::load(catalog_root)?;
    let lexicon = Lexicon::load(&catalog_root.join("data/lexicon.yaml"))?;
    let mut rows = Vec::new();
    let mut quotes = String::new();
    for file in &args.files {
        let mut log = read_episodes(file)?;
        if let Some(bad) = log.first_error() {
            anyhow::bail!("{}: {bad}", file.display());
        }
        let mut acc = Realism::default();
        let n = log.records.len();
        let every = if args.quote == 0 {
            0
        } else {
            n.div_ceil(args.quote).max(1)
        };
        for (k, (_, rec)) in log.records.iter().enumerate() {
            let (judged, faults) = measure(rec, &catalog, &lexicon, &mut acc);
            if every > 0 && k % every == 0 {
                quotes.push_str(&quote(rec, &judged, &faults));
                quotes.push('\n');
            }
        }
        rows.push((file.display().to_string(), acc));
    }
    let table = realism_table(&rows);
    print!("{}", table.to_markdown());
    for (name, acc) in &rows {
        let stock = acc.fit.stock_examples(args.stock);
        if !stock.is_empty() {
            println!(
                "\nStock sentences of {name} (said by users of several scenarios and personas):"
            );
            for (s, scenarios, personas) in stock {
                println!("- \"{s}\": {scenarios} scenarios, {personas} personas");
            }
        }
    }
    if !quotes.is_empty() {
        println!("\n{quotes}");
    }
    if let Some(path) = &args.csv {
        table.write_csv(path)?;
        println!("written to {}", path.display());
    }
    Ok(())
}

fn stats(args: StatsArgs) -> anyhow::Result<()> {
    let records: Vec<EpisodeRecord> = read_all(&args.files)?
        .into_iter()
        .map(|(_, _, r)| r)
        .collect();
    let opts = StatsOptions {
        by: if args.by.is_empty() {
            By::ALL.to_vec()
        } else {
            args.by
        },
        step_bin: args.step_bin,
    };
    let table = episode_stats(&records, &opts);
    print!("{}", table.to_markdown());
    if let Some(path) = &args.csv {
        table.write_csv(path)?;
        println!("written to {}", path.display());
    }
    Ok(())
}

fn verify_all(
    catalog_root: &Path,
    file: &Path,
    records: &[(usize, EpisodeRecord)],
    sim_args: &SimulatorArgs,
) -> anyhow::Result<()> {
    let kind = sim_args.simulator.as_str();
    if let Some((line, r)) = records.iter().find(|(_, r)| r.simulator.kind != kind) {
        anyhow::bail!(
            "{}: line {line} was simulated by `{}`, not `{kind}`; verify it with --simulator {}",
            file.display(),
            r.simulator.kind,
            r.simulator.kind
        );
    }
    let catalog = Catalog::load(catalog_root)?;
    let device = appraised_on(file, records)?;
    let sim = build_simulator(
        catalog_root,
        sim_args.simulator,
        sim_args.simulator_config.as_deref(),
        &device,
        sim_args.embed_cache,
    )?;
    if kind == "llm" {
        eprintln!("note: an LLM simulator is verified only with temperature 0 and a deterministic backend (the same model and server build, answers that do not depend on batching); otherwise differences are expected and are not errors of the log");
    }
    let mut failed = 0;
    for (line, r) in records {
        if let Some(m) = verify(sim.as_ref(), &catalog, r)? {
            failed += 1;
            eprintln!(
                "{}: line {line} ({}:{}, step {} group {} sample {}): {m}",
                file.display(),
                r.profile.scenario,
                r.profile.persona,
                r.step,
                r.group,
                r.sample
            );
        }
    }
    println!(
        "verified {} episodes: {} identical, {} differ",
        records.len(),
        records.len() - failed,
        failed
    );
    if failed > 0 {
        anyhow::bail!(
            "{failed} of {} episodes in {} do not re-run identically",
            records.len(),
            file.display()
        );
    }
    Ok(())
}

/// The device the log's appraisals ran on (`simulator.device`; absent: the CPU), which a bit-for-bit
/// re-run needs: the same for every line, and usable here.
fn appraised_on(file: &Path, records: &[(usize, EpisodeRecord)]) -> anyhow::Result<Device> {
    fn on(r: &EpisodeRecord) -> &str {
        r.simulator.device.as_deref().unwrap_or("cpu")
    }
    let Some((first, r0)) = records.first() else {
        return Ok(Device::Cpu);
    };
    if let Some((line, r)) = records.iter().find(|(_, r)| on(r) != on(r0)) {
        anyhow::bail!(
            "{}: line {first} was appraised on {} but line {line} on {}; verify them apart",
            file.display(),
            on(r0),
            on(r)
        );
    }
    match on(r0) {
        "cpu" => Ok(Device::Cpu),
        "cuda" => empathy_gym::model::open_cuda(0).map_err(|e| {
            anyhow::anyhow!(
                "{}: line {first} was appraised on cuda (the run's simulator.device), and no CUDA \
                 device is usable here ({e}); verify it on a GPU with a build with --features \
                 cuda (on the CPU its embeddings differ in the last bits), or re-judge it here \
                 with `replay rescore`",
                file.display()
            )
        }),
        other => anyhow::bail!(
            "{}: line {first} was appraised on `{other}`, which this build cannot run; verify it \
             where it ran, or re-judge it here with `replay rescore`",
            file.display()
        ),
    }
}

fn rescore_all(
    catalog_root: &Path,
    records: &[(usize, EpisodeRecord)],
    args: &RescoreArgs,
) -> anyhow::Result<()> {
    let catalog = Catalog::load(catalog_root)?;
    let sim = load_chosen_simulator(catalog_root, &args.sim)?;
    let settings = RerunSettings {
        difficulty: args.difficulty,
        reward_mode: args.reward_mode,
        aggregate: args.aggregate,
    };
    let mut writer = args.out.as_deref().map(EpisodeWriter::create).transpose()?;
    let mut out = Vec::new();
    for (line, r) in records {
        let again = rerun(sim.as_ref(), &catalog, r, &settings)?;
        println!(
            "line {line} {}:{}  reward {:.3} -> {:.3}  final {} -> {}",
            r.profile.scenario,
            r.profile.persona,
            r.reward.unwrap_or(0.0),
            again.reward.unwrap_or(0.0),
            r.final_emotion(),
            again.final_emotion()
        );
        if let Some(w) = writer.as_mut() {
            w.write(&again)?;
        }
        out.push(again);
    }
    print_summary(&out);
    super::summary::print_simulator_failures(&out);
    Ok(())
}
