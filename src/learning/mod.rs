//! Learning on the environment: what every algorithm shares (advantages, the policy loss, AdamW,
//! training checkpoints, metrics: `rl`), the algorithms (GRPO's credit, RLOO, REINFORCE++, PPO's
//! critic: `algo`), and the trainer that strings rollouts and updates together (`train`).

pub mod algo;
pub mod rl;
pub mod train;
