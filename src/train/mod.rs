//! The trainer (DESIGN sections 5 and 9: GRPO and the algorithms beside it): configuration in two stages, the policy that records the
//! exact token sequences it sampled, the update over micro-batches, the training loop with
//! checkpoints and resume, the run directory's files, and export of the trained policy.

pub mod config;
pub mod config_file;
pub mod critic_update;
pub mod difficulty;
pub mod estimate;
pub mod export;
pub mod kl_sample;
pub mod load;
pub mod overrides;
pub mod policy;
mod progress;
mod restore;
pub mod reward;
pub mod run_files;
pub mod sequence;
pub mod step_stats;
pub mod trainer;
pub mod update;

pub use config::TrainConfig;
pub use config_file::TrainConfigFile;
pub use difficulty::DifficultyPlan;
pub use export::{export_run, load_checkpoint_policy};
pub use load::{device, difficulty_plan, load_policy, profiles, simulator_device};
pub use overrides::{apply_overrides, Override};
pub use policy::TrainPolicy;
pub use reward::{EnvReward, RewardSource};
pub use run_files::RunFiles;
pub use sequence::TokenSequence;
pub use trainer::{Trainer, TrainerParts};
pub use update::{grpo_update, Advantages, UpdateConfig, UpdateStats};
