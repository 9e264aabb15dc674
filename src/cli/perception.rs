//! `empathy-gym perception fit`: fit perception's heads from the user's copies of EPITOME and
//! ESConv (writes `data/perception.*`) and report each head's AUC on what it never fit
//! (`results/validation/perception.md`). `empathy-gym perception wording` does the same for the
//! wording head (`data/wording.*`, `results/validation/wording.md`), `empathy-gym perception
//! responsive` for the responsiveness head (`data/responsive.*`,
//! `results/validation/responsive.md`), and `empathy-gym perception fluency` sets the fluency
//! judge (`data/fluency.yaml`, `results/validation/fluency.md`).

use std::path::{Path, PathBuf};
use std::time::Instant;

use clap::{Args, Subcommand};
use empathy_gym::environment::sim::appraiser_config::AppraiserConfig;
use empathy_gym::environment::sim::moves::Move;
use empathy_gym::environment::sim::perceive::Perception;
use empathy_gym::environment::sim::Embedder;
use empathy_gym::fit::perception::MoveReading;
use empathy_gym::fit::train::FitSettings;
use empathy_gym::fit::{fluency, perception, responsive, wording};

#[derive(Debug, Subcommand)]
pub enum PerceptionCommand {
    /// Fit the heads (writes data/perception.yaml and data/perception.safetensors in the catalog)
    /// and report them (results/validation/perception.md).
    Fit(FitArgs),
    /// Measure the heads as they ship, without fitting: each head on every part and each move's
    /// readings on the choice parts (results/validation/perception.md). Only --esconv and
    /// --epitome are read.
    Measure(FitArgs),
    /// Fit the wording head, which finds words put where they do not belong (writes
    /// data/wording.yaml and data/wording.safetensors) and report it
    /// (results/validation/wording.md).
    Wording(FitArgs),
    /// Set the fluency judge, which finds replies that do not read as one person talking: choose
    /// its window and threshold on human replies (writes data/fluency.yaml and data/fluency-unigram.yaml) and report it
    /// (results/validation/fluency.md). Only --esconv and --epitome are read.
    Fluency(FitArgs),
    /// Fit the responsiveness head, which reads how far a reply in its own words answers what
    /// the user said (writes data/responsive.yaml and data/responsive.safetensors) and report it
    /// (results/validation/responsive.md). Reads FailedESConv.json too.
    Responsive(FitArgs),
}

#[derive(Debug, Args)]
pub struct FitArgs {
    /// A folder with ESConv's devWithStrategy_short.tsv (from codes/dataset/) and, for `wording` and `fluency`,
    /// FailedESConv.json (from the top folder).
    #[arg(long)]
    pub esconv: PathBuf,
    /// EPITOME's dataset/ folder (the three *-reddit.csv files).
    #[arg(long)]
    pub epitome: PathBuf,
    /// Passes over the data (full batch): the grid's values, comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "100,300")]
    pub epochs: Vec<usize>,
    /// Hidden units: the grid's values.
    #[arg(long, value_delimiter = ',', default_value = "16,64")]
    pub hidden: Vec<usize>,
    /// AdamW's weight decay: the grid's values.
    #[arg(
        long = "weight-decay",
        value_delimiter = ',',
        default_value = "0.01,0.1"
    )]
    pub weight_decay: Vec<f64>,
    /// The seed of the weights' start.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
}

/// The grid of settings the arguments name.
fn grid(a: &FitArgs) -> Vec<FitSettings> {
    let mut grid = Vec::new();
    for &hidden in &a.hidden {
        for &epochs in &a.epochs {
            for &weight_decay in &a.weight_decay {
                grid.push(FitSettings {
                    hidden,
                    epochs,
                    weight_decay,
                    seed: a.seed,
                    ..FitSettings::default()
                });
            }
        }
    }
    grid
}

/// This command line, as a report quotes it.
fn command_line() -> String {
    std::iter::once("empathy-gym".to_string())
        .chain(std::env::args().skip(1))
        .collect::<Vec<_>>()
        .join(" ")
}

pub fn run(catalog: &Path, cmd: PerceptionCommand) -> anyhow::Result<()> {
    let (a, fit) = match cmd {
        PerceptionCommand::Fit(a) => (a, true),
        PerceptionCommand::Measure(a) => (a, false),
        PerceptionCommand::Wording(a) => {
            let start = Instant::now();
            let (corpora, embedder) = inputs(&a)?;
            return run_wording(catalog, &a, &corpora, &embedder, start);
        }
        PerceptionCommand::Fluency(a) => return run_fluency(catalog, &a),
        PerceptionCommand::Responsive(a) => return run_responsive(catalog, &a),
    };
    let start = Instant::now();
    let (corpora, embedder) = inputs(&a)?;
    // The moves the appraiser reads from the heads, and how (their names were checked on load).
    let use_ = AppraiserConfig::load(&catalog.join("data/appraiser.yaml"))?.perception;
    let moves = use_
        .as_ref()
        .map_or_else(Default::default, |p| p.head_indices());
    let (measured, how) = if fit {
        let fitted = perception::fit(&corpora, &embedder, &grid(&a), &moves)?;
        perception::write(catalog, &fitted)?;
        let how = chosen(&fitted.settings, fitted.grid.len(), "the mean AUC");
        (fitted.measured, how)
    } else {
        let path = catalog.join("data/perception.yaml");
        let heads = Perception::load(&path)?;
        let measured = perception::measure_shipped(&corpora, &embedder, &heads, &moves)?;
        let how = "the weights as they ship, not fit again".to_string();
        (measured, how)
    };
    let table = perception::report_markdown(&measured);
    let as_read = |m: Move, r: &MoveReading| {
        use_.as_ref().is_some_and(|p| {
            moves.get(&m) == Some(&r.heads)
                && (r.heads.len() < 2 || (r.pool == p.pool && r.even_odds == p.even_odds))
        })
    };
    let move_table = perception::moves_markdown(&measured, &as_read);
    let command = command_line();
    let md = format!(
        "# Perception: the learned heads on what they never fit\n\nWritten by `{command}` \
         ({:.0} s on this machine; {how}). Each cell is the head's AUC (95% bootstrap interval) \
         on the set: EPITOME's mechanisms against level 1 or 2, ESConv's strategies one against \
         the rest. The fit parts are for reference only; `EPITOME test` and `ESConv dev (held \
         apart)` were never fit nor tuned on. The sources and their terms are in \
         `data/perception.yaml`.\n\n{table}\n## The moves read from the heads\n\n\
         Each move of `data/appraiser.yaml` (`perception.moves`) read each way it can be: every \
         head at the fit part's base rate (`even_odds: false`) or at even odds, pooled by the \
         largest head (`max`) or the mean of their log-odds (`mean_log_odds`), and each head \
         alone. Each cell is the AUC against the move's label on the choice part (EPITOME: the \
         mechanism's level 1 or 2; ESConv: the strategy), so a reading is chosen without the \
         reported parts.\n\n{move_table}",
        start.elapsed().as_secs_f64(),
    );
    let out = catalog.join("results/validation/perception.md");
    std::fs::write(&out, md)?;
    print!("{table}\n{move_table}");
    if fit {
        println!("written to data/perception.* and {}", out.display());
    } else {
        println!("written to {}", out.display());
    }
    Ok(())
}

/// How a fit chose its settings, as its report says: from `n` settings by `score` on the choice
/// parts.
fn chosen(s: &FitSettings, n: usize, score: &str) -> String {
    format!(
        "chosen from {n} settings by {score} on the choice parts: {} hidden units, {} epochs, \
         weight decay {}",
        s.hidden, s.epochs, s.weight_decay
    )
}

/// The corpora the arguments name and the embedder.
fn inputs(a: &FitArgs) -> anyhow::Result<(empathy_gym::fit::Corpora, Embedder)> {
    let embedder = Embedder::load_default()?.with_cache_entries(1 << 16);
    let corpora = empathy_gym::fit::Corpora {
        diasafety: PathBuf::new(),
        esconv: a.esconv.clone(),
        epitome: a.epitome.clone(),
    };
    Ok((corpora, embedder))
}

fn run_wording(
    catalog: &Path,
    a: &FitArgs,
    corpora: &empathy_gym::fit::Corpora,
    embedder: &Embedder,
    start: Instant,
) -> anyhow::Result<()> {
    let bank = catalog.join("data/wording/never-tuned.yaml");
    let fitted = wording::fit(corpora, &bank, embedder, &grid(a))?;
    wording::write(catalog, &fitted)?;
    let table = wording::report_markdown(&fitted);
    let md = format!(
        "# Wording: words out of place, on what the head never fit\n\nWritten by `{}` ({:.0} s \
         on this machine; {}). A reply is scored by its most suspicious \
         token among the words the head judges (the user's, away from the neighbours the user \
         gave them). `clean` replies are human ones as they were; `changed` ones are copies with one \
         word of the message they answer swapped in, inserted or put after a determiner (`src/fit/wording.rs`). The \
         fit part is not shown; `EPITOME test`, `ESConv dev (held apart)`, FailedESConv and the \
         never-tuned bank were never fit nor tuned on. The sources and their terms are in \
         `data/wording.yaml`.\n\n{table}",
        command_line(),
        start.elapsed().as_secs_f64(),
        chosen(&fitted.settings, fitted.grid.len(), "the reply-level AUC"),
    );
    let out = catalog.join("results/validation/wording.md");
    std::fs::write(&out, md)?;
    print!("{table}");
    println!("written to data/wording.* and {}", out.display());
    Ok(())
}

fn run_fluency(catalog: &Path, a: &FitArgs) -> anyhow::Result<()> {
    let start = Instant::now();
    let corpora = empathy_gym::fit::Corpora {
        diasafety: PathBuf::new(),
        esconv: a.esconv.clone(),
        epitome: a.epitome.clone(),
    };
    let parts = wording::parts(&corpora)?;
    let bank = catalog.join("data/fluency/never-tuned.yaml");
    let fitted = fluency::fit(fluency::default_meta(), &parts, &bank)?;
    fluency::write(catalog, &fitted)?;
    let table = fluency::report_markdown(&fitted);
    let md = format!(
        "# Fluency: replies that do not read as one person talking, on what the judge was never \
         set on\n\nWritten by `{}` ({:.0} s on this machine). A reply's score is the mean SLOR \
         value (nats per token: the surprisal under SmolLM2-135M-Instruct less the surprisal under \
         the unigram counts of the fit part) of its least fluent window of tokens, the first token \
         left out and each window shrunk toward the median token value (`src/environment/sim/fluency.rs`). `clean` replies are human ones as they were; `changed` \
         ones are copies with {} changes each: a word dropped, a sentence cut mid-phrase, one or \
         two words of other replies wedged in or swapped for one, or two neighbours transposed \
         (`src/fit/fluency.rs`). The window and the threshold are chosen on the choice parts; \
         `EPITOME test`, `ESConv dev (held apart)`, FailedESConv and the never-tuned bank were \
         never chosen on. The sources and their terms are in `data/fluency.yaml`.\n\n{table}",
        command_line(),
        start.elapsed().as_secs_f64(),
        fluency::CHANGES_PER_COPY,
    );
    let out = catalog.join("results/validation/fluency.md");
    std::fs::write(&out, md)?;
    print!("{table}");
    println!(
        "written to data/fluency.yaml, data/fluency-unigram.yaml and {}",
        out.display()
    );
    Ok(())
}

fn run_responsive(catalog: &Path, a: &FitArgs) -> anyhow::Result<()> {
    let start = Instant::now();
    let (corpora, embedder) = inputs(a)?;
    let lexicon =
        empathy_gym::environment::sim::lexicon::Lexicon::load(&catalog.join("data/lexicon.yaml"))?;
    let bank = catalog.join("data/responsive/never-tuned.yaml");
    let fitted = responsive::fit(&corpora, &lexicon, &bank, &embedder, &grid(a))?;
    responsive::write(catalog, &fitted)?;
    let table = responsive::report_markdown(&fitted.reports);
    let md = format!(
        "# Responsiveness: replies that answer this message, on what the head never fit\n\n\
         Written by `{}` ({:.0} s on this machine; {}). Each human reply is read in its own \
         words (without its message's content words and any feeling word), after its own \
         message and after a message drawn from the tenth of the same corpus nearest it, from \
         another conversation (`src/fit/responsive.rs`); the AUC is own against another's, by the \
         head and by the cosine of the same embeddings. Responsiveness is `2p - 1` of the head's \
         probability, 0 at even odds or below (`src/environment/sim/responsive.rs`). The bank's \
         row sets its specific replies against its generic ones, each after its own message. The \
         fit part is not shown; `EPITOME test`, `ESConv dev (held apart)`, FailedESConv and the \
         never-tuned bank were never fit nor chosen on. The sources and their terms are in \
         `data/responsive.yaml`.\n\n{table}",
        command_line(),
        start.elapsed().as_secs_f64(),
        chosen(&fitted.chosen.settings, fitted.chosen.grid.len(), "the AUC"),
    );
    let out = catalog.join("results/validation/responsive.md");
    std::fs::write(&out, md)?;
    print!("{table}");
    println!("written to data/responsive.* and {}", out.display());
    Ok(())
}
