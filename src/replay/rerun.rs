//! Re-running a logged dialogue through the environment with its assistant turns.

use crate::environment::episode::{end_word, step_batch, DialogueEnv, EpisodeRecord, Turn};
use crate::environment::profile::{Catalog, Difficulty, KnobOverrides, ProfileId};
use crate::environment::reward::{Aggregate, RewardMode};
use crate::environment::sim::Simulator;
use crate::error::{Error, Result};

/// What to change when re-running (all `None`: exactly as logged).
#[derive(Clone, Debug, Default)]
pub struct RerunSettings {
    pub difficulty: Option<Difficulty>,
    pub reward_mode: Option<RewardMode>,
    pub aggregate: Option<Aggregate>,
}

/// Re-runs `record` with the simulator: same profile, seed and assistant turns, except what
/// `settings` changes (a new difficulty takes that preset's knobs). If the logged replies run out
/// before the dialogue ends, it ends as `max_turns`.
pub fn rerun(
    sim: &dyn Simulator,
    catalog: &Catalog,
    record: &EpisodeRecord,
    settings: &RerunSettings,
) -> Result<EpisodeRecord> {
    let id = ProfileId {
        scenario: record.profile.scenario.clone(),
        persona: record.profile.persona.clone(),
    };
    let difficulty = settings.difficulty.unwrap_or(record.profile.difficulty);
    let mut profile = catalog.profile(&id, difficulty, &KnobOverrides::default())?;
    if settings.difficulty.is_none() {
        if let Some(knobs) = &record.profile.knobs {
            profile.knobs = knobs.clone();
        }
    }
    let mode = settings.reward_mode.unwrap_or(record.reward_mode);
    let aggregate = settings.aggregate.unwrap_or(record.reward_aggregate);
    let mut env = DialogueEnv::new(profile, mode, aggregate);
    env.reset(record.simulator.seed);
    for (text, think) in record.assistant_turns() {
        if env.is_done() {
            break;
        }
        step_batch(
            sim,
            &mut [&mut env],
            &[(text.to_string(), think.map(str::to_string))],
        )?;
    }
    let mut out = env.record(sim, record.policy.clone());
    if out.end.is_none() {
        out.end = Some(crate::environment::episode::End::MaxTurns);
    }
    out.run = record.run.clone();
    (out.step, out.group, out.sample) = (record.step, record.group, record.sample);
    if settings.difficulty.is_none() && record.profile.knobs.is_none() {
        out.profile.knobs = None;
    }
    Ok(out)
}

/// Where a re-run departed from the log.
#[derive(Clone, Debug, PartialEq)]
pub struct Mismatch {
    /// 0-based index into `turns`, or `None` for the end or the reward.
    pub turn: Option<usize>,
    pub what: String,
}

impl std::fmt::Display for Mismatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.turn {
            Some(t) => write!(f, "turn {t}: {}", self.what),
            None => write!(f, "{}", self.what),
        }
    }
}

/// Re-runs `record` exactly as logged and reports the first difference, if any. When the log was
/// written under other simulator rules (appraiser and speaker) than `sim` reads, the difference
/// says so.
pub fn verify(
    sim: &dyn Simulator,
    catalog: &Catalog,
    record: &EpisodeRecord,
) -> Result<Option<Mismatch>> {
    let found = first_difference(sim, catalog, record)?;
    let (logged, now) = (&record.simulator.data, sim.info().data);
    Ok(found.map(|mut m| {
        if now.is_some() && *logged != now {
            m.what.push_str(&format!(
                " (the log was written under simulator rules {}, this simulator reads {}: the \
                 data files changed since)",
                logged.as_deref().unwrap_or("that were not recorded"),
                now.as_deref().unwrap_or_default()
            ));
        }
        m
    }))
}

fn first_difference(
    sim: &dyn Simulator,
    catalog: &Catalog,
    record: &EpisodeRecord,
) -> Result<Option<Mismatch>> {
    let again = rerun(sim, catalog, record, &RerunSettings::default())?;
    if again.turns.len() != record.turns.len() {
        let t = again.turns.len().min(record.turns.len());
        return Ok(Some(Mismatch {
            turn: Some(t),
            what: format!(
                "the log has {} turns, the re-run {}",
                record.turns.len(),
                again.turns.len()
            ),
        }));
    }
    for (i, (a, b)) in record.turns.iter().zip(&again.turns).enumerate() {
        if a != b {
            return Ok(Some(Mismatch {
                turn: Some(i),
                what: describe(a, b),
            }));
        }
    }
    if record.end != again.end {
        return Ok(Some(Mismatch {
            turn: None,
            what: format!(
                "end: logged {}, re-run {}",
                end_word(record.end),
                end_word(again.end)
            ),
        }));
    }
    if record.reward != again.reward {
        return Ok(Some(Mismatch {
            turn: None,
            what: format!(
                "reward: logged {}, re-run {}",
                reward_text(record.reward),
                reward_text(again.reward)
            ),
        }));
    }
    Ok(None)
}

fn describe(logged: &Turn, rerun: &Turn) -> String {
    match (logged, rerun) {
        (
            Turn::User {
                text: a,
                emotion: ea,
                delta: da,
                ..
            },
            Turn::User {
                text: b,
                emotion: eb,
                delta: db,
                ..
            },
        ) => {
            if ea != eb {
                format!("user emotion: logged {ea}, re-run {eb}")
            } else if da != db {
                format!(
                    "user delta: logged {}, re-run {}",
                    delta_text(*da),
                    delta_text(*db)
                )
            } else if a != b {
                format!("user text: logged {a:?}, re-run {b:?}")
            } else {
                "user appraisal differs".to_string()
            }
        }
        (Turn::Assistant { .. }, Turn::Assistant { .. }) => "assistant turn differs".to_string(),
        _ => "a user turn where the other has an assistant turn".to_string(),
    }
}

impl From<Mismatch> for Error {
    fn from(m: Mismatch) -> Self {
        Error::Other(m.to_string())
    }
}
/// A logged emotion change as text: `+5`, or `none` on the opening message.
fn delta_text(d: Option<i32>) -> String {
    d.map_or_else(|| "none".to_string(), |x| format!("{x:+}"))
}

/// A logged reward as text: the number in full, or `none` before the dialogue ended.
fn reward_text(r: Option<f64>) -> String {
    r.map_or_else(|| "none".to_string(), |x| x.to_string())
}
