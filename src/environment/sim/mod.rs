//! The simulated user: an emotion state moved by an appraiser, and a speaker that answers.
//!
//! [`Simulator`] is the seam for other user models (an LLM-backed simulator implements the same
//! trait); [`Appraiser`] is the built-in, deterministic one.

pub mod appraiser;
pub mod appraiser_config;
pub mod bert;
pub mod detect;
pub mod embed;
pub mod emotion;
pub mod factual;
pub mod fluency;
pub mod kind;
pub mod lexicon;
pub mod llm;
pub mod lru;
pub mod mlp;
pub mod moves;
pub mod perceive;
pub mod pmi;
pub mod points;
pub mod responsive;
pub mod speaker;
pub mod text;
pub mod warmth;
pub mod wording;

use serde::{Deserialize, Serialize};

pub use appraiser::{rules_fingerprint, Appraisal, AppraisalInput, Appraiser};
pub use embed::Embedder;
pub use emotion::Bucket;
pub use factual::FactualVerdict;
pub use kind::SimulatorKind;
pub use moves::Move;

use crate::error::Result;
use crate::profile::Profile;

/// Which simulator produced a dialogue, as logged.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SimulatorInfo {
    pub kind: String,
    pub version: String,
    /// Where an LLM simulator's calls go (`openai`, `local`).
    pub backend: Option<String>,
    /// The LLM that plays the user.
    pub model: Option<String>,
    /// The version of its prompt templates.
    pub prompt_version: Option<String>,
    /// Where the appraiser's sentence embeddings run, when not on the CPU (`cuda`).
    pub device: Option<String>,
    /// A fingerprint of the rule files the appraiser read (`fnv1a64 ...`): a log written under
    /// other rules does not re-run bit for bit, and `replay verify` says so.
    pub data: Option<String>,
}

/// A model of how the user's emotion moves. Implementations must be deterministic for replay.
pub trait Simulator: Send + Sync {
    /// Kind and version, logged with every episode.
    fn info(&self) -> SimulatorInfo;
    /// Appraises the replies of several dialogues in one batch.
    fn appraise(&self, inputs: &[AppraisalInput<'_>]) -> Result<Vec<Appraisal>>;
    /// Readies whatever the simulator caches for these profiles (the appraiser embeds what their
    /// users can say); optional, appraising works without it.
    fn prepare(&self, _profiles: &[Profile]) -> Result<()> {
        Ok(())
    }
}

impl Simulator for Appraiser {
    fn info(&self) -> SimulatorInfo {
        SimulatorInfo {
            kind: "appraiser".into(),
            version: "1".into(),
            device: embed::device_name(self.embedder_device()),
            data: Some(self.data_fingerprint().to_string()),
            ..Default::default()
        }
    }

    fn appraise(&self, inputs: &[AppraisalInput<'_>]) -> Result<Vec<Appraisal>> {
        Appraiser::appraise(self, inputs)
    }

    fn prepare(&self, profiles: &[Profile]) -> Result<()> {
        Appraiser::prepare(self, profiles)
    }
}
