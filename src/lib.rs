//! empathy-gym: RLVER-style training and auditing of empathetic dialogue models.
//!
//! A simulated user with a persona, a hidden need and an emotion state (0-100) talks with a policy
//! for several turns; how the emotion moves is a verifiable reward that a GRPO loop optimizes.
//! See docs/DESIGN.md for the architecture and the file formats.

pub mod algo;
pub mod episode;
pub mod eval;
pub mod fit;
pub mod judge;
pub mod model;
pub mod openai;
pub mod profile;
pub mod qa;
pub mod redteam;
pub mod replay;
pub mod report;
pub mod reward;
pub mod rl;
pub mod serve;
pub mod sim;
pub mod sweep;
pub mod train;

pub use empathy_engine::{error, seed};
pub use error::{Error, Result};
