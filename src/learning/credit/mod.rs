//! Where each policy token's advantage comes from (docs/DESIGN.md section 10), each estimator a
//! small pure function: GRPO's group advantages and its turn-level credit, where rewards sit
//! among the tokens, RLOO and REINFORCE++ (critic-free), and GAE for PPO with its clipped value
//! loss and the critic (a value head on its own LoRA adapters). The shared update they feed is in
//! `optimize`.

pub mod advantage;
pub mod algorithm;
pub mod critic;
pub mod critic_free;
pub mod gae;
pub mod placement;
pub mod turn_credit;
pub mod value_loss;

pub use advantage::{frac_reward_zero_std, group_advantages, zero_std_groups, AdvantageScale};
pub use algorithm::{Algorithm, Credit};
pub use critic::{Critic, PpoConfig};
pub use critic_free::{discounted_returns, reinforce_pp_advantages, rloo_advantages, whiten};
pub use gae::gae;
pub use placement::{per_token, token_rewards, turn_rewards};
pub use turn_credit::turn_advantages;
pub use value_loss::{explained_variance, value_loss, ValueLoss};
