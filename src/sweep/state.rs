//! Where a cell stands, read from its folder: the `done` marker (written last, atomically, when
//! training and every evaluation have finished), a `failed` marker with the error of the last
//! attempt, or how many steps its metrics.csv holds.

use std::fmt;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::learning::train::run_files::{CONFIG_FILE, METRICS_FILE};
use crate::learning::train::{read_metrics, TrainConfig};

/// Written last when a cell has finished.
pub const DONE_FILE: &str = "done";
/// The error of the last attempt, removed when the cell is tried again.
pub const FAILED_FILE: &str = "failed";
/// The cell's output (training, evaluations) under `sweep run`.
pub const LOG_FILE: &str = "cell.log";

/// The content of a `done` marker.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DoneMarker {
    /// The cell's name.
    pub cell: String,
    /// Training steps completed.
    pub steps: u64,
    /// Seconds the evaluations took (training time is in metrics.csv).
    pub eval_s: f64,
}

/// A cell's state.
#[derive(Debug, Clone, PartialEq)]
pub enum CellState {
    /// Nothing written yet.
    Waiting,
    /// Training has written `step` of `of` steps (or is about to start when 0).
    Training { step: u64, of: u64 },
    /// The last attempt stopped with this error.
    Failed(String),
    /// Finished.
    Done(DoneMarker),
}

impl CellState {
    /// The one word `sweep status` and summary.csv use.
    pub fn word(&self) -> &'static str {
        match self {
            CellState::Waiting => "waiting",
            CellState::Training { .. } => "started",
            CellState::Failed(_) => "failed",
            CellState::Done(_) => "done",
        }
    }
}

impl fmt::Display for CellState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CellState::Waiting => f.write_str("waiting"),
            CellState::Training { step, of } if step == of => {
                write!(f, "trained ({of} steps), evaluations not finished")
            }
            CellState::Training { step, of } => write!(f, "started: step {step} of {of}"),
            CellState::Failed(msg) => write!(f, "failed: {}", msg.lines().next().unwrap_or("")),
            CellState::Done(d) => write!(f, "done ({} steps)", d.steps),
        }
    }
}

/// Reads the state of the cell in `dir` that trains for `steps` steps.
pub fn read_state(dir: &Path, steps: u64) -> Result<CellState> {
    let done = dir.join(DONE_FILE);
    if done.is_file() {
        let text = std::fs::read_to_string(&done).map_err(|e| Error::io(&done, e))?;
        let marker: DoneMarker = serde_json::from_str(&text).map_err(|e| {
            Error::input(
                &done,
                "document",
                format!(
                    "unreadable done marker ({e}); delete it to run the cell's evaluations again"
                ),
            )
        })?;
        return Ok(CellState::Done(marker));
    }
    let failed = dir.join(FAILED_FILE);
    if failed.is_file() {
        let text = std::fs::read_to_string(&failed).map_err(|e| Error::io(&failed, e))?;
        return Ok(CellState::Failed(text.trim().to_string()));
    }
    let metrics = dir.join(METRICS_FILE);
    if metrics.is_file() {
        let step = read_metrics(&metrics)?.last().map_or(0, |m| m.step);
        return Ok(CellState::Training { step, of: steps });
    }
    if dir.is_dir() {
        return Ok(CellState::Training { step: 0, of: steps });
    }
    Ok(CellState::Waiting)
}

/// Writes `text` to `path` through a temporary file and a rename, so readers see all or nothing
/// (the temporary name carries the process id: array tasks may write the same file at once).
pub fn write_atomic(path: &Path, text: &str) -> Result<()> {
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(format!(".tmp.{}", std::process::id()));
    let tmp = std::path::PathBuf::from(tmp);
    std::fs::write(&tmp, text).map_err(|e| Error::io(&tmp, e))?;
    std::fs::rename(&tmp, path).map_err(|e| Error::io(path, e))
}

/// Whether the run folder `dir` was started with `cfg`: its `config.yaml` read back with this
/// version's defaults equals `cfg`. Compared as configs, not as text, so a cell started by an
/// earlier version (without the keys added since, which take their defaults) still resumes, while
/// a changed value does not. An unreadable or invalid file counts as another config.
pub fn started_with(dir: &Path, cfg: &TrainConfig) -> bool {
    TrainConfig::load(&dir.join(CONFIG_FILE), &[]).is_ok_and(|c| c.file == cfg.file)
}

/// Marks the cell in `dir` finished.
pub fn write_done(dir: &Path, marker: &DoneMarker) -> Result<()> {
    let json = serde_json::to_string_pretty(marker)
        .map_err(|e| Error::Other(format!("done marker: {e}")))?;
    write_atomic(&dir.join(DONE_FILE), &(json + "\n"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_config_written_before_newer_keys_still_matches_but_a_changed_value_does_not() {
        let tmp = tempfile::tempdir().unwrap();
        let path = Path::new("cell.yaml");
        let cfg = TrainConfig::from_yaml("run: c\ngrpo:\n  steps: 4\n", path, &[]).unwrap();
        let full = cfg.to_yaml().unwrap();
        assert!(full.contains("simulator:") && full.contains("stability:"));
        // As an earlier version wrote it: without the sections added since.
        let older: String = full
            .split_inclusive('\n')
            .scan(false, |skipping, line| {
                if !line.starts_with(' ') {
                    *skipping = line.starts_with("simulator:") || line.starts_with("stability:");
                }
                Some(if *skipping { "" } else { line })
            })
            .collect();
        assert!(!older.contains("simulator:"));
        std::fs::write(tmp.path().join(CONFIG_FILE), &older).unwrap();
        assert!(started_with(tmp.path(), &cfg));
        std::fs::write(
            tmp.path().join(CONFIG_FILE),
            older.replace("steps: 4", "steps: 5"),
        )
        .unwrap();
        assert!(!started_with(tmp.path(), &cfg));
        std::fs::remove_file(tmp.path().join(CONFIG_FILE)).unwrap();
        assert!(!started_with(tmp.path(), &cfg));
    }

    #[test]
    fn states_follow_the_files() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("cell");
        assert_eq!(read_state(&dir, 4).unwrap(), CellState::Waiting);
        std::fs::create_dir_all(&dir).unwrap();
        let s = read_state(&dir, 4).unwrap();
        assert_eq!(s, CellState::Training { step: 0, of: 4 });
        assert_eq!(s.to_string(), "started: step 0 of 4");
        std::fs::write(dir.join(FAILED_FILE), "out of memory\nmore").unwrap();
        assert_eq!(
            read_state(&dir, 4).unwrap().to_string(),
            "failed: out of memory"
        );
        let m = DoneMarker {
            cell: "x".into(),
            steps: 4,
            eval_s: 1.5,
        };
        write_done(&dir, &m).unwrap();
        assert_eq!(read_state(&dir, 4).unwrap(), CellState::Done(m));
        assert_eq!(
            std::fs::read_dir(&dir).unwrap().count(),
            2,
            "no temporary file left"
        );
        std::fs::write(dir.join(DONE_FILE), "{").unwrap();
        let e = read_state(&dir, 4).unwrap_err().to_string();
        assert!(e.contains("unreadable done marker"), "{e}");
    }
}
