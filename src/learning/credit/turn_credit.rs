//! Turn-level credit for GRPO (`grpo.credit: turn`): each policy turn's advantage is the
//! group-relative advantage of its return-to-go, normalized across the group at the same turn
//! index.
//!
//! The choice, spelled out: with per-turn rewards r_{i,k} (dialogue i of the group, turn k), the
//! return-to-go is R_{i,k} = sum_{j >= k} r_{i,j} (undiscounted, like RLVER's sparse reward it
//! replaces). At turn index k, the dialogues of the group that reached turn k form a sub-group;
//! A_{i,k} is `group_advantages` of their R_{.,k} with the configured scale (group std, batch std
//! or none). Dialogues end at different turns (the user leaves, or is resolved): a turn reached by
//! fewer than two dialogues of its group has nothing to compare with and gets advantage 0. With
//! `scale: batch` the divisor is the sample std of every return-to-go in the batch.
//! Comparing turn k with turn k (not with every turn) keeps the baseline honest: early turns'
//! returns contain more of the dialogue than late ones.

use crate::error::{Error, Result};
use crate::learning::credit::{group_advantages, AdvantageScale};

/// Per-turn advantages, one vector per dialogue (same shape as `turn_rewards`); dialogues are
/// laid out group after group.
pub fn turn_advantages(
    turn_rewards: &[Vec<f32>],
    group_size: usize,
    scale: AdvantageScale,
) -> Result<Vec<Vec<f32>>> {
    if group_size == 0 || !turn_rewards.len().is_multiple_of(group_size) {
        return Err(Error::Other(format!(
            "turn credit: {} dialogues do not split into groups of {group_size}",
            turn_rewards.len()
        )));
    }
    let to_go: Vec<Vec<f32>> = turn_rewards
        .iter()
        .map(|r| super::critic_free::discounted_returns(r, 1.0))
        .collect();
    let batch_std = {
        let all: Vec<f32> = to_go.iter().flatten().copied().collect();
        sample_std(&all)
    };
    let mut out: Vec<Vec<f32>> = to_go.iter().map(|r| vec![0.0; r.len()]).collect();
    for (g, group) in to_go.chunks(group_size).enumerate() {
        let turns = group.iter().map(Vec::len).max().unwrap_or(0);
        for k in 0..turns {
            let members: Vec<usize> = (0..group.len()).filter(|&i| group[i].len() > k).collect();
            if members.len() < 2 {
                continue;
            }
            let returns: Vec<f32> = members.iter().map(|&i| group[i][k]).collect();
            let adv = match scale {
                AdvantageScale::Batch => centred(&returns, batch_std),
                _ => group_advantages(&returns, returns.len(), scale)?,
            };
            for (&i, a) in members.iter().zip(adv) {
                out[g * group_size + i][k] = a;
            }
        }
    }
    Ok(out)
}

/// (x - mean) / (batch_std + 1e-6), exact zeros for an all-equal sub-group.
fn centred(xs: &[f32], batch_std: f64) -> Vec<f32> {
    if xs.windows(2).all(|w| w[0] == w[1]) {
        return vec![0.0; xs.len()];
    }
    let m = xs.iter().map(|&x| x as f64).sum::<f64>() / xs.len() as f64;
    let d = batch_std + crate::learning::credit::advantage::STD_EPS;
    xs.iter().map(|&x| ((x as f64 - m) / d) as f32).collect()
}

fn sample_std(xs: &[f32]) -> f64 {
    if xs.len() < 2 {
        return 0.0;
    }
    let m = xs.iter().map(|&x| x as f64).sum::<f64>() / xs.len() as f64;
    let ss: f64 = xs.iter().map(|&x| (x as f64 - m).powi(2)).sum();
    (ss / (xs.len() - 1) as f64).sqrt()
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
    fn turn_credit_by_hand() {
        // One group of three dialogues, dense turn rewards:
        //   d0: [0.1, 0.1]      -> to-go [0.2, 0.1]
        //   d1: [0.0, -0.1]     -> to-go [-0.1, -0.1]
        //   d2: [0.3]           -> to-go [0.3]        (the user was resolved after one turn)
        // Turn 0, scale none: returns 0.2, -0.1, 0.3, mean 0.133333 -> 0.066667, -0.233333,
        // 0.166667. Turn 1: only d0 and d1: 0.1, -0.1, mean 0 -> 0.1, -0.1.
        let r = vec![vec![0.1, 0.1], vec![0.0, -0.1], vec![0.3]];
        let a = turn_advantages(&r, 3, AdvantageScale::None).unwrap();
        close(&a[0], &[0.066667, 0.1]);
        close(&a[1], &[-0.233333, -0.1]);
        close(&a[2], &[0.166667]);
        // Scale group, turn 1: [0.1, -0.1], sample std 0.141421 -> +-0.707104.
        let a = turn_advantages(&r, 3, AdvantageScale::Group).unwrap();
        close(&a[0][1..], &[0.707104]);
        close(&a[1][1..], &[-0.707104]);
    }

    #[test]
    fn a_turn_reached_once_gets_zero_and_final_reward_equals_episode_credit() {
        // Final placement: only the last turn carries the reward, so every turn's return-to-go is
        // the total, and at turn 0 the advantage is the episode-level one.
        let r = vec![vec![0.0, 1.0], vec![0.0, 0.0, 0.0]];
        let a = turn_advantages(&r, 2, AdvantageScale::None).unwrap();
        close(&a[0], &[0.5, 0.5]);
        close(&a[1], &[-0.5, -0.5, 0.0]);
        assert!(turn_advantages(&r, 3, AdvantageScale::None).is_err());
    }
}
