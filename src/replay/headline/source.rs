//! Reading a headline row's numbers from the file it cites: statistics of an episode log, or cells
//! of a CSV, filtered and aggregated as `results/tables.yaml` says; and what the file says of its
//! own protocol and rules version.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use crate::environment::episode::{read_episodes, End, EpisodeRecord, Turn};
use crate::environment::profile::{Catalog, Difficulty, Presets, Split};
use crate::error::{Error, Result};

use super::spec::{Agg, Stat};

/// The records of an episode log, all of which must parse.
pub fn episodes(path: &Path) -> Result<Vec<EpisodeRecord>> {
    let mut log = read_episodes(path)?;
    if let Some(e) = log.first_error() {
        return Err(e);
    }
    Ok(log.records.into_iter().map(|(_, r)| r).collect())
}

/// Whether `r` meets every condition: `policy` (its `policy.model`) and `difficulty`.
pub fn episode_matches(
    r: &EpisodeRecord,
    filter: &BTreeMap<String, String>,
    file: &Path,
) -> Result<bool> {
    for (key, want) in filter {
        let have = match key.as_str() {
            "policy" => r.policy.model.clone(),
            "difficulty" => r.profile.difficulty.to_string(),
            "checkpoint" => r.policy.checkpoint.clone().unwrap_or_default(),
            _ => {
                return Err(Error::input(
                    file,
                    format!("where.{key}"),
                    "episodes are filtered by `policy`, `difficulty` or `checkpoint`",
                ))
            }
        };
        if &have != want {
            return Ok(false);
        }
    }
    Ok(true)
}

/// `stat` of a group of episodes.
pub fn episode_stat(records: &[&EpisodeRecord], stat: Stat) -> f64 {
    let n = records.len().max(1) as f64;
    let ended = |end: End| records.iter().filter(|r| r.end == Some(end)).count() as f64;
    match stat {
        Stat::MeanFinal => {
            records
                .iter()
                .map(|r| f64::from(r.final_emotion()))
                .sum::<f64>()
                / n
        }
        Stat::LoweringShare => {
            let deltas: Vec<i32> = records
                .iter()
                .flat_map(|r| r.turns.iter())
                .filter_map(|t| match t {
                    Turn::User { delta, .. } => *delta,
                    Turn::Assistant { .. } => None,
                })
                .collect();
            let lowering = deltas.iter().filter(|d| **d < 0).count() as f64;
            100.0 * lowering / deltas.len().max(1) as f64
        }
        Stat::Resolved => ended(End::Resolved),
        Stat::Left => ended(End::Left),
        Stat::Unsafe => ended(End::Unsafe),
    }
}

/// How a statistic is written: emotions to one decimal, shares as percent, counts "k of n".
pub fn format_stat(stat: Stat, value: f64, of: usize) -> String {
    match stat {
        Stat::MeanFinal => format!("{value:.1}"),
        Stat::LoweringShare => format!("{value:.1}%"),
        Stat::Resolved | Stat::Left | Stat::Unsafe => format!("{value:.0} of {of}"),
    }
}

/// What a group of episodes was played under, in words: "test, moderate, start 40, up to 8
/// replies, 20 dialogues on 17 profiles, seeds 301-320".
pub fn episode_protocol(records: &[&EpisodeRecord], catalog: &Catalog) -> String {
    let words = |set: BTreeSet<String>| set.into_iter().collect::<Vec<_>>().join(" and ");
    let difficulty = words(
        records
            .iter()
            .map(|r| r.profile.difficulty.to_string())
            .collect(),
    );
    let knobs: BTreeSet<(u8, u32)> = records
        .iter()
        .filter_map(|r| r.profile.knobs.as_ref())
        .map(|k| (k.start_emotion, k.max_turns))
        .collect();
    let profiles: BTreeSet<String> = records
        .iter()
        .map(|r| format!("{}:{}", r.profile.scenario, r.profile.persona))
        .collect();
    let seeds: BTreeSet<u64> = records.iter().map(|r| r.simulator.seed).collect();
    let mut parts = vec![split_of(&profiles, catalog), difficulty];
    for (start, turns) in &knobs {
        parts.push(format!("start {start}, up to {turns} replies"));
    }
    let plural = |n: usize, word: &str| format!("{n} {word}{}", if n == 1 { "" } else { "s" });
    parts.push(format!(
        "{} on {}",
        plural(records.len(), "dialogue"),
        plural(profiles.len(), "profile")
    ));
    parts.push(seed_words(&seeds));
    parts.join(", ")
}

/// "test", "train" or "train and test": the split the profiles `ids` belong to.
fn split_of(ids: &BTreeSet<String>, catalog: &Catalog) -> String {
    let mut splits = BTreeSet::new();
    for split in [Split::Train, Split::Test] {
        if catalog
            .split(split)
            .iter()
            .any(|id| ids.contains(&id.to_string()))
        {
            splits.insert(split.as_str().to_string());
        }
    }
    if splits.is_empty() {
        "profiles outside the catalog's split".into()
    } else {
        splits.into_iter().collect::<Vec<_>>().join(" and ")
    }
}

/// "seed 7", "seeds 301-320" (consecutive), "seeds 1, 5, 9", or "74 seeds" for more than six
/// scattered ones.
pub fn seed_words(seeds: &BTreeSet<u64>) -> String {
    let (Some(lo), Some(hi)) = (seeds.first(), seeds.last()) else {
        return "no seeds".into();
    };
    if lo == hi {
        format!("seed {lo}")
    } else if (hi - lo) as usize + 1 == seeds.len() {
        format!("seeds {lo}-{hi}")
    } else if seeds.len() > 6 {
        // Many scattered seeds are derived ones (a hash per profile): their count says enough.
        format!("{} seeds", seeds.len())
    } else {
        let list: Vec<String> = seeds.iter().map(u64::to_string).collect();
        format!("seeds {}", list.join(", "))
    }
}

/// The rules versions episodes were scored under (`simulator.data`); empty when none recorded.
pub fn episode_rules(records: &[&EpisodeRecord]) -> BTreeSet<String> {
    records
        .iter()
        .filter_map(|r| r.simulator.data.clone())
        .collect()
}

/// A CSV as header-named rows.
pub struct Csv {
    pub headers: Vec<String>,
    pub rows: Vec<Vec<String>>,
}

impl Csv {
    pub fn read(path: &Path) -> Result<Csv> {
        let bad = |e: csv::Error| Error::input(path, "CSV", e.to_string());
        let mut reader = csv::Reader::from_path(path).map_err(bad)?;
        let headers = reader
            .headers()
            .map_err(bad)?
            .iter()
            .map(str::to_string)
            .collect();
        let mut rows = Vec::new();
        for record in reader.records() {
            rows.push(record.map_err(bad)?.iter().map(str::to_string).collect());
        }
        Ok(Csv { headers, rows })
    }

    /// The index of `column`, or an error naming the file and the columns it has.
    pub fn column(&self, column: &str, path: &Path) -> Result<usize> {
        self.headers
            .iter()
            .position(|h| h == column)
            .ok_or_else(|| {
                Error::input(
                    path,
                    format!("column {column}"),
                    format!("no such column; it has {}", self.headers.join(", ")),
                )
            })
    }

    /// The rows meeting every condition of `filter`.
    pub fn matching(
        &self,
        filter: &BTreeMap<String, String>,
        path: &Path,
    ) -> Result<Vec<&Vec<String>>> {
        let mut conditions = Vec::new();
        for (column, want) in filter {
            conditions.push((self.column(column, path)?, want));
        }
        Ok(self
            .rows
            .iter()
            .filter(|row| conditions.iter().all(|(i, want)| row.get(*i) == Some(want)))
            .collect())
    }
}

/// What CSV rows of a red-team style table were played under: the split and difficulty of the
/// filter, the difficulty's start and reply limit, the dialogues per policy, and the config's seed.
pub fn csv_protocol(
    filter: &BTreeMap<String, String>,
    config_keys: &[String],
    rows: &[&Vec<String>],
    csv: &Csv,
    presets: &Presets,
    config: Option<&serde_yaml::Value>,
) -> String {
    let mut parts = Vec::new();
    if let Some(split) = filter.get("split") {
        parts.push(split.clone());
    }
    if let Some(d) = filter.get("difficulty") {
        parts.push(d.clone());
        if let Ok(difficulty) = d.parse::<Difficulty>() {
            let k = presets.knobs(difficulty);
            parts.push(format!(
                "start {}, up to {} replies",
                k.start_emotion, k.max_turns
            ));
        }
    }
    if let Some(i) = csv.headers.iter().position(|h| h == "episodes") {
        let counts: BTreeSet<&str> = rows
            .iter()
            .filter_map(|r| r.get(i))
            .map(|s| s.as_str())
            .collect();
        if counts.len() == 1 {
            parts.push(format!(
                "{} dialogues per policy",
                counts.iter().next().unwrap_or(&"")
            ));
        }
    }
    if let Some(seed) = config.and_then(|c| c.get("seed")).and_then(|s| s.as_u64()) {
        parts.push(format!("seed {seed}"));
    }
    for key in config_keys {
        let value = config.and_then(|c| lookup(c, key));
        let name = key.rsplit('.').next().unwrap_or(key);
        parts.push(match value {
            Some(serde_yaml::Value::String(s)) => format!("{name} {s}"),
            Some(serde_yaml::Value::Number(n)) => format!("{name} {n}"),
            Some(serde_yaml::Value::Bool(b)) => format!("{name} {b}"),
            _ => format!("{name} unrecorded"),
        });
    }
    parts.join(", ")
}

/// The value at the dotted `key` (`env.knobs.max_turns`) of a YAML mapping.
fn lookup<'a>(value: &'a serde_yaml::Value, key: &str) -> Option<&'a serde_yaml::Value> {
    key.split('.').try_fold(value, |v, part| v.get(part))
}

/// The numbers of `rows` in column `i`, or an error naming the cell that is not a number.
pub fn numbers(rows: &[&Vec<String>], i: usize, column: &str, path: &Path) -> Result<Vec<f64>> {
    rows.iter()
        .map(|row| {
            let cell = row.get(i).map(String::as_str).unwrap_or("");
            cell.parse::<f64>().map_err(|_| {
                Error::input(
                    path,
                    format!("column {column}"),
                    format!("{cell:?} is not a number"),
                )
            })
        })
        .collect()
}

/// Aggregates `values` (named by `names`) into one cell: `digits` decimals, and with `names` the
/// name of the row a `max` or `min` came from.
pub fn aggregate(
    values: &[f64],
    names: Option<&[String]>,
    agg: Agg,
    fmt: &dyn Fn(f64) -> String,
    what: &str,
) -> std::result::Result<String, String> {
    if values.is_empty() {
        return Err(format!("nothing matches {what}"));
    }
    let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len().max(1) as f64;
    let pick = |best: usize| match names {
        Some(n) => format!("{} ({})", fmt(values[best]), n[best]),
        None => fmt(values[best]),
    };
    let quarter = values.len().div_ceil(4);
    Ok(match agg {
        Agg::One if values.len() == 1 => fmt(values[0]),
        Agg::One => {
            return Err(format!(
                "{} items match {what}, where one was expected",
                values.len()
            ))
        }
        Agg::Mean => fmt(mean(values)),
        Agg::Max | Agg::Min => {
            let mut best = 0;
            for (i, v) in values.iter().enumerate() {
                let better = if agg == Agg::Max {
                    *v > values[best]
                } else {
                    *v < values[best]
                };
                if better {
                    best = i;
                }
            }
            pick(best)
        }
        Agg::Range => {
            let lo = values.iter().copied().fold(f64::INFINITY, f64::min);
            let hi = values.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            format!("{}-{}", fmt(lo), fmt(hi))
        }
        Agg::Quarters => format!(
            "{} -> {}",
            fmt(mean(&values[..quarter])),
            fmt(mean(&values[values.len() - quarter..]))
        ),
    })
}
