//! Learning on the environment: where each token's advantage comes from (GRPO's group and turn
//! credit, RLOO, REINFORCE++, PPO's critic: `credit`), what one update minimizes and how it steps
//! (the clipped policy loss with KL, AdamW: `optimize`), and the trainer that strings rollouts and
//! updates together, with its checkpoints and metrics (`train`).

pub mod credit;
pub mod optimize;
pub mod train;
