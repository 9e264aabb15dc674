//! Krippendorff's alpha with the interval metric: how far raters agree beyond chance, for any
//! number of raters, with missing ratings (Krippendorff, "Computing Krippendorff's
//! Alpha-Reliability", 2011).
//!
//! alpha = 1 - D_o / D_e. Only units (rated dialogues) with two or more ratings count; n is the
//! number of their ratings. The observed disagreement is D_o = (1/n) sum over units u of
//! (1 / (m_u - 1)) sum over ordered pairs i != j within u of (v_i - v_j)^2, with m_u the unit's
//! ratings; the expected one is D_e = (1 / (n (n - 1))) sum over ordered pairs i != j of all n
//! ratings of (v_i - v_j)^2. The interval metric (squared difference) treats the 1-5 scale as
//! equally spaced, which is how the means are read elsewhere in the report; for two raters and no
//! missing ratings it is close to Cohen's kappa with quadratic weights.

/// Alpha over `units`, each the ratings one unit got; NaN when no unit has two ratings or all the
/// ratings of such units are the same (nothing to agree about).
pub fn krippendorff_alpha_interval(units: &[Vec<f64>]) -> f64 {
    let pairable: Vec<&Vec<f64>> = units.iter().filter(|u| u.len() >= 2).collect();
    let n: usize = pairable.iter().map(|u| u.len()).sum();
    if n < 2 {
        return f64::NAN;
    }
    let observed: f64 = pairable
        .iter()
        .map(|u| ordered_pair_squares(u) / (u.len() - 1) as f64)
        .sum::<f64>()
        / n as f64;
    let all: Vec<f64> = pairable.iter().flat_map(|u| u.iter().copied()).collect();
    let expected = ordered_pair_squares(&all) / (n * (n - 1)) as f64;
    if expected == 0.0 {
        return f64::NAN;
    }
    1.0 - observed / expected
}

/// Sum over ordered pairs i != j of (v_i - v_j)^2, which is 2 m sum (v - mean)^2.
fn ordered_pair_squares(v: &[f64]) -> f64 {
    let m = v.len() as f64;
    let mean = v.iter().sum::<f64>() / m;
    2.0 * m * v.iter().map(|x| (x - mean) * (x - mean)).sum::<f64>()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn alpha_matches_a_hand_computed_value() {
        // Two raters, three dialogues: (1, 2), (3, 3), (5, 4); n = 6.
        // D_o = (1/6)(2·1 + 0 + 2·1) = 2/3. All six ratings have mean 3 and squared deviations
        // 4 + 1 + 0 + 0 + 4 + 1 = 10, so the ordered pairs sum to 2·6·10 = 120 and
        // D_e = 120 / (6·5) = 4: alpha = 1 - (2/3) / 4 = 5/6.
        let a = krippendorff_alpha_interval(&[vec![1.0, 2.0], vec![3.0, 3.0], vec![5.0, 4.0]]);
        assert!((a - 5.0 / 6.0).abs() < 1e-12, "{a}");
    }

    #[test]
    fn alpha_matches_krippendorffs_worked_example() {
        // Krippendorff (2011), section C: four observers, twelve units, values 1-5 with missing
        // ones; interval alpha = 0.849. Unit 12 has one value and drops out.
        let units: Vec<Vec<f64>> = [
            &[1, 1, 1][..],
            &[2, 2, 3, 2],
            &[3, 3, 3, 3],
            &[3, 3, 3, 3],
            &[2, 2, 2, 2],
            &[1, 2, 3, 4],
            &[4, 4, 4, 4],
            &[1, 1, 2, 1],
            &[2, 2, 2, 2],
            &[5, 5, 5],
            &[1, 1],
            &[3],
        ]
        .iter()
        .map(|u| u.iter().map(|&v| f64::from(v)).collect())
        .collect();
        let a = krippendorff_alpha_interval(&units);
        assert!((a - 0.849).abs() < 0.0005, "{a}");
    }

    #[test]
    fn perfect_agreement_is_one_and_nothing_to_agree_is_nan() {
        assert_eq!(
            krippendorff_alpha_interval(&[vec![1.0, 1.0], vec![4.0, 4.0]]),
            1.0
        );
        assert!(krippendorff_alpha_interval(&[vec![3.0, 3.0], vec![3.0, 3.0]]).is_nan());
        assert!(krippendorff_alpha_interval(&[vec![3.0], vec![4.0]]).is_nan());
    }
}
