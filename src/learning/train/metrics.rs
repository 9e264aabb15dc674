//! Per-step training metrics and the append-only `metrics.csv` they go to (docs/DESIGN.md
//! sections 9 and 11).
//!
//! The writer puts the header in once, writes each row with a single `write` call and flushes it,
//! so a crash loses at most the row being written. On `--resume` from step N, rows after N (written
//! after the checkpoint, by the run that crashed) and a half-written last line are dropped, and the
//! file is rewritten atomically before appending: the CSV then matches an uninterrupted run.
//! Reading and writing go through the `csv` crate; the cell text is this module's.
//! Cells are plain numbers (floats in Rust's shortest round-trip form, `skipped` as 0/1); a value
//! that was not measured (`kl` without a reference, `grad_norm` of a skipped step) is an empty cell.

use std::fs;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};

/// One optimizer step's numbers, one row of metrics.csv, columns in [`COLUMNS`] order.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct StepMetrics {
    /// Training step (1-based).
    pub step: u64,
    /// Mean reward over the batch's episodes.
    pub reward_mean: f64,
    /// Standard deviation of the batch's rewards.
    pub reward_std: f64,
    /// Share of groups whose rewards are all equal (zero advantage).
    pub frac_reward_zero_std: f64,
    /// Mean final emotion of the simulated users (0-100).
    pub final_emotion_mean: f64,
    /// Share of episodes ending at emotion 100.
    pub success_rate: f64,
    /// Share of episodes ending below 10.
    pub failure_rate: f64,
    /// Mean k3 KL to the reference per policy token (empty without a reference pass).
    pub kl: Option<f64>,
    /// Share of policy tokens clipped at 1 - eps_low with a negative advantage.
    pub clip_frac_low: f64,
    /// Share of policy tokens clipped at 1 + eps_high with a positive advantage.
    pub clip_frac_high: f64,
    /// Mean per-token entropy of the policy on its own tokens, nats (empty if not computed).
    pub entropy: Option<f64>,
    /// Policy tokens trained on this step.
    pub policy_tokens: u64,
    /// Mean policy reply length, tokens.
    pub reply_len_mean: f64,
    /// Seconds generating policy replies.
    pub t_rollout_s: f64,
    /// Seconds in the user simulator.
    pub t_simulate_s: f64,
    /// Seconds in the update: forward/backward passes, stored log-probs and the optimizer.
    pub t_train_s: f64,
    /// Of `t_train_s`: old and reference log-prob passes (the KL sample's reference pass too).
    pub t_logprob_s: f64,
    /// Of `t_train_s`: training forwards and the loss.
    pub t_forward_s: f64,
    /// Of `t_train_s`: backward passes.
    pub t_backward_s: f64,
    /// Of `t_train_s`: optimizer steps.
    pub t_optimizer_s: f64,
    /// Generated policy tokens per second of rollout.
    pub tokens_per_s: f64,
    /// Learning rate of this step.
    pub lr: f64,
    /// Global gradient norm before clipping (empty when the step was skipped).
    pub grad_norm: Option<f64>,
    /// Whether the optimizer skipped this step (non-finite loss or gradient).
    pub skipped: bool,
    /// Mean advantage over the update's policy tokens (token-weighted).
    pub adv_mean: f64,
    /// Population std of the advantage over the update's policy tokens.
    pub adv_std: f64,
    /// Change of `reply_len_mean` since the previous step (empty on the first step).
    pub reply_len_delta: Option<f64>,
    /// Share of the batch's replies that repeat an earlier reply of the batch word for word.
    pub repeat_rate: f64,
    /// k3 KL of the policy before the update to the reference, estimated on the first
    /// `stability.kl_sample` dialogues the update trains on (empty when that is 0), whatever beta
    /// is.
    pub kl_sample: Option<f64>,
    /// PPO: the critic's clipped value loss (empty for critic-free algorithms).
    pub value_loss: Option<f64>,
    /// PPO: explained variance of the rollout's values as predictors of the returns.
    pub explained_var: Option<f64>,
    /// PPO: share of policy tokens whose value error was clipped.
    pub value_clip_frac: Option<f64>,
    /// Groups drawn beyond `profiles_per_step` by dynamic sampling (DAPO).
    pub extra_draws: u64,
    /// The collapse flag (rule in docs/DESIGN.md "Stability metrics").
    pub collapse: bool,
    /// `difficulty: auto`: the controller's level this step ran at, 0 easy, 0.5 moderate, 1 hard
    /// (empty for a fixed preset).
    pub difficulty_level: Option<f64>,
    /// The knobs this step ran at (a scenario's own start emotion aside): start emotion, points.
    pub start_emotion: f64,
    /// Hint rate in [0, 1].
    pub hint_rate: f64,
    /// Acceptance threshold in [0, 1].
    pub acceptance: f64,
    /// Early-advice penalty, points.
    pub early_advice_penalty: f64,
    /// Generic credit in [0, 1].
    pub generic_credit: f64,
    /// The LLM user's malformed answers (each re-ask counted) and failed requests (after the
    /// transport's retries); 0 for the appraiser. Counted from the step's episode records.
    pub sim_failures: u64,
    /// Share of the step's episodes that ended `unsafe` (the safety screen).
    pub unsafe_rate: f64,
}

/// Column names, in file order.
pub const COLUMNS: [&str; 42] = [
    "step",
    "reward_mean",
    "reward_std",
    "frac_reward_zero_std",
    "final_emotion_mean",
    "success_rate",
    "failure_rate",
    "kl",
    "clip_frac_low",
    "clip_frac_high",
    "entropy",
    "policy_tokens",
    "reply_len_mean",
    "t_rollout_s",
    "t_simulate_s",
    "t_train_s",
    "t_logprob_s",
    "t_forward_s",
    "t_backward_s",
    "t_optimizer_s",
    "tokens_per_s",
    "lr",
    "grad_norm",
    "skipped",
    "adv_mean",
    "adv_std",
    "reply_len_delta",
    "repeat_rate",
    "kl_sample",
    "value_loss",
    "explained_var",
    "value_clip_frac",
    "extra_draws",
    "collapse",
    "difficulty_level",
    "start_emotion",
    "hint_rate",
    "acceptance",
    "early_advice_penalty",
    "generic_credit",
    "sim_failures",
    "unsafe_rate",
];

/// The header line (without newline).
pub fn header() -> String {
    csv_line(&COLUMNS)
}

/// One CSV record as text without its newline, written by the `csv` crate.
fn csv_line<S: AsRef<[u8]>>(cells: &[S]) -> String {
    let mut w = csv::WriterBuilder::new()
        .terminator(csv::Terminator::Any(b'\n'))
        .from_writer(Vec::new());
    // Writing into memory cannot fail.
    w.write_record(cells).expect("CSV into memory");
    let bytes = w.into_inner().expect("CSV into memory");
    let text = String::from_utf8(bytes).expect("cells are UTF-8");
    text.trim_end_matches('\n').to_string()
}

fn opt(x: Option<f64>) -> String {
    x.map(|v| v.to_string()).unwrap_or_default()
}

impl StepMetrics {
    /// The cells in [`COLUMNS`] order: floats in Rust's shortest round-trip form, `skipped` as
    /// 0/1, an unmeasured value as an empty cell.
    pub fn cells(&self) -> [String; 42] {
        [
            self.step.to_string(),
            self.reward_mean.to_string(),
            self.reward_std.to_string(),
            self.frac_reward_zero_std.to_string(),
            self.final_emotion_mean.to_string(),
            self.success_rate.to_string(),
            self.failure_rate.to_string(),
            opt(self.kl),
            self.clip_frac_low.to_string(),
            self.clip_frac_high.to_string(),
            opt(self.entropy),
            self.policy_tokens.to_string(),
            self.reply_len_mean.to_string(),
            self.t_rollout_s.to_string(),
            self.t_simulate_s.to_string(),
            self.t_train_s.to_string(),
            self.t_logprob_s.to_string(),
            self.t_forward_s.to_string(),
            self.t_backward_s.to_string(),
            self.t_optimizer_s.to_string(),
            self.tokens_per_s.to_string(),
            self.lr.to_string(),
            opt(self.grad_norm),
            u8::from(self.skipped).to_string(),
            self.adv_mean.to_string(),
            self.adv_std.to_string(),
            opt(self.reply_len_delta),
            self.repeat_rate.to_string(),
            opt(self.kl_sample),
            opt(self.value_loss),
            opt(self.explained_var),
            opt(self.value_clip_frac),
            self.extra_draws.to_string(),
            u8::from(self.collapse).to_string(),
            opt(self.difficulty_level),
            self.start_emotion.to_string(),
            self.hint_rate.to_string(),
            self.acceptance.to_string(),
            self.early_advice_penalty.to_string(),
            self.generic_credit.to_string(),
            self.sim_failures.to_string(),
            self.unsafe_rate.to_string(),
        ]
    }

    /// The CSV line (without newline).
    pub fn to_row(&self) -> String {
        csv_line(&self.cells())
    }

    /// Parses one CSV line; `file` and `line` (1-based) name it in errors.
    pub fn from_row(row: &str, file: &Path, line: usize) -> Result<Self> {
        let mut records = reader(row.as_bytes()).into_records();
        match records.next() {
            Some(Ok(rec)) => Self::from_record(&rec, file, line),
            Some(Err(e)) => Err(csv_err(file, line, e)),
            None => Err(Error::input(file, format!("line {line}"), "empty row")),
        }
    }

    /// Reads one parsed record; `file` and `line` (1-based) name it in errors.
    fn from_record(cells: &csv::StringRecord, file: &Path, line: usize) -> Result<Self> {
        let at = |col: usize| format!("line {line}, column {}", COLUMNS[col]);
        if cells.len() != COLUMNS.len() {
            let msg = format!("expected {} cells, found {}", COLUMNS.len(), cells.len());
            return Err(Error::input(file, format!("line {line}"), msg));
        }
        let num = |col: usize| -> Result<f64> {
            cells[col].parse().map_err(|_| {
                Error::input(file, at(col), format!("not a number: {:?}", &cells[col]))
            })
        };
        let int = |col: usize| -> Result<u64> {
            cells[col].parse().map_err(|_| {
                Error::input(
                    file,
                    at(col),
                    format!("not a whole number: {:?}", &cells[col]),
                )
            })
        };
        let maybe = |col: usize| -> Result<Option<f64>> {
            if cells[col].is_empty() {
                Ok(None)
            } else {
                num(col).map(Some)
            }
        };
        let flag = |col: usize| -> Result<bool> {
            match &cells[col] {
                "0" => Ok(false),
                "1" => Ok(true),
                other => Err(Error::input(
                    file,
                    at(col),
                    format!("expected 0 or 1, found {other:?}"),
                )),
            }
        };
        Ok(Self {
            step: int(0)?,
            reward_mean: num(1)?,
            reward_std: num(2)?,
            frac_reward_zero_std: num(3)?,
            final_emotion_mean: num(4)?,
            success_rate: num(5)?,
            failure_rate: num(6)?,
            kl: maybe(7)?,
            clip_frac_low: num(8)?,
            clip_frac_high: num(9)?,
            entropy: maybe(10)?,
            policy_tokens: int(11)?,
            reply_len_mean: num(12)?,
            t_rollout_s: num(13)?,
            t_simulate_s: num(14)?,
            t_train_s: num(15)?,
            t_logprob_s: num(16)?,
            t_forward_s: num(17)?,
            t_backward_s: num(18)?,
            t_optimizer_s: num(19)?,
            tokens_per_s: num(20)?,
            lr: num(21)?,
            grad_norm: maybe(22)?,
            skipped: flag(23)?,
            adv_mean: num(24)?,
            adv_std: num(25)?,
            reply_len_delta: maybe(26)?,
            repeat_rate: num(27)?,
            kl_sample: maybe(28)?,
            value_loss: maybe(29)?,
            explained_var: maybe(30)?,
            value_clip_frac: maybe(31)?,
            extra_draws: int(32)?,
            collapse: flag(33)?,
            difficulty_level: maybe(34)?,
            start_emotion: num(35)?,
            hint_rate: num(36)?,
            acceptance: num(37)?,
            early_advice_penalty: num(38)?,
            generic_credit: num(39)?,
            sim_failures: int(40)?,
            unsafe_rate: maybe(41)?.unwrap_or(f64::NAN),
        })
    }
}

/// A headerless, flexible reader: the header and the cell counts are checked here, so that the
/// errors name the file, the line and the column.
fn reader<R: std::io::Read>(input: R) -> csv::Reader<R> {
    csv::ReaderBuilder::new()
        .has_headers(false)
        .flexible(true)
        .from_reader(input)
}

fn csv_err(file: &Path, line: usize, e: csv::Error) -> Error {
    Error::input(file, format!("line {line}"), format!("not CSV: {e}"))
}

/// Appends rows to a metrics CSV.
pub struct MetricsWriter {
    path: PathBuf,
    csv: csv::Writer<fs::File>,
}

impl MetricsWriter {
    /// Starts a new file at `path` (replacing any old one) with the header.
    pub fn create(path: &Path) -> Result<Self> {
        write_file(path, &[])?;
        Self::append_to(path)
    }

    /// Continues the file of a run resumed after step `last_step`: keeps the header and the rows
    /// up to `last_step`, drops later rows and a half-written last line, and replaces the file
    /// atomically (temp file, then rename). Creates the file when it does not exist.
    pub fn resume(path: &Path, last_step: u64) -> Result<Self> {
        let text = match fs::read_to_string(path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Self::create(path),
            Err(e) => return Err(Error::io(path, e)),
        };
        let kept: Vec<StepMetrics> = complete_rows(&text, path, false)?
            .into_iter()
            .filter(|r| r.step <= last_step)
            .collect();
        let tmp = path.with_extension("csv.tmp");
        write_file(&tmp, &kept)?;
        fs::rename(&tmp, path).map_err(|e| Error::io(path, e))?;
        Self::append_to(path)
    }

    fn append_to(path: &Path) -> Result<Self> {
        let file = fs::OpenOptions::new()
            .append(true)
            .open(path)
            .map_err(|e| Error::io(path, e))?;
        Ok(Self {
            path: path.to_path_buf(),
            csv: writer(file),
        })
    }

    /// Appends one row and flushes it (one write of the whole line).
    pub fn append(&mut self, m: &StepMetrics) -> Result<()> {
        self.csv
            .write_record(m.cells())
            .map_err(std::io::Error::from)
            .and_then(|_| self.csv.flush())
            .map_err(|e| Error::io(&self.path, e))
    }

    /// The file being written.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

fn writer<W: std::io::Write>(out: W) -> csv::Writer<W> {
    csv::WriterBuilder::new()
        .terminator(csv::Terminator::Any(b'\n'))
        .from_writer(out)
}

/// Writes the header and `rows` to `path`, replacing it.
fn write_file(path: &Path, rows: &[StepMetrics]) -> Result<()> {
    let file = fs::File::create(path).map_err(|e| Error::io(path, e))?;
    let mut w = writer(file);
    let records =
        std::iter::once(COLUMNS.map(String::from)).chain(rows.iter().map(StepMetrics::cells));
    for record in records {
        w.write_record(&record)
            .map_err(|e| Error::io(path, e.into()))?;
    }
    w.flush().map_err(|e| Error::io(path, e))
}

/// The widths of files written by earlier versions, each a prefix of [`COLUMNS`]: before the
/// stability metrics, before the difficulty knobs and simulator failures, and before the
/// unsafe end. Reports still read such files; a run resumes only
/// on this version's header.
const OLDER_WIDTHS: [usize; 3] = [24, 34, 41];

/// What a row of an older file holds in a column it did not have: not measured.
fn unmeasured(col: usize) -> &'static str {
    match COLUMNS[col] {
        "extra_draws" | "collapse" | "sim_failures" => "0",
        "adv_mean"
        | "adv_std"
        | "repeat_rate"
        | "start_emotion"
        | "hint_rate"
        | "acceptance"
        | "early_advice_penalty"
        | "generic_credit" => "NaN",
        _ => "",
    }
}

/// Every complete row of a metrics file: the header must be this version's (or, with
/// `read_older`, the older prefix of it, whose rows get the newer columns unmeasured), and a last
/// line without its newline (half-written by a crash) is dropped.
fn complete_rows(text: &str, path: &Path, read_older: bool) -> Result<Vec<StepMetrics>> {
    let complete = &text[..text.rfind('\n').map_or(0, |i| i + 1)];
    let mut records = reader(complete.as_bytes()).into_records();
    let mut width = COLUMNS.len();
    match records.next() {
        None => return Ok(Vec::new()),
        Some(Err(e)) => return Err(csv_err(path, 1, e)),
        Some(Ok(h)) if h.iter().eq(COLUMNS) => {}
        Some(Ok(h))
            if read_older
                && OLDER_WIDTHS.contains(&h.len())
                && h.iter().eq(COLUMNS[..h.len()].iter().copied()) =>
        {
            width = h.len();
        }
        Some(Ok(h)) => {
            let found: Vec<&str> = h.iter().collect();
            let msg = format!(
                "header {:?} differs from this version's columns; move the old file away",
                found.join(",")
            );
            return Err(Error::input(path, "line 1", msg));
        }
    }
    records
        .map(|rec| {
            let rec = rec.map_err(|e| {
                let line = e.position().map_or(0, |p| p.line() as usize);
                csv_err(path, line, e)
            })?;
            let line = rec.position().map_or(0, |p| p.line() as usize);
            if width < COLUMNS.len() && rec.len() == width {
                let mut padded = rec.clone();
                (width..COLUMNS.len()).for_each(|c| padded.push_field(unmeasured(c)));
                return StepMetrics::from_record(&padded, path, line);
            }
            StepMetrics::from_record(&rec, path, line)
        })
        .collect()
}

/// Reads every complete row of a metrics CSV (for reports and plots).
pub fn read_metrics(path: &Path) -> Result<Vec<StepMetrics>> {
    let text = fs::read_to_string(path).map_err(|e| Error::io(path, e))?;
    complete_rows(&text, path, true)
}

#[cfg(test)]
#[path = "metrics_tests.rs"]
mod tests;
