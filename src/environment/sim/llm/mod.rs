//! The LLM-played simulated user (`simulator: llm`), behind the same [`crate::sim::Simulator`]
//! trait as the built-in appraiser: prompt templates as data, an OpenAI-compatible or in-process
//! backend, strict parsing with retries, and a trace of every malformed answer.

pub mod backend;
pub mod parse;
pub mod prompts;
pub mod settings;
pub mod simulator;

pub use backend::{ChatBackend, LocalBackend, OpenAiBackend};
pub use prompts::Prompts;
pub use settings::{Backend, LlmConfigFile, LlmSettings};
pub use simulator::{LlmSimulator, LlmTrace};
