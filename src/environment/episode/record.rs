//! The episode record: one dialogue, exactly as docs/DESIGN.md section 1 specifies. Training writes
//! it, eval and replay read it (one typed struct, never a map of strings to JSON values).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::profile::{Difficulty, Knobs};
use crate::reward::{Aggregate, RewardMode};
use crate::sim::{Appraisal, FactualVerdict};

/// The schema tag of every line.
pub const SCHEMA: &str = "empathy-gym/episode/v1";

/// One turn of the dialogue.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "role", rename_all = "snake_case")]
pub enum Turn {
    /// The simulated user; `delta` and `appraisal` are absent on the opening message.
    User {
        text: String,
        emotion: u8,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        delta: Option<i32>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        appraisal: Option<Appraisal>,
    },
    /// The policy; `think` holds a `<think>` section the user never saw.
    Assistant {
        text: String,
        #[serde(default)]
        think: Option<String>,
    },
}

impl Turn {
    /// The text of a user turn; `None` for the policy's.
    pub fn user_text(&self) -> Option<&str> {
        match self {
            Turn::User { text, .. } => Some(text),
            Turn::Assistant { .. } => None,
        }
    }
}

/// How a dialogue ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum End {
    /// Emotion reached 100 (terminated).
    Resolved,
    /// Emotion fell below 10 (terminated).
    Left,
    /// The policy used all its turns (truncated).
    MaxTurns,
    /// The policy said something unsafe (the safety screen, `data/safety.yaml`); terminated at
    /// once with the reward's floor.
    Unsafe,
}

impl End {
    /// The snake_case word of the JSONL `end` field.
    pub fn as_str(self) -> &'static str {
        match self {
            End::Resolved => "resolved",
            End::Left => "left",
            End::MaxTurns => "max_turns",
            End::Unsafe => "unsafe",
        }
    }
}

impl std::fmt::Display for End {
    /// The word the config files and the JSONL use (never the Rust variant name).
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// An optional end as a word: `-` while the dialogue has not ended.
pub fn end_word(end: Option<End>) -> &'static str {
    end.map_or("-", End::as_str)
}

/// Which profile was played.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ProfileRef {
    pub scenario: String,
    pub persona: String,
    pub difficulty: Difficulty,
    /// The resolved knobs, when they differ from the preset (absent: the preset's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub knobs: Option<Knobs>,
}

/// Which simulator, with its seed.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SimulatorRef {
    #[serde(default = "default_kind")]
    pub kind: String,
    #[serde(default = "default_version")]
    pub version: String,
    pub seed: u64,
    /// An LLM simulator's backend (`openai`, `local`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub backend: Option<String>,
    /// The LLM that played the user.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// The version of its prompt templates (data/llm-simulator.yaml).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt_version: Option<String>,
    /// Where the appraiser's sentence embeddings ran (`cuda`; absent: the CPU). `replay verify`
    /// re-runs a dialogue bit for bit only there.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub device: Option<String>,
    /// The fingerprint of the appraiser's rule files (absent in logs written before it was
    /// logged, and for an LLM user). `replay verify` re-runs a dialogue bit for bit only under
    /// the same rules.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<String>,
}

fn default_kind() -> String {
    "appraiser".into()
}
fn default_version() -> String {
    "1".into()
}

/// Which policy played.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct PolicyRef {
    pub model: String,
    pub checkpoint: Option<String>,
}

/// One dialogue, one JSONL line.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct EpisodeRecord {
    pub schema: String,
    #[serde(default)]
    pub run: String,
    #[serde(default)]
    pub step: u64,
    #[serde(default)]
    pub group: u64,
    #[serde(default)]
    pub sample: u64,
    pub profile: ProfileRef,
    pub simulator: SimulatorRef,
    #[serde(default)]
    pub reward_mode: RewardMode,
    /// How the behavior reward reads the trajectory (absent: final).
    #[serde(default)]
    pub reward_aggregate: Aggregate,
    #[serde(default)]
    pub policy: PolicyRef,
    pub turns: Vec<Turn>,
    /// Absent in a replay input that holds only the assistant turns.
    #[serde(default)]
    pub end: Option<End>,
    #[serde(default)]
    pub reward: Option<f64>,
    /// The reward's named components.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub reward_components: BTreeMap<String, f64>,
}

impl EpisodeRecord {
    /// The assistant replies in order.
    pub fn assistant_turns(&self) -> Vec<(&str, Option<&str>)> {
        self.turns
            .iter()
            .filter_map(|t| match t {
                Turn::Assistant { text, think } => Some((text.as_str(), think.as_deref())),
                Turn::User { .. } => None,
            })
            .collect()
    }

    /// The emotions of the user turns (start first).
    pub fn emotions(&self) -> Vec<u8> {
        self.turns
            .iter()
            .filter_map(|t| match t {
                Turn::User { emotion, .. } => Some(*emotion),
                Turn::Assistant { .. } => None,
            })
            .collect()
    }

    /// Malformed answers and failed requests of an LLM simulator over the whole dialogue.
    pub fn simulator_failures(&self) -> usize {
        self.turns
            .iter()
            .filter_map(|t| match t {
                Turn::User {
                    appraisal: Some(a), ..
                } => a.llm.as_ref().map(|l| l.failures.len()),
                _ => None,
            })
            .sum()
    }

    /// The final emotion.
    pub fn final_emotion(&self) -> u8 {
        self.emotions().last().copied().unwrap_or(0)
    }

    /// Appraised replies, and how many of them hold the component `name` (`cut_off`).
    pub fn replies_with(&self, name: &str) -> (usize, usize) {
        let mut out = (0, 0);
        for t in &self.turns {
            if let Turn::User {
                appraisal: Some(a), ..
            } = t
            {
                out.0 += 1;
                out.1 += usize::from(a.components.contains_key(name));
            }
        }
        out
    }

    /// Replies appraised with a factual verdict (the user had asked a factual question), and of
    /// those, the ones whose right answer was marred by something wrong or frightening beside it.
    pub fn factual_answers(&self) -> (usize, usize) {
        let mut out = (0, 0);
        for t in &self.turns {
            if let Turn::User {
                appraisal: Some(a), ..
            } = t
            {
                if let Some(v) = a.factual {
                    out.0 += 1;
                    out.1 += usize::from(v == FactualVerdict::Marred);
                }
            }
        }
        out
    }
}

/// The share of the appraised replies of `records` that hold the component `name`; `None` when
/// none was appraised.
pub fn component_share<'a>(
    records: impl IntoIterator<Item = &'a EpisodeRecord>,
    name: &str,
) -> Option<f64> {
    let (n, k) = records
        .into_iter()
        .map(|r| r.replies_with(name))
        .fold((0, 0), |a, b| (a.0 + b.0, a.1 + b.1));
    (n > 0).then(|| k as f64 / n as f64)
}
