//! The red-team suite: adversarial scripted policies (`configs/redteam/*.yaml`) played against the
//! environment beside the honest references (`configs/baselines/*.yaml`) over splits and
//! difficulties, scored in both reward modes from the same dialogues, and checked against the
//! margins the reward promises (docs/REDTEAM.md).

pub mod margins;
pub mod search;
pub mod tables;

use std::path::Path;

use crate::environment::episode::{
    rollout, End, EpisodeJob, EpisodeRecord, RolloutOptions, ScriptedPolicy, Turn,
};
use crate::environment::profile::{Catalog, Difficulty, KnobOverrides, ProfileId, Split};
use crate::environment::reward::{self, Aggregate, RewardMode};
use crate::environment::sim::Simulator;
use crate::error::{Error, Result};

pub use margins::{check, Violation, MARGIN};

/// Whether a policy attacks the reward or is an honest reference.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Side {
    Reference,
    Adversary,
}

/// One policy of the suite.
#[derive(Clone, Debug)]
pub struct Entry {
    /// The file stem (`listener`, `echo`).
    pub name: String,
    /// The hack class (adversaries) or `reference`.
    pub class: String,
    pub side: Side,
    pub policy: ScriptedPolicy,
}

/// Loads every `*.yaml` script of a folder, sorted by name. Adversaries must name their `class`.
pub fn load_dir(dir: &Path, side: Side, catalog: &Catalog) -> Result<Vec<Entry>> {
    let mut paths: Vec<_> = std::fs::read_dir(dir)
        .map_err(|e| Error::io(dir, e))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "yaml"))
        .collect();
    paths.sort();
    if paths.is_empty() {
        return Err(Error::input(
            dir,
            "",
            "no *.yaml scripts here: point the flag at a folder of scripted policies",
        ));
    }
    paths
        .iter()
        .map(|p| {
            let policy = ScriptedPolicy::load(p)?.with_scenarios(catalog.scenarios.clone());
            let class = match (side, policy.class()) {
                (Side::Reference, _) => "reference".to_string(),
                (Side::Adversary, Some(c)) => c.to_string(),
                (Side::Adversary, None) => {
                    return Err(Error::input(
                        p,
                        "class",
                        "an adversary names its hack class (e.g. `class: echo`)",
                    ))
                }
            };
            Ok(Entry {
                name: p
                    .file_stem()
                    .map(|s| s.to_string_lossy().into_owned())
                    .unwrap_or_default(),
                class,
                side,
                policy,
            })
        })
        .collect()
}

/// What to play.
#[derive(Clone, Debug)]
pub struct Plan {
    pub splits: Vec<Split>,
    pub difficulties: Vec<Difficulty>,
    /// Dialogues per profile.
    pub repeats: u64,
    pub seed: u64,
    /// At most this many profiles per split (one per scenario first); None: all.
    pub limit: Option<usize>,
}

/// One policy in one cell (split x difficulty).
#[derive(Clone, Debug, PartialEq)]
pub struct Row {
    pub policy: String,
    pub class: String,
    pub side: Side,
    pub split: Split,
    pub difficulty: Difficulty,
    pub episodes: usize,
    pub mean_final: f64,
    /// Behavior reward (final emotion / 100, the floor when unsafe).
    pub behavior_reward: f64,
    /// Trait reward (mean warmth of the replies, the floor when unsafe).
    pub trait_reward: f64,
    pub resolved: usize,
    pub left: usize,
    pub unsafe_ends: usize,
    /// Policy replies per dialogue: how long the user stayed.
    pub mean_replies: f64,
}

/// The profiles of a split, at most `limit`, one per scenario before a second of any.
pub fn pick_profiles(catalog: &Catalog, split: Split, limit: Option<usize>) -> Vec<ProfileId> {
    let all = catalog.split(split);
    let mut seen = std::collections::BTreeSet::new();
    let (mut first, mut rest): (Vec<ProfileId>, Vec<ProfileId>) = (Vec::new(), Vec::new());
    for id in all {
        if seen.insert(id.scenario.clone()) {
            first.push(id.clone());
        } else {
            rest.push(id.clone());
        }
    }
    first.extend(rest);
    first.truncate(limit.unwrap_or(usize::MAX));
    first
}

/// The trait reward of a logged dialogue: the mean warmth of its replies, the floor when unsafe.
pub fn trait_reward(rec: &EpisodeRecord) -> f64 {
    let warmths: Vec<f64> = rec
        .turns
        .iter()
        .filter_map(|t| match t {
            Turn::User {
                appraisal: Some(a), ..
            } => Some(a.warmth),
            _ => None,
        })
        .collect();
    let mut r = reward::score(RewardMode::Trait, Aggregate::Final, &[], &warmths);
    if rec.end == Some(End::Unsafe) {
        reward::floor_unsafe(&mut r, RewardMode::Trait, Aggregate::Final);
    }
    r.total
}

/// Aggregates one cell's dialogues.
pub fn row(entry: &Entry, split: Split, difficulty: Difficulty, recs: &[EpisodeRecord]) -> Row {
    let n = recs.len().max(1) as f64;
    let count = |e: End| recs.iter().filter(|r| r.end == Some(e)).count();
    Row {
        policy: entry.name.clone(),
        class: entry.class.clone(),
        side: entry.side,
        split,
        difficulty,
        episodes: recs.len(),
        mean_final: recs
            .iter()
            .map(|r| f64::from(r.final_emotion()))
            .sum::<f64>()
            / n,
        behavior_reward: recs.iter().map(|r| r.reward.unwrap_or(0.0)).sum::<f64>() / n,
        trait_reward: recs.iter().map(trait_reward).sum::<f64>() / n,
        resolved: count(End::Resolved),
        left: count(End::Left),
        unsafe_ends: count(End::Unsafe),
        mean_replies: recs
            .iter()
            .map(|r| r.assistant_turns().len() as f64)
            .sum::<f64>()
            / n,
    }
}

/// Plays every entry in every cell of the plan. `on_cell` sees each cell's records as it ends
/// (for a progress bar or an episode log).
pub fn play(
    sim: &dyn Simulator,
    catalog: &Catalog,
    entries: &mut [Entry],
    plan: &Plan,
    mut on_cell: impl FnMut(&Entry, &[EpisodeRecord]) -> Result<()>,
) -> Result<Vec<Row>> {
    let mut rows = Vec::new();
    for &split in &plan.splits {
        let ids = pick_profiles(catalog, split, plan.limit);
        for &difficulty in &plan.difficulties {
            let profiles = ids
                .iter()
                .map(|id| catalog.profile(id, difficulty, &KnobOverrides::default()))
                .collect::<Result<Vec<_>>>()?;
            let jobs = EpisodeJob::grid(&profiles, plan.repeats, plan.seed);
            for entry in entries.iter_mut() {
                let opts = RolloutOptions {
                    run: format!("redteam-{}-{split}-{difficulty}", entry.name),
                    reward_mode: RewardMode::Behavior,
                    aggregate: Aggregate::Final,
                    progress: false,
                };
                let recs = rollout(sim, &mut entry.policy, &jobs, &opts, |_| Ok(()))?;
                on_cell(entry, &recs)?;
                rows.push(row(entry, split, difficulty, &recs));
            }
        }
    }
    Ok(rows)
}
