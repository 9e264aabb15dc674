//! Across-seed statistics for sweep summaries: mean, sample standard deviation and the 95%
//! Student-t interval of the mean (seeds are few, so the normal 1.96 would be too narrow).

/// Mean, spread and 95% interval of a handful of values.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Spread {
    /// Number of values.
    pub n: usize,
    /// Their mean.
    pub mean: f64,
    /// Sample standard deviation (n - 1 in the denominator); 0 for one value.
    pub std: f64,
    /// 95% t-interval of the mean, `None` for fewer than two values.
    pub ci: Option<(f64, f64)>,
}

/// Two-sided 95% quantiles t(0.975; df) for df = 1..=30 (any statistics table, e.g. NIST/SEMATECH
/// e-Handbook of Statistical Methods, section 1.3.6.7.2).
const T975: [f64; 30] = [
    12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160,
    2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056,
    2.052, 2.048, 2.045, 2.042,
];

/// t(0.975; df): the table up to 30, beyond it the Cornish-Fisher expansion around z = 1.95996
/// (Abramowitz & Stegun 26.7.5), within 0.001 of the exact value there.
pub fn t975(df: usize) -> f64 {
    if (1..=30).contains(&df) {
        return T975[df - 1];
    }
    let (z, d) = (1.959_964_f64, df.max(1) as f64);
    z + (z.powi(3) + z) / (4.0 * d)
        + (5.0 * z.powi(5) + 16.0 * z.powi(3) + 3.0 * z) / (96.0 * d * d)
}

/// The spread of the finite values among `xs` (`None` when there are none).
pub fn spread(xs: &[f64]) -> Option<Spread> {
    let v: Vec<f64> = xs.iter().copied().filter(|x| x.is_finite()).collect();
    if v.is_empty() {
        return None;
    }
    let n = v.len();
    let mean = v.iter().sum::<f64>() / n as f64;
    if n == 1 {
        return Some(Spread {
            n,
            mean,
            std: 0.0,
            ci: None,
        });
    }
    let var = v.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1) as f64;
    let std = var.sqrt();
    let half = t975(n - 1) * std / (n as f64).sqrt();
    Some(Spread {
        n,
        mean,
        std,
        ci: Some((mean - half, mean + half)),
    })
}

impl Spread {
    /// `mean ± std [low, high]` with `decimals` places (the interval left out for one value).
    pub fn show(&self, decimals: usize) -> String {
        let d = decimals;
        match self.ci {
            Some((lo, hi)) => format!(
                "{:.d$} ± {:.d$} [{:.d$}, {:.d$}]",
                self.mean, self.std, lo, hi
            ),
            None => format!("{:.d$}", self.mean),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spread_of_three_values_by_hand() {
        // 1, 2, 6: mean 3; deviations -2, -1, 3; squares 4 + 1 + 9 = 14; var 14/2 = 7;
        // std 2.645751; half-width t(0.975; 2) * std / sqrt 3 = 4.303 * 1.527525 = 6.572941;
        // interval [-3.572941, 9.572941].
        let s = spread(&[1.0, 2.0, 6.0, f64::NAN]).unwrap();
        assert_eq!(s.n, 3);
        assert!((s.mean - 3.0).abs() < 1e-12);
        assert!((s.std - 2.645751).abs() < 1e-6);
        let (lo, hi) = s.ci.unwrap();
        assert!(
            (lo + 3.572941).abs() < 1e-5 && (hi - 9.572941).abs() < 1e-5,
            "{lo} {hi}"
        );
        assert_eq!(s.show(2), "3.00 ± 2.65 [-3.57, 9.57]");
    }

    #[test]
    fn one_value_has_no_interval_and_none_has_no_spread() {
        let s = spread(&[0.25]).unwrap();
        assert_eq!((s.std, s.ci), (0.0, None));
        assert_eq!(s.show(3), "0.250");
        assert!(spread(&[f64::NAN]).is_none());
    }

    #[test]
    fn t_quantiles_join_the_expansion_smoothly() {
        assert_eq!(t975(2), 4.303);
        // Exact values: t(0.975; 40) = 2.021, t(0.975; 120) = 1.980.
        assert!((t975(40) - 2.021).abs() < 0.001, "{}", t975(40));
        assert!((t975(120) - 1.980).abs() < 0.001, "{}", t975(120));
        assert!(t975(31) < t975(30));
    }
}
