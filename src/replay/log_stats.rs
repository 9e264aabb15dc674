//! `replay stats`: logged dialogues aggregated by profile, scenario, persona, difficulty, reward
//! mode, end and step range, each group with its mean reward, mean final emotion, end counts and
//! mean reply length. One [`Table`] feeds both the markdown on stdout and the CSV file.

use std::collections::BTreeMap;

use crate::environment::episode::{end_word, End, EpisodeRecord};
use crate::report::Table;

/// A dimension to group episodes by; the words are the column names of the JSONL.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum By {
    Profile,
    Scenario,
    Persona,
    Difficulty,
    RewardMode,
    End,
    Step,
}

impl By {
    /// Every dimension, in the order the table lists them.
    pub const ALL: [By; 7] = [
        By::Profile,
        By::Scenario,
        By::Persona,
        By::Difficulty,
        By::RewardMode,
        By::End,
        By::Step,
    ];

    /// The word used on the command line and in the table's `by` column.
    pub fn as_str(self) -> &'static str {
        match self {
            By::Profile => "profile",
            By::Scenario => "scenario",
            By::Persona => "persona",
            By::Difficulty => "difficulty",
            By::RewardMode => "reward_mode",
            By::End => "end",
            By::Step => "step",
        }
    }
}

impl std::fmt::Display for By {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for By {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        By::ALL
            .into_iter()
            .find(|b| b.as_str() == s)
            .ok_or_else(|| {
                let words: Vec<&str> = By::ALL.iter().map(|b| b.as_str()).collect();
                format!("unknown grouping `{s}`: use {}", words.join(", "))
            })
    }
}

/// The findings whose share of the appraised replies the table gives (`{name}_share`): the
/// faults training found that no earlier finding named (docs/REWARD.md, "Detectors").
pub const SHARE_OF: [&str; 5] = [
    "cut_off",
    "narration",
    "invented",
    "contradicted",
    "alarming",
];

/// The table's columns, in order.
pub const STATS_COLUMNS: [&str; 16] = [
    "by",
    "group",
    "episodes",
    "mean_reward",
    "mean_final_emotion",
    "resolved",
    "left",
    "max_turns",
    "unsafe",
    "mean_reply_chars",
    "cut_off_share",
    "narration_share",
    "invented_share",
    "contradicted_share",
    "alarming_share",
    "marred_share",
];

/// What to aggregate by.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StatsOptions {
    /// Dimensions, each giving its own block of rows after the `all` row.
    pub by: Vec<By>,
    /// Steps per step range; None: about ten ranges over the logged steps.
    pub step_bin: Option<u64>,
}

impl Default for StatsOptions {
    fn default() -> Self {
        StatsOptions {
            by: By::ALL.to_vec(),
            step_bin: None,
        }
    }
}

/// Running sums for one group.
#[derive(Default)]
struct Acc {
    n: usize,
    reward: f64,
    final_emotion: f64,
    ends: [usize; 4],
    reply_chars: usize,
    replies: usize,
    /// Appraised replies, and those with each finding of [`SHARE_OF`].
    appraised: usize,
    flagged: [usize; SHARE_OF.len()],
    /// Replies to a factual question, and those whose right answer was marred.
    factual: usize,
    marred: usize,
}

impl Acc {
    fn add(&mut self, r: &EpisodeRecord) {
        self.n += 1;
        self.reward += r.reward.unwrap_or(0.0);
        self.final_emotion += f64::from(r.final_emotion());
        if let Some(e) = r.end {
            self.ends[e as usize] += 1;
        }
        for (text, _) in r.assistant_turns() {
            self.reply_chars += text.chars().count();
            self.replies += 1;
        }
        for (i, name) in SHARE_OF.iter().enumerate() {
            let (appraised, with) = r.replies_with(name);
            if i == 0 {
                self.appraised += appraised;
            }
            self.flagged[i] += with;
        }
        let (factual, marred) = r.factual_answers();
        self.factual += factual;
        self.marred += marred;
    }

    fn row(&self, by: &str, group: &str) -> Vec<String> {
        let n = self.n.max(1) as f64;
        let chars = if self.replies == 0 {
            "-".to_string()
        } else {
            format!("{:.0}", self.reply_chars as f64 / self.replies as f64)
        };
        let mut row = vec![
            by.to_string(),
            group.to_string(),
            self.n.to_string(),
            format!("{:.3}", self.reward / n),
            format!("{:.1}", self.final_emotion / n),
            self.ends[End::Resolved as usize].to_string(),
            self.ends[End::Left as usize].to_string(),
            self.ends[End::MaxTurns as usize].to_string(),
            self.ends[End::Unsafe as usize].to_string(),
            chars,
        ];
        let share = |k: usize, of: usize| {
            if of == 0 {
                "-".to_string()
            } else {
                format!("{:.3}", k as f64 / of as f64)
            }
        };
        row.extend(self.flagged.iter().map(|&k| share(k, self.appraised)));
        row.push(share(self.marred, self.factual));
        row
    }
}

/// Steps per range: `bin`, or the smallest width giving at most ten ranges.
fn step_width(records: &[EpisodeRecord], bin: Option<u64>) -> (u64, u64) {
    let lo = records.iter().map(|r| r.step).min().unwrap_or(0);
    let hi = records.iter().map(|r| r.step).max().unwrap_or(0);
    let width = bin.unwrap_or_else(|| (hi - lo + 1).div_ceil(10)).max(1);
    (lo, width)
}

/// A group's sort key (so steps and difficulties sort in their natural order) and its label.
fn group_of(r: &EpisodeRecord, by: By, lo: u64, width: u64) -> (u64, String) {
    match by {
        By::Profile => (0, format!("{}:{}", r.profile.scenario, r.profile.persona)),
        By::Scenario => (0, r.profile.scenario.clone()),
        By::Persona => (0, r.profile.persona.clone()),
        By::Difficulty => (
            r.profile.difficulty as u64,
            r.profile.difficulty.to_string(),
        ),
        By::RewardMode => (0, r.reward_mode.to_string()),
        By::End => (r.end.map_or(4, |e| e as u64), end_word(r.end).to_string()),
        By::Step => {
            let start = lo + (r.step - lo) / width * width;
            let label = if width == 1 {
                start.to_string()
            } else {
                format!("{start}-{}", start + width - 1)
            };
            (start, label)
        }
    }
}

/// The aggregate table: an `all` row, then one block of rows per dimension in `opts.by`.
pub fn episode_stats(records: &[EpisodeRecord], opts: &StatsOptions) -> Table {
    let mut table = Table::new(STATS_COLUMNS);
    let mut all = Acc::default();
    records.iter().for_each(|r| all.add(r));
    table.push_row(all.row("all", "all"));
    let (lo, width) = step_width(records, opts.step_bin);
    for &by in &opts.by {
        let mut groups: BTreeMap<(u64, String), Acc> = BTreeMap::new();
        for r in records {
            groups.entry(group_of(r, by, lo, width)).or_default().add(r);
        }
        for ((_, label), acc) in &groups {
            table.push_row(acc.row(by.as_str(), label));
        }
    }
    table
}

#[cfg(test)]
#[path = "log_stats_tests.rs"]
mod tests;
