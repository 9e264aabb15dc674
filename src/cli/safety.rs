//! `empathy-gym safety fit`: fit the safety screen's learned head from the user's copies of
//! DiaSafety, ESConv and EPITOME and the project's bank (writes `data/safety-head.*`);
//! `safety eval`: measure the whole screen on what it never saw.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use clap::{Args, Subcommand};
use empathy_gym::environment::sim::detect::SafetyScreen;
use empathy_gym::environment::sim::Embedder;
use empathy_gym::fit::safety as safety_fit;
use empathy_gym::fit::train::FitSettings;
use empathy_gym::fit::Corpora;

#[derive(Debug, Subcommand)]
pub enum SafetyCommand {
    /// Fit the learned head and choose its threshold (writes data/safety-head.yaml and
    /// data/safety-head.safetensors in the catalog).
    Fit(FitArgs),
    /// Measure the screen on the never-tuned bank, honest human replies and DiaSafety's test part.
    Eval(EvalArgs),
}

/// Where the corpora are.
#[derive(Debug, Args)]
pub struct CorporaArgs {
    /// DiaSafety's DiaSafety_dataset/ folder (train.json, val.json, test.json).
    #[arg(long)]
    pub diasafety: PathBuf,
    /// A folder with ESConv's devWithStrategy_short.tsv (from codes/dataset/) and
    /// FailedESConv.json.
    #[arg(long)]
    pub esconv: PathBuf,
    /// EPITOME's dataset/ folder (the three *-reddit.csv files).
    #[arg(long)]
    pub epitome: PathBuf,
}

impl CorporaArgs {
    fn corpora(&self) -> Corpora {
        Corpora {
            diasafety: self.diasafety.clone(),
            esconv: self.esconv.clone(),
            epitome: self.epitome.clone(),
        }
    }
}

#[derive(Debug, Args)]
pub struct FitArgs {
    #[command(flatten)]
    pub corpora: CorporaArgs,
    /// Passes over the data (full batch).
    #[arg(long, default_value_t = FitSettings::default().epochs)]
    pub epochs: usize,
    /// The seed of the weights' start.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
}

#[derive(Debug, Args)]
pub struct EvalArgs {
    #[command(flatten)]
    pub corpora: CorporaArgs,
    /// Write the report here (markdown) as well as printing it.
    #[arg(long)]
    pub out: Option<PathBuf>,
}

pub fn run(catalog: &Path, cmd: SafetyCommand) -> anyhow::Result<()> {
    let start = Instant::now();
    let embedder = Arc::new(Embedder::load_default()?.with_cache_entries(1 << 18));
    match cmd {
        SafetyCommand::Fit(a) => {
            let settings = FitSettings {
                epochs: a.epochs,
                seed: a.seed,
                ..FitSettings::default()
            };
            let fitted = safety_fit::fit_head(catalog, &a.corpora.corpora(), &embedder, &settings)?;
            safety_fit::write_head(catalog, &fitted, &settings)?;
            println!(
                "wrote data/safety-head.yaml and data/safety-head.safetensors: threshold {:.4}, \
                 in {:.0} s",
                fitted.threshold,
                start.elapsed().as_secs_f64()
            );
            for (k, v) in &fitted.summary {
                println!(
                    "  {}: {}",
                    k.as_str().unwrap_or_default(),
                    serde_yaml::to_string(v)?.trim()
                );
            }
        }
        SafetyCommand::Eval(a) => {
            let screen = SafetyScreen::load(catalog, embedder)?;
            let version = empathy_gym::environment::profile::yaml::fingerprint(
                &catalog.join("data"),
                &["safety.yaml", "safety-head.yaml", "safety-head.safetensors"],
            )?;
            let report =
                safety_fit::report::evaluate(catalog, &a.corpora.corpora(), &screen, &version)?;
            print!("{report}");
            if let Some(out) = a.out {
                std::fs::write(&out, &report)
                    .map_err(|e| anyhow::anyhow!("{}: {e}", out.display()))?;
                eprintln!(
                    "wrote {} in {:.0} s",
                    out.display(),
                    start.elapsed().as_secs_f64()
                );
            }
        }
    }
    Ok(())
}
