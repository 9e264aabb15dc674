//! `sft.csv`: one row per SFT step, flushed as it is written; on resume from the checkpoint of
//! step N the rows of later steps are dropped, so the file continues as an uninterrupted run's.
//! `sft.svg` draws its two losses.

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::report::{LineChart, Series};

/// The per-step file.
pub const SFT_FILE: &str = "sft.csv";
/// The loss curves.
pub const SFT_SVG: &str = "sft.svg";

/// One step.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SftRow {
    /// The step (1-based).
    pub step: u64,
    /// Mean negative log-likelihood (nats) of the step's supporter tokens, before the update
    /// (empty on row 0, which holds the held-out loss before any update).
    pub loss: Option<f64>,
    /// Supporter tokens in the step.
    pub tokens: usize,
    /// Learning rate of the update (empty when the update was skipped).
    pub lr: Option<f64>,
    /// Gradient norm before clipping (empty when skipped).
    pub grad_norm: Option<f64>,
    /// Mean negative log-likelihood of the held-out dialogues' supporter tokens after this step
    /// (measured at checkpoints; empty otherwise or with no validation part).
    pub validation_loss: Option<f64>,
    /// Wall-clock seconds of the step.
    pub seconds: f64,
}

/// The open `sft.csv`.
pub struct SftLog {
    path: PathBuf,
    file: fs::File,
}

impl SftLog {
    /// Creates `dir/sft.csv` with its header.
    pub fn create(dir: &Path) -> Result<Self> {
        Self::create_at(dir.join(SFT_FILE))
    }

    fn create_at(path: PathBuf) -> Result<Self> {
        let mut file = fs::File::create(&path).map_err(|e| Error::io(&path, e))?;
        let header = csv_line(|w| w.write_record(HEADER))?;
        file.write_all(header.as_bytes())
            .map_err(|e| Error::io(&path, e))?;
        Ok(SftLog { path, file })
    }

    /// Reopens `dir/sft.csv` after step `last_step`, dropping later rows (rewritten atomically).
    pub fn resume(dir: &Path, last_step: u64) -> Result<Self> {
        let path = dir.join(SFT_FILE);
        if !path.exists() {
            return Self::create(dir);
        }
        let rows: Vec<SftRow> = read_rows(&path)?
            .into_iter()
            .filter(|r| r.step <= last_step)
            .collect();
        let tmp = path.with_extension("csv.tmp");
        let mut log = Self::create_at(tmp.clone())?;
        for r in &rows {
            log.append(r)?;
        }
        drop(log);
        fs::rename(&tmp, &path).map_err(|e| Error::io(&path, e))?;
        let file = fs::OpenOptions::new()
            .append(true)
            .open(&path)
            .map_err(|e| Error::io(&path, e))?;
        Ok(SftLog { path, file })
    }

    /// Appends one row and flushes it.
    pub fn append(&mut self, row: &SftRow) -> Result<()> {
        let line = csv_line(|w| w.serialize(row))?;
        self.file
            .write_all(line.as_bytes())
            .and_then(|()| self.file.flush())
            .map_err(|e| Error::io(&self.path, e))
    }

    /// The file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

const HEADER: [&str; 7] = [
    "step",
    "loss",
    "tokens",
    "lr",
    "grad_norm",
    "validation_loss",
    "seconds",
];

/// One CSV line written by `write` (without a header).
fn csv_line(write: impl FnOnce(&mut csv::Writer<Vec<u8>>) -> csv::Result<()>) -> Result<String> {
    let mut w = csv::WriterBuilder::new()
        .has_headers(false)
        .from_writer(Vec::new());
    write(&mut w).map_err(|e| Error::Other(format!("sft.csv: {e}")))?;
    let bytes = w
        .into_inner()
        .map_err(|e| Error::Other(format!("sft.csv: {e}")))?;
    Ok(String::from_utf8_lossy(&bytes).into_owned())
}

/// Every row of an `sft.csv`.
pub fn read_rows(path: &Path) -> Result<Vec<SftRow>> {
    let mut r =
        csv::Reader::from_path(path).map_err(|e| Error::input(path, "file", e.to_string()))?;
    r.deserialize()
        .enumerate()
        .map(|(i, row)| {
            row.map_err(|e| Error::input(path, format!("line {}", i + 2), e.to_string()))
        })
        .collect()
}

/// The training loss per step and the validation loss where it was measured.
pub fn loss_svg(rows: &[SftRow]) -> String {
    let train = rows
        .iter()
        .filter_map(|r| Some((r.step as f64, r.loss?)))
        .collect();
    let held = rows
        .iter()
        .filter_map(|r| Some((r.step as f64, r.validation_loss?)))
        .collect();
    LineChart {
        title: "SFT: loss on the supporter turns".into(),
        x_label: "step".into(),
        y_label: "mean negative log-likelihood (nats per token)".into(),
        series: vec![
            Series::new("training batch", train),
            Series::new("held-out dialogues", held),
        ],
        ..LineChart::default()
    }
    .to_svg()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(step: u64, validation_loss: Option<f64>) -> SftRow {
        SftRow {
            step,
            loss: Some(2.5 / step as f64),
            tokens: 40,
            lr: Some(1e-4),
            grad_norm: Some(0.5),
            validation_loss,
            seconds: 0.25,
        }
    }

    #[test]
    fn rows_read_back_and_resume_drops_the_later_ones() {
        let dir = tempfile::tempdir().unwrap();
        let mut log = SftLog::create(dir.path()).unwrap();
        for s in 1..=4 {
            log.append(&row(s, (s == 2).then_some(1.5))).unwrap();
        }
        drop(log);
        let text = fs::read_to_string(dir.path().join(SFT_FILE)).unwrap();
        assert!(text.starts_with("step,loss,tokens,lr,grad_norm,validation_loss,seconds\n"));
        assert_eq!(
            read_rows(&dir.path().join(SFT_FILE)).unwrap()[1],
            row(2, Some(1.5))
        );
        let mut log = SftLog::resume(dir.path(), 2).unwrap();
        log.append(&row(3, None)).unwrap();
        let rows = read_rows(log.path()).unwrap();
        assert_eq!(rows, vec![row(1, None), row(2, Some(1.5)), row(3, None)]);
        assert!(loss_svg(&rows).contains("held-out dialogues"));
    }
}
