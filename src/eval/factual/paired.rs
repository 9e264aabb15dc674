//! Statistics for comparing a model's error rate with a baseline's on the same prompts: the change
//! against the baseline with a 95% bootstrap interval, and a McNemar test.
//!
//! - Difference in error rate, model minus baseline, with a percentile bootstrap interval. The
//!   bootstrap resamples *clusters* (QA items) with replacement, so the 18 prompts of one item
//!   move together; pass one cluster per pair to resample prompts. Seeded ChaCha8: same seed, same
//!   interval on every platform.
//! - McNemar's test on the discordant pairs: b = model wrong and baseline right, c = model right and
//!   baseline wrong. Exact: two-sided binomial, p = min(1, 2 * sum_{k <= min(b,c)} C(b+c, k) / 2^(b+c)).
//!   Chi-square with continuity correction (Edwards 1948): (|b - c| - 1)^2 / (b + c), 1 d.f.
//!   McNemar treats pairs as independent; on pooled rows (several prompts per item) its p-value is
//!   optimistic, the clustered bootstrap interval is not.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use crate::error::{Error, Result};
pub use crate::report::stats::{percentile, BootstrapConfig};

/// McNemar's test on paired binary outcomes.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct McNemar {
    /// Pairs where the model erred and the baseline did not.
    pub b: usize,
    /// Pairs where the baseline erred and the model did not.
    pub c: usize,
    /// Exact two-sided binomial p-value.
    pub p_exact: f64,
    /// Continuity-corrected chi-square statistic (0 when b + c = 0).
    pub chi2: f64,
    /// p-value of `chi2` with 1 degree of freedom.
    pub p_chi2: f64,
}

/// Model-minus-baseline difference in error rate with its interval and test.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PairedDiff {
    /// Number of pairs.
    pub n: usize,
    /// Error rate of the model.
    pub model_rate: f64,
    /// Error rate of the baseline.
    pub baseline_rate: f64,
    /// `model_rate - baseline_rate`.
    pub diff: f64,
    /// Lower end of the percentile bootstrap interval.
    pub ci_low: f64,
    /// Upper end of the percentile bootstrap interval.
    pub ci_high: f64,
    /// McNemar's test on the same pairs.
    pub mcnemar: McNemar,
}

/// Share of `true` in `errors` (0 for an empty slice).
pub fn error_rate(errors: &[bool]) -> f64 {
    if errors.is_empty() {
        return 0.0;
    }
    errors.iter().filter(|&&e| e).count() as f64 / errors.len() as f64
}

/// Compares paired error indicators. `clusters[i]` names the resampling unit of pair i (e.g. the
/// item index); `stream` selects an independent ChaCha stream so several comparisons made with one
/// seed do not share random numbers, and each is reproducible on its own.
pub fn paired_difference(
    model: &[bool],
    baseline: &[bool],
    clusters: &[usize],
    cfg: &BootstrapConfig,
    stream: u64,
) -> Result<PairedDiff> {
    if model.len() != baseline.len() || model.len() != clusters.len() {
        return Err(Error::Other(format!(
            "paired comparison needs equal lengths, got model {}, baseline {}, clusters {}",
            model.len(),
            baseline.len(),
            clusters.len()
        )));
    }
    if model.is_empty() {
        return Err(Error::Other("paired comparison of zero pairs".into()));
    }
    let b = model
        .iter()
        .zip(baseline)
        .filter(|(m, base)| **m && !**base)
        .count();
    let c = model
        .iter()
        .zip(baseline)
        .filter(|(m, base)| !**m && **base)
        .count();
    let (model_rate, baseline_rate) = (error_rate(model), error_rate(baseline));
    let (ci_low, ci_high) = bootstrap_diff_ci(model, baseline, clusters, cfg, stream);
    let (chi2, p_chi2) = mcnemar_chi2(b, c);
    Ok(PairedDiff {
        n: model.len(),
        model_rate,
        baseline_rate,
        diff: model_rate - baseline_rate,
        ci_low,
        ci_high,
        mcnemar: McNemar {
            b,
            c,
            p_exact: mcnemar_exact(b, c),
            chi2,
            p_chi2,
        },
    })
}

/// Percentile interval of the difference in error rate (see [`bootstrap_diffs`]).
fn bootstrap_diff_ci(
    model: &[bool],
    baseline: &[bool],
    clusters: &[usize],
    cfg: &BootstrapConfig,
    stream: u64,
) -> (f64, f64) {
    let diffs = bootstrap_diffs(model, baseline, clusters, cfg, stream);
    let alpha = (1.0 - cfg.level).clamp(0.0, 1.0) / 2.0;
    (percentile(&diffs, alpha), percentile(&diffs, 1.0 - alpha))
}

/// The B bootstrap differences, sorted: each resample draws as many clusters as there are, with
/// replacement, and takes (model errors - baseline errors) / (pairs drawn).
fn bootstrap_diffs(
    model: &[bool],
    baseline: &[bool],
    clusters: &[usize],
    cfg: &BootstrapConfig,
    stream: u64,
) -> Vec<f64> {
    // Per cluster: (pairs, model errors - baseline errors), in order of first appearance.
    let mut index: std::collections::HashMap<usize, usize> = Default::default();
    let mut sums: Vec<(i64, i64)> = Vec::new();
    for ((&m, &base), &cl) in model.iter().zip(baseline).zip(clusters) {
        let k = *index.entry(cl).or_insert_with(|| {
            sums.push((0, 0));
            sums.len() - 1
        });
        sums[k].0 += 1;
        sums[k].1 += m as i64 - base as i64;
    }
    let mut rng = ChaCha8Rng::seed_from_u64(cfg.seed);
    rng.set_stream(stream);
    let mut diffs: Vec<f64> = (0..cfg.resamples.max(1))
        .map(|_| {
            let (mut n, mut d) = (0i64, 0i64);
            for _ in 0..sums.len() {
                let (cn, cd) = sums[rng.random_range(0..sums.len())];
                n += cn;
                d += cd;
            }
            d as f64 / n as f64
        })
        .collect();
    diffs.sort_by(f64::total_cmp);
    diffs
}

/// Exact two-sided McNemar p-value: 2 * P(X <= min(b, c)) for X ~ Binomial(b + c, 1/2), at most 1.
/// Summed in log space, so it stays accurate for thousands of discordant pairs.
pub fn mcnemar_exact(b: usize, c: usize) -> f64 {
    let n = b + c;
    if n == 0 {
        return 1.0;
    }
    let k_max = b.min(c);
    let ln2n = n as f64 * std::f64::consts::LN_2;
    // ln C(n, k), built up from ln C(n, 0) = 0 by ln C(n, k) = ln C(n, k-1) + ln(n-k+1) - ln k.
    let mut ln_c = 0.0f64;
    let mut terms = Vec::with_capacity(k_max + 1);
    for k in 0..=k_max {
        if k > 0 {
            ln_c += ((n - k + 1) as f64).ln() - (k as f64).ln();
        }
        terms.push(ln_c - ln2n);
    }
    let max = terms.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
    let tail = max.exp() * terms.iter().map(|t| (t - max).exp()).sum::<f64>();
    (2.0 * tail).min(1.0)
}

/// Continuity-corrected McNemar chi-square and its p-value with 1 d.f.: (stat, p). For b + c = 0
/// the statistic is 0 and p is 1.
pub fn mcnemar_chi2(b: usize, c: usize) -> (f64, f64) {
    let n = (b + c) as f64;
    if n == 0.0 {
        return (0.0, 1.0);
    }
    let d = ((b as f64 - c as f64).abs() - 1.0).max(0.0);
    let stat = d * d / n;
    // P(chi2_1 > x) = P(|Z| > sqrt x) = erfc(sqrt(x / 2)).
    (stat, erfc((stat / 2.0).sqrt()))
}

/// Complementary error function, Numerical Recipes' Chebyshev fit `erfcc` (fractional error below
/// 1.2e-7 everywhere); enough for p-values printed to three digits.
fn erfc(x: f64) -> f64 {
    let z = x.abs();
    let t = 1.0 / (1.0 + 0.5 * z);
    let poly = -z * z - 1.265_512_23
        + t * (1.000_023_68
            + t * (0.374_091_96
                + t * (0.096_784_18
                    + t * (-0.186_288_06
                        + t * (0.278_868_07
                            + t * (-1.135_203_98
                                + t * (1.488_515_87 + t * (-0.822_152_23 + t * 0.170_872_77))))))));
    let r = t * poly.exp();
    if x >= 0.0 {
        r
    } else {
        2.0 - r
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64, tol: f64) -> bool {
        (a - b).abs() <= tol
    }

    #[test]
    fn mcnemar_exact_hand_computed() {
        // b=1, c=6: n=7, min=1; C(7,0)+C(7,1) = 1+7 = 8; 2 * 8/128 = 0.125.
        assert!(close(mcnemar_exact(1, 6), 0.125, 1e-12));
        assert!(close(mcnemar_exact(6, 1), 0.125, 1e-12));
        // b=0, c=5: 2 * 1/32 = 0.0625.
        assert!(close(mcnemar_exact(0, 5), 0.0625, 1e-12));
        // b=2, c=8: n=10, C(10,0)+C(10,1)+C(10,2) = 1+10+45 = 56; 2*56/1024 = 0.109375.
        assert!(close(mcnemar_exact(2, 8), 0.109375, 1e-12));
        // b=c: the tail passes one half, capped at 1.
        assert_eq!(mcnemar_exact(3, 3), 1.0);
        assert_eq!(mcnemar_exact(0, 0), 1.0);
    }

    #[test]
    fn mcnemar_exact_large_counts_do_not_underflow() {
        // b=c=1000 -> 1; b=900, c=1100: |z| = 200/sqrt(2000) = 4.47 -> p about 8e-6.
        assert_eq!(mcnemar_exact(1000, 1000), 1.0);
        let p = mcnemar_exact(900, 1100);
        assert!(p > 1e-6 && p < 2e-5, "{p}");
    }

    #[test]
    fn mcnemar_chi2_hand_computed() {
        // b=1, c=6: (|1-6|-1)^2/7 = 16/7 = 2.2857; p = erfc(sqrt(16/14)) = 0.1306 (tables: 0.1306).
        let (stat, p) = mcnemar_chi2(1, 6);
        assert!(close(stat, 16.0 / 7.0, 1e-12));
        assert!(close(p, 0.1306, 1e-4), "{p}");
        // chi2 = 3.841 is the 5% critical value of 1 d.f.
        assert!(close(erfc((3.841_458_8f64 / 2.0).sqrt()), 0.05, 1e-6));
        assert_eq!(mcnemar_chi2(0, 0), (0.0, 1.0));
    }

    #[test]
    fn percentile_type7_hand_computed() {
        let xs = [1.0, 2.0, 3.0, 4.0, 5.0];
        // h = 4 * 0.5 = 2 -> x[2] = 3; h = 4 * 0.1 = 0.4 -> 1 + 0.4 * (2 - 1) = 1.4.
        assert_eq!(percentile(&xs, 0.5), 3.0);
        assert!(close(percentile(&xs, 0.1), 1.4, 1e-12));
        assert_eq!(percentile(&xs, 1.0), 5.0);
    }

    #[test]
    fn paired_difference_counts_and_rates() {
        // 10 pairs: b = 1 (pair 0), c = 6 (pairs 1-6), pairs 7-9 concordant (8 and 9 both wrong).
        let model = [
            true, false, false, false, false, false, false, false, true, true,
        ];
        let base = [false, true, true, true, true, true, true, false, true, true];
        let ids: Vec<usize> = (0..10).collect();
        let d = paired_difference(&model, &base, &ids, &BootstrapConfig::default(), 0).unwrap();
        // model 3/10 = 0.3, baseline 8/10 = 0.8, diff -0.5.
        assert_eq!((d.mcnemar.b, d.mcnemar.c), (1, 6));
        assert!(close(d.model_rate, 0.3, 1e-12) && close(d.baseline_rate, 0.8, 1e-12));
        assert!(close(d.diff, -0.5, 1e-12));
        assert!(close(d.mcnemar.p_exact, 0.125, 1e-12));
        assert!(
            d.ci_low < d.diff && d.diff < d.ci_high && d.ci_high < 0.0,
            "{d:?}"
        );
    }

    #[test]
    fn identical_or_opposite_models_give_degenerate_intervals() {
        let ids: Vec<usize> = (0..6).collect();
        let m = [true, false, true, false, true, true];
        let cfg = BootstrapConfig {
            resamples: 200,
            ..Default::default()
        };
        let d = paired_difference(&m, &m, &ids, &cfg, 3).unwrap();
        assert_eq!((d.diff, d.ci_low, d.ci_high), (0.0, 0.0, 0.0));
        let d = paired_difference(&[true; 6], &[false; 6], &ids, &cfg, 3).unwrap();
        assert_eq!((d.diff, d.ci_low, d.ci_high), (1.0, 1.0, 1.0));
    }

    #[test]
    fn same_seed_same_interval_other_seed_or_stream_differs() {
        let m: Vec<bool> = (0..60).map(|i| i % 3 == 0).collect();
        let b: Vec<bool> = (0..60).map(|i| i % 4 == 0).collect();
        let ids: Vec<usize> = (0..60).map(|i| i / 3).collect();
        let cfg = BootstrapConfig::default();
        let a1 = paired_difference(&m, &b, &ids, &cfg, 0).unwrap();
        let a2 = paired_difference(&m, &b, &ids, &cfg, 0).unwrap();
        assert_eq!(a1, a2);
        // The intervals are quantiles of a discrete distribution and may coincide; the draws not.
        let draws =
            |seed, stream| bootstrap_diffs(&m, &b, &ids, &BootstrapConfig { seed, ..cfg }, stream);
        assert_eq!(draws(0, 0), draws(0, 0));
        assert_ne!(draws(0, 0), draws(1, 0));
        assert_ne!(draws(0, 0), draws(0, 1));
    }

    #[test]
    fn mismatched_lengths_are_an_error() {
        assert!(paired_difference(
            &[true],
            &[true, false],
            &[0],
            &BootstrapConfig::default(),
            0
        )
        .is_err());
        assert!(paired_difference(&[], &[], &[], &BootstrapConfig::default(), 0).is_err());
    }
}
