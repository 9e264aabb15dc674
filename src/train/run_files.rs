//! The run directory `results/<run>/`: `config.yaml` (the resolved config, written before step
//! 1), `metrics.csv` (one row per step), `episodes.jsonl` (every dialogue, flushed per line),
//! `checkpoints/` and, at the end, `curves.svg` (reward and final emotion per step).
//!
//! On resume from the checkpoint of step N, rows and dialogues of later steps (written by the run
//! that was interrupted) are dropped, so the files continue exactly as an uninterrupted run's.

use std::fs;
use std::path::{Path, PathBuf};

use crate::episode::{EpisodeRecord, EpisodeWriter};
use crate::error::{Error, Result};
use crate::grpo::{read_metrics, MetricsWriter, StepMetrics};
use crate::report::{LineChart, Series};

/// Resolved configuration.
pub const CONFIG_FILE: &str = "config.yaml";
/// Per-step metrics.
pub const METRICS_FILE: &str = "metrics.csv";
/// Every dialogue.
pub const EPISODES_FILE: &str = "episodes.jsonl";
/// Reward and final-emotion curves.
pub const CURVES_FILE: &str = "curves.svg";

/// The open output files of a run.
pub struct RunFiles {
    /// The run directory.
    pub dir: PathBuf,
    /// metrics.csv.
    pub metrics: MetricsWriter,
    /// episodes.jsonl.
    pub episodes: EpisodeWriter,
}

impl RunFiles {
    /// Creates the run directory for a fresh run and writes `config_yaml`. Refuses a directory
    /// that already holds a run's metrics.
    pub fn create(dir: &Path, config_yaml: &str) -> Result<Self> {
        let metrics = dir.join(METRICS_FILE);
        if metrics.exists() {
            return Err(Error::input(
                &metrics,
                "run",
                "this run already exists: continue it with --resume DIR, or choose another run \
                 name (--set run=NAME)",
            ));
        }
        fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
        let cfg = dir.join(CONFIG_FILE);
        fs::write(&cfg, config_yaml).map_err(|e| Error::io(&cfg, e))?;
        Ok(RunFiles {
            dir: dir.to_path_buf(),
            metrics: MetricsWriter::create(&metrics)?,
            episodes: EpisodeWriter::create(&dir.join(EPISODES_FILE))?,
        })
    }

    /// Reopens the files of a run resumed after `last_step`, dropping anything later.
    pub fn resume(dir: &Path, last_step: u64) -> Result<Self> {
        let episodes = dir.join(EPISODES_FILE);
        truncate_episodes(&episodes, last_step)?;
        Ok(RunFiles {
            dir: dir.to_path_buf(),
            metrics: MetricsWriter::resume(&dir.join(METRICS_FILE), last_step)?,
            episodes: EpisodeWriter::append(&episodes)?,
        })
    }

    /// Writes `curves.svg` from every row of metrics.csv; returns its path.
    pub fn write_curves(&self) -> Result<PathBuf> {
        let rows = read_metrics(self.metrics.path())?;
        let path = self.dir.join(CURVES_FILE);
        fs::write(&path, curves_svg(&rows)).map_err(|e| Error::io(&path, e))?;
        Ok(path)
    }
}

/// Keeps the complete lines of an episode log whose `step` is at most `last_step` (a missing
/// file stays missing); rewrites the file atomically.
pub fn truncate_episodes(path: &Path, last_step: u64) -> Result<()> {
    let text = match fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(Error::io(path, e)),
    };
    let mut kept = String::with_capacity(text.len());
    for line in text.split_inclusive('\n') {
        if !line.ends_with('\n') {
            break; // cut short by a crash
        }
        let rec: EpisodeRecord = match serde_json::from_str(line) {
            Ok(r) => r,
            Err(_) => break,
        };
        if rec.step <= last_step {
            kept.push_str(line);
        }
    }
    let tmp = path.with_extension("jsonl.tmp");
    fs::write(&tmp, kept).map_err(|e| Error::io(&tmp, e))?;
    fs::rename(&tmp, path).map_err(|e| Error::io(path, e))
}

/// Mean reward and mean final emotion / 100 per step, on one 0-1 scale.
pub fn curves_svg(rows: &[StepMetrics]) -> String {
    let pts = |f: &dyn Fn(&StepMetrics) -> f64| -> Vec<(f64, f64)> {
        rows.iter().map(|m| (m.step as f64, f(m))).collect()
    };
    LineChart {
        title: "GRPO training".into(),
        x_label: "step".into(),
        y_label: "reward  |  final emotion / 100".into(),
        series: vec![
            Series::new("mean reward", pts(&|m| m.reward_mean)),
            Series::new(
                "mean final emotion / 100",
                pts(&|m| m.final_emotion_mean / 100.0),
            ),
        ],
        y_range: Some((0.0, 1.0)),
        ..LineChart::default()
    }
    .to_svg()
}
