//! Episodes: the dialogue environment, the policy seam, the one rollout loop and the JSONL
//! records that training writes and eval and replay read.

pub mod env;
pub mod log;
pub mod model_policy;
pub mod policy;
pub mod record;
pub mod rollout;
pub mod template;

pub use env::{step_batch, DialogueEnv, Observation, StepOutcome};
pub use log::{read_episodes, EpisodeLog, EpisodeWriter};
pub use model_policy::{split_think, ModelPolicy};
pub use policy::{FnPolicy, Policy, PolicyReply, PolicyRequest, ScriptedPolicy};
pub use record::{
    component_share, end_word, End, EpisodeRecord, PolicyRef, ProfileRef, SimulatorRef, Turn,
    SCHEMA,
};
pub use rollout::{rollout, EpisodeJob, RolloutOptions};
