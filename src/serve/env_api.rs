//! The JSON bodies of `serve-env` (docs/SERVE.md): what a client sends and gets back.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::environment::episode::End;
use crate::environment::profile::{Difficulty, KnobOverrides, Split};
use crate::environment::reward::{Aggregate, RewardMode};
use crate::environment::sim::Appraisal;

/// `POST /v1/episodes`: start a dialogue. Give `profile` (SCENARIO:PERSONA) or `split` (a profile
/// drawn from the split with the seed); everything else has a default.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CreateEpisode {
    /// `scenario:persona`.
    #[serde(default)]
    pub profile: Option<String>,
    /// `train` or `test`: draw the profile from this split with the seed.
    #[serde(default)]
    pub split: Option<Split>,
    /// Default moderate.
    #[serde(default)]
    pub difficulty: Option<Difficulty>,
    /// Default behavior.
    #[serde(default)]
    pub reward_mode: Option<RewardMode>,
    /// Default final.
    #[serde(default)]
    pub aggregate: Option<Aggregate>,
    /// The simulator seed (default: derived from the server's seed and the episode number).
    #[serde(default)]
    pub seed: Option<u64>,
    /// Logged as the record's `policy.model` (default `remote`).
    #[serde(default)]
    pub policy: Option<String>,
    /// Per-knob overrides of the difficulty preset, the keys of a training config's `env.knobs`
    /// (e.g. `{"max_turns": 1}` for a one-reply episode that ends, and is logged, at its step).
    #[serde(default)]
    pub knobs: Option<KnobOverrides>,
}

/// The user's message and emotion.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ObservationBody {
    pub text: String,
    pub emotion: u8,
}

/// The profile as the record names it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ProfileBody {
    pub scenario: String,
    pub persona: String,
    pub difficulty: Difficulty,
}

/// The answer to `POST /v1/episodes`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Created {
    pub episode_id: String,
    pub profile: ProfileBody,
    pub seed: u64,
    /// The policy's turn limit (reaching it is `truncated`).
    pub max_turns: u32,
    pub observation: ObservationBody,
}

/// `POST /v1/episodes/{id}/step`: the policy's reply.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StepRequest {
    pub reply: String,
    /// A `<think>` section the user never sees (logged).
    #[serde(default)]
    pub think: Option<String>,
}

/// The answer to a step: Gymnasium's `(obs, reward, terminated, truncated, info)`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Stepped {
    pub episode_id: String,
    /// 1-based index of the reply just appraised.
    pub turn: u32,
    pub observation: ObservationBody,
    /// The dense per-turn reward, or the episode's total on its last step, else 0.
    pub reward: f64,
    /// The reward rubric's named components so far.
    pub reward_components: BTreeMap<String, f64>,
    pub terminated: bool,
    pub truncated: bool,
    /// `resolved`, `left`, `max_turns` or `unsafe` once over.
    pub end: Option<End>,
    /// The applied emotion change.
    pub delta: i32,
    /// How the reply landed (moves, components, reasons).
    pub appraisal: Appraisal,
}

/// `GET /v1/health`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Health {
    pub status: String,
    /// Sessions held (live and finished, until they expire).
    pub sessions: usize,
    pub max_sessions: usize,
    /// Episodes finished since the server started.
    pub finished: u64,
    pub simulator: String,
    /// Why the episode log cannot be written (with status `unhealthy`, answered with 503).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Finished episodes held in memory until the log can take them.
    #[serde(default)]
    pub unwritten: usize,
}
