//! Stability signals logged every step for every algorithm (metrics.csv): the repeated-reply rate,
//! the advantage's mean and spread over policy tokens, and the `collapse` flag.
//!
//! The collapse rule (`stability:` in the config; docs/DESIGN.md "Stability metrics"): a step is
//! flagged when any of
//! - its entropy estimate is below `entropy_frac` (default 0.2) of the run's first measured
//!   entropy (loss of diversity, the RL side's mode collapse);
//! - its mean reply length is below `length_frac` (default 0.3) of the run's first step's
//!   (replies shrinking to nothing, a common reward hack);
//! - its repeated-reply rate is above `repeat_rate` (default 0.5): most replies in the batch are
//!   copies of another.

use std::collections::HashSet;

use serde::{Deserialize, Serialize};

/// `stability:` in the config: the subsampled KL estimate and the collapse thresholds.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct StabilityConfig {
    /// Dialogues whose k3 KL to the reference (adapters off) is estimated every step, whatever
    /// `grpo.loss.beta` is (default 2; 0 turns the estimate off): the first ones the update
    /// trains on, or the step's first when it trains on none.
    #[serde(default = "default_kl_sample")]
    pub kl_sample: usize,
    /// Collapse when entropy falls below this share of the first step's (default 0.2).
    #[serde(default = "default_entropy_frac")]
    pub entropy_frac: f64,
    /// Collapse when the mean reply length falls below this share of the first step's
    /// (default 0.3).
    #[serde(default = "default_length_frac")]
    pub length_frac: f64,
    /// Collapse when more than this share of the batch's replies repeat another (default 0.5).
    #[serde(default = "default_repeat_rate")]
    pub repeat_rate: f64,
}

fn default_kl_sample() -> usize {
    2
}
fn default_entropy_frac() -> f64 {
    0.2
}
fn default_length_frac() -> f64 {
    0.3
}
fn default_repeat_rate() -> f64 {
    0.5
}

impl Default for StabilityConfig {
    fn default() -> Self {
        Self {
            kl_sample: default_kl_sample(),
            entropy_frac: default_entropy_frac(),
            length_frac: default_length_frac(),
            repeat_rate: default_repeat_rate(),
        }
    }
}

/// Share of replies whose text (trimmed) equals an earlier reply of the batch: 1 - distinct /
/// total; 0 for no replies.
pub fn repeated_reply_rate<'a>(replies: impl IntoIterator<Item = &'a str>) -> f64 {
    let mut seen = HashSet::new();
    let (mut total, mut repeats) = (0usize, 0usize);
    for r in replies {
        total += 1;
        if !seen.insert(r.trim()) {
            repeats += 1;
        }
    }
    if total == 0 {
        0.0
    } else {
        repeats as f64 / total as f64
    }
}

/// Token-weighted mean and population std of per-token advantages (0, 0 without tokens).
pub fn advantage_stats(per_token: &[Vec<f32>]) -> (f64, f64) {
    let n: usize = per_token.iter().map(Vec::len).sum();
    if n == 0 {
        return (0.0, 0.0);
    }
    let mean = per_token.iter().flatten().map(|&x| x as f64).sum::<f64>() / n as f64;
    let var = per_token
        .iter()
        .flatten()
        .map(|&x| (x as f64 - mean).powi(2))
        .sum::<f64>()
        / n as f64;
    (mean, var.sqrt())
}

/// What the collapse rule compares a step with: the run's first measured values.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Baseline {
    /// The first measured entropy of the run.
    pub entropy: Option<f64>,
    /// The first step's mean reply length.
    pub reply_len: Option<f64>,
}

/// The collapse flag of a step (rule in the module docs).
pub fn collapsed(
    cfg: &StabilityConfig,
    base: &Baseline,
    entropy: Option<f64>,
    reply_len: f64,
    repeat_rate: f64,
) -> bool {
    let entropy_low = matches!((entropy, base.entropy), (Some(e), Some(b)) if b > 0.0 && e < cfg.entropy_frac * b);
    let short = base
        .reply_len
        .is_some_and(|b| b > 0.0 && reply_len < cfg.length_frac * b);
    entropy_low || short || repeat_rate > cfg.repeat_rate
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn repeated_replies_by_hand() {
        // "a", "b", "a ", "a", "c": "a" repeats twice (trimmed) -> 2 of 5 = 0.4.
        assert!((repeated_reply_rate(["a", "b", "a ", "a", "c"]) - 0.4).abs() < 1e-12);
        assert_eq!(repeated_reply_rate([]), 0.0);
    }

    #[test]
    fn advantage_stats_by_hand() {
        // [1, -1] and [2]: mean 2/3; deviations 1/3, -5/3, 4/3: squares 1/9 + 25/9 + 16/9 = 42/9,
        // / 3 = 1.555556, std 1.247219.
        let (m, s) = advantage_stats(&[vec![1.0, -1.0], vec![2.0]]);
        assert!((m - 2.0 / 3.0).abs() < 1e-9 && (s - 1.247_219).abs() < 1e-6);
        assert_eq!(advantage_stats(&[]), (0.0, 0.0));
    }

    #[test]
    fn collapse_rule() {
        let c = StabilityConfig::default();
        let base = Baseline {
            entropy: Some(2.0),
            reply_len: Some(20.0),
        };
        // Healthy: entropy 1.0 >= 0.4, length 10 >= 6, repeats 0.1 <= 0.5.
        assert!(!collapsed(&c, &base, Some(1.0), 10.0, 0.1));
        // Entropy 0.3 < 0.2 * 2.0 = 0.4.
        assert!(collapsed(&c, &base, Some(0.3), 10.0, 0.1));
        // Length 5 < 0.3 * 20 = 6.
        assert!(collapsed(&c, &base, Some(1.0), 5.0, 0.1));
        // Most replies copies.
        assert!(collapsed(&c, &base, Some(1.0), 10.0, 0.6));
        // No baseline yet: only the repeat rule can fire.
        assert!(!collapsed(&c, &Baseline::default(), Some(0.0), 0.0, 0.0));
    }
}
