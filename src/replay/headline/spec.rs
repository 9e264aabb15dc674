//! The headline tables' spec (`results/tables.yaml`): which document block each table fills, and
//! for every row the file it cites and how each of its numbers is read from that file.

use std::collections::BTreeMap;
use std::path::Path;

use serde::Deserialize;

use crate::error::{Error, Result};

/// The whole spec file.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Spec {
    pub tables: Vec<TableSpec>,
}

/// One generated table: the block `name` in the document `doc` (a path from the repository root).
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TableSpec {
    pub name: String,
    pub doc: String,
    pub rows: Vec<RowSpec>,
}

/// One row: what was measured, the code it ran on, the file it is read from and its numbers.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RowSpec {
    pub what: String,
    /// The commit whose code made the measurement (a prefix of its hash).
    pub commit: String,
    pub source: Source,
    pub values: Vec<ValueSpec>,
    /// False for numbers the simulated user's rules cannot change (times, memory): no rules version
    /// is shown for them.
    #[serde(default = "yes")]
    pub rules_apply: bool,
    /// The same dialogues re-scored under later rules (`replay rescore`), as cited file -> its
    /// re-scored log: their numbers are shown beside the row's when they are under today's rules.
    #[serde(default)]
    pub rescored: BTreeMap<String, String>,
}

fn yes() -> bool {
    true
}

/// The cited file: an episode log or a CSV, with the filter that picks the row's records.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Source {
    /// An episode log (JSONL, `empathy-gym/episode/v1`).
    #[serde(default)]
    pub episodes: Option<String>,
    /// A CSV with a header row.
    #[serde(default)]
    pub csv: Option<String>,
    /// The resolved config written beside a CSV: its `seed`, `repeats` and `rules` keys describe
    /// the protocol and the rules version.
    #[serde(default)]
    pub config: Option<String>,
    /// Dotted keys of that config (`env.difficulty`) that describe the protocol, shown by their
    /// last part (`difficulty moderate`).
    #[serde(default)]
    pub config_keys: Vec<String>,
    /// What the file does not record of its protocol, in words (appended to what it does).
    #[serde(default)]
    pub note: Option<String>,
    /// Column (CSV) or field (episodes: `policy`, `difficulty`) = value, all of which must hold.
    #[serde(default, rename = "where")]
    pub filter: BTreeMap<String, String>,
}

/// One number of a row.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ValueSpec {
    pub label: String,
    /// Another file of the row's kind to read this number from (default: the row's).
    #[serde(default)]
    pub file: Option<String>,
    /// Of episodes: the statistic.
    #[serde(default)]
    pub stat: Option<Stat>,
    /// Of a CSV: the column.
    #[serde(default)]
    pub column: Option<String>,
    /// Further conditions for this number alone.
    #[serde(default, rename = "where")]
    pub filter: BTreeMap<String, String>,
    /// How the matching items (CSV rows, or episodes' policies with `by_policy`) become one number.
    #[serde(default)]
    pub agg: Agg,
    /// Episodes: compute the statistic per policy (`policy.model`) before aggregating.
    #[serde(default)]
    pub by_policy: bool,
    /// Of a CSV: the column naming each row, shown beside a `max` or `min` (which row it was).
    #[serde(default)]
    pub name: Option<String>,
    /// Decimals of a CSV number (default 1).
    #[serde(default)]
    pub digits: Option<usize>,
}

/// A statistic of a group of episodes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Stat {
    /// The mean final emotion.
    MeanFinal,
    /// The share of appraised replies that lowered the emotion, in percent.
    LoweringShare,
    /// Dialogues that ended resolved, of all.
    Resolved,
    /// Dialogues that ended with the user leaving, of all.
    Left,
    /// Dialogues that ended unsafe, of all.
    Unsafe,
}

/// How several matching items become one number.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Agg {
    /// Exactly one item must match.
    #[default]
    One,
    Mean,
    Min,
    Max,
    /// "lowest-highest".
    Range,
    /// "first -> last": the means over the first and the last quarter of the matching rows (a
    /// training run's start and end).
    Quarters,
}

impl Source {
    /// The cited file, from the repository root.
    pub fn file(&self) -> &str {
        self.episodes
            .as_deref()
            .or(self.csv.as_deref())
            .unwrap_or("")
    }
}

impl Spec {
    /// Reads and checks `path`.
    pub fn load(path: &Path) -> Result<Spec> {
        let text = std::fs::read_to_string(path).map_err(|e| Error::io(path, e))?;
        let spec: Spec = serde_yaml::from_str(&text).map_err(|e| {
            Error::input(
                path,
                e.location()
                    .map(|l| format!("line {}", l.line()))
                    .unwrap_or_else(|| "top".into()),
                format!("{e}; fix the YAML (its fields are described at the top of the file)"),
            )
        })?;
        spec.check(path)?;
        Ok(spec)
    }

    fn check(&self, path: &Path) -> Result<()> {
        for (t, table) in self.tables.iter().enumerate() {
            for (r, row) in table.rows.iter().enumerate() {
                let at = format!("tables[{t}].rows[{r}]");
                let s = &row.source;
                if s.episodes.is_some() == s.csv.is_some() {
                    return Err(Error::input(
                        path,
                        format!("{at}.source"),
                        "give exactly one of `episodes` and `csv`",
                    ));
                }
                if row.commit.len() < 7 || !row.commit.chars().all(|c| c.is_ascii_hexdigit()) {
                    return Err(Error::input(
                        path,
                        format!("{at}.commit"),
                        "give the measuring commit's hash (7 or more hex digits)",
                    ));
                }
                for (v, value) in row.values.iter().enumerate() {
                    let at = format!("{at}.values[{v}]");
                    let episodes = s.episodes.is_some();
                    if episodes != value.stat.is_some() || episodes == value.column.is_some() {
                        let want = if episodes { "`stat`" } else { "`column`" };
                        return Err(Error::input(
                            path,
                            at,
                            format!("a number of this source needs {want} and not the other"),
                        ));
                    }
                }
            }
        }
        Ok(())
    }
}
