//! Group-relative advantages for GRPO: one scalar per episode, computed from the rewards of the G
//! episodes that share a profile and a simulator seed (docs/DESIGN.md section 9).
//!
//! A_i = (r_i - mean_group) / (std + 1e-6) (DeepSeekMath, Shao et al. 2024, eq. for outcome
//! supervision; RLVER, Wang et al. 2025). The standard deviation is the *sample* standard deviation
//! (Bessel's correction, divisor n - 1), as in verl's `compute_grpo_outcome_advantage`
//! (`torch.std`, unbiased by default), the trainer RLVER is built on; this keeps our advantages equal
//! to RLVER's for the same rewards. For G = 4 the sample std is sqrt(4/3) ~ 1.155 times the
//! population std, so advantages are that much smaller; only the effective learning rate changes.
//!
//! The scale choices:
//! - `group`: divide by the group's std (DeepSeekMath, RLVER);
//! - `batch`: subtract the group mean but divide by the std of the whole batch ("group mean, batch
//!   std", Liu et al. 2025, "Tricks or Traps? A Deep Dive into RL for LLM Reasoning");
//! - `none`: no division (Dr. GRPO, Liu et al. 2025, "Understanding R1-Zero-Like Training"), which
//!   removes the bias toward groups with small reward spread.
//!
//! A group whose rewards are all equal gets exactly zero advantage (checked by equality, not left to
//! rounding), and is counted by [`zero_std_groups`]: such a group teaches nothing.

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};

/// Added to the standard deviation before dividing (DeepSeekMath / RLVER / verl `epsilon=1e-6`).
pub const STD_EPS: f64 = 1e-6;

/// What the centred reward is divided by.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum AdvantageScale {
    /// The group's sample std (DeepSeekMath, RLVER). The default.
    #[default]
    Group,
    /// The sample std of all rewards in the batch (Liu et al. 2025, "Tricks or Traps").
    Batch,
    /// No division: A_i = r_i - mean_group (Dr. GRPO).
    None,
}

impl AdvantageScale {
    /// The word the config uses.
    pub fn as_str(self) -> &'static str {
        match self {
            AdvantageScale::Group => "group",
            AdvantageScale::Batch => "batch",
            AdvantageScale::None => "none",
        }
    }
}

impl std::fmt::Display for AdvantageScale {
    /// The config word, never the Rust variant name: what a person reads matches the config.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Advantages for `rewards` laid out group after group (`rewards[g * group_size + i]` is sample `i`
/// of group `g`). Errors if `group_size` is 0, does not divide the length, or a reward is not
/// finite. A group of size 1 has zero advantage.
pub fn group_advantages(
    rewards: &[f32],
    group_size: usize,
    scale: AdvantageScale,
) -> Result<Vec<f32>> {
    check_layout(rewards, group_size)?;
    let batch_std = sample_std(rewards);
    let mut out = Vec::with_capacity(rewards.len());
    for group in rewards.chunks(group_size) {
        if all_equal(group) {
            out.extend(std::iter::repeat_n(0.0, group.len()));
            continue;
        }
        let mean = mean(group);
        let denom = match scale {
            AdvantageScale::Group => sample_std(group) + STD_EPS,
            AdvantageScale::Batch => batch_std + STD_EPS,
            AdvantageScale::None => 1.0,
        };
        out.extend(group.iter().map(|&r| ((r as f64 - mean) / denom) as f32));
    }
    Ok(out)
}

/// One flag per group: true when every reward in the group is equal (zero spread, zero advantage).
pub fn zero_std_groups(rewards: &[f32], group_size: usize) -> Result<Vec<bool>> {
    check_layout(rewards, group_size)?;
    Ok(rewards.chunks(group_size).map(all_equal).collect())
}

/// The share of groups whose rewards are all equal (`frac_reward_zero_std` in metrics.csv); 0 for
/// an empty batch.
pub fn frac_reward_zero_std(rewards: &[f32], group_size: usize) -> Result<f64> {
    let flags = zero_std_groups(rewards, group_size)?;
    if flags.is_empty() {
        return Ok(0.0);
    }
    Ok(flags.iter().filter(|&&z| z).count() as f64 / flags.len() as f64)
}

fn check_layout(rewards: &[f32], group_size: usize) -> Result<()> {
    if group_size == 0 {
        return Err(Error::Other(
            "group_advantages: group_size must be at least 1".into(),
        ));
    }
    if !rewards.len().is_multiple_of(group_size) {
        return Err(Error::Other(format!(
            "group_advantages: {} rewards do not split into groups of {group_size}",
            rewards.len()
        )));
    }
    if let Some(i) = rewards.iter().position(|r| !r.is_finite()) {
        return Err(Error::Other(format!(
            "group_advantages: reward {i} is {} (rewards must be finite)",
            rewards[i]
        )));
    }
    Ok(())
}

fn all_equal(group: &[f32]) -> bool {
    group.windows(2).all(|w| w[0] == w[1])
}

fn mean(xs: &[f32]) -> f64 {
    if xs.is_empty() {
        return 0.0;
    }
    xs.iter().map(|&x| x as f64).sum::<f64>() / xs.len() as f64
}

/// Sample standard deviation (divisor n - 1); 0 for fewer than two values.
fn sample_std(xs: &[f32]) -> f64 {
    if xs.len() < 2 {
        return 0.0;
    }
    let m = mean(xs);
    let ss: f64 = xs.iter().map(|&x| (x as f64 - m).powi(2)).sum();
    (ss / (xs.len() - 1) as f64).sqrt()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: &[f32], b: &[f32]) {
        assert_eq!(a.len(), b.len());
        for (x, y) in a.iter().zip(b) {
            assert!((x - y).abs() < 1e-5, "{a:?} vs {b:?}");
        }
    }

    #[test]
    fn group_scale_matches_hand_numbers() {
        // Group [0, 1, 0, 1]: mean 0.5, squared deviations 4 * 0.25 = 1, sample var 1/3,
        // std 0.57735; A = +-0.5 / (0.57735 + 1e-6) = +-0.866024.
        let a = group_advantages(&[0.0, 1.0, 0.0, 1.0], 4, AdvantageScale::Group).unwrap();
        close(&a, &[-0.866024, 0.866024, -0.866024, 0.866024]);
        // Group [0.2, 0.4, 0.6]: mean 0.4, deviations -0.2, 0, 0.2, sample var 0.08/2 = 0.04,
        // std 0.2; A = -0.2/0.200001 = -0.999995, 0, +0.999995.
        let a = group_advantages(&[0.2, 0.4, 0.6], 3, AdvantageScale::Group).unwrap();
        close(&a, &[-0.999995, 0.0, 0.999995]);
    }

    #[test]
    fn batch_scale_uses_the_whole_batch_std() {
        // Batch [0, 1 | 0.5, 0.7], groups of 2. Group means 0.5 and 0.6.
        // Batch mean 0.55; squared deviations 0.3025 + 0.2025 + 0.0025 + 0.0225 = 0.53;
        // sample var 0.53 / 3 = 0.176667, std 0.420317.
        // A = (-0.5, 0.5, -0.1, 0.1) / 0.420318 = -1.189577, 1.189577, -0.237915, 0.237915.
        let a = group_advantages(&[0.0, 1.0, 0.5, 0.7], 2, AdvantageScale::Batch).unwrap();
        close(&a, &[-1.189577, 1.189577, -0.237915, 0.237915]);
    }

    #[test]
    fn none_scale_only_centres() {
        // Group [0.1, 0.3, 0.8]: mean 0.4; A = -0.3, -0.1, 0.4 (Dr. GRPO).
        let a = group_advantages(&[0.1, 0.3, 0.8], 3, AdvantageScale::None).unwrap();
        close(&a, &[-0.3, -0.1, 0.4]);
    }

    #[test]
    fn equal_rewards_give_exactly_zero() {
        // 0.1 has no exact binary form: a computed mean could differ from 0.1 by one ulp; the
        // equality check makes the advantage exactly 0 in every scale.
        for scale in [
            AdvantageScale::Group,
            AdvantageScale::Batch,
            AdvantageScale::None,
        ] {
            let a = group_advantages(&[0.1, 0.1, 0.1, 0.0, 1.0, 0.5], 3, scale).unwrap();
            assert_eq!(&a[..3], &[0.0, 0.0, 0.0]);
            assert!(a[3] < 0.0 && a[4] > 0.0);
        }
        // A group of one has nothing to compare with: zero.
        assert_eq!(
            group_advantages(&[0.7], 1, AdvantageScale::Group).unwrap(),
            vec![0.0]
        );
    }

    #[test]
    fn zero_std_flags_and_fraction() {
        let r = [0.3, 0.3, 0.3, 0.3, 0.0, 1.0, 0.0, 0.0, 0.5, 0.5, 0.5, 0.5];
        assert_eq!(zero_std_groups(&r, 4).unwrap(), vec![true, false, true]);
        // 2 of 3 groups have zero spread: 0.666667.
        assert!((frac_reward_zero_std(&r, 4).unwrap() - 2.0 / 3.0).abs() < 1e-12);
        assert_eq!(frac_reward_zero_std(&[], 4).unwrap(), 0.0);
    }

    #[test]
    fn bad_layouts_are_errors() {
        assert!(group_advantages(&[0.0, 1.0, 0.5], 2, AdvantageScale::Group).is_err());
        assert!(group_advantages(&[0.0, 1.0], 0, AdvantageScale::Group).is_err());
        assert!(group_advantages(&[0.0, f32::NAN], 2, AdvantageScale::Group).is_err());
        assert!(zero_std_groups(&[0.0], 0).is_err());
    }

    #[test]
    fn scale_parses_snake_case() {
        let s: AdvantageScale = serde_yaml::from_str("batch").unwrap();
        assert_eq!(s, AdvantageScale::Batch);
        assert_eq!(
            serde_yaml::to_string(&AdvantageScale::None).unwrap().trim(),
            "none"
        );
    }
}
