//! Judging conversations the project did not generate, and checking the judge against people.
//!
//! - [`input`]: (post, response) pairs from CSV, ESConv-shaped dialogues, episode logs.
//! - [`derive`]: the simulated user's scenario fields derived from the seeker's text
//!   (`data/judge.yaml`).
//! - [`score`]: the built-in appraiser reads each reply; the emotion moves as in training.
//! - [`output`]: JSONL and CSV, written batch by batch.
//! - [`epitome`]: agreement with EPITOME's human levels on a fixed dev/test split.

pub mod derive;
pub mod epitome;
pub mod input;
pub mod output;
pub mod score;

pub use derive::{Derived, JudgeRules};
pub use input::{Conversation, Format, Speaker};
pub use output::JudgeWriter;
pub use score::{judge, Judged, JudgedReply};
