//! Replay of logged dialogues: re-run the simulator on the logged assistant turns to verify a log
//! bit for bit, or to re-score it under another difficulty or reward mode (DESIGN section 8);
//! aggregates over logs (`replay stats`) and a self-contained HTML report (`replay html`).

mod html;
mod log_stats;
mod rerun;
mod transcript;

pub use html::render_html;
pub use log_stats::{episode_stats, By, StatsOptions, STATS_COLUMNS};
pub use rerun::{rerun, verify, Mismatch, RerunSettings};
pub use transcript::{render_transcript, sparkline};
