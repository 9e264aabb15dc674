//! What a fuzz run reports: inputs, acceptances, rejections (by message, to see where inputs
//! stop), findings (panics and broken promises, by message with the numbers blanked, each with
//! the first few inputs saved), the slowest input and the largest allocation.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::crashes;

/// Inputs saved per distinct finding (every one is counted).
const SAVED_PER_FINDING: usize = 3;

/// One distinct finding (a panic or a broken promise).
#[derive(Clone, Debug)]
pub struct Finding {
    /// The first message with its place.
    pub message: String,
    pub count: u64,
    /// The saved inputs.
    pub inputs: Vec<PathBuf>,
}

/// What a run did.
#[derive(Clone, Debug)]
pub struct Report {
    pub target: String,
    pub inputs: u64,
    pub seconds: f64,
    /// Inputs the target accepted / rejected with an error.
    pub accepted: u64,
    pub rejected: u64,
    pub panics: u64,
    /// Inputs accepted and then failing a promise of the project's own ([`Broken`]).
    pub broken: u64,
    /// Findings by message with the numbers blanked (`index 7 out of range` = `index 9 ...`).
    pub distinct: BTreeMap<String, Finding>,
    /// Errors of the seeds that were rejected unchanged (a seed should load).
    pub rejected_seeds: Vec<String>,
    /// Rejections by error message (numbers blanked, cut short): where the inputs stopped.
    pub rejections: BTreeMap<String, u64>,
    /// The slowest input's seconds, and where it was saved if it was slow.
    pub slowest: f64,
    pub slow_input: Option<PathBuf>,
    /// Accepted mutants kept for mutating further.
    pub corpus_found: usize,
    /// The largest single allocation request in bytes; None without the campaign's allocator.
    pub largest_alloc: Option<usize>,
}

impl Report {
    /// An empty report of `target`.
    pub fn new(target: &str) -> Self {
        Report {
            target: target.to_string(),
            inputs: 0,
            seconds: 0.0,
            accepted: 0,
            rejected: 0,
            panics: 0,
            broken: 0,
            distinct: BTreeMap::new(),
            rejected_seeds: Vec::new(),
            rejections: BTreeMap::new(),
            slowest: 0.0,
            slow_input: None,
            corpus_found: 0,
            largest_alloc: None,
        }
    }

    /// The `n` most frequent rejection messages with their counts.
    pub fn top_rejections(&self, n: usize) -> Vec<(&str, u64)> {
        let mut all: Vec<(&str, u64)> = self
            .rejections
            .iter()
            .map(|(k, v)| (k.as_str(), *v))
            .collect();
        all.sort_by_key(|a| std::cmp::Reverse(a.1));
        all.truncate(n);
        all
    }

    /// Inputs per second.
    pub fn rate(&self) -> f64 {
        if self.seconds > 0.0 {
            self.inputs as f64 / self.seconds
        } else {
            0.0
        }
    }

    /// The largest allocation in MiB, or `n/a` without the campaign's allocator.
    pub fn largest_alloc_mib(&self) -> String {
        self.largest_alloc.map_or("n/a".to_string(), |b| {
            format!("{:.1}", b as f64 / (1 << 20) as f64)
        })
    }

    /// One line: name, inputs, seconds, rate, accepted, rejected, panics, largest allocation.
    pub fn line(&self) -> String {
        format!(
            "{}: inputs={} seconds={:.1} inputs/s={:.0} accepted={} rejected={} panics={} broken={} distinct={} largest_alloc_mib={}",
            self.target,
            self.inputs,
            self.seconds,
            self.rate(),
            self.accepted,
            self.rejected,
            self.panics,
            self.broken,
            self.distinct.len(),
            self.largest_alloc_mib()
        )
    }
}

/// A panic message with digit runs blanked, to group panics that differ only in numbers.
pub fn signature(message: &str) -> String {
    let mut out = String::with_capacity(message.len());
    let mut in_digits = false;
    for c in message.chars() {
        if c.is_ascii_digit() {
            if !in_digits {
                out.push('N');
            }
            in_digits = true;
        } else {
            out.push(c);
            in_digits = false;
        }
    }
    out
}

/// Distinct rejection messages kept at most.
const REJECTION_KINDS: usize = 1000;

/// Counts a rejection under its message, without the paths and numbers that vary.
pub fn count_rejection(report: &mut Report, e: &anyhow::Error) {
    let text = format!("{e:#}");
    let first = text.lines().next().unwrap_or("");
    let without_paths: Vec<&str> = first
        .split(' ')
        .map(|w| if w.contains('/') { "PATH" } else { w })
        .collect();
    let key: String = signature(&without_paths.join(" "))
        .chars()
        .take(160)
        .collect();
    if report.rejections.len() < REJECTION_KINDS || report.rejections.contains_key(&key) {
        *report.rejections.entry(key).or_insert(0) += 1;
    }
}

/// Counts a finding under its message's signature and saves its input (the first few of each).
/// `detail` (a backtrace) goes into the saved input's note.
pub fn record(
    report: &mut Report,
    crash_dir: &Path,
    target: &str,
    input: &[u8],
    message: &str,
    detail: Option<&str>,
) {
    let group = report
        .distinct
        .entry(signature(message))
        .or_insert_with(|| Finding {
            message: message.to_string(),
            count: 0,
            inputs: Vec::new(),
        });
    group.count += 1;
    if group.inputs.len() < SAVED_PER_FINDING {
        let note = format!("target {target}\n{message}\n\n{}", detail.unwrap_or(""));
        if let Ok(p) = crashes::save(crash_dir, target, input, &note) {
            group.inputs.push(p);
        }
    }
}
