//! The supervised loss: the negative log-likelihood of the target tokens, averaged over the
//! target tokens of the whole batch (`sft`). A micro-batch divides its sum by the batch's token
//! count, so the gradients accumulated over micro-batches are the whole batch's gradient.

use candle_core::Tensor;

use crate::error::Result;

/// -sum(mask * logp) / tokens: `logp` and `mask` are `[B, T-1]` (mask 1 at target tokens),
/// `tokens` the number of target tokens in the whole batch.
pub fn masked_nll(logp: &Tensor, mask: &Tensor, tokens: usize) -> Result<Tensor> {
    let sum = (logp * mask)?.sum_all()?;
    Ok((sum * (-1.0 / tokens.max(1) as f64))?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use candle_core::Device;

    #[test]
    fn the_mean_over_target_tokens_of_the_whole_batch() {
        // Probabilities 1/2, 1/4, 1/8 and 1/16; the third is not a target.
        let p = [0.5f32, 0.25, 0.125, 0.0625];
        let logp = Tensor::from_vec(p.map(f32::ln).to_vec(), (2, 2), &Device::Cpu).unwrap();
        let mask = Tensor::from_vec(vec![1f32, 1.0, 0.0, 1.0], (2, 2), &Device::Cpu).unwrap();
        // (ln 2 + ln 4 + ln 16) / 3 = 7 ln 2 / 3 = 1.6173434
        let whole = masked_nll(&logp, &mask, 3)
            .unwrap()
            .to_scalar::<f32>()
            .unwrap();
        assert!((whole - 1.617_343_4).abs() < 1e-6, "{whole}");
        // Two micro-batches (one row each) that share the batch's count sum to the whole.
        let half = |r: usize| {
            let l = logp.narrow(0, r, 1).unwrap();
            let m = mask.narrow(0, r, 1).unwrap();
            masked_nll(&l, &m, 3).unwrap().to_scalar::<f32>().unwrap()
        };
        assert!((half(0) + half(1) - whole).abs() < 1e-6);
    }
}
