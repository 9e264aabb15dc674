//! The GRPO policy loss over per-token log-probabilities: the clipped importance ratio with
//! asymmetric bounds (DAPO's clip-higher, Yu et al. 2025: eps_low 0.2, eps_high 0.28), an optional
//! k3 KL penalty to the reference policy (Schulman 2020, "Approximating KL divergence"), and three
//! ways to aggregate tokens into one scalar (`grpo.loss.aggregation`; docs/CONFIG.md, "`grpo`").
//!
//! Per token t of sequence b, with ratio r = exp(logp_new - logp_old) and advantage A_b:
//!   loss_bt = -min(r A, clip(r, 1 - eps_low, 1 + eps_high) A) + beta * k3,
//!   k3 = exp(logp_ref - logp_new) - (logp_ref - logp_new) - 1.
//! The min is computed as an explicit mask: a token is clipped when A > 0 and r > 1 + eps_high, or
//! A < 0 and r < 1 - eps_low; there the surrogate is a constant and its gradient is exactly zero;
//! elsewhere it is r A with gradient r A (no reliance on how `minimum` splits ties).
//!
//! Micro-batching: the loss is a sum over tokens divided by a normalizer. Pass the whole batch's
//! [`BatchTotals`] to every micro-batch and the micro-batch losses (and their gradients) add up to
//! the full-batch loss (and gradient) exactly, up to float summation order.

use candle_core::{DType, Tensor};
use serde::{Deserialize, Serialize};

use super::policy_loss::{cispo_surrogate, policy_ratio, PolicyLoss};
use crate::error::{Error, Result};

/// How per-token losses become one scalar.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum Aggregation {
    /// Sum over all policy tokens of the batch / number of policy tokens in the batch (DAPO's
    /// token-level loss; every token weighs the same). The default.
    #[default]
    TokenMean,
    /// Mean over sequences of each sequence's token mean (the original GRPO, DeepSeekMath eq. 3).
    SeqMeanTokenMean,
    /// Mean over sequences of each sequence's token sum (long replies weigh more).
    SeqMeanTokenSum,
}

impl Aggregation {
    /// The word `grpo.loss.aggregation` in the config uses.
    pub fn as_str(self) -> &'static str {
        match self {
            Aggregation::TokenMean => "token_mean",
            Aggregation::SeqMeanTokenMean => "seq_mean_token_mean",
            Aggregation::SeqMeanTokenSum => "seq_mean_token_sum",
        }
    }
}

impl std::fmt::Display for Aggregation {
    /// The config word, never the Rust variant name: what a person reads matches the config.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Loss hyper-parameters.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct LossConfig {
    /// Lower clip bound: ratios below 1 - eps_low stop pushing down (default 0.2, PPO/DAPO).
    #[serde(default = "default_eps_low")]
    pub eps_low: f64,
    /// Upper clip bound: ratios above 1 + eps_high stop pushing up (default 0.28, DAPO clip-higher).
    #[serde(default = "default_eps_high")]
    pub eps_high: f64,
    /// Weight of the k3 KL penalty (default 0: RLVER trains with KL off; 0 needs no reference).
    #[serde(default)]
    pub beta: f64,
    /// Token aggregation (default `token_mean`).
    #[serde(default)]
    pub aggregation: Aggregation,
    /// The objective: `clip` (default, PPO's clipped token ratio), `gspo` (sequence-level
    /// ratio) or `cispo` (clipped, stop-gradient importance weights); see [`PolicyLoss`].
    #[serde(default)]
    pub kind: PolicyLoss,
}

fn default_eps_low() -> f64 {
    0.2
}
fn default_eps_high() -> f64 {
    0.28
}

impl Default for LossConfig {
    fn default() -> Self {
        Self {
            eps_low: default_eps_low(),
            eps_high: default_eps_high(),
            beta: 0.0,
            aggregation: Aggregation::TokenMean,
            kind: PolicyLoss::Clip,
        }
    }
}

/// The tensors of one (micro-)batch. Shapes: `[B, T]` for log-probs and mask, `[B]` for
/// advantages. Values at masked positions (mask 0) are ignored, even if they are -inf or NaN.
#[derive(Debug, Clone, Copy)]
pub struct LossInputs<'a> {
    /// Log-probs of the sampled tokens under the current policy (differentiable).
    pub logp_new: &'a Tensor,
    /// Log-probs at sampling time (treated as constants).
    pub logp_old: &'a Tensor,
    /// Log-probs under the reference policy; needed when beta > 0, used for the KL stat if given.
    pub logp_ref: Option<&'a Tensor>,
    /// One advantage per sequence `[B]`, or one per token `[B, T]` (PPO, REINFORCE++, turn
    /// credit).
    pub advantages: &'a Tensor,
    /// 1 on policy tokens, 0 on user, system and padding tokens (any dtype; any non-zero counts
    /// as 1, so the mask cannot weight tokens).
    pub mask: &'a Tensor,
}

/// The normalizers of a whole batch: what token_mean and the seq_mean modes divide by.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct BatchTotals {
    /// Policy tokens (mask ones) in the batch.
    pub tokens: usize,
    /// Sequences with at least one policy token.
    pub sequences: usize,
}

impl BatchTotals {
    /// Counts of one mask `[B, T]`.
    pub fn of_mask(mask: &Tensor) -> Result<Self> {
        let rows: Vec<f32> = mask.to_dtype(DType::F32)?.sum(1)?.to_vec1()?;
        Ok(Self {
            tokens: rows.iter().map(|&n| n.round() as usize).sum(),
            sequences: rows.iter().filter(|&&n| n > 0.0).count(),
        })
    }

    /// Totals of several micro-batch masks (the normalizer to pass to each of them).
    pub fn of_masks<'a>(masks: impl IntoIterator<Item = &'a Tensor>) -> Result<Self> {
        let mut total = Self::default();
        for m in masks {
            let t = Self::of_mask(m)?;
            total.tokens += t.tokens;
            total.sequences += t.sequences;
        }
        Ok(total)
    }
}

/// Detached statistics of one (micro-)batch, kept as sums so micro-batches [`merge`](Self::merge).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct LossStats {
    /// Value of the returned loss (with the normalizer used).
    pub loss: f64,
    /// Policy tokens.
    pub tokens: usize,
    /// Sequences with at least one policy token.
    pub sequences: usize,
    /// Tokens with A < 0 and ratio < 1 - eps_low.
    pub clipped_low: usize,
    /// Tokens with A > 0 and ratio > 1 + eps_high.
    pub clipped_high: usize,
    /// Sum of ratios over policy tokens.
    pub ratio_sum: f64,
    /// Sum of k3 KL over policy tokens; `None` when no reference was given.
    pub kl_sum: Option<f64>,
}

impl LossStats {
    /// Adds another micro-batch's statistics (losses add: they share the batch normalizer).
    pub fn merge(&mut self, other: &LossStats) {
        self.loss += other.loss;
        self.tokens += other.tokens;
        self.sequences += other.sequences;
        self.clipped_low += other.clipped_low;
        self.clipped_high += other.clipped_high;
        self.ratio_sum += other.ratio_sum;
        self.kl_sum = match (self.kl_sum, other.kl_sum) {
            (Some(a), Some(b)) => Some(a + b),
            (a, b) => a.or(b),
        };
    }

    /// Share of policy tokens clipped at the low bound (0 without tokens).
    pub fn clip_frac_low(&self) -> f64 {
        per_token(self.clipped_low as f64, self.tokens)
    }

    /// Share of policy tokens clipped at the high bound (0 without tokens).
    pub fn clip_frac_high(&self) -> f64 {
        per_token(self.clipped_high as f64, self.tokens)
    }

    /// Mean importance ratio over policy tokens (1 on the first of `iterations` updates).
    pub fn mean_ratio(&self) -> f64 {
        per_token(self.ratio_sum, self.tokens)
    }

    /// Mean k3 KL to the reference per policy token, if a reference was given.
    pub fn mean_kl(&self) -> Option<f64> {
        self.kl_sum.map(|s| per_token(s, self.tokens))
    }
}

fn per_token(sum: f64, tokens: usize) -> f64 {
    if tokens == 0 {
        0.0
    } else {
        sum / tokens as f64
    }
}

/// The scalar loss (differentiable w.r.t. `logp_new`) and its detached statistics.
#[derive(Debug, Clone)]
pub struct LossOutput {
    /// Scalar loss tensor; call `backward()` on it.
    pub loss: Tensor,
    /// Detached statistics of this (micro-)batch.
    pub stats: LossStats,
}

/// The GRPO loss of one (micro-)batch. `totals` is the whole batch's normalizer when the batch is
/// split into micro-batches; `None` uses this batch's own counts.
pub fn grpo_loss(
    inputs: &LossInputs,
    cfg: &LossConfig,
    totals: Option<BatchTotals>,
) -> Result<LossOutput> {
    let (b, t) = check_shapes(inputs)?;
    let local = BatchTotals::of_mask(inputs.mask)?;
    let totals = check_totals(totals.unwrap_or(local), local)?;
    if cfg.beta > 0.0 && inputs.logp_ref.is_none() {
        return Err(Error::Other(
            "grpo_loss: beta > 0 needs reference log-probs".into(),
        ));
    }
    let dtype = inputs.logp_new.dtype();
    let keep = inputs.mask.ne(0.0)?; // u8 [B, T]
    let zeros = Tensor::zeros((b, t), dtype, inputs.logp_new.device())?;
    // Masked positions become 0 before any arithmetic, so -inf or NaN there cannot leak.
    let clean = |x: &Tensor| keep.where_cond(&x.to_dtype(dtype)?, &zeros);
    let new = clean(inputs.logp_new)?;
    let old = clean(&inputs.logp_old.detach())?;
    let mask = keep.to_dtype(dtype)?;
    let adv = inputs.advantages.detach().to_dtype(dtype)?;
    let adv = if adv.rank() == 1 {
        adv.reshape((b, 1))?
    } else {
        adv
    };

    let ratio = policy_ratio(cfg.kind, &new, &old, &mask)?;
    let (clip, surrogate) = match cfg.kind {
        PolicyLoss::Clip | PolicyLoss::Gspo => {
            let clip = ClipMasks::new(&ratio.detach(), &adv, cfg)?;
            let s = clip.surrogate(&ratio, &adv, cfg)?;
            (clip, s)
        }
        PolicyLoss::Cispo => {
            let r = ratio.detach();
            let clip = ClipMasks {
                low: r.lt(1.0 - cfg.eps_low)?.to_dtype(dtype)?,
                high: r.gt(1.0 + cfg.eps_high)?.to_dtype(dtype)?,
            };
            (
                clip,
                cispo_surrogate(&r, &new, &adv, cfg.eps_low, cfg.eps_high)?,
            )
        }
    };
    let mut per_token = surrogate.neg()?;
    let kl = match inputs.logp_ref {
        Some(lref) => {
            let d = (clean(&lref.detach())? - &new)?;
            Some(((d.exp()? - &d)? - 1.0)?)
        }
        None => None,
    };
    if let (Some(kl), true) = (&kl, cfg.beta > 0.0) {
        per_token = (per_token + (kl * cfg.beta)?)?;
    }
    let loss = aggregate(&(per_token * &mask)?, &mask, cfg.aggregation, totals)?;

    let stats = LossStats {
        loss: scalar(&loss)?,
        tokens: local.tokens,
        sequences: local.sequences,
        clipped_low: masked_sum(&clip.low, &mask)?.round() as usize,
        clipped_high: masked_sum(&clip.high, &mask)?.round() as usize,
        ratio_sum: masked_sum(&ratio.detach(), &mask)?,
        kl_sum: kl.map(|kl| masked_sum(&kl.detach(), &mask)).transpose()?,
    };
    Ok(LossOutput { loss, stats })
}

/// Which tokens the clip holds still, as 0/1 tensors `[B, T]` in the log-probs' dtype (CISPO: the
/// tokens whose importance weight was clipped, whatever the advantage's sign).
struct ClipMasks {
    /// A < 0 and r < 1 - eps_low.
    low: Tensor,
    /// A > 0 and r > 1 + eps_high.
    high: Tensor,
}

impl ClipMasks {
    fn new(ratio: &Tensor, adv: &Tensor, cfg: &LossConfig) -> Result<Self> {
        let dtype = ratio.dtype();
        let both = |r: Tensor, a: Tensor| -> Result<Tensor> {
            Ok(r.to_dtype(dtype)?.broadcast_mul(&a.to_dtype(dtype)?)?)
        };
        Ok(Self {
            low: both(ratio.lt(1.0 - cfg.eps_low)?, adv.lt(0.0)?)?,
            high: both(ratio.gt(1.0 + cfg.eps_high)?, adv.gt(0.0)?)?,
        })
    }

    /// min(r A, clip(r) A): r A where unclipped (differentiable), bound A where clipped
    /// (constant, zero gradient).
    fn surrogate(&self, ratio: &Tensor, adv: &Tensor, cfg: &LossConfig) -> Result<Tensor> {
        let unclipped = ((1.0 - &self.high)? - &self.low)?;
        let bound = ((&self.high * (1.0 + cfg.eps_high))? + (&self.low * (1.0 - cfg.eps_low))?)?;
        Ok(((ratio * &unclipped)? + bound)?.broadcast_mul(adv)?)
    }
}

fn check_totals(totals: BatchTotals, local: BatchTotals) -> Result<BatchTotals> {
    if totals.tokens < local.tokens || totals.sequences < local.sequences {
        return Err(Error::Other(format!(
            "grpo_loss: batch totals {totals:?} are smaller than this micro-batch's {local:?}"
        )));
    }
    Ok(totals)
}

fn masked_sum(x: &Tensor, mask: &Tensor) -> Result<f64> {
    scalar(&(x * mask)?.sum_all()?)
}

/// Sum of masked per-token losses divided by the aggregation's normalizer (at least 1, so an
/// all-masked batch gives a zero loss that is still part of the graph).
fn aggregate(
    masked: &Tensor,
    mask: &Tensor,
    aggregation: Aggregation,
    totals: BatchTotals,
) -> Result<Tensor> {
    let (sum, denom) = match aggregation {
        Aggregation::TokenMean => (masked.sum_all()?, totals.tokens),
        Aggregation::SeqMeanTokenSum => (masked.sum_all()?, totals.sequences),
        Aggregation::SeqMeanTokenMean => {
            let counts = mask.sum(1)?.clamp(1.0, f64::INFINITY)?;
            ((masked.sum(1)? / counts)?.sum_all()?, totals.sequences)
        }
    };
    Ok((sum / denom.max(1) as f64)?)
}

fn check_shapes(inputs: &LossInputs) -> Result<(usize, usize)> {
    let (b, t) = inputs.logp_new.dims2()?;
    let mut named = vec![("logp_old", inputs.logp_old), ("mask", inputs.mask)];
    if let Some(r) = inputs.logp_ref {
        named.push(("logp_ref", r));
    }
    for (name, x) in named {
        if x.dims() != [b, t] {
            return Err(Error::Other(format!(
                "grpo_loss: {name} has shape {:?}, logp_new has [{b}, {t}]",
                x.dims()
            )));
        }
    }
    if inputs.advantages.dims() != [b] && inputs.advantages.dims() != [b, t] {
        return Err(Error::Other(format!(
            "grpo_loss: advantages have shape {:?}, expected [{b}] or [{b}, {t}]",
            inputs.advantages.dims()
        )));
    }
    Ok((b, t))
}

fn scalar(x: &Tensor) -> Result<f64> {
    Ok(x.to_dtype(DType::F64)?.to_scalar::<f64>()?)
}

#[cfg(test)]
#[path = "loss_tests.rs"]
mod tests;
