//! The advantages of a step for the configured algorithm (`algorithm:`, DESIGN section 9), from
//! the step's dialogues, rewards and token sequences (and, for PPO, the critic's values): the one
//! place where the algorithms differ. Everything after it (the clipped policy loss, the
//! optimizer, checkpoints) is shared.

use super::sequence::TokenSequence;
use super::update::Advantages;
use super::TrainConfig;
use crate::algo::{
    gae, per_token, reinforce_pp_advantages, rloo_advantages, token_rewards, turn_advantages,
    turn_rewards, whiten, Algorithm, Credit,
};
use crate::episode::EpisodeRecord;
use crate::error::{Error, Result};
use crate::grpo::group_advantages;

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

/// Per-turn rewards of every dialogue (see `algo::placement`).
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
