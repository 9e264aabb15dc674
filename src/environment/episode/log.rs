//! Episode JSONL: append-only, one `write` call per line (so writers appending to one file never
//! interleave within a line, whatever its size), a cut last line set aside before appending; reading
//! keeps every good line and names every bad one.

use std::fs::{File, OpenOptions};
use std::io::{BufRead, BufReader, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use super::record::EpisodeRecord;
use crate::error::{Error, Result};

/// Appends records to a JSONL file, one line each, each in one `write` call (no buffer in between:
/// a line is on disk, or in the kernel's page cache, when `write` returns).
pub struct EpisodeWriter {
    path: PathBuf,
    out: File,
}

impl EpisodeWriter {
    /// Creates (truncating) `path`.
    pub fn create(path: &Path) -> Result<Self> {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
        }
        File::create(path).map_err(|e| Error::io(path, e))?;
        // Appending: each line lands at the end, whoever else writes to the file.
        let file = OpenOptions::new()
            .append(true)
            .open(path)
            .map_err(|e| Error::io(path, e))?;
        Ok(EpisodeWriter {
            path: path.to_path_buf(),
            out: file,
        })
    }

    /// Opens `path` for appending (resume). A last line cut short by a crash is moved to
    /// `PATH.cut` (appended there, never lost) and the log truncated to its last complete line, so
    /// the next record starts a line of its own. Open it while no other writer is mid-line: a line
    /// being written looks cut.
    pub fn append(path: &Path) -> Result<Self> {
        let io = |e| Error::io(path, e);
        let mut file = OpenOptions::new()
            .create(true)
            .read(true)
            .append(true)
            .open(path)
            .map_err(io)?;
        let len = file.metadata().map_err(io)?.len();
        if len > 0 {
            let mut last = [0u8; 1];
            file.seek(SeekFrom::Start(len - 1)).map_err(io)?;
            file.read_exact(&mut last).map_err(io)?;
            if last[0] != b'\n' {
                set_aside_cut_tail(path, &mut file)?;
            }
        }
        Ok(EpisodeWriter {
            path: path.to_path_buf(),
            out: file,
        })
    }

    /// Writes one record as one line, in one call.
    pub fn write(&mut self, record: &EpisodeRecord) -> Result<()> {
        write_line(&mut self.out, record).map_err(|e| Error::io(&self.path, e))
    }
}

/// One record and its newline in a single `write` (an `O_APPEND` write lands whole at the end of
/// the file, so concurrent appenders never split each other's lines).
fn write_line(out: &mut impl Write, record: &EpisodeRecord) -> std::io::Result<()> {
    let mut line = serde_json::to_vec(record).map_err(std::io::Error::other)?;
    line.push(b'\n');
    out.write_all(&line)
}

/// Moves the bytes after the last newline of `file` (a line cut short) to `PATH.cut` and truncates
/// `file` there.
fn set_aside_cut_tail(path: &Path, file: &mut File) -> Result<()> {
    let io = |e| Error::io(path, e);
    let mut bytes = Vec::new();
    file.seek(SeekFrom::Start(0)).map_err(io)?;
    file.read_to_end(&mut bytes).map_err(io)?;
    let keep = bytes.iter().rposition(|b| *b == b'\n').map_or(0, |i| i + 1);
    let cut_path = PathBuf::from(format!("{}.cut", path.display()));
    let mut cut = OpenOptions::new()
        .create(true)
        .append(true)
        .open(&cut_path)
        .map_err(|e| Error::io(&cut_path, e))?;
    let mut tail = bytes[keep..].to_vec();
    tail.push(b'\n');
    cut.write_all(&tail).map_err(|e| Error::io(&cut_path, e))?;
    file.set_len(keep as u64).map_err(io)
}

/// The good records of a log, with their line numbers, and an error for every bad line.
pub struct EpisodeLog {
    pub records: Vec<(usize, EpisodeRecord)>,
    /// Every line that could not be read (file, line, what to do), in order; reading went on past
    /// each.
    pub errors: Vec<Error>,
}

impl EpisodeLog {
    /// The first bad line, for commands that stop on one (the rest are in `errors`).
    pub fn first_error(&mut self) -> Option<Error> {
        (!self.errors.is_empty()).then(|| self.errors.remove(0))
    }
}

/// Reads every record of a JSONL log. A malformed line (cut short, not a record, not UTF-8) is
/// reported in `errors` and reading goes on with the next line.
pub fn read_episodes(path: &Path) -> Result<EpisodeLog> {
    let file = File::open(path).map_err(|e| Error::io(path, e))?;
    let mut records = Vec::new();
    let mut errors = Vec::new();
    for (i, line) in BufReader::new(file).split(b'\n').enumerate() {
        let n = i + 1;
        let bytes = line.map_err(|e| Error::io(path, e))?;
        let text = String::from_utf8_lossy(&bytes);
        if text.trim().is_empty() {
            continue;
        }
        match serde_json::from_str::<EpisodeRecord>(&text) {
            Ok(r) => records.push((n, r)),
            Err(e) => {
                let hint = if e.is_eof() {
                    "the line is cut short (an interrupted write?); every other line was read"
                } else {
                    "not an episode record (schema empathy-gym/episode/v1, see docs/DESIGN.md section 1)"
                };
                errors.push(Error::input(
                    path,
                    format!("line {n}"),
                    format!("{e}; {hint}"),
                ));
            }
        }
    }
    Ok(EpisodeLog { records, errors })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Counts `write` calls (each takes everything it is given).
    #[derive(Default)]
    struct Calls(Vec<usize>);

    impl Write for Calls {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0.push(buf.len());
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn a_line_over_8_kib_goes_out_in_one_write() {
        let text = include_str!("../../../tests/data/episode-line.json");
        let mut rec: EpisodeRecord = serde_json::from_str(text).unwrap();
        rec.run = "r".repeat(20 * 1024);
        let mut out = Calls::default();
        write_line(&mut out, &rec).unwrap();
        assert_eq!(out.0.len(), 1, "write calls: {:?}", out.0);
        assert!(out.0[0] > 20 * 1024);
    }
}
