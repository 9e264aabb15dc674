//! The policy-loss variants other trainers ship, beside PPO's clipped token ratio
//! (`grpo.loss.kind`):
//!
//! - `clip` (default): r_t = pi(y_t) / pi_old(y_t), loss -min(r A, clip(r, 1 - eps_low,
//!   1 + eps_high) A) per token (PPO; DAPO's clip-higher bounds).
//! - `gspo` (Zheng et al. 2025, "Group Sequence Policy Optimization", eq. 7 and its token form
//!   GSPO-token, eq. 13): one ratio per sequence, the geometric mean of its token ratios,
//!   s_i = exp(mean_t log r_t), clipped like PPO's. In the token form each token's ratio is
//!   sg[s_i] * pi(y_t) / sg[pi(y_t)]: its value is s_i, its gradient s_i grad log pi(y_t), so with
//!   one advantage per sequence and `seq_mean_token_mean` aggregation it is exactly GSPO's
//!   objective, and per-token advantages (PPO, turn credit) work too. The paper's clip range is
//!   much narrower (eps 3e-4 / 4e-4) since s_i is a length-normalized ratio.
//! - `cispo` (MiniMax-M1, 2025, "Scaling Test-Time Compute Efficiently with Lightning
//!   Attention", eq. 4): REINFORCE with clipped, stop-gradient importance weights on every token,
//!   loss -sg(clip(r, 1 - eps_low, 1 + eps_high)) A log pi(y_t): no token is dropped from the
//!   gradient, the weight is only bounded.

use candle_core::Tensor;
use serde::{Deserialize, Serialize};

use crate::error::Result;

/// Which policy objective the loss uses.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum PolicyLoss {
    /// PPO's clipped token-level importance ratio. The default.
    #[default]
    Clip,
    /// GSPO's sequence-level importance ratio (Zheng et al. 2025).
    Gspo,
    /// CISPO's clipped stop-gradient importance weights (MiniMax-M1 2025).
    Cispo,
}

impl PolicyLoss {
    /// The word `grpo.loss.kind` in the config uses.
    pub fn as_str(self) -> &'static str {
        match self {
            PolicyLoss::Clip => "clip",
            PolicyLoss::Gspo => "gspo",
            PolicyLoss::Cispo => "cispo",
        }
    }
}

impl std::fmt::Display for PolicyLoss {
    /// The config word, never the Rust variant name: what a person reads matches the config.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The per-token ratio `[B, T]` the objective clips. `new` and `old` are already zero at masked
/// positions; `mask` is 0/1 in their dtype.
pub fn policy_ratio(kind: PolicyLoss, new: &Tensor, old: &Tensor, mask: &Tensor) -> Result<Tensor> {
    let log_ratio = (new - old)?;
    Ok(match kind {
        PolicyLoss::Clip | PolicyLoss::Cispo => log_ratio.exp()?,
        PolicyLoss::Gspo => {
            let counts = mask.sum_keepdim(1)?.clamp(1.0, f64::INFINITY)?;
            let seq = ((&log_ratio * mask)?.sum_keepdim(1)? / counts)?.detach(); // [B, 1]
                                                                                 // sg[log s_i] + log pi(y_t) - sg[log pi(y_t)]: value log s_i, gradient grad log pi.
            let tok = (new - new.detach())?;
            tok.broadcast_add(&seq)?.exp()?
        }
    })
}

/// CISPO's surrogate per token: sg(clip(r, 1 - eps_low, 1 + eps_high)) * A * log pi(y_t), where
/// `ratio` is detached and `adv` is `[B, 1]` or `[B, T]`.
pub fn cispo_surrogate(
    ratio: &Tensor,
    new: &Tensor,
    adv: &Tensor,
    eps_low: f64,
    eps_high: f64,
) -> Result<Tensor> {
    let w = ratio.detach().clamp(1.0 - eps_low, 1.0 + eps_high)?;
    Ok((w * new)?.broadcast_mul(adv)?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::learning::optimize::{grpo_loss, Aggregation, LossConfig, LossInputs};
    use candle_core::{Device, Var};

    type Outcome = (f64, Vec<Vec<f32>>, (usize, usize));

    /// The loss, its gradient w.r.t. logp_new and the (low, high) clip counts on a 2 x 3 batch
    /// with old log-probs [[-1, -2, -0.5], [-0.3, -1, -2]], logp_new = old + `delta`, and the
    /// last token of row 0 masked.
    fn run(kind: PolicyLoss, agg: Aggregation, delta: &[[f32; 3]; 2], adv: Tensor) -> Outcome {
        let dev = Device::Cpu;
        let old = Tensor::new(&[[-1.0f32, -2.0, -0.5], [-0.3, -1.0, -2.0]], &dev).unwrap();
        let d = Tensor::new(delta, &dev).unwrap();
        let new = Var::from_tensor(&(&old + &d).unwrap()).unwrap();
        let mask = Tensor::new(&[[1u8, 1, 0], [1, 1, 1]], &dev).unwrap();
        let cfg = LossConfig {
            kind,
            aggregation: agg,
            ..LossConfig::default()
        };
        let inputs = LossInputs {
            logp_new: new.as_tensor(),
            logp_old: &old,
            logp_ref: None,
            advantages: &adv,
            mask: &mask,
        };
        let out = grpo_loss(&inputs, &cfg, None).unwrap();
        let g = out.loss.backward().unwrap();
        let grad = g.get(new.as_tensor()).unwrap().to_vec2().unwrap();
        let clipped = (out.stats.clipped_low, out.stats.clipped_high);
        (out.stats.loss, grad, clipped)
    }

    fn seq_adv(a: [f32; 2]) -> Tensor {
        Tensor::new(&a, &Device::Cpu).unwrap()
    }

    fn close(a: f64, b: f64) {
        assert!((a - b).abs() < 1e-5, "{a} vs {b}");
    }

    #[test]
    fn gspo_by_hand() {
        // Row 0: log-ratios [0.1, 0.3] (third token masked; its 9.0 must not count), A = +1:
        // s_0 = exp(0.2) = 1.221403 < 1.28, unclipped. Row 1: log-ratios [0.5, 0.5, 0.5], A = +1:
        // s_1 = exp(0.5) = 1.648721 > 1.28, clipped high: surrogate 1.28, no gradient.
        // seq_mean_token_mean: (1.221403 + 1.28) / 2 = 1.250702, loss -1.250702.
        // Gradient of row 0's tokens: -(1/2 sequences)(1/2 tokens) s_0 = -0.305351 each, which is
        // -(1/2) d s_0 / d logp_t (d s_0 / d logp_t = s_0 / 2): GSPO's sequence gradient.
        let (loss, g, clipped) = run(
            PolicyLoss::Gspo,
            Aggregation::SeqMeanTokenMean,
            &[[0.1, 0.3, 9.0], [0.5, 0.5, 0.5]],
            seq_adv([1.0, 1.0]),
        );
        close(loss, -1.250_702);
        close(g[0][0] as f64, -0.305_351);
        close(g[0][1] as f64, -0.305_351);
        assert_eq!(g[0][2], 0.0);
        assert_eq!(g[1], vec![0.0, 0.0, 0.0]);
        // The clip counts tokens: row 1's three.
        assert_eq!(clipped, (0, 3));
    }

    #[test]
    fn cispo_by_hand() {
        // Row 0 (A = +1): log-ratios [0.5, -0.5], ratios 1.648721, 0.606531 -> weights clipped to
        // 1.28 and 0.8 (both still get gradient). Row 1 (A = -1): log-ratios [0, 0, 0], weight 1.
        // token_mean over 5 tokens: gradient -w A / 5 = -0.256, -0.16 | +0.2, +0.2, +0.2.
        // Loss: logp_new row 0 = [-0.5, -2.5], row 1 = [-0.3, -1, -2];
        // -(1.28 * -0.5 + 0.8 * -2.5 - 1 * (-0.3 - 1 - 2)) / 5 = -(-0.64 - 2.0 + 3.3) / 5 = -0.132.
        let (loss, g, clipped) = run(
            PolicyLoss::Cispo,
            Aggregation::TokenMean,
            &[[0.5, -0.5, 0.0], [0.0, 0.0, 0.0]],
            seq_adv([1.0, -1.0]),
        );
        close(loss, -0.132);
        for (x, y) in g[0].iter().zip([-0.256, -0.16, 0.0]) {
            close(*x as f64, y);
        }
        for x in &g[1] {
            close(*x as f64, 0.2);
        }
        assert_eq!(clipped, (1, 1));
    }

    #[test]
    fn per_token_advantages_match_per_sequence_ones_when_constant() {
        // [B, T] advantages equal along each row give the [B] result bit for bit.
        let delta = [[0.0, 0.5, 0.0], [0.1, -0.5, 0.3]];
        let per_seq = run(
            PolicyLoss::Clip,
            Aggregation::TokenMean,
            &delta,
            seq_adv([1.0, -0.5]),
        );
        let rows = Tensor::new(&[[1.0f32, 1.0, 1.0], [-0.5, -0.5, -0.5]], &Device::Cpu).unwrap();
        let per_tok = run(PolicyLoss::Clip, Aggregation::TokenMean, &delta, rows);
        assert_eq!(per_seq.0.to_bits(), per_tok.0.to_bits());
        assert_eq!(per_seq.1, per_tok.1);
        assert_eq!(per_seq.2, per_tok.2);
    }
}
