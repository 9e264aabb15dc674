//! One GRPO update on a batch of dialogue sequences (docs/DESIGN.md section 9): old log-probs
//! stored once, the reference pass only when beta > 0, then `iterations` (mu) optimizer steps, each
//! accumulating gradients over micro-batches that share the whole batch's normalizer
//! ([`BatchTotals`]), so the accumulated gradient equals the full-batch gradient.
//!
//! With mu = 1 the old log-probs are the current ones, detached (the ratio is exactly 1 and its
//! gradient is that of the policy-gradient loss), so no separate pass is made. With mu > 1 they
//! are computed once before the first update with the inference numerics.
//!
//! Entropy is estimated, not computed over the vocabulary: the mean of -log p of the sampled
//! policy tokens under the pre-update policy at the sampling temperature, an unbiased estimate of
//! the sampler's per-token entropy without top-p (with top-p, the cross-entropy of its tokens
//! under the untruncated distribution).

use std::time::Instant;

use candle_core::backprop::GradStore;
use candle_core::{Device, Tensor};

use super::kl_sample::KlSum;
use super::sequence::{padded_masks, scatter_tokens, TokenSequence};
use crate::error::Result;
use crate::learning::optimize::{
    grpo_loss, AdamW, BatchTotals, LossConfig, LossInputs, LossStats, StepOutcome,
};
use crate::model::{AdapterMode, ChatModel, Pass};

/// How to run the update.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct UpdateConfig {
    /// Clip bounds, beta, aggregation.
    pub loss: LossConfig,
    /// Optimizer steps on this batch (mu).
    pub iterations: usize,
    /// Sequences per forward/backward pass.
    pub micro_batch: usize,
    /// Seed of the LoRA dropout masks of this update (used only when dropout > 0).
    pub dropout_seed: u64,
    /// The sampling temperature: log-probs are taken under softmax(logits / temperature), the
    /// distribution the rollout sampled from.
    pub temperature: f64,
    /// Sequences at the head of the batch whose k3 KL to the reference is estimated
    /// (`stability.kl_sample`; 0 for none).
    pub kl_sample: usize,
    /// Activation checkpointing per layer (`model.gradient_checkpointing`).
    pub checkpoint: bool,
}

/// What the update did.
#[derive(Debug, Clone, PartialEq)]
pub struct UpdateStats {
    /// Loss statistics merged over micro-batches and iterations (clip fractions, ratio, KL).
    pub loss: LossStats,
    /// Policy tokens in the batch.
    pub tokens: usize,
    /// Estimated per-token entropy (nats) of the policy before the update.
    pub entropy: Option<f64>,
    /// The optimizer's outcome of each iteration (stops at the first skipped one).
    pub outcomes: Vec<StepOutcome>,
    /// Mean k3 KL to the reference over the first `kl_sample` sequences' policy tokens, with the
    /// policy before the update (None when `kl_sample` is 0).
    pub kl_sample: Option<f64>,
    /// Where the update's time went.
    pub phases: UpdatePhases,
}

/// Wall-clock seconds of the update's phases, each ended by a device synchronize so that GPU
/// work is charged to the phase that queued it (as the step profile reads it).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct UpdatePhases {
    /// Stored log-probs: old (mu > 1) and reference (beta > 0) passes, and the KL sample's
    /// reference pass (beta = 0).
    pub logprob_s: f64,
    /// Training forwards and the loss.
    pub forward_s: f64,
    /// Backward passes and gradient accumulation.
    pub backward_s: f64,
    /// Optimizer steps (clipping, AdamW).
    pub optimizer_s: f64,
}

/// Seconds since `t0` once the device has finished the work queued so far.
pub(crate) fn lap(dev: &Device, t0: Instant) -> Result<f64> {
    dev.synchronize()?;
    Ok(t0.elapsed().as_secs_f64())
}

impl UpdateStats {
    /// True when an iteration was skipped (non-finite loss or gradient).
    pub fn skipped(&self) -> bool {
        self.outcomes
            .iter()
            .any(|o| matches!(o, StepOutcome::Skipped(_)))
    }

    /// Learning rate and pre-clip gradient norm of the last applied step.
    pub fn last_applied(&self) -> Option<(f64, f64)> {
        self.outcomes.iter().rev().find_map(|o| match o {
            StepOutcome::Applied { lr, grad_norm, .. } => Some((*lr, *grad_norm)),
            StepOutcome::Skipped(_) => None,
        })
    }
}

/// The advantages an update trains with: one per dialogue (GRPO, RLOO) or one per policy token,
/// in the order of the sequence's policy tokens (PPO, REINFORCE++, GRPO's turn credit).
#[derive(Debug, Clone, PartialEq)]
pub enum Advantages {
    /// One value per sequence.
    PerSequence(Vec<f32>),
    /// One vector per sequence, one value per policy token.
    PerToken(Vec<Vec<f32>>),
}

impl Advantages {
    /// Every policy token's advantage, sequence after sequence (`tokens[i]` policy tokens each).
    pub fn per_token(&self, tokens: &[usize]) -> Vec<Vec<f32>> {
        match self {
            Advantages::PerSequence(a) => a.iter().zip(tokens).map(|(&x, &n)| vec![x; n]).collect(),
            Advantages::PerToken(a) => a.clone(),
        }
    }

    /// Sequences covered.
    pub fn len(&self) -> usize {
        match self {
            Advantages::PerSequence(a) => a.len(),
            Advantages::PerToken(a) => a.len(),
        }
    }

    /// True when no sequence is covered.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// One micro-batch's fixed inputs.
struct Micro {
    ids: Vec<Vec<u32>>,
    mask: Tensor,
    advantages: Tensor,
    old: Option<Tensor>,
    reference: Option<Tensor>,
    kl: Option<KlRows>,
}

/// The first rows of a micro-batch that are in the KL sample: their mask and reference log-probs
/// over the columns they span, and their policy log-probs where the first training forward
/// cannot stand for the sampling policy (LoRA dropout with mu = 1).
struct KlRows {
    rows: usize,
    width: usize,
    mask: Tensor,
    reference: Tensor,
    policy: Option<Tensor>,
}

/// Runs the update on `seqs` with their advantages (the same policy loss for every algorithm).
pub fn policy_update(
    model: &ChatModel,
    opt: &mut AdamW,
    seqs: &[&TokenSequence],
    advantages: &Advantages,
    cfg: &UpdateConfig,
) -> Result<UpdateStats> {
    if advantages.len() != seqs.len() {
        return Err(crate::error::Error::Other(format!(
            "policy_update: {} advantages for {} sequences",
            advantages.len(),
            seqs.len()
        )));
    }
    let dev = &model.device;
    let t0 = Instant::now();
    let mut micros = prepare(model, seqs, advantages, cfg)?;
    let mut phases = UpdatePhases {
        logprob_s: lap(dev, t0)?,
        ..UpdatePhases::default()
    };
    let totals = BatchTotals::of_masks(micros.iter().map(|m| &m.mask))?;
    let mut stats = UpdateStats {
        loss: LossStats::default(),
        tokens: totals.tokens,
        entropy: None,
        outcomes: Vec::new(),
        kl_sample: None,
        phases: UpdatePhases::default(),
    };
    let mut neg_logp_sum = 0.0;
    let mut kl = KlSum::default();
    for it in 0..cfg.iterations {
        let mut acc = GradStore::default();
        let mut loss_sum = 0.0;
        for (mi, micro) in micros.iter_mut().enumerate() {
            set_dropout_seed(model, cfg.dropout_seed, it, mi)?;
            let t0 = Instant::now();
            let (new, checkpointed) = if cfg.checkpoint {
                let (lp, ck) = model.scored_logprobs_checkpointed(
                    &micro.ids,
                    AdapterMode::On,
                    cfg.temperature,
                    &micro.mask,
                )?;
                (lp, Some(ck))
            } else {
                let lp = model.scored_logprobs(
                    &micro.ids,
                    AdapterMode::On,
                    Pass::Train,
                    cfg.temperature,
                    &micro.mask,
                )?;
                (lp, None)
            };
            let old = micro.old.clone().unwrap_or_else(|| new.detach());
            if it == 0 {
                neg_logp_sum -= (&old * &micro.mask)?.sum_all()?.to_scalar::<f32>()? as f64;
                if let Some(k) = &micro.kl {
                    let policy = match &k.policy {
                        Some(p) => p.clone(),
                        None => old.narrow(0, 0, k.rows)?.narrow(1, 0, k.width)?,
                    };
                    kl.add(&policy, &k.reference, &k.mask)?;
                }
            }
            let inputs = LossInputs {
                logp_new: &new,
                logp_old: &old,
                logp_ref: micro.reference.as_ref(),
                advantages: &micro.advantages,
                mask: &micro.mask,
            };
            let out = grpo_loss(&inputs, &cfg.loss, Some(totals))?;
            loss_sum += out.stats.loss;
            stats.loss.merge(&out.stats);
            phases.forward_s += lap(dev, t0)?;
            let t0 = Instant::now();
            let grads = match checkpointed {
                Some(ck) => ck.backward(&out.loss)?,
                None => out.loss.backward()?,
            };
            acc.extend(trainable_grads(opt, grads))?;
            phases.backward_s += lap(dev, t0)?;
        }
        let t0 = Instant::now();
        fill_missing(opt, &mut acc)?;
        let outcome = opt.step(loss_sum, &acc)?;
        phases.optimizer_s += lap(dev, t0)?;
        let skipped = matches!(outcome, StepOutcome::Skipped(_));
        stats.outcomes.push(outcome);
        if skipped {
            break;
        }
    }
    if totals.tokens > 0 {
        stats.entropy = Some(neg_logp_sum / totals.tokens as f64);
    }
    stats.kl_sample = kl.mean();
    stats.phases = phases;
    Ok(stats)
}

/// Splits the batch into micro-batches with masks, advantages, the stored log-probs and the
/// KL sample's reference log-probs.
fn prepare(
    model: &ChatModel,
    seqs: &[&TokenSequence],
    advantages: &Advantages,
    cfg: &UpdateConfig,
) -> Result<Vec<Micro>> {
    let dev: &Device = &model.device;
    let mut out = Vec::new();
    for (ci, chunk) in seqs.chunks(cfg.micro_batch).enumerate() {
        let first = ci * cfg.micro_batch;
        let range = first..first + chunk.len();
        let (ids, mask) = micro_inputs(chunk, dev)?;
        let width = mask.dim(1)?;
        let advantages = match advantages {
            Advantages::PerSequence(a) => Tensor::from_slice(&a[range], chunk.len(), dev)?,
            Advantages::PerToken(a) => Tensor::from_vec(
                scatter_tokens(chunk, &a[range], width),
                (chunk.len(), width),
                dev,
            )?,
        };
        let old = if cfg.iterations > 1 {
            Some(model.scored_logprobs(
                &ids,
                AdapterMode::On,
                Pass::Infer,
                cfg.temperature,
                &mask,
            )?)
        } else {
            None
        };
        let reference = if cfg.loss.beta > 0.0 {
            Some(model.scored_logprobs(
                &ids,
                AdapterMode::Off,
                Pass::Infer,
                cfg.temperature,
                &mask,
            )?)
        } else {
            None
        };
        let kl_rows = cfg.kl_sample.saturating_sub(first).min(chunk.len());
        let kl = (kl_rows > 0)
            .then(|| kl_rows_of(model, &ids[..kl_rows], &mask, reference.as_ref(), cfg))
            .transpose()?;
        out.push(Micro {
            ids,
            mask,
            advantages,
            old,
            reference,
            kl,
        });
    }
    Ok(out)
}

/// The token ids of a micro-batch and its `[B, T-1]` loss mask (right-padded with zeros).
pub(crate) fn micro_inputs(
    chunk: &[&TokenSequence],
    dev: &Device,
) -> Result<(Vec<Vec<u32>>, Tensor)> {
    let ids: Vec<Vec<u32>> = chunk.iter().map(|s| s.ids().to_vec()).collect();
    let width = ids
        .iter()
        .map(Vec::len)
        .max()
        .unwrap_or(1)
        .saturating_sub(1);
    let mask = Tensor::from_vec(padded_masks(chunk, width), (chunk.len(), width), dev)?;
    Ok((ids, mask))
}

/// The KL sample's part of a micro-batch: its first `ids.len()` rows. The reference log-probs
/// come from the beta > 0 pass when there is one, else from an inference pass over these rows.
fn kl_rows_of(
    model: &ChatModel,
    ids: &[Vec<u32>],
    mask: &Tensor,
    reference: Option<&Tensor>,
    cfg: &UpdateConfig,
) -> Result<KlRows> {
    let rows = ids.len();
    let width = ids.iter().map(Vec::len).max().unwrap_or(1) - 1;
    let mask = mask.narrow(0, 0, rows)?.narrow(1, 0, width)?;
    let pass = |mode| model.scored_logprobs(ids, mode, Pass::Infer, cfg.temperature, &mask);
    let reference = match reference {
        Some(r) => r.narrow(0, 0, rows)?.narrow(1, 0, width)?,
        None => pass(AdapterMode::Off)?,
    };
    let dropout = model.lora.as_ref().is_some_and(|l| l.dropout > 0.0);
    let policy = if cfg.iterations == 1 && dropout {
        Some(pass(AdapterMode::On)?)
    } else {
        None
    };
    Ok(KlRows {
        rows,
        width,
        mask,
        reference,
        policy,
    })
}

/// The gradients of the optimizer's parameters, out of a full backward store (which also holds
/// every intermediate tensor's gradient; dropping it frees them).
pub(crate) fn trainable_grads(opt: &AdamW, mut grads: GradStore) -> GradStore {
    let mut mine = GradStore::default();
    for (_, var) in opt.vars() {
        if let Some(g) = grads.remove(var.as_tensor()) {
            mine.insert(var.as_tensor(), g);
        }
    }
    mine
}

/// A parameter the loss does not reach gets a zero gradient (AdamW wants one for each).
pub(crate) fn fill_missing(opt: &AdamW, acc: &mut GradStore) -> Result<()> {
    for (_, var) in opt.vars() {
        if acc.get(var.as_tensor()).is_none() {
            acc.insert(var.as_tensor(), var.as_tensor().zeros_like()?);
        }
    }
    Ok(())
}

/// Re-seeds every adapter's dropout stream from (update seed, iteration, micro-batch, projection),
/// so a resumed run draws the same masks (no-op at dropout 0).
pub(crate) fn set_dropout_seed(
    model: &ChatModel,
    seed: u64,
    it: usize,
    micro: usize,
) -> Result<()> {
    if model.lora.as_ref().is_none_or(|l| l.dropout == 0.0) {
        return Ok(());
    }
    let base = crate::seed::derive(seed, ((it as u64) << 32) | micro as u64);
    for (bi, block) in model.model.blocks().iter().enumerate() {
        for (pi, (_, proj)) in block.projections().iter().enumerate() {
            proj.set_dropout_seed(crate::seed::derive(base, (bi * 8 + pi) as u64))?;
        }
    }
    Ok(())
}
