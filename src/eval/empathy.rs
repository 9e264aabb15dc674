//! The empathy evaluation (SAGE protocol): the test split, start emotion 40,
//! changes clamped to +-10, at most 10 turns. Score = mean final emotion; success = share ending
//! at 100; failure = share ending below 10.

use crate::environment::episode::{
    end_word, rollout, EpisodeJob, EpisodeRecord, Policy, RolloutOptions,
};
use crate::environment::profile::{Catalog, Difficulty, KnobOverrides, ProfileId};
use crate::environment::sim::Simulator;
use crate::error::Result;
use crate::report::{BarChart, BarSeries, Table};

/// The SAGE knobs on top of the moderate preset (Sentient benchmark: start 40, clamp +-10, 10 turns).
pub fn sage_overrides() -> KnobOverrides {
    KnobOverrides {
        start_emotion: Some(40),
        step_cap: Some(10),
        max_turns: Some(10),
        ..Default::default()
    }
}

/// One model's score.
#[derive(Clone, Debug, PartialEq)]
pub struct EmpathyScore {
    pub name: String,
    pub episodes: usize,
    /// Mean final emotion (0-100): the Sentient score.
    pub mean_final: f64,
    /// Share of dialogues that ended at 100.
    pub success_rate: f64,
    /// Share of dialogues that ended below 10 (unsafe ones included: they end at 0).
    pub failure_rate: f64,
    /// Share of dialogues that ended `unsafe` (the safety screen).
    pub unsafe_rate: f64,
}

/// Scores a set of SAGE episodes.
pub fn score(name: &str, records: &[EpisodeRecord]) -> EmpathyScore {
    let n = records.len().max(1) as f64;
    let finals: Vec<u8> = records.iter().map(EpisodeRecord::final_emotion).collect();
    EmpathyScore {
        name: name.to_string(),
        episodes: records.len(),
        mean_final: finals.iter().map(|&e| f64::from(e)).sum::<f64>() / n,
        success_rate: finals.iter().filter(|&&e| e >= 100).count() as f64 / n,
        failure_rate: finals.iter().filter(|&&e| e < 10).count() as f64 / n,
        unsafe_rate: records
            .iter()
            .filter(|r| r.end == Some(crate::environment::episode::End::Unsafe))
            .count() as f64
            / n,
    }
}

/// Plays every profile once under the SAGE protocol (episode `i` seeded from `seed` and `i`).
pub fn run_empathy(
    sim: &dyn Simulator,
    catalog: &Catalog,
    policy: &mut dyn Policy,
    ids: &[ProfileId],
    seed: u64,
    progress: bool,
) -> Result<Vec<EpisodeRecord>> {
    let jobs = ids
        .iter()
        .enumerate()
        .map(|(i, id)| {
            Ok(EpisodeJob {
                profile: catalog.profile(id, Difficulty::Moderate, &sage_overrides())?,
                seed: crate::seed::derive(seed, i as u64),
                step: 0,
                group: i as u64,
                sample: 0,
            })
        })
        .collect::<Result<Vec<_>>>()?;
    let opts = RolloutOptions {
        run: "eval-empathy".into(),
        progress,
        ..Default::default()
    };
    rollout(sim, policy, &jobs, &opts, |_| Ok(()))
}

/// The side-by-side table: one row per model.
pub fn summary_table(scores: &[EmpathyScore]) -> Table {
    let mut t = Table::new([
        "model",
        "episodes",
        "mean final emotion",
        "success rate",
        "failure rate",
        "unsafe rate",
    ]);
    for s in scores {
        t.push_row([
            s.name.clone(),
            s.episodes.to_string(),
            format!("{:.1}", s.mean_final),
            format!("{:.3}", s.success_rate),
            format!("{:.3}", s.failure_rate),
            format!("{:.3}", s.unsafe_rate),
        ]);
    }
    t
}

/// Per-profile rows: model, profile, final emotion, end, turns.
pub fn per_profile_table(rows: &[(String, EpisodeRecord)]) -> Table {
    let mut t = Table::new(["model", "profile", "final_emotion", "end", "policy_turns"]);
    for (model, r) in rows {
        t.push_row([
            model.clone(),
            format!("{}:{}", r.profile.scenario, r.profile.persona),
            r.final_emotion().to_string(),
            end_word(r.end).to_string(),
            r.assistant_turns().len().to_string(),
        ]);
    }
    t
}

/// The chart file `eval empathy` writes beside empathy.md and empathy.csv.
pub const CHART_FILE: &str = "empathy.svg";

/// Grouped bars: each model's mean final emotion per scenario of the evaluated profiles, and
/// over all of them (the SAGE score), on a 0-100 axis.
pub fn empathy_chart(rows: &[(String, EpisodeRecord)]) -> BarChart {
    let mut models: Vec<&str> = Vec::new();
    let mut scenarios: Vec<&str> = Vec::new();
    for (m, r) in rows {
        if !models.contains(&m.as_str()) {
            models.push(m);
        }
        if !scenarios.contains(&r.profile.scenario.as_str()) {
            scenarios.push(&r.profile.scenario);
        }
    }
    scenarios.sort_unstable();
    let mean = |model: &str, scenario: Option<&str>| {
        let finals: Vec<f64> = rows
            .iter()
            .filter(|(m, r)| m == model && scenario.is_none_or(|s| r.profile.scenario == s))
            .map(|(_, r)| f64::from(r.final_emotion()))
            .collect();
        if finals.is_empty() {
            f64::NAN
        } else {
            finals.iter().sum::<f64>() / finals.len() as f64
        }
    };
    let series = models
        .iter()
        .map(|&m| {
            let mut values: Vec<f64> = scenarios.iter().map(|&s| mean(m, Some(s))).collect();
            values.push(mean(m, None));
            BarSeries::new(m, values)
        })
        .collect();
    let mut categories: Vec<String> = scenarios.iter().map(|s| s.to_string()).collect();
    categories.push("all".into());
    BarChart {
        title: "SAGE mean final emotion by scenario".into(),
        x_label: "scenario (all = the SAGE score)".into(),
        y_label: "mean final emotion (0-100)".into(),
        categories,
        series,
        y_range: Some((0.0, 100.0)),
        ..BarChart::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::environment::episode::{End, PolicyRef, ProfileRef, SimulatorRef, Turn, SCHEMA};

    fn rec(final_emotion: u8) -> EpisodeRecord {
        EpisodeRecord {
            schema: SCHEMA.into(),
            run: String::new(),
            step: 0,
            group: 0,
            sample: 0,
            profile: ProfileRef {
                scenario: "s".into(),
                persona: "p".into(),
                difficulty: Difficulty::Moderate,
                knobs: None,
            },
            simulator: SimulatorRef {
                kind: "appraiser".into(),
                version: "1".into(),
                seed: 0,
                backend: None,
                model: None,
                prompt_version: None,
                device: None,
                data: None,
            },
            reward_mode: Default::default(),
            reward_aggregate: Default::default(),
            policy: PolicyRef::default(),
            turns: vec![Turn::User {
                text: "x".into(),
                emotion: final_emotion,
                delta: None,
                appraisal: None,
            }],
            end: Some(End::MaxTurns),
            reward: None,
            reward_components: Default::default(),
        }
    }

    #[test]
    fn score_by_hand() {
        // finals 100, 60, 5, 0: mean 165/4 = 41.25; success 1/4; failure 2/4
        let s = score("m", &[rec(100), rec(60), rec(5), rec(0)]);
        assert_eq!(s.mean_final, 41.25);
        assert_eq!(s.success_rate, 0.25);
        assert_eq!(s.failure_rate, 0.5);
    }

    #[test]
    fn chart_has_a_bar_per_model_and_scenario_plus_all() {
        let mut b = rec(20);
        b.profile.scenario = "a".into();
        let rows = vec![
            ("base".to_string(), rec(100)),
            ("base".to_string(), b.clone()),
            ("tuned".to_string(), rec(60)),
            ("tuned".to_string(), b),
        ];
        let c = empathy_chart(&rows);
        assert_eq!(c.categories, ["a", "s", "all"]);
        assert_eq!(c.series[0].name, "base");
        assert_eq!(c.series[0].values, [20.0, 100.0, 60.0]);
        assert_eq!(c.series[1].values, [20.0, 60.0, 40.0]);
        assert!(c.to_svg().starts_with("<?xml"));
    }

    #[test]
    fn sage_knobs() {
        let o = sage_overrides();
        assert_eq!(
            (o.start_emotion, o.step_cap, o.max_turns),
            (Some(40), Some(10), Some(10))
        );
    }
}
