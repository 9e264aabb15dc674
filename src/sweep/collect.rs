//! Reading a sweep's results: per cell its state, training curve, final training reward (mean over
//! the last 10% of steps), held-out SAGE score and factual change against the base model; and the
//! base model's own evaluation.

use std::path::{Path, PathBuf};

use serde::Deserialize;

use super::cell::Cell;
use super::spec::Sweep;
use super::state::{read_state, CellState};
use super::{BASE_DIR, EMPATHY_DIR, FACTUAL_DIR};
use crate::environment::episode::read_episodes;
use crate::error::{Error, Result};
use crate::eval::empathy::{score, EmpathyScore};
use crate::eval::factual::report_files::CSV_FILE;
use crate::learning::train::read_metrics;
use crate::learning::train::run_files::METRICS_FILE;

/// The report name of a cell's trained policy in its evaluations.
pub const TRAINED: &str = "trained";
/// The report name of the base model.
pub const BASE: &str = "base";
/// The episode log of the first (only) model of an `eval empathy` folder.
pub const EMPATHY_EPISODES: &str = "episodes-0.jsonl";

/// The overall row of a factual report for one model.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FactualResult {
    /// Share of incorrect answers.
    pub error_rate: f64,
    /// Change of the error rate against the base model, with its 95% bootstrap interval.
    pub change: Option<(f64, f64, f64)>,
}

/// Everything collected about one cell.
#[derive(Debug, Clone)]
pub struct CellResult {
    pub cell: Cell,
    pub state: CellState,
    /// (step, mean reward) per training step written so far.
    pub curve: Vec<(u64, f64)>,
    /// Mean reward over the last 10% of the steps (at least one step), when training finished.
    pub final_reward: Option<f64>,
    /// Held-out SAGE score of the trained policy.
    pub sage: Option<EmpathyScore>,
    /// Factual error of the trained policy and its change against the base model.
    pub factual: Option<FactualResult>,
    /// Seconds of training (the steps' own timings) plus evaluation, when done.
    pub wall_s: Option<f64>,
}

impl CellResult {
    /// Training finished (its final reward is known): summaries average and draw only these.
    pub fn is_finished(&self) -> bool {
        self.final_reward.is_some()
    }
}

/// The base model's evaluations (one per model a sweep trains).
#[derive(Debug, Clone)]
pub struct BaseResult {
    pub model: String,
    pub sage: Option<EmpathyScore>,
    pub factual: Option<FactualResult>,
}

/// The folder of the base model's evaluations for the policy at `model_path`.
pub fn base_dir(sweep_dir: &Path, model_path: &Path) -> PathBuf {
    let stem = model_path
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| "model".into());
    sweep_dir
        .join(BASE_DIR)
        .join(super::cell::fragment(&serde_yaml::Value::String(stem)))
}

/// The mean of the last 10% of `values` (at least the last one).
pub fn last_tenth_mean(values: &[f64]) -> Option<f64> {
    if values.is_empty() {
        return None;
    }
    let k = values.len().div_ceil(10);
    let tail = &values[values.len() - k..];
    Some(tail.iter().sum::<f64>() / k as f64)
}

/// Collects every cell of `sweep` from its folder.
pub fn collect_cells(sweep: &Sweep, steps_of: impl Fn(&Cell) -> u64) -> Result<Vec<CellResult>> {
    sweep
        .cells
        .iter()
        .map(|cell| collect_cell(&sweep.cell_dir(cell), cell.clone(), steps_of(cell)))
        .collect()
}

fn collect_cell(dir: &Path, cell: Cell, steps: u64) -> Result<CellResult> {
    let state = read_state(dir, steps)?;
    let metrics = dir.join(METRICS_FILE);
    let rows = if metrics.is_file() {
        read_metrics(&metrics)?
    } else {
        Vec::new()
    };
    let curve: Vec<(u64, f64)> = rows.iter().map(|m| (m.step, m.reward_mean)).collect();
    let done = matches!(state, CellState::Done(_));
    let rewards: Vec<f64> = curve.iter().map(|&(_, r)| r).collect();
    let final_reward = if done {
        last_tenth_mean(&rewards)
    } else {
        None
    };
    let (sage, factual, wall_s) = if let CellState::Done(marker) = &state {
        let train_s: f64 = rows
            .iter()
            .map(|m| m.t_rollout_s + m.t_simulate_s + m.t_train_s)
            .sum();
        (
            read_sage(&dir.join(EMPATHY_DIR), TRAINED)?,
            read_factual(&dir.join(FACTUAL_DIR), TRAINED)?,
            Some(train_s + marker.eval_s),
        )
    } else {
        (None, None, None)
    };
    Ok(CellResult {
        cell,
        state,
        curve,
        final_reward,
        sage,
        factual,
        wall_s,
    })
}

/// The base model's evaluations in `dir` (see [`base_dir`]), if they were run.
pub fn collect_base(dir: &Path) -> Result<Option<BaseResult>> {
    if !dir.is_dir() {
        return Ok(None);
    }
    Ok(Some(BaseResult {
        model: dir
            .file_name()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default(),
        sage: read_sage(&dir.join(EMPATHY_DIR), BASE)?,
        factual: read_factual(&dir.join(FACTUAL_DIR), BASE)?,
    }))
}

fn read_sage(dir: &Path, name: &str) -> Result<Option<EmpathyScore>> {
    let path = dir.join(EMPATHY_EPISODES);
    if !path.is_file() {
        return Ok(None);
    }
    let mut log = read_episodes(&path)?;
    if let Some(e) = log.first_error() {
        return Err(e);
    }
    let records: Vec<_> = log.records.into_iter().map(|(_, r)| r).collect();
    Ok(Some(score(name, &records)))
}

/// One row of factual.csv (the columns collect reads).
#[derive(Debug, Deserialize)]
struct FactualCsvRow {
    model: String,
    slice: String,
    error_rate: f64,
    delta_error: Option<f64>,
    ci_low: Option<f64>,
    ci_high: Option<f64>,
}

fn read_factual(dir: &Path, model: &str) -> Result<Option<FactualResult>> {
    let path = dir.join(CSV_FILE);
    if !path.is_file() {
        return Ok(None);
    }
    let bad = |msg: String| Error::input(&path, "document", msg);
    let mut reader = csv::Reader::from_path(&path).map_err(|e| bad(e.to_string()))?;
    for row in reader.deserialize::<FactualCsvRow>() {
        let row = row.map_err(|e| bad(e.to_string()))?;
        if row.model == model && row.slice == "overall" {
            let change = match (row.delta_error, row.ci_low, row.ci_high) {
                (Some(d), Some(lo), Some(hi)) => Some((d, lo, hi)),
                _ => None,
            };
            return Ok(Some(FactualResult {
                error_rate: row.error_rate,
                change,
            }));
        }
    }
    Err(bad(format!(
        "no overall row for `{model}`; run the cell's evaluations again (delete its done marker)"
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn last_tenth_by_hand() {
        // 20 steps: the last 2 (0.5, 0.7) -> 0.6; 5 steps: the last 1; 11 steps: the last 2.
        let v: Vec<f64> = (0..18).map(|_| 0.0).chain([0.5, 0.7]).collect();
        assert!((last_tenth_mean(&v).unwrap() - 0.6).abs() < 1e-12);
        assert_eq!(last_tenth_mean(&[0.1, 0.2, 0.3, 0.4, 0.9]), Some(0.9));
        let v: Vec<f64> = (0..11).map(f64::from).collect();
        assert_eq!(last_tenth_mean(&v), Some(9.5));
        assert_eq!(last_tenth_mean(&[]), None);
    }

    #[test]
    fn factual_overall_row_is_read_by_model() {
        let tmp = tempfile::tempdir().unwrap();
        std::fs::write(
            tmp.path().join(CSV_FILE),
            "model,slice,context,belief,n,correct,incorrect,agrees_with_wrong,refusal,error_rate,\
             refusal_rate,agree_wrong_rate,delta_error,ci_low,ci_high,mcnemar_b,mcnemar_c,p_exact,p_chi2\n\
             base,overall,all,all,18,9,9,0,0,0.500000,0.000000,,,,,,,,\n\
             trained,overall,all,all,18,7,11,0,0,0.611111,0.000000,,0.111111,0.000000,0.222222,0,2,0.5,0.15\n",
        )
        .unwrap();
        let t = read_factual(tmp.path(), TRAINED).unwrap().unwrap();
        assert!((t.error_rate - 0.611111).abs() < 1e-9);
        assert_eq!(t.change, Some((0.111111, 0.0, 0.222222)));
        let b = read_factual(tmp.path(), BASE).unwrap().unwrap();
        assert_eq!(b.change, None);
        let e = read_factual(tmp.path(), "other").unwrap_err().to_string();
        assert!(e.contains("no overall row for `other`"), "{e}");
        assert!(read_factual(&tmp.path().join("none"), BASE)
            .unwrap()
            .is_none());
    }
}
