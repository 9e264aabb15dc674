//! Replay of logged dialogues: re-run the simulator on the logged assistant turns to verify a log
//! bit for bit, or to re-score it under another difficulty or reward mode (DESIGN section 8).

mod render;
mod rerun;

pub use render::{render_transcript, sparkline};
pub use rerun::{rerun, verify, Mismatch, RerunSettings};
