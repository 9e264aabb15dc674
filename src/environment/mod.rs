//! The environment: what a trainer outside this crate needs (serve-env, a Python loop). Profiles
//! and difficulty (`profile`), the simulated user and its appraisal (`sim`), the reward
//! (`reward`), factual questions and their grading (`qa`), and a dialogue between a policy and the
//! user, with `DialogueEnv`'s reset/step and the episode logs (`episode`). Nothing here imports
//! the learning code or the tools.

pub mod episode;
pub mod profile;
pub mod qa;
pub mod reward;
pub mod sim;
