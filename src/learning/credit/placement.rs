//! Where a dialogue's reward sits among its tokens (PPO, REINFORCE++ and GRPO's turn credit):
//! on the last token of the policy turn it belongs to.
//!
//! - Where each turn earns its own reward (`reward::rewards_each_turn`: the behavior reward with
//!   `env.aggregate: dense`), turn k carries the emotion change it caused,
//!   `reward::turn_rewards`, which sum to the dense total (e_T - e_0) / 100.
//! - Everywhere else (final, mean, and the trait reward with any aggregate) the last turn carries
//!   the whole reward (RLVER's sparse e_T / 100), every other turn 0.
//!
//! If the trainer's reward is not the environment's own (a plugged-in reward), the difference
//! between it and what the turns carry is added to the last turn, so the turn rewards always sum
//! to the reward being optimized.

use crate::environment::reward::{self, Aggregate, RewardMode};

/// One reward per policy turn of a dialogue with `turns` policy turns. `emotions` are the user's
/// emotions, start first (one more than the appraised turns); `total` is the dialogue's reward.
pub fn turn_rewards(
    mode: RewardMode,
    aggregate: Aggregate,
    emotions: &[u8],
    turns: usize,
    total: f32,
) -> Vec<f32> {
    let mut out = vec![0.0f32; turns];
    if turns == 0 {
        return out;
    }
    if reward::rewards_each_turn(mode, aggregate) {
        for (k, r) in reward::turn_rewards(emotions)
            .into_iter()
            .take(turns)
            .enumerate()
        {
            out[k] = r as f32;
        }
    }
    let placed: f64 = out.iter().map(|&x| x as f64).sum();
    out[turns - 1] = (out[turns - 1] as f64 + total as f64 - placed) as f32;
    out
}

/// Per-policy-token rewards of a dialogue: each turn's reward on its last token. `reply_lens` are
/// the policy tokens of each turn in order (a turn with no tokens passes its reward to the last
/// token before it, or is dropped when there is none).
pub fn token_rewards(turn_rewards: &[f32], reply_lens: &[usize]) -> Vec<f32> {
    let n: usize = reply_lens.iter().sum();
    let mut out = vec![0.0f32; n];
    let mut end = 0usize;
    for (r, &len) in turn_rewards.iter().zip(reply_lens) {
        end += len;
        if end > 0 {
            out[end - 1] += r;
        }
    }
    out
}

/// Spreads one value per turn over the turn's tokens (GRPO turn credit).
pub fn per_token(turn_values: &[f32], reply_lens: &[usize]) -> Vec<f32> {
    turn_values
        .iter()
        .zip(reply_lens)
        .flat_map(|(&v, &len)| std::iter::repeat_n(v, len))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn final_and_dense_by_hand() {
        // Emotions 40 -> 50 -> 45 -> 60, three turns.
        let e = [40, 50, 45, 60];
        // final: e_T / 100 = 0.6 on the last turn.
        assert_eq!(
            turn_rewards(RewardMode::Behavior, Aggregate::Final, &e, 3, 0.6),
            vec![0.0, 0.0, 0.6]
        );
        // dense: +0.10, -0.05, +0.15 (sum 0.20 = the dense total, nothing left over).
        let d = turn_rewards(RewardMode::Behavior, Aggregate::Dense, &e, 3, 0.2);
        for (x, y) in d.iter().zip([0.1, -0.05, 0.15]) {
            assert!((x - y).abs() < 1e-6, "{d:?}");
        }
        // A plugged-in reward of 0.5 with dense placement: the changes, and 0.5 - 0.2 = 0.3 more
        // on the last turn: 0.1, -0.05, 0.45.
        let d = turn_rewards(RewardMode::Behavior, Aggregate::Dense, &e, 3, 0.5);
        assert!((d[2] - 0.45).abs() < 1e-6, "{d:?}");
        assert!(turn_rewards(RewardMode::Behavior, Aggregate::Final, &e, 0, 0.6).is_empty());
        // The trait reward has no per-turn change: dense or not, warmth 0.7 sits on the last turn.
        assert_eq!(
            turn_rewards(RewardMode::Trait, Aggregate::Dense, &e, 3, 0.7),
            vec![0.0, 0.0, 0.7]
        );
    }

    #[test]
    fn rewards_land_on_each_turns_last_token() {
        // Turns of 2, 0 and 3 tokens with rewards 0.1, 0.2, 0.3: the empty turn's 0.2 lands on
        // the token before it (token 1).
        assert_eq!(
            token_rewards(&[0.1, 0.2, 0.3], &[2, 0, 3]),
            vec![0.0, 0.1 + 0.2, 0.0, 0.0, 0.3]
        );
        assert_eq!(per_token(&[1.0, 2.0], &[1, 2]), vec![1.0, 2.0, 2.0]);
    }
}
