//! The critic-free estimators beside GRPO: RLOO's leave-one-out baseline and REINFORCE++'s
//! batch-whitened returns, plus the masked whitening PPO also uses. Pure functions over plain
//! slices, pinned to hand-computed numbers.

use crate::error::{Error, Result};

/// Added to the variance before the square root when whitening (verl `masked_whiten`, 1e-8).
pub const WHITEN_EPS: f64 = 1e-8;

/// RLOO (Ahmadian et al. 2024, "Back to Basics", eq. 7): A_i = r_i - mean of the other G - 1
/// rewards of the group = G / (G - 1) * (r_i - mean_group). `rewards` are laid out group after
/// group. A group of one has nothing to compare with and gets 0.
pub fn rloo_advantages(rewards: &[f32], group_size: usize) -> Result<Vec<f32>> {
    if group_size == 0 || !rewards.len().is_multiple_of(group_size) {
        return Err(Error::Other(format!(
            "rloo: {} rewards do not split into groups of {group_size}",
            rewards.len()
        )));
    }
    let mut out = Vec::with_capacity(rewards.len());
    for group in rewards.chunks(group_size) {
        let n = group.len() as f64;
        let sum: f64 = group.iter().map(|&r| r as f64).sum();
        for &r in group {
            if group.len() < 2 {
                out.push(0.0);
            } else {
                let others = (sum - r as f64) / (n - 1.0);
                out.push((r as f64 - others) as f32);
            }
        }
    }
    Ok(out)
}

/// Discounted returns-to-go of one sequence's per-token rewards: G_t = r_t + gamma G_{t+1}.
pub fn discounted_returns(rewards: &[f32], gamma: f64) -> Vec<f32> {
    let mut out = vec![0.0; rewards.len()];
    let mut acc = 0.0f64;
    for t in (0..rewards.len()).rev() {
        acc = rewards[t] as f64 + gamma * acc;
        out[t] = acc as f32;
    }
    out
}

/// Whitens every value of every sequence together: (x - mean) / sqrt(var + 1e-8), with the
/// unbiased variance (Bessel) over all values, as verl's `masked_whiten` over the response mask.
/// Fewer than two values are returned centred only.
pub fn whiten(seqs: &[Vec<f32>]) -> Vec<Vec<f32>> {
    let n: usize = seqs.iter().map(Vec::len).sum();
    if n == 0 {
        return seqs.to_vec();
    }
    let mean = seqs.iter().flatten().map(|&x| x as f64).sum::<f64>() / n as f64;
    let scale = if n < 2 {
        1.0
    } else {
        let ss: f64 = seqs
            .iter()
            .flatten()
            .map(|&x| (x as f64 - mean).powi(2))
            .sum();
        1.0 / (ss / (n - 1) as f64 + WHITEN_EPS).sqrt()
    };
    seqs.iter()
        .map(|s| {
            s.iter()
                .map(|&x| ((x as f64 - mean) * scale) as f32)
                .collect()
        })
        .collect()
}

/// REINFORCE++ (Hu 2025, "REINFORCE++: A Simple and Efficient Approach for Aligning Large
/// Language Models", sec. 3; verl `compute_reinforce_plus_plus_outcome_advantage`): per-token
/// discounted returns of each sequence's per-token rewards, whitened over all policy tokens of the
/// batch. No critic, no groups.
pub fn reinforce_pp_advantages(token_rewards: &[Vec<f32>], gamma: f64) -> Vec<Vec<f32>> {
    let returns: Vec<Vec<f32>> = token_rewards
        .iter()
        .map(|r| discounted_returns(r, gamma))
        .collect();
    whiten(&returns)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: &[f32], b: &[f32]) {
        assert_eq!(a.len(), b.len(), "{a:?} vs {b:?}");
        for (x, y) in a.iter().zip(b) {
            assert!((x - y).abs() < 1e-5, "{a:?} vs {b:?}");
        }
    }

    #[test]
    fn rloo_by_hand() {
        // Group [1, 0, 0, 0.5]: sum 1.5. Others' means: (1.5-1)/3 = 0.166667, 1.5/3 = 0.5, 0.5,
        // (1.5-0.5)/3 = 0.333333. A = 0.833333, -0.5, -0.5, 0.166667 (= 4/3 * (r - 0.375)).
        let a = rloo_advantages(&[1.0, 0.0, 0.0, 0.5], 4).unwrap();
        close(&a, &[0.833333, -0.5, -0.5, 0.166667]);
        // Two groups of 2: [0.2, 0.6] -> -0.4, 0.4; [0.3, 0.3] -> 0, 0.
        let a = rloo_advantages(&[0.2, 0.6, 0.3, 0.3], 2).unwrap();
        close(&a, &[-0.4, 0.4, 0.0, 0.0]);
        assert_eq!(rloo_advantages(&[0.7], 1).unwrap(), vec![0.0]);
        assert!(rloo_advantages(&[0.7, 0.1, 0.2], 2).is_err());
    }

    #[test]
    fn returns_by_hand() {
        // rewards [0, 0.1, 0, 0.5], gamma 0.9: G3 = 0.5; G2 = 0 + 0.45 = 0.45;
        // G1 = 0.1 + 0.405 = 0.505; G0 = 0 + 0.4545 = 0.4545.
        close(
            &discounted_returns(&[0.0, 0.1, 0.0, 0.5], 0.9),
            &[0.4545, 0.505, 0.45, 0.5],
        );
        // gamma 1: sums of the rest.
        close(&discounted_returns(&[1.0, 2.0, 3.0], 1.0), &[6.0, 5.0, 3.0]);
    }

    #[test]
    fn whiten_by_hand() {
        // Values 1, 2 | 3, 6: mean 3; squared deviations 4 + 1 + 0 + 9 = 14; unbiased var 14/3 =
        // 4.666667, sqrt(4.666667 + 1e-8) = 2.160247. Whitened: -0.925820, -0.462910 | 0,
        // 1.388730.
        let w = whiten(&[vec![1.0, 2.0], vec![3.0, 6.0]]);
        close(&w[0], &[-0.925820, -0.462910]);
        close(&w[1], &[0.0, 1.388_73]);
        assert_eq!(whiten(&[vec![5.0]]), vec![vec![0.0]]);
    }

    #[test]
    fn reinforce_pp_by_hand() {
        // Outcome rewards on the last token, gamma 1: sequence A [0, 1] -> returns [1, 1];
        // sequence B [0, 0, 0] -> [0, 0, 0]. Five values: mean 0.4; squared deviations
        // 2 * 0.36 + 3 * 0.16 = 1.2; unbiased var 0.3, sqrt 0.547723. A: 0.6/0.547723 =
        // 1.095445; B: -0.4/0.547723 = -0.730297. Token-weighted: B's three tokens pull the mean.
        let a = reinforce_pp_advantages(&[vec![0.0, 1.0], vec![0.0, 0.0, 0.0]], 1.0);
        close(&a[0], &[1.095445, 1.095445]);
        close(&a[1], &[-0.730297, -0.730297, -0.730297]);
    }
}
