//! empathy-gym: RLVER-style training and auditing of empathetic dialogue models.
//!
//! A simulated user with a persona, a hidden need and an emotion state (0-100) talks with a policy
//! for several turns; how the emotion moves is a verifiable reward that a GRPO loop optimizes.
//! See docs/DESIGN.md for the architecture and the file formats.

// The areas: the environment (its own crate, environment/, re-exported here with the model seam
// and the OpenAI wire types it uses), learning on it, and the tools around them (evaluations, the
// human-coded checks, the red team, replay, sweeps, the servers, fitting the learned heads).
pub use empathy_environment as environment;
pub use empathy_environment::{model, openai};
pub mod learning;

pub mod eval;
pub mod fit;
pub mod judge;
pub mod redteam;
pub mod replay;
pub mod report;
pub mod serve;
pub mod sweep;

pub use empathy_engine::{error, seed};
pub use error::{Error, Result};
