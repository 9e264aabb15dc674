//! PPO's critic in the training loop: the values of a batch at rollout time (inference numerics,
//! per policy token) and the critic's update on the clipped value loss with its own AdamW
//! (`ppo.critic_lr`), `grpo.iterations` epochs over `grpo.micro_batch`-sized micro-batches that
//! share the batch's token normalizer.

use candle_core::backprop::GradStore;
use candle_core::Tensor;

use super::sequence::{gather_tokens, padded_masks, scatter_tokens, TokenSequence};
use super::update::{fill_missing, trainable_grads};
use crate::error::Result;
use crate::learning::credit::{explained_variance, value_loss, Critic};
use crate::learning::optimize::{AdamW, StepOutcome};
use crate::model::{ChatModel, Pass};

/// What the critic's update did (metrics.csv's `value_loss`, `explained_var`,
/// `value_clip_frac`).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct CriticStats {
    /// Clipped value loss, mean over the epochs.
    pub value_loss: f64,
    /// Share of policy-token value errors that were clipped, over all epochs.
    pub clip_frac: f64,
    /// Explained variance of the rollout values for the returns (None without variance).
    pub explained_var: Option<f64>,
    /// The last epoch's optimizer outcome was a skip (non-finite loss or gradient).
    pub skipped: bool,
}

/// How to run the critic's update.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CriticUpdateConfig {
    /// `ppo.cliprange_value`.
    pub clip: f64,
    /// Epochs over the batch (`grpo.iterations`).
    pub iterations: usize,
    /// Sequences per forward/backward pass.
    pub micro_batch: usize,
}

fn width(chunk: &[&TokenSequence]) -> usize {
    chunk
        .iter()
        .map(|s| s.ids().len())
        .max()
        .unwrap_or(1)
        .saturating_sub(1)
}

fn ids(chunk: &[&TokenSequence]) -> Vec<Vec<u32>> {
    chunk.iter().map(|s| s.ids().to_vec()).collect()
}

/// The critic's value at every policy token of `seqs`, in order (inference numerics).
pub fn critic_values(
    model: &ChatModel,
    critic: &Critic,
    seqs: &[&TokenSequence],
    micro_batch: usize,
) -> Result<Vec<Vec<f32>>> {
    let mut out = Vec::with_capacity(seqs.len());
    for chunk in seqs.chunks(micro_batch.max(1)) {
        let v = critic.values(model, &ids(chunk), Pass::Infer)?;
        let w = width(chunk);
        let flat: Vec<f32> = v.flatten_all()?.to_vec1()?;
        out.extend(gather_tokens(chunk, &flat, w));
    }
    Ok(out)
}

/// Trains the critic toward `returns` with the clipped value loss around `old_values`.
pub fn critic_update(
    model: &ChatModel,
    critic: &Critic,
    opt: &mut AdamW,
    seqs: &[&TokenSequence],
    old_values: &[Vec<f32>],
    returns: &[Vec<f32>],
    cfg: &CriticUpdateConfig,
) -> Result<CriticStats> {
    let dev = &model.device;
    let tokens: usize = old_values.iter().map(Vec::len).sum();
    let flat_v: Vec<f32> = old_values.iter().flatten().copied().collect();
    let flat_r: Vec<f32> = returns.iter().flatten().copied().collect();
    let mut stats = CriticStats {
        explained_var: explained_variance(&flat_v, &flat_r),
        ..CriticStats::default()
    };
    let mb = cfg.micro_batch.max(1);
    let mut clipped = 0usize;
    for _ in 0..cfg.iterations {
        let mut acc = GradStore::default();
        let mut loss_sum = 0.0;
        for (ci, chunk) in seqs.chunks(mb).enumerate() {
            let range = ci * mb..ci * mb + chunk.len();
            let w = width(chunk);
            let shape = (chunk.len(), w);
            let mask = Tensor::from_vec(padded_masks(chunk, w), shape, dev)?;
            let v_old = Tensor::from_vec(
                scatter_tokens(chunk, &old_values[range.clone()], w),
                shape,
                dev,
            )?;
            let ret = Tensor::from_vec(scatter_tokens(chunk, &returns[range], w), shape, dev)?;
            let v_new = critic.values(model, &ids(chunk), Pass::Train)?;
            let out = value_loss(&v_new, &v_old, &ret, &mask, cfg.clip, tokens)?;
            loss_sum += out.value;
            clipped += out.clipped;
            let grads = out.loss.backward()?;
            acc.extend(trainable_grads(opt, grads))?;
        }
        fill_missing(opt, &mut acc)?;
        let outcome = opt.step(loss_sum, &acc)?;
        stats.value_loss += loss_sum / cfg.iterations as f64;
        if matches!(outcome, StepOutcome::Skipped(_)) {
            stats.skipped = true;
            break;
        }
    }
    let seen = tokens * cfg.iterations;
    stats.clip_frac = if seen == 0 {
        0.0
    } else {
        clipped as f64 / seen as f64
    };
    Ok(stats)
}
