//! empathy-gym: RLVER-style training and auditing of empathetic dialogue models.
//!
//! A simulated user with a persona, a hidden need and an emotion state (0-100) talks with a policy
//! for several turns; how the emotion moves is a verifiable reward that a GRPO loop optimizes.
//! See docs/DESIGN.md for the architecture and the file formats.

pub mod algo;
pub mod alloc;
pub mod episode;
pub mod error;
pub mod eval;
pub mod grpo;
pub mod model;
pub mod profile;
pub mod redteam;
pub mod replay;
pub mod report;
pub mod reward;
pub mod seed;
pub mod serve;
pub mod sim;
pub mod sweep;
pub mod train;

pub use error::{Error, Result};
