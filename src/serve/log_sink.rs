//! Where `serve-env`'s finished episodes go: the episode log, or, while it cannot be written (disk
//! full, an I/O error), a queue in memory that is written as soon as the log works again, and
//! dumped next to it at shutdown if it never does. A failed write never ends the worker: the
//! server reports itself unhealthy instead and keeps every record.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use crate::environment::episode::{EpisodeRecord, EpisodeWriter};
use crate::error::Result;

/// Whether the log can be written, shared with the HTTP handlers.
#[derive(Debug, Default)]
pub struct LogHealth {
    state: Mutex<Failing>,
}

#[derive(Clone, Debug, Default)]
struct Failing {
    cause: Option<String>,
    unwritten: usize,
}

impl LogHealth {
    /// Why the log cannot be written now, and how many finished episodes wait for it; `None`
    /// while it works.
    pub fn failure(&self) -> Option<(String, usize)> {
        let s = self.state.lock().unwrap_or_else(|p| p.into_inner());
        s.cause.clone().map(|c| (c, s.unwritten))
    }

    fn set(&self, cause: Option<String>, unwritten: usize) {
        let mut s = self.state.lock().unwrap_or_else(|p| p.into_inner());
        s.cause = cause;
        s.unwritten = unwritten;
    }
}

/// Records that could not be written by shutdown and where they were put instead.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Unwritten {
    pub count: usize,
    /// Why the log failed.
    pub cause: String,
    /// The file that holds them (JSONL, the log's schema), or `None` when even that failed and they
    /// went to stderr.
    pub dumped_to: Option<PathBuf>,
}

/// The log and the records not yet in it, in the order they finished.
pub struct LogSink {
    path: Option<PathBuf>,
    writer: Option<EpisodeWriter>,
    pending: Vec<EpisodeRecord>,
    health: Arc<LogHealth>,
}

impl LogSink {
    /// A sink for `path` (opened for appending now, so a log that cannot be opened at all stops the
    /// server before it listens), or one that keeps nothing when there is no log.
    pub fn open(path: Option<&Path>) -> Result<Self> {
        Ok(LogSink {
            writer: path.map(EpisodeWriter::append).transpose()?,
            path: path.map(Path::to_path_buf),
            pending: Vec::new(),
            health: Arc::new(LogHealth::default()),
        })
    }

    /// The health flag the handlers read.
    pub fn health(&self) -> Arc<LogHealth> {
        self.health.clone()
    }

    /// Queues `record` and writes every queued record it can.
    pub fn write(&mut self, record: EpisodeRecord) {
        if self.path.is_some() {
            self.pending.push(record);
            self.flush();
        }
    }

    /// Writes the queued records in order, reopening the log first if the last write failed (a
    /// line cut by that failure is set aside by [`EpisodeWriter::append`], and its record, still
    /// queued, is written again whole). Stops at the first failure and says why in the health flag.
    pub fn flush(&mut self) {
        let Some(path) = self.path.clone() else {
            return;
        };
        let mut cause = None;
        let mut done = 0;
        if self.writer.is_none() && !self.pending.is_empty() {
            match EpisodeWriter::append(&path) {
                Ok(w) => self.writer = Some(w),
                Err(e) => cause = Some(e.to_string()),
            }
        }
        if let Some(w) = self.writer.as_mut() {
            for rec in &self.pending {
                if let Err(e) = w.write(rec) {
                    cause = Some(e.to_string());
                    self.writer = None;
                    break;
                }
                done += 1;
            }
        }
        self.pending.drain(..done);
        self.health.set(cause, self.pending.len());
    }

    /// A last try to write the queue, then whatever is left goes to `LOG.unwritten.jsonl` (appended,
    /// next to the log), else to a file in the temporary folder, else to stderr, one JSON line each.
    pub fn finish(mut self) -> Option<Unwritten> {
        self.flush();
        let path = self.path.take()?;
        let (cause, count) = self.health.failure()?;
        let lines = |w: &mut EpisodeWriter| self.pending.iter().try_for_each(|r| w.write(r));
        let beside = dump_path(&path);
        let temp =
            std::env::temp_dir().join(format!("serve-env-unwritten-{}.jsonl", std::process::id()));
        let mut dumped_to = None;
        for place in [beside, temp] {
            if EpisodeWriter::append(&place)
                .and_then(|mut w| lines(&mut w))
                .is_ok()
            {
                dumped_to = Some(place);
                break;
            }
        }
        if dumped_to.is_none() {
            for r in &self.pending {
                eprintln!("{}", serde_json::to_string(r).unwrap_or_default());
            }
        }
        Some(Unwritten {
            count,
            cause,
            dumped_to,
        })
    }
}

/// `LOG.unwritten.jsonl` beside `log`.
pub fn dump_path(log: &Path) -> PathBuf {
    let mut name = log.file_name().unwrap_or_default().to_os_string();
    name.push(".unwritten.jsonl");
    log.with_file_name(name)
}
