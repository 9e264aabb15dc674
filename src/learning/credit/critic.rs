//! PPO's critic (`algorithm: ppo`): a value head, a linear layer on the final hidden state, on the
//! same frozen base as the policy with its own LoRA adapters (`AdapterMode::Critic`). Policy,
//! critic and reference (all adapters off) share one copy of the base weights, so PPO's memory is
//! GRPO's plus one adapter set, a head and their optimizer moments (docs/DESIGN.md section 10).
//!
//! V(s_t) is read at the position of token t, aligned with `token_logprobs`: column t of the
//! `[B, T-1]` output is the value of the state whose next token is ids[t+1], the token column t
//! of the log-probs scores. The head starts at zero (every value 0), as the critic's adapters
//! start equal to the base.

use candle_core::{DType, Tensor, Var};
use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::model::{AdapterMode, ChatModel, Pass};

/// `ppo:` in the config (verl's defaults where it has them).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PpoConfig {
    /// Discount gamma of GAE and of REINFORCE++'s returns (default 1, verl).
    #[serde(default = "one")]
    pub gamma: f64,
    /// GAE's lambda (default 1, verl: advantages are returns minus values).
    #[serde(default = "one")]
    pub lambda: f64,
    /// How far a new value may move from the rollout's before its error stops counting
    /// (default 0.5, verl `cliprange_value`).
    #[serde(default = "default_cliprange_value")]
    pub cliprange_value: f64,
    /// The critic's AdamW learning rate (default 1e-5, verl's critic optim lr); the other AdamW
    /// settings are `optim`'s.
    #[serde(default = "default_critic_lr")]
    pub critic_lr: f64,
    /// Steps at the start that train only the critic (default 0, verl `critic_warmup`).
    #[serde(default)]
    pub critic_warmup: u64,
}

fn one() -> f64 {
    1.0
}
fn default_cliprange_value() -> f64 {
    0.5
}
fn default_critic_lr() -> f64 {
    1e-5
}

impl Default for PpoConfig {
    fn default() -> Self {
        Self {
            gamma: 1.0,
            lambda: 1.0,
            cliprange_value: default_cliprange_value(),
            critic_lr: default_critic_lr(),
            critic_warmup: 0,
        }
    }
}

/// Name of the value head's weight in checkpoints.
pub const HEAD_WEIGHT: &str = "critic.value_head.weight";
/// Name of the value head's bias in checkpoints.
pub const HEAD_BIAS: &str = "critic.value_head.bias";

/// The value head; the critic adapters live in the model's projections.
pub struct Critic {
    weight: Var,
    bias: Var,
}

impl Critic {
    /// Attaches critic adapters (rank and targets of the model's LoRA config, A drawn from
    /// `seed`) and a zero value head.
    pub fn attach(model: &mut ChatModel, seed: u64) -> Result<Self> {
        let lora = model.lora.clone().ok_or_else(|| {
            Error::Other("the critic needs LoRA: load the policy with a LoRA config".into())
        })?;
        model.model.attach_critic_lora(&lora, seed)?;
        let hidden = model.config.hidden_size;
        Ok(Critic {
            weight: Var::zeros((hidden, 1), DType::F32, &model.device)?,
            bias: Var::zeros(1, DType::F32, &model.device)?,
        })
    }

    /// Every trainable tensor of the critic: its adapters, then the head.
    pub fn trainable(&self, model: &ChatModel) -> Vec<(String, Var)> {
        let mut vars = model.model.critic_trainable();
        vars.push((HEAD_WEIGHT.to_string(), self.weight.clone()));
        vars.push((HEAD_BIAS.to_string(), self.bias.clone()));
        vars
    }

    /// Values `[B, T-1]` (f32) of right-padded `batch` (0 at pad columns); differentiable w.r.t.
    /// the critic's tensors when `pass = Train`.
    pub fn values(&self, model: &ChatModel, batch: &[Vec<u32>], pass: Pass) -> Result<Tensor> {
        let t = batch.iter().map(Vec::len).max().unwrap_or(0);
        if batch.is_empty() || t < 2 {
            return Err(Error::Other(
                "critic values need at least one sequence of two or more tokens".into(),
            ));
        }
        let dev = &model.device;
        let mut ids = Vec::with_capacity(batch.len() * t);
        let mut mask = Vec::with_capacity(batch.len() * (t - 1));
        for row in batch {
            ids.extend(
                row.iter()
                    .copied()
                    .chain(std::iter::repeat_n(0, t - row.len())),
            );
            mask.extend((0..t - 1).map(|j| if j + 1 < row.len() { 1f32 } else { 0f32 }));
        }
        let ids = Tensor::from_vec(ids, (batch.len(), t), dev)?;
        let mask = Tensor::from_vec(mask, (batch.len(), t - 1), dev)?;
        let hidden = model
            .model
            .forward(&ids, None, AdapterMode::Critic, pass)?
            .narrow(1, 0, t - 1)?
            .to_dtype(DType::F32)?;
        let (b, rows, h) = hidden.dims3()?;
        let v = hidden
            .reshape((b * rows, h))?
            .matmul(self.weight.as_tensor())?
            .broadcast_add(self.bias.as_tensor())?
            .reshape((b, rows))?;
        let out = (v * mask)?;
        Ok(match pass {
            Pass::Infer => out.detach(),
            Pass::Train => out,
        })
    }
}
