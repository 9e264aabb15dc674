//! `empathy-gym judge score FILE... --out DIR`: the simulated user's judgment of conversations from
//! elsewhere; `judge epitome DIR`: its agreement with EPITOME's human levels.

use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::Context;
use clap::{Args, Subcommand};
use empathy_gym::environment::sim::Appraiser;
use empathy_gym::judge::epitome::{self, Item, Part};
use empathy_gym::judge::{judge, Conversation, Format, JudgeRules, JudgeWriter, Judged};
use empathy_gym::report::stats::BootstrapConfig;
use indicatif::{ProgressBar, ProgressStyle};

use super::common::load_simulator;
use super::loading::loading;

/// Conversations judged per batch: each batch's replies are embedded together and written out.
const BATCH: usize = 64;

#[derive(Debug, Subcommand)]
pub enum JudgeCommand {
    /// Score conversations: per reply the moves, named components and emotion change, per
    /// dialogue the emotion trajectory (judged.jsonl, replies.csv, dialogues.csv).
    Score(ScoreArgs),
    /// Agreement with EPITOME's human empathy levels on the fixed dev or test part.
    Epitome(EpitomeArgs),
    /// People's ratings (from `replay html --rate`) against the simulator, and between raters.
    Agreement(super::judge_agreement::AgreementArgs),
}

#[derive(Debug, Args)]
pub struct ScoreArgs {
    /// CSV of (seeker_post, response_post) pairs, ESConv-shaped JSON or JSONL, or episode logs.
    #[arg(required = true)]
    pub files: Vec<PathBuf>,
    /// The input format (default: from the extension; `.jsonl` with a `schema` field is a log).
    #[arg(long)]
    pub format: Option<Format>,
    /// Folder for judged.jsonl, replies.csv and dialogues.csv.
    #[arg(long)]
    pub out: PathBuf,
}

#[derive(Debug, Args)]
pub struct EpitomeArgs {
    /// The folder holding EPITOME's emotional-reactions-reddit.csv, interpretations-reddit.csv
    /// and explorations-reddit.csv.
    pub dir: PathBuf,
    /// Which part to report: dev (tune on it) or test (report once per appraiser version).
    #[arg(long, default_value = "dev")]
    pub part: PartArg,
    /// Write the report here (markdown) as well as printing it.
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Also write the judged pairs (judged.jsonl, replies.csv, dialogues.csv) to this folder.
    #[arg(long)]
    pub judged: Option<PathBuf>,
    /// Bootstrap resamples for the intervals.
    #[arg(long, default_value_t = 2000)]
    pub resamples: usize,
}

#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub enum PartArg {
    Dev,
    Test,
    Both,
}

pub fn run(catalog: &Path, cmd: JudgeCommand) -> anyhow::Result<()> {
    match cmd {
        JudgeCommand::Score(args) => score(catalog, args),
        JudgeCommand::Epitome(args) => run_epitome(catalog, args),
        JudgeCommand::Agreement(args) => super::judge_agreement::run(catalog, args),
    }
}

fn load(catalog: &Path) -> anyhow::Result<(Appraiser, JudgeRules)> {
    let rules = JudgeRules::load(catalog)?;
    let appraiser = loading(false, "simulator: loading the appraiser", || {
        load_simulator(catalog)
    })?;
    Ok((appraiser, rules))
}

fn bar(what: &str, len: Option<u64>) -> ProgressBar {
    let bar = len.map_or_else(ProgressBar::new_spinner, ProgressBar::new);
    let template = if len.is_some() {
        format!("{what} [{{bar:30}}] {{pos}}/{{len}} {{elapsed_precise}} eta {{eta}}")
    } else {
        format!("{what} {{spinner}} {{pos}} conversations {{elapsed_precise}}")
    };
    if let Ok(style) = ProgressStyle::with_template(&template) {
        bar.set_style(style.progress_chars("=> "));
    }
    bar
}

fn score(catalog: &Path, args: ScoreArgs) -> anyhow::Result<()> {
    let (appraiser, rules) = load(catalog)?;
    let mut writer = JudgeWriter::create(&args.out)?;
    let start = Instant::now();
    let progress = bar("judge", None);
    let mut finals: Vec<f64> = Vec::new();
    let mut replies = 0usize;
    for file in &args.files {
        let format = match args.format {
            Some(f) => f,
            None => Format::guess(file)?,
        };
        let mut pending: Vec<Conversation> = Vec::new();
        let mut flush = |pending: &mut Vec<Conversation>| -> empathy_gym::Result<()> {
            let judged = judge(&appraiser, &rules, std::mem::take(pending))?;
            progress.inc(judged.len() as u64);
            for j in &judged {
                finals.push(f64::from(j.final_emotion()));
                replies += j.replies.len();
            }
            writer.write(&judged)
        };
        let read = empathy_gym::judge::input::read(file, format, &mut |conv| {
            pending.push(conv);
            if pending.len() >= BATCH {
                flush(&mut pending)?;
            }
            Ok(())
        });
        // What was read before a bad row is judged and written before the error is reported.
        flush(&mut pending)?;
        if let Err(e) = read {
            progress.finish_and_clear();
            return Err(anyhow::Error::new(e).context(format!(
                "stopped at the error; the {} conversations before it are in {}",
                writer.written,
                args.out.display()
            )));
        }
    }
    progress.finish_and_clear();
    let mean = finals.iter().sum::<f64>() / finals.len().max(1) as f64;
    println!(
        "judged {} conversations, {replies} replies in {:.1} s; mean final emotion {mean:.1}",
        writer.written,
        start.elapsed().as_secs_f64()
    );
    println!(
        "wrote {}/judged.jsonl, replies.csv, dialogues.csv",
        args.out.display()
    );
    Ok(())
}

fn run_epitome(catalog: &Path, args: EpitomeArgs) -> anyhow::Result<()> {
    let items = epitome::load(&args.dir)?;
    let (appraiser, rules) = load(catalog)?;
    let parts: Vec<Part> = match args.part {
        PartArg::Dev => vec![Part::Dev],
        PartArg::Test => vec![Part::Test],
        PartArg::Both => vec![Part::Dev, Part::Test],
    };
    let chosen: Vec<&Item> = items.iter().filter(|i| parts.contains(&i.part())).collect();
    let mut writer = match &args.judged {
        Some(dir) => Some(JudgeWriter::create(dir)?),
        None => None,
    };
    let progress = bar("epitome", Some(chosen.len() as u64));
    let mut judged: Vec<Judged> = Vec::with_capacity(chosen.len());
    for chunk in chosen.chunks(BATCH) {
        let batch = judge(
            &appraiser,
            &rules,
            chunk.iter().map(|i| i.conversation()).collect(),
        )?;
        if let Some(w) = writer.as_mut() {
            w.write(&batch)?;
        }
        progress.inc(batch.len() as u64);
        judged.extend(batch);
    }
    progress.finish_and_clear();
    let cfg = BootstrapConfig {
        resamples: args.resamples,
        ..Default::default()
    };
    let side = |part: Part| -> (Vec<&Item>, Vec<&Judged>) {
        chosen
            .iter()
            .zip(&judged)
            .filter(|(i, _)| i.part() == part)
            .map(|(i, j)| (*i, j))
            .unzip()
    };
    let mut report = format!(
        "Written by `empathy-gym judge epitome DIR --part {}` ({} pairs rated for all three \
         mechanisms; appraiser data {}; bootstrap {} resamples, seed {}).\n\n",
        match args.part {
            PartArg::Dev => "dev",
            PartArg::Test => "test",
            PartArg::Both => "both",
        },
        items.len(),
        epitome::data_fingerprint(catalog)?,
        cfg.resamples,
        cfg.seed
    );
    for part in parts {
        let (its, js) = side(part);
        let rows = epitome::agreement(&its, &js, &cfg);
        report.push_str(&format!(
            "### The {} part ({} pairs)\n\n{}\n",
            part.as_str(),
            its.len(),
            epitome::table(&rows).to_markdown()
        ));
    }
    if matches!(args.part, PartArg::Both) {
        let (dev, test) = (side(Part::Dev), side(Part::Test));
        report.push_str(&format!(
            "### Beside the paper's classifiers

{}
",
            epitome::anchor((&dev.0, &dev.1), (&test.0, &test.1)).to_markdown()
        ));
    }
    print!("{report}");
    if let Some(out) = &args.out {
        if let Some(dir) = out.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
        }
        std::fs::write(out, &report).with_context(|| format!("writing {}", out.display()))?;
        println!("wrote {}", out.display());
    }
    Ok(())
}
