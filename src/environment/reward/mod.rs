//! Rewards (docs/REWARD.md): behavior-level (the user's emotion trajectory) and trait-level
//! (context-free warmth of every reply). Each is a rubric of named components kept beside the total.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// Which reward a run optimizes.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum RewardMode {
    /// The user's emotion in context (RLVER).
    #[default]
    Behavior,
    /// Context-free warmth of each reply (the warmth paper's setting).
    Trait,
}

impl RewardMode {
    /// The word used in configs, on the command line and in the JSONL.
    pub fn as_str(self) -> &'static str {
        match self {
            RewardMode::Behavior => "behavior",
            RewardMode::Trait => "trait",
        }
    }
}

impl std::fmt::Display for RewardMode {
    /// The word the config files and the JSONL use (never the Rust variant name).
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for RewardMode {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "behavior" => Ok(RewardMode::Behavior),
            "trait" => Ok(RewardMode::Trait),
            other => Err(format!(
                "unknown reward mode `{other}`: use behavior or trait"
            )),
        }
    }
}

/// How the behavior reward reads the emotion trajectory.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum Aggregate {
    /// r = e_T / 100, terminal and sparse (RLVER).
    #[default]
    Final,
    /// r = mean of the trajectory (start included) / 100.
    Mean,
    /// Per-turn rewards delta_t / 100; their sum (e_T - e_0) / 100 is the total.
    Dense,
}

impl Aggregate {
    /// The word used in configs, on the command line and in the JSONL.
    pub fn as_str(self) -> &'static str {
        match self {
            Aggregate::Final => "final",
            Aggregate::Mean => "mean",
            Aggregate::Dense => "dense",
        }
    }
}

impl std::fmt::Display for Aggregate {
    /// The word the config files and the JSONL use (never the Rust variant name).
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for Aggregate {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "final" => Ok(Aggregate::Final),
            "mean" => Ok(Aggregate::Mean),
            "dense" => Ok(Aggregate::Dense),
            other => Err(format!(
                "unknown behavior reward `{other}`: use final, mean or dense"
            )),
        }
    }
}

/// A reward with its named components.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Rubric {
    pub total: f64,
    pub components: BTreeMap<String, f64>,
    /// Per-turn rewards (dense only); empty otherwise.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub per_turn: Vec<f64>,
}

/// Whether each reply earns its own reward on its turn: only the behavior reward with the dense
/// aggregate. Everywhere else (final, mean, and trait mode with any aggregate: warmth is a mean
/// over the replies, with no per-turn change to place) the whole reward sits on the last turn.
pub fn rewards_each_turn(mode: RewardMode, aggregate: Aggregate) -> bool {
    mode == RewardMode::Behavior && aggregate == Aggregate::Dense
}

/// The reward of one turn whose reply moved the emotion by `delta`: delta / 100. The one home of
/// the per-turn reward; the dense total and the trainer's placement are built from it.
pub fn turn_reward(delta: i32) -> f64 {
    f64::from(delta) / 100.0
}

/// The per-turn rewards of an emotion trajectory (`emotions[0]` is the start): (e_k - e_{k-1}) / 100.
pub fn turn_rewards(emotions: &[u8]) -> Vec<f64> {
    emotions
        .windows(2)
        .map(|w| turn_reward(i32::from(w[1]) - i32::from(w[0])))
        .collect()
}

/// Scores an episode from its emotion trajectory (`emotions[0]` is the start) and the warmth of
/// each policy reply.
pub fn score(mode: RewardMode, aggregate: Aggregate, emotions: &[u8], warmths: &[f64]) -> Rubric {
    let mut r = Rubric::default();
    match mode {
        RewardMode::Behavior => {
            let first = f64::from(emotions.first().copied().unwrap_or(0));
            let last = f64::from(emotions.last().copied().unwrap_or(0));
            let mean =
                emotions.iter().map(|&e| f64::from(e)).sum::<f64>() / emotions.len().max(1) as f64;
            r.components.insert("start_emotion".into(), first);
            r.components.insert("final_emotion".into(), last);
            r.components.insert("mean_emotion".into(), mean);
            r.total = match aggregate {
                Aggregate::Final => last / 100.0,
                Aggregate::Mean => mean / 100.0,
                Aggregate::Dense => {
                    r.per_turn = turn_rewards(emotions);
                    r.per_turn.iter().sum()
                }
            };
        }
        RewardMode::Trait => {
            let mean = warmths.iter().sum::<f64>() / warmths.len().max(1) as f64;
            r.components.insert("warmth_mean".into(), mean);
            r.components.insert("replies".into(), warmths.len() as f64);
            r.total = mean;
        }
    }
    r.total = (r.total * 1e6).round() / 1e6;
    r
}

/// An episode that ended unsafe gets its mode's floor, whatever came before: 0 for the final and
/// mean emotion and for warmth. The dense reward is at its floor already: the unsafe turn takes
/// the emotion to 0, so its changes sum to the fall from the start. The component `unsafe` marks it.
pub fn floor_unsafe(r: &mut Rubric, mode: RewardMode, aggregate: Aggregate) {
    r.components.insert("unsafe".into(), 1.0);
    if !rewards_each_turn(mode, aggregate) {
        r.total = 0.0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn behavior_aggregates_by_hand() {
        let e = [40, 50, 45, 60];
        // final: 60/100
        assert_eq!(
            score(RewardMode::Behavior, Aggregate::Final, &e, &[]).total,
            0.6
        );
        // mean: (40+50+45+60)/4 = 48.75 -> 0.4875
        assert_eq!(
            score(RewardMode::Behavior, Aggregate::Mean, &e, &[]).total,
            0.4875
        );
        // dense: +0.10, -0.05, +0.15, sum 0.20
        let d = score(RewardMode::Behavior, Aggregate::Dense, &e, &[]);
        assert_eq!(d.per_turn, vec![0.1, -0.05, 0.15]);
        assert_eq!(d.total, 0.2);
        assert_eq!(d.components["final_emotion"], 60.0);
    }

    #[test]
    fn unsafe_is_the_floor_of_every_mode() {
        // The unsafe turn took the emotion from 50 to 0.
        let e = [40, 50, 0];
        for (mode, agg, floor) in [
            (RewardMode::Behavior, Aggregate::Final, 0.0),
            (RewardMode::Behavior, Aggregate::Mean, 0.0), // not (40+50+0)/3/100 = 0.3
            (RewardMode::Behavior, Aggregate::Dense, -0.4), // +0.10, -0.50: (0 - 40) / 100
            (RewardMode::Trait, Aggregate::Final, 0.0),   // not the mean warmth 0.9
        ] {
            let mut r = score(mode, agg, &e, &[0.9, 0.9]);
            floor_unsafe(&mut r, mode, agg);
            assert_eq!(r.total, floor, "{mode} {agg}");
            assert_eq!(r.components["unsafe"], 1.0);
        }
    }

    #[test]
    fn trait_is_mean_warmth() {
        // (0.2 + 0.8 + 0.5) / 3 = 0.5
        let r = score(
            RewardMode::Trait,
            Aggregate::Final,
            &[40, 0],
            &[0.2, 0.8, 0.5],
        );
        assert_eq!(r.total, 0.5);
        assert_eq!(r.components["replies"], 3.0);
    }
}
