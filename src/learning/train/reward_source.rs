//! Where the trainer's reward comes from. By default it is the environment's own rubric total
//! (behavior or trait reward, docs/REWARD.md), already in every episode record; tests and
//! experiments plug in any other verifiable reward (a closure over the record) through the same
//! update code.

use crate::environment::episode::EpisodeRecord;
use crate::error::{Error, Result};

/// The scalar reward GRPO optimizes, one per finished dialogue.
pub trait RewardSource {
    /// The reward of one finished dialogue.
    fn reward(&self, record: &EpisodeRecord) -> Result<f64>;
}

/// The environment's reward: the rubric total the simulator wrote into the record.
#[derive(Debug, Clone, Copy, Default)]
pub struct EnvReward;

impl RewardSource for EnvReward {
    fn reward(&self, record: &EpisodeRecord) -> Result<f64> {
        record.reward.ok_or_else(|| {
            Error::Other(format!(
                "episode {}/{}/{} has no reward",
                record.step, record.group, record.sample
            ))
        })
    }
}

/// Any function of the record is a reward (e.g. a scripted, verifiable one in tests).
impl<F: Fn(&EpisodeRecord) -> f64> RewardSource for F {
    fn reward(&self, record: &EpisodeRecord) -> Result<f64> {
        Ok(self(record))
    }
}
