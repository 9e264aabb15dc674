//! Environment difficulty: named presets (easy, moderate, hard) over explicit knobs, loaded from
//! `data/difficulty.yaml`; a config can override any knob. `auto` (training only) starts from the
//! moderate preset and lets a controller move the knobs between steps (`profile::auto`).

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};

/// A named difficulty preset, or `auto`.
#[derive(
    Clone,
    Copy,
    Debug,
    PartialEq,
    Eq,
    Hash,
    PartialOrd,
    Ord,
    Serialize,
    Deserialize,
    schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum Difficulty {
    Easy,
    Moderate,
    Hard,
    /// Self-calibrating (training only): the knobs follow a controller between steps
    /// (`profile::auto`); each episode record holds the knobs it ran at.
    Auto,
}

impl Difficulty {
    /// The three presets, easiest first (`auto` is not a preset).
    pub const ALL: [Difficulty; 3] = [Difficulty::Easy, Difficulty::Moderate, Difficulty::Hard];

    /// The snake_case name used in YAML and on the command line.
    pub fn as_str(self) -> &'static str {
        match self {
            Difficulty::Easy => "easy",
            Difficulty::Moderate => "moderate",
            Difficulty::Hard => "hard",
            Difficulty::Auto => "auto",
        }
    }
}

impl std::fmt::Display for Difficulty {
    /// The word the config files and the JSONL use (never the Rust variant name).
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for Difficulty {
    type Err = String;
    fn from_str(s: &str) -> std::result::Result<Self, String> {
        match s {
            "easy" => Ok(Difficulty::Easy),
            "moderate" => Ok(Difficulty::Moderate),
            "hard" => Ok(Difficulty::Hard),
            "auto" => Err(
                "difficulty `auto` calibrates itself between training steps; set it \
                           as env.difficulty in a training config, and use easy, moderate or \
                           hard here"
                    .into(),
            ),
            other => Err(format!(
                "unknown difficulty `{other}`: use easy, moderate or hard"
            )),
        }
    }
}

/// The explicit knobs behind a difficulty (docs/DESIGN.md section 6).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Knobs {
    /// Emotion at the start (easy 50, moderate 40 as in SAGE, hard 30 as in RLVER training).
    pub start_emotion: u8,
    /// Largest change per turn in points (SAGE clamps to +-10).
    pub step_cap: u8,
    /// Changes are multiples of this many points (default 5).
    pub quantum: u8,
    /// Probability in [0, 1] that the user hints at their hidden need when a hint is due;
    /// 0 = never (RLVER's challenging simulator never reveals its goal).
    pub hint_rate: f64,
    /// How specific (0-1) a reply must be for its supportive moves to count.
    pub acceptance: f64,
    /// Points lost for advice given before the user is ready (emotional needs only).
    pub early_advice_penalty: f64,
    /// Emotion from which the user is ready for advice (default 60).
    pub advice_ready_at: u8,
    /// Share in [0, 1] of credit that generic encouragement earns (0 on hard, as in RLVER).
    pub generic_credit: f64,
    /// Patience: the number of policy replies before the dialogue is truncated (default 8).
    pub max_turns: u32,
}

impl Knobs {
    /// Checks ranges; `file` and `prefix` name where the knobs came from.
    pub fn validate(&self, file: &Path, prefix: &str) -> Result<()> {
        let bad = |field: &str, msg: &str| Err(Error::input(file, format!("{prefix}{field}"), msg));
        if self.quantum == 0 || self.step_cap < self.quantum || self.step_cap > 100 {
            return bad("quantum", "needs 0 < quantum <= step_cap <= 100");
        }
        if !self.step_cap.is_multiple_of(self.quantum) {
            return bad("step_cap", "must be a multiple of quantum");
        }
        KnobOverrides::from(self).check_ranges(file, prefix)
    }
}

impl From<&Knobs> for KnobOverrides {
    fn from(k: &Knobs) -> Self {
        KnobOverrides {
            start_emotion: Some(k.start_emotion),
            step_cap: Some(k.step_cap),
            quantum: Some(k.quantum),
            hint_rate: Some(k.hint_rate),
            acceptance: Some(k.acceptance),
            early_advice_penalty: Some(k.early_advice_penalty),
            advice_ready_at: Some(k.advice_ready_at),
            generic_credit: Some(k.generic_credit),
            max_turns: Some(k.max_turns),
        }
    }
}

/// Optional per-knob overrides, as a run config or a scenario writes them.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct KnobOverrides {
    /// Emotion at the start (presets: easy 50, moderate 40 as in SAGE, hard 30 as in RLVER).
    pub start_emotion: Option<u8>,
    /// Largest change per turn in points (SAGE clamps to +-10).
    pub step_cap: Option<u8>,
    /// Changes are multiples of this many points.
    pub quantum: Option<u8>,
    /// Probability in [0, 1] that the user hints at their hidden need when a hint is due.
    pub hint_rate: Option<f64>,
    /// How specific (0-1) a reply must be for its supportive moves to count.
    pub acceptance: Option<f64>,
    /// Points lost for advice given before the user is ready (emotional needs only).
    pub early_advice_penalty: Option<f64>,
    /// Emotion from which the user is ready for advice.
    pub advice_ready_at: Option<u8>,
    /// Share in [0, 1] of credit that generic encouragement earns.
    pub generic_credit: Option<f64>,
    /// Patience: the number of policy replies before the dialogue is truncated.
    pub max_turns: Option<u32>,
}

impl KnobOverrides {
    /// Checks the range of each knob that is set, on its own (a NaN is outside every range); the
    /// checks between knobs (quantum and step_cap) wait for [`Knobs::validate`] once the overrides
    /// meet a preset.
    pub fn check_ranges(&self, file: &Path, prefix: &str) -> Result<()> {
        let bad = |field: &str, msg: &str| Err(Error::input(file, format!("{prefix}{field}"), msg));
        if self.start_emotion.is_some_and(|v| !(1..100).contains(&v)) {
            return bad("start_emotion", "must be in 1..=99");
        }
        if self.step_cap.is_some_and(|v| v == 0 || v > 100) {
            return bad("step_cap", "must be in 1..=100");
        }
        if self.quantum == Some(0) {
            return bad("quantum", "must be at least 1");
        }
        for (field, v) in [
            ("hint_rate", self.hint_rate),
            ("acceptance", self.acceptance),
            ("generic_credit", self.generic_credit),
        ] {
            if v.is_some_and(|v| !(0.0..=1.0).contains(&v)) {
                return bad(field, "must be in [0, 1]");
            }
        }
        if self
            .early_advice_penalty
            .is_some_and(|v| !(0.0..=100.0).contains(&v))
        {
            return bad("early_advice_penalty", "must be in [0, 100] points");
        }
        if self.max_turns.is_some_and(|v| v == 0 || v > 64) {
            return bad("max_turns", "must be in 1..=64");
        }
        Ok(())
    }

    /// The knobs a profile plays at: `level` (a preset's, or the auto controller's), with the
    /// scenario's own `start_emotion` over the level's, and these overrides (`env.knobs`) over
    /// both. The one home of that order.
    pub fn resolve(&self, level: &Knobs, scenario_start: Option<u8>) -> Knobs {
        let mut knobs = level.clone();
        if let Some(start) = scenario_start {
            knobs.start_emotion = start;
        }
        self.apply(&knobs)
    }

    /// Returns `base` with every set override applied.
    pub fn apply(&self, base: &Knobs) -> Knobs {
        Knobs {
            start_emotion: self.start_emotion.unwrap_or(base.start_emotion),
            step_cap: self.step_cap.unwrap_or(base.step_cap),
            quantum: self.quantum.unwrap_or(base.quantum),
            hint_rate: self.hint_rate.unwrap_or(base.hint_rate),
            acceptance: self.acceptance.unwrap_or(base.acceptance),
            early_advice_penalty: self
                .early_advice_penalty
                .unwrap_or(base.early_advice_penalty),
            advice_ready_at: self.advice_ready_at.unwrap_or(base.advice_ready_at),
            generic_credit: self.generic_credit.unwrap_or(base.generic_credit),
            max_turns: self.max_turns.unwrap_or(base.max_turns),
        }
    }
}

/// The presets of `data/difficulty.yaml`.
#[derive(Clone, Debug, PartialEq)]
pub struct Presets(BTreeMap<Difficulty, Knobs>);

impl Presets {
    /// Loads and validates the presets file; all three presets must be present.
    pub fn load(path: &Path) -> Result<Self> {
        let map: BTreeMap<Difficulty, Knobs> = super::yaml::read_yaml(path)?;
        for d in Difficulty::ALL {
            match map.get(&d) {
                Some(knobs) => knobs.validate(path, &format!("{}.", d.as_str()))?,
                None => {
                    return Err(Error::input(
                        path,
                        d.as_str(),
                        "preset missing: define easy, moderate and hard",
                    ))
                }
            }
        }
        Ok(Presets(map))
    }

    /// The knobs of a preset; `auto` starts from the moderate preset (its level 0.5), and its
    /// controller replaces the knobs step by step.
    pub fn knobs(&self, d: Difficulty) -> &Knobs {
        let d = if d == Difficulty::Auto {
            Difficulty::Moderate
        } else {
            d
        };
        // Load guarantees all three presets exist.
        &self.0[&d]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn moderate() -> Knobs {
        Knobs {
            start_emotion: 40,
            step_cap: 10,
            quantum: 5,
            hint_rate: 0.5,
            acceptance: 0.25,
            early_advice_penalty: 10.0,
            advice_ready_at: 60,
            generic_credit: 0.5,
            max_turns: 8,
        }
    }

    #[test]
    fn the_scenario_start_beats_the_level_and_the_run_overrides_beat_both() {
        let none = KnobOverrides::default();
        assert_eq!(none.resolve(&moderate(), None), moderate());
        assert_eq!(none.resolve(&moderate(), Some(25)).start_emotion, 25);
        let run = KnobOverrides {
            start_emotion: Some(60),
            max_turns: Some(3),
            ..Default::default()
        };
        let k = run.resolve(&moderate(), Some(25));
        assert_eq!((k.start_emotion, k.max_turns, k.step_cap), (60, 3, 10));
    }
}
