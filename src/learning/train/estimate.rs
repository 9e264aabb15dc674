//! The advantages of a step for the configured algorithm (`algorithm:`, docs/DESIGN.md section 10),
//! from the step's dialogues, rewards and token sequences (and, for PPO, the critic's values): the
//! one place where the algorithms differ. Everything after it (the clipped policy loss, the
//! optimizer, checkpoints) is shared.

use super::sequence::TokenSequence;
use super::update::Advantages;
use super::TrainConfig;
use crate::environment::episode::EpisodeRecord;
use crate::error::{Error, Result};
use crate::learning::credit::{
    gae, group_advantages, per_token, reinforce_pp_advantages, rloo_advantages, token_rewards,
    turn_advantages, turn_rewards, whiten, Algorithm, Credit,
};

/// PPO's critic targets: the rollout values and the GAE returns, per policy token of each kept
/// sequence.
#[derive(Debug, Clone, PartialEq)]
pub struct CriticTargets {
    /// V at rollout time.
    pub values: Vec<Vec<f32>>,
    /// GAE returns R = A + V (before whitening A).
    pub returns: Vec<Vec<f32>>,
}

/// A step's advantages for the kept sequences, and PPO's critic targets.
#[derive(Debug, Clone, PartialEq)]
pub struct Estimate {
    /// The advantages of the kept sequences, in `keep` order.
    pub advantages: Advantages,
    /// PPO: what the critic trains toward.
    pub critic_targets: Option<CriticTargets>,
}

/// Per-turn rewards of every dialogue (see `credit::placement`).
fn all_turn_rewards(
    cfg: &TrainConfig,
    records: &[EpisodeRecord],
    rewards: &[f32],
    seqs: &[TokenSequence],
) -> Vec<Vec<f32>> {
    records
        .iter()
        .zip(rewards)
        .zip(seqs)
        .map(|((rec, &r), s)| {
            turn_rewards(
                cfg.file.env.reward_mode,
                cfg.file.env.aggregate,
                &rec.emotions(),
                s.replies().len(),
                r,
            )
        })
        .collect()
}

fn reply_lens(s: &TokenSequence) -> Vec<usize> {
    s.replies().iter().map(|r| r.len()).collect()
}

/// The advantages of the sequences `keep` (indices into the step's batch; dialogues laid out
/// group after group). `values` are the critic's rollout values of the kept sequences (PPO only).
pub fn estimate(
    cfg: &TrainConfig,
    records: &[EpisodeRecord],
    rewards: &[f32],
    seqs: &[TokenSequence],
    keep: &[usize],
    values: Option<&[Vec<f32>]>,
) -> Result<Estimate> {
    let g = &cfg.file.grpo;
    let pick = |all: Vec<f32>| keep.iter().map(|&i| all[i]).collect::<Vec<f32>>();
    let advantages = match (cfg.file.algorithm, g.credit) {
        (Algorithm::Grpo, Credit::Episode) => Advantages::PerSequence(pick(group_advantages(
            rewards,
            g.group_size,
            g.advantage_scale,
        )?)),
        (Algorithm::Grpo, Credit::Turn) => {
            let turns = all_turn_rewards(cfg, records, rewards, seqs);
            let adv = turn_advantages(&turns, g.group_size, g.advantage_scale)?;
            Advantages::PerToken(
                keep.iter()
                    .map(|&i| per_token(&adv[i], &reply_lens(&seqs[i])))
                    .collect(),
            )
        }
        (Algorithm::Rloo, _) => {
            Advantages::PerSequence(pick(rloo_advantages(rewards, g.group_size)?))
        }
        (Algorithm::ReinforcePp, _) => {
            let turns = all_turn_rewards(cfg, records, rewards, seqs);
            let tok: Vec<Vec<f32>> = keep
                .iter()
                .map(|&i| token_rewards(&turns[i], &reply_lens(&seqs[i])))
                .collect();
            Advantages::PerToken(reinforce_pp_advantages(&tok, cfg.file.ppo.gamma))
        }
        (Algorithm::Ppo, _) => {
            let values = values
                .ok_or_else(|| Error::Other("ppo: the critic's values are missing".into()))?;
            let turns = all_turn_rewards(cfg, records, rewards, seqs);
            let p = &cfg.file.ppo;
            let (mut advs, mut rets) = (Vec::new(), Vec::new());
            for (k, &i) in keep.iter().enumerate() {
                let tok = token_rewards(&turns[i], &reply_lens(&seqs[i]));
                let (a, r) = gae(&tok, &values[k], p.gamma, p.lambda);
                advs.push(a);
                rets.push(r);
            }
            // Advantages whitened over the batch, as standard PPO (verl `compute_gae_advantage_return`).
            return Ok(Estimate {
                advantages: Advantages::PerToken(whiten(&advs)),
                critic_targets: Some(CriticTargets {
                    values: values.to_vec(),
                    returns: rets,
                }),
            });
        }
    };
    Ok(Estimate {
        advantages,
        critic_targets: None,
    })
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;

    /// A dialogue with user emotions `emotions` (start first), one reply between each two.
    fn record(emotions: &[u8]) -> EpisodeRecord {
        let mut turns =
            vec![serde_json::json!({"role": "user", "text": "hi", "emotion": emotions[0]})];
        for &e in &emotions[1..] {
            turns.push(serde_json::json!({"role": "assistant", "text": "ok", "think": null}));
            turns.push(serde_json::json!({"role": "user", "text": "...", "emotion": e}));
        }
        serde_json::from_value(serde_json::json!({
            "schema": crate::environment::episode::SCHEMA,
            "profile": {"scenario": "s", "persona": "p", "difficulty": "moderate"},
            "simulator": {"seed": 1}, "turns": turns, "end": "max_turns",
        }))
        .unwrap()
    }

    /// A sequence of replies of `lens` tokens, with context before each.
    fn sequence(lens: &[usize]) -> TokenSequence {
        let mut s = TokenSequence::new();
        for &n in lens {
            s.push_context(&[1, 2]);
            s.push_reply(&vec![7; n]);
        }
        s
    }

    fn config(extra: &str) -> TrainConfig {
        let text = format!(
            "grpo:\n  profiles_per_step: 2\n  group_size: 2\n  advantage_scale: none\n{extra}"
        );
        TrainConfig::from_yaml(&text, Path::new("t.yaml"), &[]).unwrap()
    }

    fn per_token(a: &Advantages) -> &[Vec<f32>] {
        match a {
            Advantages::PerToken(rows) => rows,
            Advantages::PerSequence(_) => panic!("expected per-token advantages: {a:?}"),
        }
    }

    fn close(got: &[Vec<f32>], want: &[Vec<f32>]) {
        assert_eq!(got.len(), want.len(), "{got:?} vs {want:?}");
        for (g, w) in got.iter().zip(want) {
            assert_eq!(g.len(), w.len(), "{got:?} vs {want:?}");
            assert!(
                g.iter().zip(w).all(|(x, y)| (x - y).abs() < 1e-6),
                "{got:?} vs {want:?}"
            );
        }
    }

    /// Two groups of two 2-turn dialogues, dense rewards (emotion change / 100 per turn):
    ///   group 0: d0 40 -> 50 -> 50: turns [0.1, 0.0], total 0.1, to-go [0.1, 0.0]
    ///            d1 40 -> 40 -> 60: turns [0.0, 0.2], total 0.2, to-go [0.2, 0.2]
    ///   group 1: d2 40 -> 50 -> 50: turns [0.1, 0.0], total 0.1, to-go [0.1, 0.0]
    ///            d3 40 -> 40 -> 50: turns [0.0, 0.1], total 0.1, to-go [0.1, 0.1]
    /// Replies of d0..d3: [2, 3], [1, 2], [1, 1], [2, 1] tokens.
    fn batch() -> (Vec<EpisodeRecord>, Vec<f32>, Vec<TokenSequence>) {
        let records = [[40, 50, 50], [40, 40, 60], [40, 50, 50], [40, 40, 50]]
            .iter()
            .map(|e| record(e))
            .collect();
        let seqs = [[2, 3], [1, 2], [1, 1], [2, 1]]
            .iter()
            .map(|l| sequence(l))
            .collect();
        (records, vec![0.1, 0.2, 0.1, 0.1], seqs)
    }

    #[test]
    fn turn_credit_gives_each_turn_its_own_advantage_by_hand() {
        let (records, rewards, seqs) = batch();
        let cfg = config("  credit: turn\nenv:\n  aggregate: dense\n");
        let all = [0, 1, 2, 3];
        let est = estimate(&cfg, &records, &rewards, &seqs, &all, None).unwrap();
        assert!(est.critic_targets.is_none());
        // Scale none: A = to-go - mean of the group at the same turn index.
        //   group 0, turn 0: 0.1, 0.2 (mean 0.15) -> -0.05, +0.05
        //            turn 1: 0.0, 0.2 (mean 0.10) -> -0.10, +0.10
        //   group 1, turn 0: 0.1, 0.1 -> 0, 0;  turn 1: 0.0, 0.1 (mean 0.05) -> -0.05, +0.05
        // Each turn's advantage on each of its tokens.
        let want = vec![
            vec![-0.05, -0.05, -0.1, -0.1, -0.1],
            vec![0.05, 0.1, 0.1],
            vec![0.0, -0.05],
            vec![0.0, 0.0, 0.05],
        ];
        close(per_token(&est.advantages), &want);
        // `keep` picks rows of the batch (a dropped group, dynamic sampling).
        let est = estimate(&cfg, &records, &rewards, &seqs, &[1, 3], None).unwrap();
        close(
            per_token(&est.advantages),
            &[want[1].clone(), want[3].clone()],
        );

        // Episode credit on the same batch: one advantage per dialogue from the totals; group 1's
        // totals are equal, so it learns nothing there, where turn credit saw turn 1 differ.
        let cfg = config("env:\n  aggregate: dense\n");
        let est = estimate(&cfg, &records, &rewards, &seqs, &all, None).unwrap();
        match est.advantages {
            Advantages::PerSequence(a) => close(&[a], &[vec![-0.05, 0.05, 0.0, 0.0]]),
            other => panic!("episode credit is per sequence: {other:?}"),
        }
    }

    #[test]
    fn turn_credit_with_final_rewards_is_episode_credit_on_every_token() {
        // aggregate final: the last turn carries the total, so every turn's return-to-go is the
        // total: d0 -0.05 on its 5 tokens, d1 +0.05 on its 3, group 1 all zero.
        let (records, rewards, seqs) = batch();
        let cfg = config("  credit: turn\nenv:\n  aggregate: final\n");
        let est = estimate(&cfg, &records, &rewards, &seqs, &[0, 1, 2, 3], None).unwrap();
        let want = vec![vec![-0.05; 5], vec![0.05; 3], vec![0.0; 2], vec![0.0; 3]];
        close(per_token(&est.advantages), &want);
    }
}
