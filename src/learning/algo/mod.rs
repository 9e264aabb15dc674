//! The algorithm family beside GRPO (docs/DESIGN.md section 10): which advantage estimator feeds
//! the shared clipped policy loss, each a small pure function: RLOO and REINFORCE++ (critic-free),
//! GAE for PPO with its clipped value loss and the critic (a value head on its own LoRA adapters),
//! GRPO's turn-level credit, where rewards sit among the tokens, and the stability signals every
//! algorithm logs.

pub mod algorithm;
pub mod critic;
pub mod critic_free;
pub mod gae;
pub mod placement;
pub mod stability;
pub mod turn_credit;
pub mod value_loss;

pub use algorithm::{Algorithm, Credit};
pub use critic::{Critic, PpoConfig};
pub use critic_free::{discounted_returns, reinforce_pp_advantages, rloo_advantages, whiten};
pub use gae::gae;
pub use placement::{per_token, token_rewards, turn_rewards};
pub use stability::{advantage_stats, collapsed, repeated_reply_rate, Baseline, StabilityConfig};
pub use turn_credit::turn_advantages;
pub use value_loss::{explained_variance, value_loss, ValueLoss};
