//! What one policy update minimizes and how every algorithm steps it: the clipped policy loss with
//! its KL to the reference and the token aggregation (docs/DESIGN.md section 9), the loss variants
//! other trainers ship, the supervised loss, AdamW and its learning-rate schedule. Where the
//! advantages come from is in `credit`; the training loop that strings rollouts and updates
//! together is in `train`.

pub mod adamw;
pub mod loss;
pub mod nll;
pub mod policy_loss;
pub mod schedule;

pub use adamw::{AdamW, AdamWConfig, AdamWState, SkipReason, StepOutcome};
pub use loss::{
    grpo_loss, Aggregation, BatchTotals, LossConfig, LossInputs, LossOutput, LossStats,
};
pub use nll::masked_nll;
pub use policy_loss::PolicyLoss;
pub use schedule::LrSchedule;
