//! The trainer (docs/DESIGN.md sections 9 and 10: GRPO and the algorithms beside it):
//! configuration in two stages, the policy that records the exact token sequences it sampled, the
//! update over micro-batches, the training loop with checkpoints and resume, the run directory's
//! files, and export of the trained policy.

pub mod config;
pub mod config_docs;
pub mod config_file;
pub mod critic_update;
pub mod difficulty_schedule;
pub mod estimate;
pub mod export;
pub mod kl_sample;
pub mod overrides;
mod progress;
pub mod recording_policy;
mod restore;
pub mod reward_source;
pub mod run_files;
pub mod run_summary;
pub mod sequence;
pub mod setup;
pub mod step_stats;
pub mod trainer;
pub mod update;

pub use config::TrainConfig;
pub use config_file::TrainConfigFile;
pub use difficulty_schedule::DifficultyPlan;
pub use export::{export_run, load_checkpoint_policy};
pub use overrides::{apply_overrides, Override};
pub use recording_policy::TrainPolicy;
pub use reward_source::{EnvReward, RewardSource};
pub use run_files::RunFiles;
pub use sequence::TokenSequence;
pub use setup::{device, difficulty_plan, load_policy, profiles, simulator_device};
pub use trainer::{Trainer, TrainerParts};
pub use update::{policy_update, Advantages, UpdateConfig, UpdateStats};
