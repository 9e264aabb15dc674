//! `empathy-gym judge agreement RATINGS.csv... --key rate.key.csv [--logs LOG.jsonl...]`: people's
//! ratings from the rating page (`replay html --rate`) joined with the logged episodes, against
//! the simulator's reward and final emotion, between raters, and in A/B pairs.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use clap::Args;
use empathy_gym::environment::episode::{read_episodes, EpisodeRecord};
use empathy_gym::replay::rate::{agreement, read_key, read_ratings, AgreementOptions, KeyRow};
use empathy_gym::report::stats::BootstrapConfig;
use empathy_gym::Error;

#[derive(Debug, Args)]
pub struct AgreementArgs {
    /// The CSVs the rating page exported, any number per rater.
    #[arg(required = true)]
    pub ratings: Vec<PathBuf>,
    /// The key `replay html --rate` wrote beside the page.
    #[arg(long)]
    pub key: PathBuf,
    /// The episode logs the page was made from (default: the logs the key names, as written or
    /// beside the key).
    #[arg(long, num_args = 1..)]
    pub logs: Vec<PathBuf>,
    /// Also write the report (markdown) here.
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Bootstrap resamples of every interval.
    #[arg(long, default_value_t = 2000)]
    pub resamples: usize,
    /// Seed of the bootstrap.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
}

pub fn run(_catalog: &Path, args: AgreementArgs) -> anyhow::Result<()> {
    let key = read_key(&args.key)?;
    let logs = if args.logs.is_empty() {
        logs_of_key(&args.key, &key)?
    } else {
        args.logs.clone()
    };
    let mut episodes: Vec<EpisodeRecord> = Vec::new();
    for log in &logs {
        let mut read = read_episodes(log)?;
        if let Some(err) = read.first_error() {
            return Err(err.into());
        }
        episodes.extend(read.records.into_iter().map(|(_, r)| r));
    }
    let mut ratings = Vec::new();
    for file in &args.ratings {
        ratings.extend(read_ratings(file)?);
    }
    let opts = AgreementOptions {
        bootstrap: BootstrapConfig {
            resamples: args.resamples,
            seed: args.seed,
            ..Default::default()
        },
    };
    let report = agreement(&args.key, &key, &ratings, &episodes, &opts)?;
    let text = report.to_markdown();
    print!("{text}");
    if let Some(out) = &args.out {
        std::fs::write(out, &text).map_err(|e| Error::io(out, e))?;
        println!("\nwritten to {}", out.display());
    }
    Ok(())
}

/// The logs the key names, each as written or else beside the key; one found nowhere is an error
/// naming the key's line.
fn logs_of_key(key_path: &Path, key: &[KeyRow]) -> anyhow::Result<Vec<PathBuf>> {
    let mut logs: BTreeMap<&str, usize> = BTreeMap::new();
    for row in key {
        logs.entry(&row.log).or_insert(row.key_line);
    }
    let beside = key_path.parent().unwrap_or(Path::new("."));
    logs.into_iter()
        .map(|(log, line)| {
            let as_written = PathBuf::from(log);
            let near_key = beside.join(&as_written);
            if as_written.is_file() {
                Ok(as_written)
            } else if near_key.is_file() {
                Ok(near_key)
            } else {
                Err(Error::input(
                    key_path,
                    format!("line {line}, field log"),
                    format!(
                        "{log} is not found, as written or beside the key; name the logs with \
                         --logs"
                    ),
                )
                .into())
            }
        })
        .collect()
}
