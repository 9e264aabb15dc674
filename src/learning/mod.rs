//! Learning on the environment: where each token's advantage comes from (GRPO's group and turn
//! credit, RLOO, REINFORCE++, PPO's critic: `credit`), what one update minimizes and how it steps
//! (the clipped policy loss with KL, AdamW: `optimize`), and the trainer that strings rollouts and
//! updates together, with its checkpoints and metrics (`train`); supervised fine-tuning on human
//! support dialogues, the warm start before RL (`sft`).

pub mod credit;
pub mod optimize;
pub mod sft;
pub mod train;
