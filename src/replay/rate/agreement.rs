//! `judge agreement`: the ratings joined through the key with the logged episodes, and three
//! questions asked of them.
//!
//! - Does the simulator rank dialogues as people do? Per scale, Spearman's rho between a
//!   dialogue's mean human rating (over raters) and its reward, and its final emotion, with
//!   percentile-bootstrap 95% intervals over dialogues.
//! - Do people agree with each other? Per scale, Krippendorff's alpha (interval metric) over the
//!   dialogues two or more raters rated, with a bootstrap interval over those dialogues. It bounds
//!   how well any automatic score can be expected to match a single person.
//! - In A/B pairs, which side do people prefer, and does the reward prefer the same one? Per scale,
//!   the pairs where the trained side's mean rating is higher, equal or lower, the pairs where its
//!   reward is higher, and how often the two preferences point the same way.
//! - With more than one arm (base and trained, or several logs rated as single dialogues), each
//!   arm's mean ratings beside its mean reward.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use super::alpha::krippendorff_alpha_interval;
use super::fingerprint::fingerprint;
use super::key::KeyRow;
use super::ratings::Rating;
use super::study::{BASE, SCALES, TRAINED};
use crate::environment::episode::EpisodeRecord;
use crate::error::{Error, Result};
use crate::report::stats::{bootstrap, spearman_ci, BootstrapConfig, Estimate};
use crate::report::table::Table;

/// Settings of the statistics.
#[derive(Debug, Clone, Copy, Default)]
pub struct AgreementOptions {
    /// The bootstrap of every interval.
    pub bootstrap: BootstrapConfig,
}

/// The report: a few lines of counts and up to three tables.
#[derive(Debug, Clone)]
pub struct AgreementReport {
    /// Each rater with the number of dialogues they rated.
    pub raters: Vec<(String, usize)>,
    /// Dialogues in the key, and those with at least one rating.
    pub dialogues: usize,
    pub rated: usize,
    /// Per scale (and their mean): human rating against reward and final emotion.
    pub correlation: Table,
    /// Per scale: Krippendorff's alpha; `None` with a single rater.
    pub reliability: Option<Table>,
    /// Per scale: preferences in A/B pairs; `None` when the study has no pairs.
    pub preference: Option<Table>,
    /// Per arm: mean ratings and mean reward; `None` with a single arm.
    pub arms: Option<Table>,
}

impl AgreementReport {
    /// The report as markdown: counts, then each table under a heading.
    pub fn to_markdown(&self) -> String {
        let raters: Vec<String> = self
            .raters
            .iter()
            .map(|(r, n)| format!("{r} ({n})"))
            .collect();
        let mut out = format!(
            "{} of {} dialogues rated by {} raters: {}\n\n",
            self.rated,
            self.dialogues,
            self.raters.len(),
            raters.join(", ")
        );
        out.push_str(
            "## Human ratings against the simulator (Spearman's rho, 95% bootstrap interval)\n\n",
        );
        out.push_str(&self.correlation.to_markdown());
        out.push_str("\n## Agreement between raters (Krippendorff's alpha, interval metric)\n\n");
        match &self.reliability {
            Some(t) => out.push_str(&t.to_markdown()),
            None => out.push_str(
                "One rater: agreement between raters needs two or more on the same dialogues.\n",
            ),
        }
        if let Some(t) = &self.preference {
            out.push_str("\n## A/B pairs: which side is preferred\n\n");
            out.push_str(&t.to_markdown());
        }
        if let Some(t) = &self.arms {
            out.push_str("\n## By arm: mean ratings and mean reward\n\n");
            out.push_str(&t.to_markdown());
        }
        out
    }
}

/// One dialogue of the key with what the join found for it.
struct Dialogue<'a> {
    key: &'a KeyRow,
    record: &'a EpisodeRecord,
    /// Per scale: (rater, rating).
    scores: [Vec<(&'a str, f64)>; 3],
}

impl Dialogue<'_> {
    fn mean(&self, k: usize) -> Option<f64> {
        let s = &self.scores[k];
        (!s.is_empty()).then(|| s.iter().map(|(_, v)| v).sum::<f64>() / s.len() as f64)
    }

    /// Scale `k`'s mean, or with `k == SCALES.len()` the mean of the scales' means.
    fn score(&self, k: usize) -> Option<f64> {
        if k < SCALES.len() {
            return self.mean(k);
        }
        let means: Vec<f64> = (0..SCALES.len()).filter_map(|k| self.mean(k)).collect();
        (!means.is_empty()).then(|| means.iter().sum::<f64>() / means.len() as f64)
    }
}

/// The scales and their mean, as the tables' rows name them.
fn scale_names() -> Vec<&'static str> {
    SCALES
        .iter()
        .copied()
        .chain(["mean of the three"])
        .collect()
}

/// Joins `ratings` through `key` (read from `key_path`) with `episodes` and computes the report.
/// A rating of an item and side the key does not list, a rater rating the same dialogue twice, or
/// a key row whose episode is in none of the logs is an error naming the file, line and field.
pub fn agreement(
    key_path: &Path,
    key: &[KeyRow],
    ratings: &[Rating],
    episodes: &[EpisodeRecord],
    opts: &AgreementOptions,
) -> Result<AgreementReport> {
    let by_fingerprint: BTreeMap<String, &EpisodeRecord> =
        episodes.iter().map(|r| (fingerprint(r), r)).collect();
    let mut dialogues = Vec::with_capacity(key.len());
    let mut index: BTreeMap<(&str, &str), usize> = BTreeMap::new();
    for row in key {
        let record = by_fingerprint.get(&row.episode).ok_or_else(|| {
            Error::input(
                key_path,
                format!("line {}, field episode", row.key_line),
                format!(
                    "episode {} ({} line {}) is in none of the logs given; pass the logs the page \
                     was made from, unchanged",
                    row.episode, row.log, row.line
                ),
            )
        })?;
        index.insert((&row.item, &row.side), dialogues.len());
        dialogues.push(Dialogue {
            key: row,
            record,
            scores: Default::default(),
        });
    }
    let items: BTreeSet<&str> = key.iter().map(|r| r.item.as_str()).collect();
    let mut seen: BTreeMap<(&str, usize), &Rating> = BTreeMap::new();
    let mut per_rater: BTreeMap<&str, usize> = BTreeMap::new();
    for r in ratings {
        let Some(&d) = index.get(&(r.item.as_str(), r.side.as_str())) else {
            let (field, what) = if items.contains(r.item.as_str()) {
                let side = if r.side.is_empty() {
                    "an empty side (it is an A/B pair: the side is A or B)".to_string()
                } else {
                    format!("no side {}", r.side)
                };
                ("side", format!("item {} has {side} in the key", r.item))
            } else {
                ("item", format!("item {} is not in the key", r.item))
            };
            return Err(Error::input(
                &r.file,
                format!("line {}, field {field}", r.line),
                format!(
                    "{what} {}; are these ratings from another study's page?",
                    key_path.display()
                ),
            ));
        };
        if let Some(first) = seen.insert((r.rater.as_str(), d), r) {
            return Err(Error::input(
                &r.file,
                format!("line {}, field rater", r.line),
                format!(
                    "{} rated {} again (first at {} line {}); keep one export per rater",
                    r.rater,
                    dialogue_name(&r.item, &r.side),
                    first.file.display(),
                    first.line
                ),
            ));
        }
        *per_rater.entry(&r.rater).or_default() += 1;
        for (k, s) in r.scores.iter().enumerate() {
            if let Some(v) = s {
                dialogues[d].scores[k].push((&r.rater, f64::from(*v)));
            }
        }
    }
    let rated = dialogues
        .iter()
        .filter(|d| d.scores.iter().any(|s| !s.is_empty()))
        .count();
    Ok(AgreementReport {
        raters: per_rater
            .into_iter()
            .map(|(r, n)| (r.to_string(), n))
            .collect(),
        dialogues: dialogues.len(),
        rated,
        correlation: correlation(&dialogues, &opts.bootstrap),
        reliability: (seen.keys().map(|(r, _)| r).collect::<BTreeSet<_>>().len() >= 2)
            .then(|| reliability(&dialogues, &opts.bootstrap)),
        preference: preference(&dialogues),
        arms: arms(&dialogues),
    })
}

/// "item 0a1b2c3d side A", or without a side for a single dialogue.
fn dialogue_name(item: &str, side: &str) -> String {
    if side.is_empty() {
        format!("item {item}")
    } else {
        format!("item {item} side {side}")
    }
}

/// An estimate, or `-` when it is undefined (too few dialogues, a constant side).
fn show(e: &Estimate) -> String {
    if e.value.is_finite() {
        e.show()
    } else {
        "-".into()
    }
}

fn correlation(dialogues: &[Dialogue], cfg: &BootstrapConfig) -> Table {
    let mut t = Table::new([
        "scale",
        "dialogues",
        "mean rating",
        "rho vs reward",
        "rho vs final emotion",
    ]);
    for (k, name) in scale_names().into_iter().enumerate() {
        let rated: Vec<(&Dialogue, f64)> = dialogues
            .iter()
            .filter_map(|d| d.score(k).map(|s| (d, s)))
            .collect();
        let with_reward: Vec<(f64, f64)> = rated
            .iter()
            .filter_map(|(d, s)| d.record.reward.map(|r| (*s, r)))
            .collect();
        let (h, rw): (Vec<f64>, Vec<f64>) = with_reward.into_iter().unzip();
        let human: Vec<f64> = rated.iter().map(|(_, s)| *s).collect();
        let emotion: Vec<f64> = rated
            .iter()
            .map(|(d, _)| f64::from(d.record.final_emotion()))
            .collect();
        let mean = human.iter().sum::<f64>() / human.len().max(1) as f64;
        t.push_row([
            name.to_string(),
            rated.len().to_string(),
            if rated.is_empty() {
                "-".into()
            } else {
                format!("{mean:.2}")
            },
            show(&spearman_ci(&h, &rw, cfg)),
            show(&spearman_ci(&human, &emotion, cfg)),
        ]);
    }
    t
}

fn reliability(dialogues: &[Dialogue], cfg: &BootstrapConfig) -> Table {
    let mut t = Table::new([
        "scale",
        "dialogues with 2+ raters",
        "raters",
        "alpha (interval)",
    ]);
    for (k, name) in SCALES.iter().enumerate() {
        let units: Vec<Vec<f64>> = dialogues
            .iter()
            .filter(|d| d.scores[k].len() >= 2)
            .map(|d| d.scores[k].iter().map(|(_, v)| *v).collect())
            .collect();
        let raters: BTreeSet<&str> = dialogues
            .iter()
            .filter(|d| d.scores[k].len() >= 2)
            .flat_map(|d| d.scores[k].iter().map(|(r, _)| *r))
            .collect();
        let alpha = bootstrap(units.len(), cfg, |idx| {
            let drawn: Vec<Vec<f64>> = idx.iter().map(|&i| units[i].clone()).collect();
            krippendorff_alpha_interval(&drawn)
        });
        t.push_row([
            name.to_string(),
            units.len().to_string(),
            raters.len().to_string(),
            show(&alpha),
        ]);
    }
    t
}

/// "7/10 (70%)".
fn share(k: usize, n: usize) -> String {
    if n == 0 {
        return "-".into();
    }
    format!("{k}/{n} ({:.0}%)", 100.0 * k as f64 / n as f64)
}

fn preference(dialogues: &[Dialogue]) -> Option<Table> {
    let mut pairs: BTreeMap<&str, (Option<&Dialogue>, Option<&Dialogue>)> = BTreeMap::new();
    for d in dialogues {
        let slot = pairs.entry(&d.key.item).or_default();
        match d.key.arm.as_str() {
            BASE => slot.0 = Some(d),
            TRAINED => slot.1 = Some(d),
            _ => {}
        }
    }
    let pairs: Vec<(&Dialogue, &Dialogue)> = pairs
        .into_values()
        .filter_map(|(b, t)| Some((b?, t?)))
        .collect();
    if pairs.is_empty() {
        return None;
    }
    let mut t = Table::new([
        "scale",
        "pairs",
        "people prefer trained",
        "people: tie",
        "people prefer base",
        "reward prefers trained",
        "same preference",
    ]);
    for (k, name) in scale_names().into_iter().enumerate() {
        let (mut n, mut human_t, mut human_tie, mut human_b, mut reward_t) = (0, 0, 0, 0, 0);
        let (mut same, mut both) = (0, 0);
        for (b, tr) in &pairs {
            let (Some(hb), Some(ht)) = (b.score(k), tr.score(k)) else {
                continue;
            };
            n += 1;
            let human = ht.total_cmp(&hb);
            match human {
                std::cmp::Ordering::Greater => human_t += 1,
                std::cmp::Ordering::Equal => human_tie += 1,
                std::cmp::Ordering::Less => human_b += 1,
            }
            if let (Some(rb), Some(rt)) = (b.record.reward, tr.record.reward) {
                let reward = rt.total_cmp(&rb);
                reward_t += usize::from(reward.is_gt());
                if human.is_ne() && reward.is_ne() {
                    both += 1;
                    same += usize::from(human == reward);
                }
            }
        }
        t.push_row([
            name.to_string(),
            n.to_string(),
            share(human_t, n),
            share(human_tie, n),
            share(human_b, n),
            share(reward_t, n),
            share(same, both),
        ]);
    }
    Some(t)
}

/// The mean of the values, `-` without any.
fn mean_cell(values: impl Iterator<Item = f64>) -> String {
    let v: Vec<f64> = values.collect();
    if v.is_empty() {
        return "-".into();
    }
    format!("{:.2}", v.iter().sum::<f64>() / v.len() as f64)
}

fn arms(dialogues: &[Dialogue]) -> Option<Table> {
    let mut by_arm: BTreeMap<&str, Vec<&Dialogue>> = BTreeMap::new();
    for d in dialogues {
        by_arm.entry(&d.key.arm).or_default().push(d);
    }
    if by_arm.len() < 2 {
        return None;
    }
    let headers = ["arm", "dialogues rated"]
        .into_iter()
        .chain(SCALES)
        .chain(["mean reward"]);
    let mut t = Table::new(headers);
    for (arm, ds) in by_arm {
        let rated: Vec<&&Dialogue> = ds
            .iter()
            .filter(|d| d.score(SCALES.len()).is_some())
            .collect();
        let mut row = vec![arm.to_string(), rated.len().to_string()];
        row.extend((0..SCALES.len()).map(|k| mean_cell(rated.iter().filter_map(|d| d.mean(k)))));
        row.push(mean_cell(rated.iter().filter_map(|d| d.record.reward)));
        t.push_row(row);
    }
    Some(t)
}

#[cfg(test)]
#[path = "agreement_tests.rs"]
mod tests;
