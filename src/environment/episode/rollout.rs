//! The one dialogue loop. Every live dialogue asks the policy in one batch, then the simulator
//! appraises all replies in one batch; finished dialogues are recorded at once (in job order
//! within a turn, so logs are deterministic).

use indicatif::{ProgressBar, ProgressStyle};

use super::env::{step_batch, DialogueEnv};
use super::policy::{Policy, PolicyRequest};
use super::record::EpisodeRecord;
use crate::error::{Error, Result};
use crate::profile::Profile;
use crate::reward::{Aggregate, RewardMode};
use crate::sim::Simulator;

/// One dialogue to play.
#[derive(Clone, Debug)]
pub struct EpisodeJob {
    pub profile: Profile,
    /// The simulator seed (shared by a GRPO group).
    pub seed: u64,
    pub step: u64,
    pub group: u64,
    pub sample: u64,
}

impl EpisodeJob {
    /// `repeats` dialogues with each profile, as groups in profile order; dialogue `i` of the
    /// grid is seeded from `seed` and `i`.
    pub fn grid(profiles: &[Profile], repeats: u64, seed: u64) -> Vec<EpisodeJob> {
        let mut jobs = Vec::new();
        for (g, profile) in profiles.iter().enumerate() {
            for r in 0..repeats {
                jobs.push(EpisodeJob {
                    profile: profile.clone(),
                    seed: crate::seed::derive(seed, g as u64 * repeats + r),
                    step: 0,
                    group: g as u64,
                    sample: r,
                });
            }
        }
        jobs
    }
}

/// How to play and record.
#[derive(Clone, Debug, Default)]
pub struct RolloutOptions {
    pub run: String,
    pub reward_mode: RewardMode,
    pub aggregate: Aggregate,
    /// Show a progress bar on stderr.
    pub progress: bool,
}

fn progress_bar(n: usize, show: bool) -> ProgressBar {
    if !show {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::new(n as u64);
    if let Ok(style) = ProgressStyle::with_template(
        "{prefix} [{bar:30}] {pos}/{len} dialogues {elapsed_precise} eta {eta}",
    ) {
        bar.set_style(style.progress_chars("=> "));
    }
    bar.set_prefix("rollout");
    bar
}

/// Plays every job to its end. `on_done` sees each record as soon as its dialogue ends (write it
/// there to keep logs append-only and flushed per dialogue). Returns the records in job order.
pub fn rollout(
    sim: &dyn Simulator,
    policy: &mut dyn Policy,
    jobs: &[EpisodeJob],
    opts: &RolloutOptions,
    mut on_done: impl FnMut(&EpisodeRecord) -> Result<()>,
) -> Result<Vec<EpisodeRecord>> {
    let mut envs: Vec<DialogueEnv> = jobs
        .iter()
        .map(|j| {
            let mut env = DialogueEnv::new(j.profile.clone(), opts.reward_mode, opts.aggregate);
            env.reset(j.seed);
            env
        })
        .collect();
    let mut records: Vec<Option<EpisodeRecord>> = vec![None; jobs.len()];
    let bar = progress_bar(jobs.len(), opts.progress);
    let mut turn = 0u32;
    while records.iter().any(Option::is_none) {
        turn += 1;
        let live: Vec<usize> = (0..envs.len()).filter(|&i| records[i].is_none()).collect();
        let replies = {
            let requests: Vec<PolicyRequest<'_>> = live
                .iter()
                .map(|&i| PolicyRequest {
                    episode: i,
                    profile: &envs[i].profile().id,
                    turns: envs[i].turns(),
                    turn,
                })
                .collect();
            policy.reply_batch(&requests)?
        };
        if replies.len() != live.len() {
            return Err(Error::Other(format!(
                "policy gave {} replies for {} dialogues",
                replies.len(),
                live.len()
            )));
        }
        let pairs: Vec<(String, Option<String>)> =
            replies.into_iter().map(|r| (r.text, r.think)).collect();
        {
            let mut live_envs: Vec<&mut DialogueEnv> = envs
                .iter_mut()
                .enumerate()
                .filter(|(i, _)| live.contains(i))
                .map(|(_, e)| e)
                .collect();
            step_batch(sim, &mut live_envs, &pairs)?;
        }
        for &i in &live {
            if envs[i].is_done() {
                let job = &jobs[i];
                let mut rec = envs[i].record(sim, policy.describe());
                rec.run = opts.run.clone();
                (rec.step, rec.group, rec.sample) = (job.step, job.group, job.sample);
                on_done(&rec)?;
                policy.finished(i);
                records[i] = Some(rec);
                bar.inc(1);
            }
        }
    }
    bar.finish_and_clear();
    Ok(records.into_iter().flatten().collect())
}
