//! Replay of logged dialogues: re-run the simulator on the logged assistant turns to verify a log
//! bit for bit, or to re-score it under another difficulty or reward mode (DESIGN section 8);
//! aggregates over logs (`replay stats`) and a self-contained HTML report (`replay html`).

mod html;
mod render;
mod rerun;
mod stats;

pub use html::render_html;
pub use render::{render_transcript, sparkline};
pub use rerun::{rerun, verify, Mismatch, RerunSettings};
pub use stats::{episode_stats, By, StatsOptions, STATS_COLUMNS};
