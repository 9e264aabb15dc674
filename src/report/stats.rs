//! Rank statistics with percentile-bootstrap intervals, for checking a score against human labels:
//! Spearman's rank correlation, the AUC of a score for a binary label, and a seeded bootstrap over
//! items. Ties get average ranks everywhere, so ordinal labels (0/1/2, 1-5) are handled as they are.
//!
//! - Spearman's rho is Pearson's correlation of the average ranks (the tie-corrected form).
//! - The AUC is the Mann-Whitney probability that a random positive outscores a random negative,
//!   ties counting one half: AUC = (R_pos - n_pos (n_pos + 1) / 2) / (n_pos n_neg), with R_pos the
//!   sum of the positives' average ranks (Hanley & McNeil, Radiology 1982).
//! - The bootstrap resamples items with replacement (seeded ChaCha8: same seed, same interval on
//!   every platform) and takes the percentile interval (Efron & Tibshirani 1993, ch. 13).

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// Settings of the percentile bootstrap.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BootstrapConfig {
    /// Number of resamples B (default 2000).
    pub resamples: usize,
    /// Seed of the ChaCha8 generator (default 0).
    pub seed: u64,
    /// Two-sided coverage of the interval (default 0.95).
    pub level: f64,
}

impl Default for BootstrapConfig {
    fn default() -> Self {
        BootstrapConfig {
            resamples: 2000,
            seed: 0,
            level: 0.95,
        }
    }
}

/// A statistic with its percentile-bootstrap interval.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Estimate {
    pub value: f64,
    pub low: f64,
    pub high: f64,
    /// Items the statistic was computed on.
    pub n: usize,
}

impl Estimate {
    /// "0.712 [0.680, 0.741]".
    pub fn show(&self) -> String {
        format!("{:.3} [{:.3}, {:.3}]", self.value, self.low, self.high)
    }
}

/// The `q` quantile of sorted values by linear interpolation between order statistics (Hyndman &
/// Fan type 7, R's default): h = (n - 1) q, value = x[floor h] + (h - floor h)(x[floor h + 1] - x[floor h]).
pub fn percentile(sorted: &[f64], q: f64) -> f64 {
    match sorted.len() {
        0 => f64::NAN,
        1 => sorted[0],
        n => {
            let h = (n - 1) as f64 * q.clamp(0.0, 1.0);
            let lo = h.floor() as usize;
            let hi = (lo + 1).min(n - 1);
            sorted[lo] + (h - lo as f64) * (sorted[hi] - sorted[lo])
        }
    }
}

/// 1-based ranks, ties sharing the average of the ranks they span.
pub fn average_ranks(x: &[f64]) -> Vec<f64> {
    let mut order: Vec<usize> = (0..x.len()).collect();
    order.sort_by(|&a, &b| x[a].total_cmp(&x[b]));
    let mut ranks = vec![0.0; x.len()];
    let mut i = 0;
    while i < order.len() {
        let mut j = i;
        while j + 1 < order.len() && x[order[j + 1]] == x[order[i]] {
            j += 1;
        }
        let rank = (i + j) as f64 / 2.0 + 1.0;
        for &k in &order[i..=j] {
            ranks[k] = rank;
        }
        i = j + 1;
    }
    ranks
}

/// Pearson's correlation; NaN when either side is constant or there are fewer than 2 items.
pub fn pearson(x: &[f64], y: &[f64]) -> f64 {
    let n = x.len().min(y.len());
    if n < 2 {
        return f64::NAN;
    }
    let mx = x[..n].iter().sum::<f64>() / n as f64;
    let my = y[..n].iter().sum::<f64>() / n as f64;
    let (mut sxy, mut sxx, mut syy) = (0.0, 0.0, 0.0);
    for (a, b) in x.iter().zip(y) {
        sxy += (a - mx) * (b - my);
        sxx += (a - mx) * (a - mx);
        syy += (b - my) * (b - my);
    }
    if sxx == 0.0 || syy == 0.0 {
        return f64::NAN;
    }
    sxy / (sxx * syy).sqrt()
}

/// Spearman's rank correlation with average ranks for ties.
pub fn spearman(x: &[f64], y: &[f64]) -> f64 {
    pearson(&average_ranks(x), &average_ranks(y))
}

/// Probability that a positive item outscores a negative one (ties count one half); NaN when
/// either class is empty.
pub fn auc(scores: &[f64], positive: &[bool]) -> f64 {
    let ranks = average_ranks(scores);
    let n_pos = positive.iter().filter(|&&p| p).count() as f64;
    let n_neg = positive.len() as f64 - n_pos;
    if n_pos == 0.0 || n_neg == 0.0 {
        return f64::NAN;
    }
    let r_pos: f64 = ranks
        .iter()
        .zip(positive)
        .filter(|(_, &p)| p)
        .map(|(r, _)| r)
        .sum();
    (r_pos - n_pos * (n_pos + 1.0) / 2.0) / (n_pos * n_neg)
}

/// `stat` on all `n` items, with the percentile interval of `stat` over B resamples of the item
/// indices. Resamples where the statistic is undefined (NaN: one class drawn, constant side) are
/// left out of the interval.
pub fn bootstrap(n: usize, cfg: &BootstrapConfig, stat: impl Fn(&[usize]) -> f64) -> Estimate {
    let all: Vec<usize> = (0..n).collect();
    let value = stat(&all);
    let mut rng = ChaCha8Rng::seed_from_u64(cfg.seed);
    let mut idx = vec![0; n];
    let mut draws: Vec<f64> = Vec::with_capacity(cfg.resamples);
    if n > 0 {
        for _ in 0..cfg.resamples {
            for slot in idx.iter_mut() {
                *slot = rng.random_range(0..n);
            }
            let s = stat(&idx);
            if s.is_finite() {
                draws.push(s);
            }
        }
    }
    draws.sort_by(f64::total_cmp);
    let alpha = (1.0 - cfg.level).clamp(0.0, 1.0) / 2.0;
    Estimate {
        value,
        low: percentile(&draws, alpha),
        high: percentile(&draws, 1.0 - alpha),
        n,
    }
}

/// Spearman's rho of `x` against `y` with its bootstrap interval.
pub fn spearman_ci(x: &[f64], y: &[f64], cfg: &BootstrapConfig) -> Estimate {
    bootstrap(x.len().min(y.len()), cfg, |idx| {
        let xs: Vec<f64> = idx.iter().map(|&i| x[i]).collect();
        let ys: Vec<f64> = idx.iter().map(|&i| y[i]).collect();
        spearman(&xs, &ys)
    })
}

/// The AUC of `scores` for `positive` with its bootstrap interval.
pub fn auc_ci(scores: &[f64], positive: &[bool], cfg: &BootstrapConfig) -> Estimate {
    bootstrap(scores.len().min(positive.len()), cfg, |idx| {
        let s: Vec<f64> = idx.iter().map(|&i| scores[i]).collect();
        let p: Vec<bool> = idx.iter().map(|&i| positive[i]).collect();
        auc(&s, &p)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-12
    }

    #[test]
    fn ties_share_the_average_rank() {
        assert_eq!(
            average_ranks(&[10.0, 20.0, 10.0, 30.0]),
            vec![1.5, 3.0, 1.5, 4.0]
        );
    }

    #[test]
    fn spearman_matches_a_hand_computed_value() {
        // x ranks 1..5; y = [1, 3, 2, 5, 4] has d = [0, -1, 1, -1, 1], sum d^2 = 4:
        // rho = 1 - 6 * 4 / (5 * 24) = 0.8.
        assert!(close(
            spearman(&[1.0, 2.0, 3.0, 4.0, 5.0], &[1.0, 3.0, 2.0, 5.0, 4.0]),
            0.8
        ));
        // With ties in y = [0, 0, 1, 1] (ranks 1.5, 1.5, 3.5, 3.5) against x = 1..4:
        // cov = sum (rx - 2.5)(ry - 2.5) = (-1.5)(-1) + (-0.5)(-1) + 0.5 + 1.5 = 4;
        // sxx = 5, syy = 4: rho = 4 / sqrt(20) = 0.894427...
        let rho = spearman(&[1.0, 2.0, 3.0, 4.0], &[0.0, 0.0, 1.0, 1.0]);
        assert!(close(rho, 4.0 / 20f64.sqrt()), "{rho}");
        assert!(spearman(&[1.0, 1.0], &[1.0, 2.0]).is_nan());
    }

    #[test]
    fn auc_matches_a_hand_computed_value() {
        // Positives 0.9, 0.5; negatives 0.5, 0.1. Pairs: (0.9 > 0.5) 1, (0.9 > 0.1) 1,
        // (0.5 = 0.5) 1/2, (0.5 > 0.1) 1: AUC = 3.5 / 4.
        let auc = auc(&[0.9, 0.5, 0.5, 0.1], &[true, true, false, false]);
        assert!(close(auc, 0.875), "{auc}");
        assert!(super::auc(&[1.0, 2.0], &[true, true]).is_nan());
    }

    #[test]
    fn bootstrap_is_seeded_and_brackets_the_value() {
        let x: Vec<f64> = (0..60).map(f64::from).collect();
        let y: Vec<f64> = x.iter().map(|v| v + 15.0 * (v * 1.7).sin()).collect();
        let cfg = BootstrapConfig {
            resamples: 300,
            ..Default::default()
        };
        let a = spearman_ci(&x, &y, &cfg);
        assert_eq!(a, spearman_ci(&x, &y, &cfg));
        assert!(a.low <= a.value && a.value <= a.high, "{}", a.show());
        assert!(a.high - a.low > 0.0 && a.n == 60);
        let other = spearman_ci(&x, &y, &BootstrapConfig { seed: 1, ..cfg });
        assert_ne!(a.low, other.low);
    }

    #[test]
    fn percentile_interpolates_between_order_statistics() {
        assert!(close(percentile(&[1.0, 2.0, 3.0, 4.0], 0.5), 2.5));
        assert!(close(percentile(&[1.0, 2.0, 3.0, 4.0], 0.25), 1.75));
        assert!(percentile(&[], 0.5).is_nan());
    }
}
