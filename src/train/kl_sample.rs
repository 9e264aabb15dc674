//! The KL to the reference estimated every step on a few dialogues, whatever beta is
//! (`stability.kl_sample`): with beta = 0 (RLVER's setting) nothing else shows how far the
//! policy has drifted from the base. The estimate is the k3 estimator (Schulman 2020) of
//! KL(policy || reference) averaged over the sampled dialogues' policy tokens, with the policy
//! as it sampled this step (before the update) and the reference = adapters off.

use super::sequence::{padded_masks, TokenSequence};
use crate::error::Result;
use crate::model::{AdapterMode, ChatModel, Pass};

/// Mean k3 KL per policy token over `seqs` (None when they hold no policy token), both policies
/// at the sampling `temperature`.
pub fn kl_sample(
    model: &ChatModel,
    seqs: &[&TokenSequence],
    temperature: f64,
) -> Result<Option<f64>> {
    let seqs: Vec<&TokenSequence> = seqs
        .iter()
        .copied()
        .filter(|s| s.policy_tokens() > 0)
        .collect();
    if seqs.is_empty() {
        return Ok(None);
    }
    let ids: Vec<Vec<u32>> = seqs.iter().map(|s| s.ids().to_vec()).collect();
    let width = ids.iter().map(Vec::len).max().unwrap_or(1) - 1;
    let mask = candle_core::Tensor::from_vec(
        padded_masks(&seqs, width),
        (seqs.len(), width),
        &model.device,
    )?;
    let cur = model.scored_logprobs(&ids, AdapterMode::On, Pass::Infer, temperature, &mask)?;
    let reference =
        model.scored_logprobs(&ids, AdapterMode::Off, Pass::Infer, temperature, &mask)?;
    let d = (reference - cur)?;
    let k3 = ((d.exp()? - &d)? - 1.0)?;
    let sum = (k3 * &mask)?.sum_all()?.to_scalar::<f32>()? as f64;
    let n = mask.sum_all()?.to_scalar::<f32>()? as f64;
    Ok(Some(sum / n.max(1.0)))
}
