//! Episode JSONL: append-only, flushed after every dialogue; reading keeps every complete line of
//! a log whose last line was cut, and says which line was lost.

use std::fs::{File, OpenOptions};
use std::io::{BufRead, BufReader, BufWriter, Write};
use std::path::{Path, PathBuf};

use super::record::EpisodeRecord;
use crate::error::{Error, Result};

/// Appends records to a JSONL file, one line each, flushed per line.
pub struct EpisodeWriter {
    path: PathBuf,
    out: BufWriter<File>,
}

impl EpisodeWriter {
    /// Creates (truncating) `path`.
    pub fn create(path: &Path) -> Result<Self> {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
        }
        let file = File::create(path).map_err(|e| Error::io(path, e))?;
        Ok(EpisodeWriter {
            path: path.to_path_buf(),
            out: BufWriter::new(file),
        })
    }

    /// Opens `path` for appending (resume).
    pub fn append(path: &Path) -> Result<Self> {
        let file = OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .map_err(|e| Error::io(path, e))?;
        Ok(EpisodeWriter {
            path: path.to_path_buf(),
            out: BufWriter::new(file),
        })
    }

    /// Writes one record as one line and flushes it.
    pub fn write(&mut self, record: &EpisodeRecord) -> Result<()> {
        let line = serde_json::to_string(record)
            .map_err(|e| Error::Other(format!("serializing an episode: {e}")))?;
        let io = |e| Error::io(&self.path, e);
        self.out.write_all(line.as_bytes()).map_err(io)?;
        self.out.write_all(b"\n").map_err(io)?;
        self.out.flush().map_err(io)
    }
}

/// The complete records of a log, with their line numbers, and the error of a bad line if any.
pub struct EpisodeLog {
    pub records: Vec<(usize, EpisodeRecord)>,
    /// The first line that could not be read (file, line, what to do); reading stops there.
    pub error: Option<Error>,
}

/// Reads every record of a JSONL log. A malformed line stops reading and is reported in
/// `error`, with every record before it kept.
pub fn read_episodes(path: &Path) -> Result<EpisodeLog> {
    let file = File::open(path).map_err(|e| Error::io(path, e))?;
    let mut records = Vec::new();
    for (i, line) in BufReader::new(file).lines().enumerate() {
        let n = i + 1;
        let line = line.map_err(|e| Error::io(path, e))?;
        if line.trim().is_empty() {
            continue;
        }
        match serde_json::from_str::<EpisodeRecord>(&line) {
            Ok(r) => records.push((n, r)),
            Err(e) => {
                let hint = if e.is_eof() {
                    "the line is cut short (an interrupted write?); every complete line before it was kept"
                } else {
                    "not an episode record (schema empathy-gym/episode/v1, see docs/DESIGN.md section 6)"
                };
                let error = Error::input(path, format!("line {n}"), format!("{e}; {hint}"));
                return Ok(EpisodeLog {
                    records,
                    error: Some(error),
                });
            }
        }
    }
    Ok(EpisodeLog {
        records,
        error: None,
    })
}
