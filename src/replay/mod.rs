//! Replay of logged dialogues: re-run the simulator on the logged assistant turns to verify a log
//! bit for bit (docs/DESIGN.md section 8), or to re-score it under another difficulty or reward
//! mode (docs/REWARD.md, "Re-scoring old logs");
//! aggregates over logs (`replay stats`), a self-contained HTML report (`replay html`), and blind
//! human rating of dialogues with its agreement report (`rate`: `replay html --rate`, `judge
//! agreement`); and the headline tables of the READMEs, generated from the files they cite
//! (`headline`, `empathy-gym tables`).

pub mod headline;
mod html;
mod log_stats;
pub mod rate;
mod rerun;
mod transcript;
pub mod user_fit;
mod user_realism;

pub use html::render_html;
pub use log_stats::{episode_stats, By, StatsOptions, STATS_COLUMNS};
pub use rerun::{rerun, verify, Mismatch, RerunSettings};
pub use transcript::{render_transcript, sparkline};
pub use user_realism::{measure, quote, realism_table, Realism};
