//! The RL machinery every algorithm shares, and its persistence: group advantages, the clipped
//! policy loss with KL, AdamW with a learning-rate schedule, atomic checkpoints and the per-step
//! metrics CSV (docs/DESIGN.md section 9). The algorithms (GRPO, PPO, RLOO, REINFORCE++) are in
//! `algo`; the training loop that strings them together is in `train`.

pub mod advantage;
pub mod checkpoint;
pub mod loss;
pub mod metrics;
pub mod optim;
pub mod policy_loss;
pub mod rng_state;
pub mod schedule;

pub use advantage::{frac_reward_zero_std, group_advantages, zero_std_groups, AdvantageScale};
pub use checkpoint::{
    latest_checkpoint, load_checkpoint, remove_leftovers, save_checkpoint, Checkpoint, CriticState,
};
pub use loss::{
    grpo_loss, Aggregation, BatchTotals, LossConfig, LossInputs, LossOutput, LossStats,
};
pub use metrics::{read_metrics, MetricsWriter, StepMetrics};
pub use optim::{AdamW, AdamWConfig, AdamWState, SkipReason, StepOutcome};
pub use policy_loss::PolicyLoss;
pub use rng_state::RngState;
pub use schedule::LrSchedule;
