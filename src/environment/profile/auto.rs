//! Self-calibrating difficulty: a controller that moves one difficulty
//! *level* in [0, 1] between steps so the training batch stays where GRPO can learn, and the knobs
//! that level stands for.
//!
//! Why: GRPO learns only from groups whose rewards differ (a group with equal rewards has zero
//! advantage), and such groups are most common when outcomes sit in the middle of the emotion
//! range; RLVER finds that a simulator too demanding for the policy stalls training while a
//! moderately demanding one trains best. Keeping the task at the edge of what the learner can do is
//! the curriculum-learning rule (Bengio et al. 2009) in its adaptive, success-rate-targeting form
//! (teacher-student curricula, Matiisen et al. 2017; online difficulty filtering for GRPO, Bae et
//! al. 2025). The controller is a damped proportional rule on the batch's mean final emotion:
//!
//!   ē_t = (1 - w) ē_{t-1} + w e_t                  (ē_0 = e_1; w = `smoothing`)
//!   g_t = gain / 2 if spread_t >= target_spread, else gain   (inside the band: move less)
//!   ℓ_{t+1} = clamp(ℓ_t + g_t (ē_t - target_emotion) / 100, 0, 1)
//!
//! Users ending happier than the target make the next step harder (ℓ up), unhappier make it easier.
//! Level 0 is the easy preset, 0.5 moderate, 1 hard; knobs between presets are interpolated
//! linearly (integer knobs rounded). Only the knobs that decide how hard it is to move the user
//! follow the level: start emotion, hint rate, acceptance, early-advice penalty and generic
//! credit. Quantum, step cap, advice-ready point and patience stay those of the moderate preset
//! (and of the run's `env.knobs` overrides), so rewards keep their scale and dialogues their length.

use serde::{Deserialize, Serialize};

use super::difficulty::{Difficulty, Knobs, Presets};

/// `env.auto:` settings of `difficulty: auto`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AutoSettings {
    /// Level of the first step, 0 (easy) to 1 (hard) (default 0.5: moderate).
    #[serde(default = "default_start")]
    pub start_level: f64,
    /// Mean final emotion the batch should end at (default 50: mid-range, where the outcomes
    /// of a group differ most).
    #[serde(default = "default_target_emotion")]
    pub target_emotion: f64,
    /// Share of groups with unequal rewards that counts as inside the band (default 0.75).
    #[serde(default = "default_target_spread")]
    pub target_spread: f64,
    /// Level change per step for a miss of 100 emotion points (default 1.0: a 20-point miss
    /// moves the level by 0.2, about 40% of the way from one preset to the next).
    #[serde(default = "default_gain")]
    pub gain: f64,
    /// Weight of the newest step in the smoothed emotion, in (0, 1] (default 0.5).
    #[serde(default = "default_smoothing")]
    pub smoothing: f64,
}

fn default_start() -> f64 {
    0.5
}
fn default_target_emotion() -> f64 {
    50.0
}
fn default_target_spread() -> f64 {
    0.75
}
fn default_gain() -> f64 {
    1.0
}
fn default_smoothing() -> f64 {
    0.5
}

impl Default for AutoSettings {
    fn default() -> Self {
        AutoSettings {
            start_level: default_start(),
            target_emotion: default_target_emotion(),
            target_spread: default_target_spread(),
            gain: default_gain(),
            smoothing: default_smoothing(),
        }
    }
}

impl AutoSettings {
    /// Checks ranges; the message names the field and the range.
    pub fn check(&self) -> std::result::Result<(), String> {
        let in01 = |v: f64| (0.0..=1.0).contains(&v);
        if !in01(self.start_level) {
            return Err("start_level must be in [0, 1]".into());
        }
        if !(0.0..=100.0).contains(&self.target_emotion) {
            return Err("target_emotion must be in [0, 100]".into());
        }
        if !in01(self.target_spread) {
            return Err("target_spread must be in [0, 1]".into());
        }
        if !(self.gain.is_finite() && self.gain >= 0.0) {
            return Err("gain must be 0 or more".into());
        }
        if !(self.smoothing > 0.0 && self.smoothing <= 1.0) {
            return Err("smoothing must be in (0, 1]".into());
        }
        Ok(())
    }
}

/// What the controller reads off a finished step.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BatchStats {
    /// Mean final emotion of the step's dialogues (0-100).
    pub mean_final_emotion: f64,
    /// Share of groups whose rewards are not all equal.
    pub spread_share: f64,
}

/// The controller's state: everything a checkpoint must hold to resume bit for bit.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct AutoState {
    /// The level the next step runs at.
    pub level: f64,
    /// The smoothed mean final emotion, `None` before the first step.
    pub smoothed_emotion: Option<f64>,
}

impl AutoState {
    /// The state before the first step.
    pub fn new(settings: &AutoSettings) -> Self {
        AutoState {
            level: settings.start_level,
            smoothed_emotion: None,
        }
    }

    /// The state after a step with `stats` (the rule in the module comment).
    pub fn update(&self, settings: &AutoSettings, stats: BatchStats) -> AutoState {
        let w = settings.smoothing;
        let e = match self.smoothed_emotion {
            None => stats.mean_final_emotion,
            Some(prev) => (1.0 - w) * prev + w * stats.mean_final_emotion,
        };
        let gain = if stats.spread_share >= settings.target_spread {
            settings.gain / 2.0
        } else {
            settings.gain
        };
        let level = (self.level + gain * (e - settings.target_emotion) / 100.0).clamp(0.0, 1.0);
        AutoState {
            level,
            smoothed_emotion: Some(e),
        }
    }
}

fn lerp(a: f64, b: f64, t: f64) -> f64 {
    a + (b - a) * t
}

/// The knobs at `level`: the level-driven knobs interpolated between the presets (easy at 0,
/// moderate at 0.5, hard at 1), the others the moderate preset's.
pub fn knobs_at(presets: &Presets, level: f64) -> Knobs {
    let level = level.clamp(0.0, 1.0);
    let (lo, hi, t) = if level <= 0.5 {
        (Difficulty::Easy, Difficulty::Moderate, level / 0.5)
    } else {
        (Difficulty::Moderate, Difficulty::Hard, (level - 0.5) / 0.5)
    };
    let (a, b) = (presets.knobs(lo), presets.knobs(hi));
    let mid = presets.knobs(Difficulty::Moderate);
    Knobs {
        start_emotion: lerp(f64::from(a.start_emotion), f64::from(b.start_emotion), t).round()
            as u8,
        hint_rate: lerp(a.hint_rate, b.hint_rate, t),
        acceptance: lerp(a.acceptance, b.acceptance, t),
        early_advice_penalty: lerp(a.early_advice_penalty, b.early_advice_penalty, t),
        generic_credit: lerp(a.generic_credit, b.generic_credit, t),
        ..mid.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    fn presets() -> Presets {
        Presets::load(
            &Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../..")).join("data/difficulty.yaml"),
        )
        .unwrap()
    }

    #[test]
    fn levels_0_half_and_1_are_the_presets() {
        let p = presets();
        for (level, d) in [
            (0.0, Difficulty::Easy),
            (0.5, Difficulty::Moderate),
            (1.0, Difficulty::Hard),
        ] {
            let k = knobs_at(&p, level);
            let want = p.knobs(d);
            assert_eq!(k.start_emotion, want.start_emotion, "{d}");
            assert_eq!(k.acceptance, want.acceptance, "{d}");
            assert_eq!(k.generic_credit, want.generic_credit, "{d}");
            assert_eq!(k.early_advice_penalty, want.early_advice_penalty, "{d}");
            assert_eq!(k.hint_rate, want.hint_rate, "{d}");
            assert_eq!(k.max_turns, p.knobs(Difficulty::Moderate).max_turns);
        }
    }

    #[test]
    fn between_presets_by_hand() {
        // Level 0.75: halfway from moderate (start 40, acceptance 0.25, generic 0.5, hint 0.5,
        // penalty 10) to hard (30, 0.45, 0.0, 0.0, 10): 35, 0.35, 0.25, 0.25, 10.
        let k = knobs_at(&presets(), 0.75);
        assert_eq!(k.start_emotion, 35);
        assert!((k.acceptance - 0.35).abs() < 1e-12);
        assert!((k.generic_credit - 0.25).abs() < 1e-12);
        assert!((k.hint_rate - 0.25).abs() < 1e-12);
        assert_eq!(k.early_advice_penalty, 10.0);
        // Level 0.1: a fifth of the way from easy (50, penalty 5) to moderate (40, 10): 48, 6.
        let k = knobs_at(&presets(), 0.1);
        assert_eq!(k.start_emotion, 48);
        assert!((k.early_advice_penalty - 6.0).abs() < 1e-12);
    }

    #[test]
    fn the_rule_on_a_scripted_sequence_of_batches() {
        let s = AutoSettings::default(); // start 0.5, target 50, spread 0.75, gain 1, smoothing 0.5
        let mut st = AutoState::new(&s);
        let seq = [
            // emotion, spread share -> smoothed emotion, level (worked out by hand):
            // 1: ē = 10 (first step); spread 0.25 < 0.75, gain 1: 0.5 + (10 - 50)/100 = 0.1
            (10.0, 0.25, 10.0, 0.1),
            // 2: ē = 0.5*10 + 0.5*30 = 20; 0.1 + (20 - 50)/100 = -0.2 -> clamped to 0
            (30.0, 0.5, 20.0, 0.0),
            // 3: ē = 0.5*20 + 0.5*80 = 50; on target: stays 0
            (80.0, 0.5, 50.0, 0.0),
            // 4: ē = 0.5*50 + 0.5*90 = 70; inside the band (spread 1.0): gain 0.5:
            //    0 + 0.5 * 20/100 = 0.1
            (90.0, 1.0, 70.0, 0.1),
            // 5: ē = 0.5*70 + 0.5*100 = 85; spread 0: 0.1 + 35/100 = 0.45
            (100.0, 0.0, 85.0, 0.45),
        ];
        for (i, (e, spread, want_e, want_level)) in seq.into_iter().enumerate() {
            st = st.update(
                &s,
                BatchStats {
                    mean_final_emotion: e,
                    spread_share: spread,
                },
            );
            assert!(
                (st.smoothed_emotion.unwrap() - want_e).abs() < 1e-12
                    && (st.level - want_level).abs() < 1e-12,
                "step {}: {st:?}",
                i + 1
            );
        }
    }

    #[test]
    fn settings_are_checked() {
        assert!(AutoSettings::default().check().is_ok());
        let bad = AutoSettings {
            smoothing: 0.0,
            ..AutoSettings::default()
        };
        assert_eq!(bad.check().unwrap_err(), "smoothing must be in (0, 1]");
        let bad = AutoSettings {
            start_level: 1.5,
            ..AutoSettings::default()
        };
        assert!(bad.check().unwrap_err().starts_with("start_level"));
    }
}
