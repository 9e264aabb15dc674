//! Agreement with people on EPITOME (Sharma, Miner, Atkins & Althoff, "A Computational Approach to
//! Understanding Empathy Expressed in Text-Based Mental Health Support", EMNLP 2020): Reddit
//! (post, response) pairs, each rated 0/1/2 by trained annotators for three mechanisms of empathy.
//!
//! Each mechanism is read against the appraiser's matching move:
//! - emotional reactions (warmth, compassion) ~ the larger of `validate` and `reassure`;
//! - interpretations (understanding the seeker's feelings and experience) ~ `reflect`;
//! - explorations (asking about the seeker's experience) ~ `open_question`.
//!
//! and the reward itself, the per-reply emotion change, against the sum of the three levels.
//!
//! The split is fixed by the post: a pair is in the test part when the FNV-1a 64-bit hash of its
//! `sp_id` (the UTF-8 bytes) is 8 or 9 modulo 10, else in the dev part (80/20, and every response
//! to one post on the same side).

use std::collections::BTreeMap;
use std::path::Path;

use super::input::{Conversation, Speaker};
use super::score::Judged;
use crate::environment::sim::Move;
use crate::error::{Error, Result};
use crate::report::stats::{auc_ci, spearman_ci, BootstrapConfig, Estimate};
use crate::report::Table;
use crate::seed::fnv1a64;

/// The three files of the corpus, as the authors' repository names them.
pub const FILES: [(Mechanism, &str); 3] = [
    (
        Mechanism::EmotionalReactions,
        "emotional-reactions-reddit.csv",
    ),
    (Mechanism::Interpretations, "interpretations-reddit.csv"),
    (Mechanism::Explorations, "explorations-reddit.csv"),
];

/// EPITOME's three communication mechanisms.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Mechanism {
    EmotionalReactions,
    Interpretations,
    Explorations,
}

impl Mechanism {
    pub fn as_str(self) -> &'static str {
        match self {
            Mechanism::EmotionalReactions => "emotional reactions",
            Mechanism::Interpretations => "interpretations",
            Mechanism::Explorations => "explorations",
        }
    }

    /// The appraiser's reading of this mechanism in one reply.
    pub fn move_score(self, moves: &BTreeMap<Move, f64>) -> f64 {
        let m = |k: Move| moves.get(&k).copied().unwrap_or(0.0);
        match self {
            Mechanism::EmotionalReactions => m(Move::Validate).max(m(Move::Reassure)),
            Mechanism::Interpretations => m(Move::Reflect),
            Mechanism::Explorations => m(Move::OpenQuestion),
        }
    }

    /// The move the score comes from, as the table names it.
    pub fn move_name(self) -> &'static str {
        match self {
            Mechanism::EmotionalReactions => "max(validate, reassure)",
            Mechanism::Interpretations => "reflect",
            Mechanism::Explorations => "open_question",
        }
    }

    /// The paper's RoBERTa classifier on its own test split, as reported (Sharma et al. 2020,
    /// Table 2: accuracy and macro-F1 over the three levels, in percent).
    pub fn paper(self) -> (f64, f64) {
        match self {
            Mechanism::EmotionalReactions => (79.43, 74.46),
            Mechanism::Interpretations => (84.04, 62.60),
            Mechanism::Explorations => (92.61, 72.58),
        }
    }
}

/// The split a post belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Part {
    Dev,
    Test,
}

impl Part {
    pub fn as_str(self) -> &'static str {
        match self {
            Part::Dev => "dev",
            Part::Test => "test",
        }
    }

    /// The part of a post, by the FNV-1a 64-bit hash of its `sp_id`.
    pub fn of(sp_id: &str) -> Part {
        if fnv1a64(sp_id.as_bytes()) % 10 >= 8 {
            Part::Test
        } else {
            Part::Dev
        }
    }
}

/// The judge's own data files, read after the appraiser's and the speaker's
/// ([`crate::environment::sim::appraiser::RULE_FILES`]).
const JUDGE_FILES: [&str; 2] = ["difficulty.yaml", "judge.yaml"];

/// The version of the rules a report measured (report the test part once per version): the
/// fingerprint of the rule files and [`JUDGE_FILES`] under `root/data`.
pub fn data_fingerprint(root: &Path) -> Result<String> {
    use crate::environment::sim::appraiser::RULE_FILES;
    let names: Vec<&str> = RULE_FILES.iter().chain(&JUDGE_FILES).copied().collect();
    crate::environment::profile::yaml::fingerprint(&root.join("data"), &names)
}

/// One (post, response) pair with its three levels.
#[derive(Clone, Debug, PartialEq)]
pub struct Item {
    pub sp_id: String,
    pub rp_id: String,
    pub post: String,
    pub response: String,
    pub levels: BTreeMap<Mechanism, u8>,
}

impl Item {
    /// The pair as a conversation to judge, its levels as labels.
    pub fn conversation(&self) -> Conversation {
        Conversation {
            id: format!("{}/{}", self.sp_id, self.rp_id),
            messages: vec![
                (Speaker::Seeker, self.post.trim().to_string()),
                (Speaker::Supporter, self.response.trim().to_string()),
            ],
            labels: self
                .levels
                .iter()
                .map(|(m, l)| (m.as_str().to_string(), f64::from(*l)))
                .collect(),
        }
    }

    pub fn part(&self) -> Part {
        Part::of(&self.sp_id)
    }

    /// The sum of the three levels, 0-6.
    pub fn total(&self) -> u8 {
        self.levels.values().sum()
    }
}

/// Reads the three files under `dir` and joins them on (`sp_id`, `rp_id`); a pair must be rated
/// for all three mechanisms.
pub fn load(dir: &Path) -> Result<Vec<Item>> {
    let mut items: BTreeMap<(String, String), Item> = BTreeMap::new();
    for (mechanism, name) in FILES {
        let path = dir.join(name);
        if !path.is_file() {
            return Err(Error::input(
                &path,
                "file",
                "missing: pass the folder holding EPITOME's three *-reddit.csv files \
                 (dataset/ in github.com/behavioral-data/Empathy-Mental-Health)",
            ));
        }
        let mut reader = csv::Reader::from_path(&path)
            .map_err(|e| Error::input(&path, "line 1", format!("not readable as CSV: {e}")))?;
        let headers = reader
            .headers()
            .map_err(|e| Error::input(&path, "line 1", e.to_string()))?
            .clone();
        let col = |n: &str| {
            headers.iter().position(|h| h == n).ok_or_else(|| {
                Error::input(
                    &path,
                    "line 1",
                    format!("no `{n}` column: is this EPITOME's file?"),
                )
            })
        };
        let (sp, rp, post, resp, level) = (
            col("sp_id")?,
            col("rp_id")?,
            col("seeker_post")?,
            col("response_post")?,
            col("level")?,
        );
        for (i, row) in reader.records().enumerate() {
            let line = i + 2;
            let row =
                row.map_err(|e| Error::input(&path, format!("line {line}"), e.to_string()))?;
            let get = |c: usize| row.get(c).unwrap_or("").to_string();
            let l: u8 = match get(level).trim().parse() {
                Ok(l @ 0..=2) => l,
                _ => {
                    return Err(Error::input(
                        &path,
                        format!("line {line}, level"),
                        format!("`{}` is not a level 0, 1 or 2", get(level)),
                    ))
                }
            };
            let key = (get(sp), get(rp));
            let item = items.entry(key.clone()).or_insert_with(|| Item {
                sp_id: key.0.clone(),
                rp_id: key.1.clone(),
                post: get(post),
                response: get(resp),
                levels: BTreeMap::new(),
            });
            item.levels.insert(mechanism, l);
        }
    }
    Ok(items
        .into_values()
        .filter(|i| i.levels.len() == 3)
        .collect())
}

/// One row of the agreement table.
#[derive(Clone, Debug, PartialEq)]
pub struct Row {
    pub measure: String,
    pub label: String,
    pub auc: Estimate,
    pub spearman: Estimate,
}

/// A pair's one reply.
fn first_reply(j: &Judged) -> Option<&super::score::JudgedReply> {
    j.replies.first()
}

/// The raw points a reply earned: its supportive moves (`fit`, or `generic` below the acceptance
/// threshold).
fn earned(component: &str, _points: f64) -> bool {
    matches!(component, "fit" | "generic")
}

/// The raw points a reply lost: every negative component (logs written before the rules dropped
/// the constant `resistance` hold it too; it is no judgement of the reply).
fn lost(component: &str, points: f64) -> bool {
    points < 0.0 && !matches!(component, "fit" | "generic" | "resistance")
}

/// The agreement of judged pairs with their levels: one row per mechanism, then the per-reply
/// emotion change and the raw points against the sum of the levels, and the raw points split into
/// what the reply earned and what it lost, to show which side agrees with people.
pub fn agreement(items: &[&Item], judged: &[&Judged], cfg: &BootstrapConfig) -> Vec<Row> {
    let mut rows = Vec::new();
    for (m, _) in FILES {
        let scores: Vec<f64> = judged
            .iter()
            .map(|j| first_reply(j).map_or(0.0, |r| m.move_score(&r.moves)))
            .collect();
        let levels: Vec<f64> = items.iter().map(|i| f64::from(i.levels[&m])).collect();
        let positive: Vec<bool> = levels.iter().map(|&l| l >= 1.0).collect();
        rows.push(Row {
            measure: m.move_name().to_string(),
            label: m.as_str().to_string(),
            auc: auc_ci(&scores, &positive, cfg),
            spearman: spearman_ci(&scores, &levels, cfg),
        });
    }
    let total: Vec<f64> = items.iter().map(|i| f64::from(i.total())).collect();
    let any: Vec<bool> = total.iter().map(|&t| t >= 1.0).collect();
    let deltas: Vec<f64> = judged
        .iter()
        .map(|j| first_reply(j).map_or(0.0, |r| f64::from(r.delta)))
        .collect();
    let raws: Vec<f64> = judged
        .iter()
        .map(|j| first_reply(j).map_or(0.0, |r| r.raw))
        .collect();
    let points = |of: fn(&str, f64) -> bool| -> Vec<f64> {
        judged
            .iter()
            .map(|j| {
                first_reply(j).map_or(0.0, |r| {
                    r.components
                        .iter()
                        .filter(|(k, v)| of(k, **v))
                        .map(|(_, v)| v)
                        .sum()
                })
            })
            .collect()
    };
    for (name, scores) in [
        ("emotion change (the reward)", deltas),
        ("raw points", raws),
        ("earned points (fit, generic)", points(earned)),
        ("lost points (penalties)", points(lost)),
    ] {
        rows.push(Row {
            measure: name.to_string(),
            label: "sum of the three levels".into(),
            auc: auc_ci(&scores, &any, cfg),
            spearman: spearman_ci(&scores, &total, cfg),
        });
    }
    rows
}

/// Accuracy and macro-F1 over the three levels when a score is cut into levels 0/1/2 at two
/// thresholds.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Levels {
    /// Scores below `low` read as level 0, from `high` on as level 2.
    pub low: f64,
    pub high: f64,
    pub accuracy: f64,
    pub macro_f1: f64,
}

/// The level a score reads as under thresholds `low <= high`.
fn level_of(score: f64, low: f64, high: f64) -> u8 {
    if score >= high {
        2
    } else if score >= low {
        1
    } else {
        0
    }
}

/// Accuracy and macro-F1 (the mean over the three levels of each level's F1, 0 for a level
/// neither predicted nor present) of `scores` cut at `low` and `high` against `levels`.
pub fn three_levels(scores: &[f64], levels: &[u8], low: f64, high: f64) -> Levels {
    let mut hits = [0usize; 3];
    let mut predicted = [0usize; 3];
    let mut actual = [0usize; 3];
    for (&s, &l) in scores.iter().zip(levels) {
        let p = level_of(s, low, high) as usize;
        predicted[p] += 1;
        actual[l.min(2) as usize] += 1;
        if p == l as usize {
            hits[p] += 1;
        }
    }
    let f1 = |k: usize| {
        let denom = predicted[k] + actual[k];
        if denom == 0 {
            0.0
        } else {
            2.0 * hits[k] as f64 / denom as f64
        }
    };
    Levels {
        low,
        high,
        accuracy: hits.iter().sum::<usize>() as f64 / scores.len().max(1) as f64,
        macro_f1: (f1(0) + f1(1) + f1(2)) / 3.0,
    }
}

/// The thresholds that maximize macro-F1 on (`scores`, `levels`), searched over the scores'
/// distinct values (at most 64 of them, evenly spaced in rank): how a score is cut into the
/// paper's three levels, fit on the dev part and then applied unchanged to the test part.
pub fn fit_levels(scores: &[f64], levels: &[u8]) -> Levels {
    let mut cuts: Vec<f64> = scores.to_vec();
    cuts.sort_by(f64::total_cmp);
    cuts.dedup();
    let step = cuts.len().div_ceil(64).max(1);
    let mut cuts: Vec<f64> = cuts.into_iter().step_by(step).collect();
    cuts.push(f64::INFINITY);
    let mut best = three_levels(scores, levels, f64::INFINITY, f64::INFINITY);
    for (i, &low) in cuts.iter().enumerate() {
        for &high in &cuts[i..] {
            let l = three_levels(scores, levels, low, high);
            if l.macro_f1 > best.macro_f1 {
                best = l;
            }
        }
    }
    best
}

/// The agreement rows as a markdown table.
pub fn table(rows: &[Row]) -> Table {
    let mut t = Table::new([
        "appraiser measure",
        "human label",
        "n",
        "AUC, level >= 1 vs 0 [95% CI]",
        "Spearman [95% CI]",
    ]);
    for r in rows {
        t.push_row([
            r.measure.clone(),
            r.label.clone(),
            r.auc.n.to_string(),
            r.auc.show(),
            r.spearman.show(),
        ]);
    }
    t
}

/// The paper's classifiers beside the appraiser's move scores cut into three levels at thresholds
/// fit on the dev part (macro-F1), both scored on the test part.
pub fn anchor(dev: (&[&Item], &[&Judged]), test: (&[&Item], &[&Judged])) -> Table {
    let mut t = Table::new([
        "mechanism",
        "paper's RoBERTa: accuracy / macro-F1 (its test split)",
        "appraiser move",
        "cut at (fit on dev)",
        "accuracy / macro-F1 (test part)",
    ]);
    let read = |(items, judged): (&[&Item], &[&Judged]), m: Mechanism| -> (Vec<f64>, Vec<u8>) {
        let scores = judged
            .iter()
            .map(|j| j.replies.first().map_or(0.0, |r| m.move_score(&r.moves)))
            .collect();
        (scores, items.iter().map(|i| i.levels[&m]).collect())
    };
    for (m, _) in FILES {
        let (ds, dl) = read(dev, m);
        let (ts, tl) = read(test, m);
        let fit = fit_levels(&ds, &dl);
        let on_test = three_levels(&ts, &tl, fit.low, fit.high);
        let (acc, f1) = m.paper();
        t.push_row([
            m.as_str().to_string(),
            format!("{acc:.1}% / {f1:.1}%"),
            m.move_name().to_string(),
            format!("{:.3}, {:.3}", fit.low, fit.high),
            format!(
                "{:.1}% / {:.1}%",
                100.0 * on_test.accuracy,
                100.0 * on_test.macro_f1
            ),
        ]);
    }
    t
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Four pairs: ER levels 0, 1, 2, 0 and validate scores 0.1, 0.5, 0.9, 0.5.
    fn fixture() -> (Vec<Item>, Vec<Judged>) {
        let er = [0u8, 1, 2, 0];
        let validate = [0.1, 0.5, 0.9, 0.5];
        let deltas = [-5, 0, 10, 0];
        let mut items = Vec::new();
        let mut judged = Vec::new();
        for k in 0..4 {
            let mut levels = BTreeMap::new();
            levels.insert(Mechanism::EmotionalReactions, er[k]);
            levels.insert(Mechanism::Interpretations, 0);
            levels.insert(Mechanism::Explorations, u8::from(k == 2));
            items.push(Item {
                sp_id: format!("p{k}"),
                rp_id: format!("r{k}"),
                post: "post".into(),
                response: "response".into(),
                levels,
            });
            let moves: BTreeMap<Move, f64> = [(Move::Validate, validate[k])].into();
            judged.push(Judged {
                id: format!("p{k}/r{k}"),
                derived: crate::judge::Derived {
                    need: crate::environment::profile::HiddenNeed::BeHeard,
                    need_because: "default".into(),
                    feelings: vec![],
                    specifics: vec![],
                },
                labels: BTreeMap::new(),
                trajectory: vec![40, (40 + deltas[k]) as u8],
                would_end: "-".into(),
                replies: vec![crate::judge::JudgedReply {
                    turn: 1,
                    moves,
                    components: BTreeMap::new(),
                    raw: f64::from(deltas[k]),
                    delta: deltas[k],
                    emotion: (40 + deltas[k]) as u8,
                    warmth: 0.0,
                    reasons: vec![],
                }],
            });
        }
        (items, judged)
    }

    #[test]
    fn agreement_matches_hand_computed_auc_and_spearman() {
        let (items, judged) = fixture();
        let (its, js): (Vec<&Item>, Vec<&Judged>) =
            (items.iter().collect(), judged.iter().collect());
        let cfg = BootstrapConfig {
            resamples: 100,
            ..Default::default()
        };
        let rows = agreement(&its, &js, &cfg);
        let er = &rows[0];
        assert_eq!(er.label, "emotional reactions");
        // Positives (level >= 1) score 0.5 and 0.9; negatives 0.1 and 0.5. Pairs: 0.5 > 0.1 (1),
        // 0.5 = 0.5 (1/2), 0.9 > 0.1 (1), 0.9 > 0.5 (1): AUC = 3.5 / 4.
        assert!((er.auc.value - 0.875).abs() < 1e-12, "{}", er.auc.show());
        // Ranks of the scores 1, 2.5, 4, 2.5 and of the levels 1.5, 3, 4, 1.5: deviations from 2.5
        // are (-1.5, 0, 1.5, 0) and (-1, 0.5, 1.5, -1); covariance 1.5 + 2.25 = 3.75, sums of
        // squares 4.5 and 4.5: rho = 3.75 / 4.5 = 0.8333...
        assert!(
            (er.spearman.value - 3.75 / 4.5).abs() < 1e-12,
            "{}",
            er.spearman.show()
        );
        // Interpretations are all 0: no AUC to compute.
        assert!(rows[1].auc.value.is_nan());
        // The reward: deltas -5, 0, 10, 0 against level sums 0, 1, 3, 0; positives 0 and 10,
        // negatives -5 and 0: pairs 1, 1, 1, 1/2: AUC = 3.5 / 4.
        let reward = &rows[3];
        assert_eq!(reward.measure, "emotion change (the reward)");
        assert!(
            (reward.auc.value - 0.875).abs() < 1e-12,
            "{}",
            reward.auc.show()
        );
    }

    #[test]
    fn three_levels_match_a_hand_count() {
        // Scores 0.1, 0.4, 0.6, 0.9 cut at 0.3 and 0.8 read as levels 0, 1, 1, 2; the truth is
        // 0, 1, 2, 2. Hits: level 0 1 of (1 predicted, 1 true), level 1 1 of (2, 1), level 2 1 of
        // (1, 2). F1: 1, 2/3, 2/3; macro-F1 7/9; accuracy 3/4.
        let l = three_levels(&[0.1, 0.4, 0.6, 0.9], &[0, 1, 2, 2], 0.3, 0.8);
        assert!((l.accuracy - 0.75).abs() < 1e-12);
        assert!((l.macro_f1 - 7.0 / 9.0).abs() < 1e-12, "{l:?}");
        // Fitting finds the perfect cut when there is one.
        let fit = fit_levels(&[0.1, 0.2, 0.5, 0.6, 0.9], &[0, 0, 1, 1, 2]);
        assert_eq!((fit.accuracy, fit.macro_f1), (1.0, 1.0), "{fit:?}");
    }

    #[test]
    fn the_split_is_about_four_to_one_and_fixed_by_the_post() {
        let test = (0..10_000)
            .filter(|i| Part::of(&format!("post{i}")) == Part::Test)
            .count();
        assert!((1800..2200).contains(&test), "{test}");
        assert_eq!(Part::of("65m92s"), Part::of("65m92s"));
    }
}
