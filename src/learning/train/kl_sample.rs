//! The KL to the reference estimated every step on a few dialogues, whatever beta is
//! (`stability.kl_sample`): with beta = 0 (RLVER's setting) nothing else shows how far the
//! policy has drifted from the base. The estimate is the k3 estimator (Schulman 2020) of
//! KL(policy || reference) averaged over the sampled dialogues' policy tokens, with the policy
//! as it sampled this step (before the update) and the reference = adapters off.
//!
//! The dialogues are the first `stability.kl_sample` the update trains on: the update already
//! has their policy log-probs (its first forward, before any optimizer step) and, with beta > 0,
//! their reference log-probs, so the estimate costs at most one inference pass
//! (`update::policy_update`). A step that trains on nothing estimates it here instead, on its
//! first dialogues, with both passes ([`kl_sample`]).

use candle_core::Tensor;

use super::sequence::{padded_masks, TokenSequence};
use crate::error::Result;
use crate::model::{AdapterMode, ChatModel, Pass};

/// Running sums of the k3 terms and of the tokens they cover.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct KlSum {
    sum: f64,
    tokens: f64,
}

impl KlSum {
    /// Adds the positions of `mask` ([B, T], 1 at a policy token): k3 = exp(d) - d - 1 with
    /// d = log p_ref - log p_policy, per position.
    pub fn add(&mut self, policy: &Tensor, reference: &Tensor, mask: &Tensor) -> Result<()> {
        let d = (reference - policy)?;
        let k3 = ((d.exp()? - &d)? - 1.0)?;
        self.sum += (k3 * mask)?.sum_all()?.to_scalar::<f32>()? as f64;
        self.tokens += mask.sum_all()?.to_scalar::<f32>()? as f64;
        Ok(())
    }

    /// The mean k3 per token (None when no token was added).
    pub fn mean(&self) -> Option<f64> {
        (self.tokens > 0.0).then(|| self.sum / self.tokens)
    }
}

/// Mean k3 KL per policy token over `seqs` (None when they hold no policy token), both policies
/// at the sampling `temperature`, from two inference passes (adapters on, adapters off).
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
    let mask = Tensor::from_vec(
        padded_masks(&seqs, width),
        (seqs.len(), width),
        &model.device,
    )?;
    let cur = model.scored_logprobs(&ids, AdapterMode::On, Pass::Infer, temperature, &mask)?;
    let reference =
        model.scored_logprobs(&ids, AdapterMode::Off, Pass::Infer, temperature, &mask)?;
    let mut kl = KlSum::default();
    kl.add(&cur, &reference, &mask)?;
    Ok(kl.mean())
}

#[cfg(test)]
mod tests {
    use super::*;
    use candle_core::Device;

    #[test]
    fn k3_by_hand() -> Result<()> {
        // d = ref - policy = [0, ln 2, -ln 2 (masked out)] and [ln 0.5]:
        // k3(0) = 0; k3(ln 2) = 2 - 0.693147 - 1 = 0.306853; k3(ln 0.5) = 0.5 + 0.693147 - 1
        // = 0.193147. Mean over the 3 unmasked tokens = 0.5 / 3 = 0.166667.
        let dev = Device::Cpu;
        let ln2 = std::f32::consts::LN_2;
        let policy = Tensor::new(&[[-1.0f32, -1.0, -1.0], [-2.0, 0.0, 0.0]], &dev)?;
        let reference = Tensor::new(
            &[[-1.0f32, -1.0 + ln2, -1.0 - ln2], [-2.0 - ln2, 0.0, 0.0]],
            &dev,
        )?;
        let mask = Tensor::new(&[[1.0f32, 1.0, 0.0], [1.0, 0.0, 0.0]], &dev)?;
        let mut kl = KlSum::default();
        assert_eq!(kl.mean(), None);
        kl.add(
            &policy.narrow(0, 0, 1)?,
            &reference.narrow(0, 0, 1)?,
            &mask.narrow(0, 0, 1)?,
        )?;
        assert!((kl.mean().unwrap() - 0.306853 / 2.0).abs() < 1e-6);
        kl.add(
            &policy.narrow(0, 1, 1)?,
            &reference.narrow(0, 1, 1)?,
            &mask.narrow(0, 1, 1)?,
        )?;
        assert!(
            (kl.mean().unwrap() - 0.5 / 3.0).abs() < 1e-6,
            "{:?}",
            kl.mean()
        );
        Ok(())
    }
}
