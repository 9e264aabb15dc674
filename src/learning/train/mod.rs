//! The trainer (docs/DESIGN.md sections 9 and 10: GRPO and the algorithms beside it):
//! configuration in two stages, the policy that records the exact token sequences it sampled, the
//! update over micro-batches, the training loop with atomic checkpoints (the adapters, AdamW's and
//! the RNG's state) and resume, the per-step metrics CSV with its stability signals, the run
//! directory's files, and export of the trained policy.

pub mod checkpoint;
pub mod config;
pub mod config_file;
pub mod config_reference;
pub mod critic_update;
pub mod difficulty_schedule;
pub mod estimate;
pub mod export;
pub mod kl_sample;
pub mod metrics;
pub mod overrides;
mod progress;
pub mod recording_policy;
pub mod restore;
pub mod reward_source;
pub mod rng_state;
pub mod run_files;
pub mod run_summary;
pub mod sequence;
pub mod setup;
pub mod stability;
pub mod step_stats;
pub mod trainer;
pub mod update;

pub use checkpoint::{
    latest_checkpoint, load_checkpoint, remove_leftovers, save_checkpoint, Checkpoint, CriticState,
};
pub use config::TrainConfig;
pub use config_file::TrainConfigFile;
pub use difficulty_schedule::DifficultyPlan;
pub use export::{export_run, load_checkpoint_policy};
pub use metrics::{read_metrics, MetricsWriter, StepMetrics};
pub use overrides::{apply_overrides, Override};
pub use recording_policy::TrainPolicy;
pub use reward_source::{EnvReward, RewardSource};
pub use rng_state::RngState;
pub use run_files::RunFiles;
pub use sequence::TokenSequence;
pub use setup::{device, difficulty_plan, load_policy, profiles, simulator_device};
pub use stability::{advantage_stats, collapsed, repeated_reply_rate, Baseline, StabilityConfig};
pub use trainer::{Trainer, TrainerParts};
pub use update::{policy_update, Advantages, UpdateConfig, UpdateStats};
