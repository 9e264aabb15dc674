//! empathy-environment: the simulated user and its reward, as a crate of its own for a trainer
//! that wants the environment without the learning code (serve-env, a Python loop, another Rust
//! trainer). Profiles and difficulty (`profile`), the simulated user and its appraisal (`sim`), the
//! reward (`reward`), factual questions and their grading (`qa`), and a dialogue between a policy
//! and the user, with `DialogueEnv`'s reset/step and the episode logs (`episode`). It depends on
//! the chat-model engine (through `model`) and on nothing of the learning code or the tools.

pub mod episode;
pub mod model;
pub mod openai;
pub mod profile;
pub mod qa;
pub mod reward;
pub mod sim;

pub use empathy_engine::{error, seed};
pub use error::{Error, Result};
