//! How hard the simulated user is at each training step: the fixed knobs of a preset, or the
//! `difficulty: auto` controller (`profile::auto`), which moves the knobs between steps from the
//! batch statistics of metrics.csv.
//!
//! The controller's state is a pure function of the run's metrics rows, which are written in
//! Rust's shortest round-trip float form: a resumed run rebuilds it from the rows its checkpoint
//! kept ([`DifficultyPlan::replay`]) and continues bit for bit, as the stability history does.

use std::path::Path;

use super::metrics::StepMetrics;
use crate::environment::profile::auto::{knobs_at, AutoSettings, AutoState, BatchStats};
use crate::environment::profile::{Difficulty, KnobOverrides, Knobs, Presets, Profile};
use crate::error::{Error, Result};

/// The knobs of each step.
#[derive(Debug, Clone, PartialEq)]
pub enum DifficultyPlan {
    /// A preset with the run's overrides, the same every step.
    Fixed(Knobs),
    /// `difficulty: auto`.
    Auto(Calibration),
}

/// The auto controller with what it needs to turn its level into knobs.
#[derive(Debug, Clone, PartialEq)]
pub struct Calibration {
    settings: AutoSettings,
    state: AutoState,
    presets: Presets,
    overrides: KnobOverrides,
}

impl DifficultyPlan {
    /// The plan of a run at `difficulty` with `overrides` (`env.knobs`) and, for `auto`, its
    /// `settings` (`env.auto`).
    pub fn new(
        presets: &Presets,
        difficulty: Difficulty,
        overrides: &KnobOverrides,
        settings: AutoSettings,
    ) -> Self {
        match difficulty {
            Difficulty::Auto => DifficultyPlan::Auto(Calibration {
                settings,
                state: AutoState::new(&settings),
                presets: presets.clone(),
                overrides: overrides.clone(),
            }),
            d => DifficultyPlan::Fixed(overrides.apply(presets.knobs(d))),
        }
    }

    /// The knobs the next step runs at (a scenario's own start emotion aside).
    pub fn knobs(&self) -> Knobs {
        match self {
            DifficultyPlan::Fixed(k) => k.clone(),
            DifficultyPlan::Auto(c) => c.overrides.apply(&knobs_at(&c.presets, c.state.level)),
        }
    }

    /// The controller's level for the next step (0 easy, 0.5 moderate, 1 hard); `None` when fixed.
    pub fn level(&self) -> Option<f64> {
        match self {
            DifficultyPlan::Fixed(_) => None,
            DifficultyPlan::Auto(c) => Some(c.state.level),
        }
    }

    /// `profile` at the next step's knobs; a scenario's `start_emotion` still wins over the
    /// level's, as it does over a preset's, and the run's `env.knobs` over both.
    pub fn profile(&self, profile: &Profile) -> Profile {
        let DifficultyPlan::Auto(c) = self else {
            return profile.clone();
        };
        let level = knobs_at(&c.presets, c.state.level);
        Profile {
            difficulty: Difficulty::Auto,
            knobs: c.overrides.resolve(&level, profile.scenario.start_emotion),
            ..profile.clone()
        }
    }

    /// Writes the step's knobs and level into its metrics row.
    pub fn record(&self, row: &mut StepMetrics) {
        let k = self.knobs();
        row.difficulty_level = self.level();
        row.start_emotion = f64::from(k.start_emotion);
        row.hint_rate = k.hint_rate;
        row.acceptance = k.acceptance;
        row.early_advice_penalty = k.early_advice_penalty;
        row.generic_credit = k.generic_credit;
    }

    /// Moves the controller after a finished step (nothing for a fixed plan).
    pub fn observe(&mut self, row: &StepMetrics) {
        if let DifficultyPlan::Auto(c) = self {
            let stats = BatchStats {
                mean_final_emotion: row.final_emotion_mean,
                spread_share: 1.0 - row.frac_reward_zero_std,
            };
            c.state = c.state.update(&c.settings, stats);
        }
    }

    /// Rebuilds the state after the kept `rows` of a resumed run (read from `metrics`, named in
    /// errors); every row's level must be the one the controller would have chosen, so a run
    /// resumed with other `env.auto` settings is refused instead of silently diverging.
    pub fn replay(&mut self, rows: &[StepMetrics], metrics: &Path) -> Result<()> {
        for row in rows {
            if let (Some(want), Some(found)) = (self.level(), row.difficulty_level) {
                if want != found {
                    return Err(Error::input(
                        metrics,
                        format!("step {}, column difficulty_level", row.step),
                        format!(
                            "the controller gives level {want} but the run logged {found}: \
                             resume with the run's own config.yaml (env.auto)"
                        ),
                    ));
                }
            }
            self.observe(row);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    fn presets() -> Presets {
        Presets::load(&PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("data/difficulty.yaml"))
            .unwrap()
    }

    fn row(step: u64, emotion: f64, zero_std: f64) -> StepMetrics {
        StepMetrics {
            step,
            final_emotion_mean: emotion,
            frac_reward_zero_std: zero_std,
            ..StepMetrics::default()
        }
    }

    #[test]
    fn fixed_plans_keep_the_preset_with_overrides() {
        let overrides = KnobOverrides {
            max_turns: Some(3),
            ..KnobOverrides::default()
        };
        let mut plan =
            DifficultyPlan::new(&presets(), Difficulty::Hard, &overrides, Default::default());
        plan.observe(&row(1, 90.0, 0.0));
        let k = plan.knobs();
        assert_eq!((k.start_emotion, k.max_turns, k.acceptance), (30, 3, 0.45));
        assert_eq!(plan.level(), None);
    }

    #[test]
    fn auto_moves_the_knobs_and_keeps_the_run_overrides() {
        let overrides = KnobOverrides {
            max_turns: Some(3),
            ..KnobOverrides::default()
        };
        let mut plan =
            DifficultyPlan::new(&presets(), Difficulty::Auto, &overrides, Default::default());
        // Level 0.5 is moderate: start 40, acceptance 0.25.
        assert_eq!(plan.knobs().start_emotion, 40);
        // A batch ending at 25 with no spread: 0.5 + (25 - 50) / 100 = 0.25, halfway from
        // easy (start 50, acceptance 0) to moderate: start 45, acceptance 0.125.
        plan.observe(&row(1, 25.0, 1.0));
        assert_eq!(plan.level(), Some(0.25));
        let k = plan.knobs();
        assert_eq!((k.start_emotion, k.max_turns), (45, 3));
        assert!((k.acceptance - 0.125).abs() < 1e-12);
        let mut m = StepMetrics::default();
        plan.record(&mut m);
        assert_eq!((m.difficulty_level, m.start_emotion), (Some(0.25), 45.0));
    }

    #[test]
    fn replay_rebuilds_the_state_and_refuses_other_settings() {
        let p = presets();
        let mut live = DifficultyPlan::new(
            &p,
            Difficulty::Auto,
            &Default::default(),
            Default::default(),
        );
        let mut rows = Vec::new();
        for (i, (e, z)) in [(20.0, 0.5), (35.0, 0.0), (70.0, 0.5)]
            .into_iter()
            .enumerate()
        {
            let mut r = row(i as u64 + 1, e, z);
            live.record(&mut r);
            live.observe(&r);
            rows.push(r);
        }
        let mut resumed = DifficultyPlan::new(
            &p,
            Difficulty::Auto,
            &Default::default(),
            Default::default(),
        );
        resumed.replay(&rows, Path::new("metrics.csv")).unwrap();
        assert_eq!(resumed, live);
        let other = AutoSettings {
            gain: 2.0,
            ..AutoSettings::default()
        };
        let mut wrong = DifficultyPlan::new(&p, Difficulty::Auto, &Default::default(), other);
        let err = wrong
            .replay(&rows, Path::new("metrics.csv"))
            .unwrap_err()
            .to_string();
        assert!(err.contains("step 2") && err.contains("env.auto"), "{err}");
    }
}
