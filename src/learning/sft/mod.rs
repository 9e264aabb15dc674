//! Supervised fine-tuning, the warm start before RL (`empathy-gym sft`, docs/DESIGN.md section
//! 24): LoRA on the supporter turns of human support dialogues the user provides, each turn in
//! the chat template and context the policy will later be played in, the seeker's tokens masked
//! out of the loss.

pub mod corpus;
pub mod log;
pub mod tokens;
pub mod trainer;

pub use corpus::{read_corpus, Corpus, Example};
pub use log::{read_rows, SftRow, SFT_FILE, SFT_SVG};
pub use tokens::Tokenizing;
pub use trainer::{batch_indices, SftParts, SftTrainer};
