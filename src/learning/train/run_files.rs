//! The run directory `results/<run>/`: `config.yaml` (the resolved config, written before step
//! 1), `metrics.csv` (one row per step), `episodes.jsonl` (every dialogue, flushed per line),
//! `checkpoints/` and, at the end, `reward.svg` (mean reward, success and failure rates per step),
//! `emotion.svg` (mean final emotion per step) and `difficulty.svg` (the knobs per step: flat for a
//! preset, the controller's curve for `difficulty: auto`).
//!
//! On resume from the checkpoint of step N, rows and dialogues of later steps (written by the run
//! that was interrupted) are dropped, so the files continue exactly as an uninterrupted run's.

use std::fs;
use std::path::{Path, PathBuf};

use super::metrics::{read_metrics, MetricsWriter, StepMetrics};
use crate::environment::episode::{EpisodeRecord, EpisodeWriter};
use crate::error::{Error, Result};
use crate::report::{LineChart, Series};

/// Resolved configuration.
pub const CONFIG_FILE: &str = "config.yaml";
/// Per-step metrics.
pub const METRICS_FILE: &str = "metrics.csv";
/// Every dialogue.
pub const EPISODES_FILE: &str = "episodes.jsonl";
/// Reward curves (mean reward, success and failure rates).
pub const REWARD_SVG: &str = "reward.svg";
/// Final-emotion curve.
pub const EMOTION_SVG: &str = "emotion.svg";
/// Difficulty curve (level and knobs per step).
pub const DIFFICULTY_SVG: &str = "difficulty.svg";

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
        create_run_dir(dir, &metrics, config_yaml)?;
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

    /// Writes `reward.svg`, `emotion.svg` and `difficulty.svg` from every row of metrics.csv;
    /// returns their paths.
    pub fn write_curves(&self) -> Result<Vec<PathBuf>> {
        let rows = read_metrics(self.metrics.path())?;
        let charts: [(&str, Chart); 3] = [
            (REWARD_SVG, reward_svg),
            (EMOTION_SVG, emotion_svg),
            (DIFFICULTY_SVG, difficulty_svg),
        ];
        charts
            .into_iter()
            .map(|(name, draw)| {
                let path = self.dir.join(name);
                fs::write(&path, draw(&rows)).map_err(|e| Error::io(&path, e))?;
                Ok(path)
            })
            .collect()
    }
}

/// Creates the directory of a fresh run and writes its resolved config, refusing a directory
/// where `log` (the file a run writes every step to) exists: that run continues with --resume.
pub fn create_run_dir(dir: &Path, log: &Path, config_yaml: &str) -> Result<()> {
    if log.exists() {
        return Err(Error::input(
            log,
            "run",
            "this run already exists: continue it with --resume DIR, or choose another run \
             name (--set run=NAME)",
        ));
    }
    fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
    let cfg = dir.join(CONFIG_FILE);
    fs::write(&cfg, config_yaml).map_err(|e| Error::io(&cfg, e))
}

/// A chart of a run's metrics rows, as SVG text.
type Chart = fn(&[StepMetrics]) -> String;

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

fn points(rows: &[StepMetrics], f: fn(&StepMetrics) -> f64) -> Vec<(f64, f64)> {
    rows.iter().map(|m| (m.step as f64, f(m))).collect()
}

/// Mean reward, success rate and failure rate per step, on a 0-1 axis.
pub fn reward_svg(rows: &[StepMetrics]) -> String {
    LineChart {
        title: "GRPO training: reward".into(),
        x_label: "step".into(),
        y_label: "mean reward / share of dialogues".into(),
        series: vec![
            Series::new("mean reward", points(rows, |m| m.reward_mean)),
            Series::new("resolved (emotion 100)", points(rows, |m| m.success_rate)),
            Series::new("left (emotion < 10)", points(rows, |m| m.failure_rate)),
        ],
        y_range: Some((0.0, 1.0)),
        ..LineChart::default()
    }
    .to_svg()
}

/// Mean final emotion of the simulated users per step, on a 0-100 axis.
pub fn emotion_svg(rows: &[StepMetrics]) -> String {
    LineChart {
        title: "GRPO training: the simulated user's final emotion".into(),
        x_label: "step".into(),
        y_label: "mean final emotion (0-100)".into(),
        series: vec![Series::new(
            "mean final emotion",
            points(rows, |m| m.final_emotion_mean),
        )],
        y_range: Some((0.0, 100.0)),
        ..LineChart::default()
    }
    .to_svg()
}

/// The difficulty each step ran at, on a 0-1 axis: the auto controller's level (absent for a
/// preset) and the knobs it moves (start emotion divided by 100).
pub fn difficulty_svg(rows: &[StepMetrics]) -> String {
    let mut series = vec![
        Series::new(
            "start emotion / 100",
            points(rows, |m| m.start_emotion / 100.0),
        ),
        Series::new("acceptance", points(rows, |m| m.acceptance)),
        Series::new("generic credit", points(rows, |m| m.generic_credit)),
        Series::new("hint rate", points(rows, |m| m.hint_rate)),
    ];
    if rows.iter().any(|m| m.difficulty_level.is_some()) {
        let level = points(rows, |m| m.difficulty_level.unwrap_or(f64::NAN));
        series.insert(
            0,
            Series::new("level (0 easy, 0.5 moderate, 1 hard)", level),
        );
    }
    LineChart {
        title: "GRPO training: the simulated user's difficulty".into(),
        x_label: "step".into(),
        y_label: "knob value".into(),
        series,
        y_range: Some((0.0, 1.0)),
        ..LineChart::default()
    }
    .to_svg()
}
