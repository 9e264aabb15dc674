//! DAPO's dynamic sampling in the training loop (`grpo.dynamic_sampling_draws`): a child module
//! of the trainer, so it reaches the trainer's profile generator and rollout.

use super::{derive, streams, Trainer};
use crate::environment::episode::{EpisodeJob, EpisodeRecord};
use crate::error::Result;
use crate::learning::credit::zero_std_groups;
use crate::learning::train::sequence::TokenSequence;
use crate::learning::train::step_stats::Timings;

impl Trainer<'_> {
    /// DAPO's dynamic sampling (Yu et al. 2025, sec. 3.2): while groups with all-equal rewards
    /// remain and `grpo.dynamic_sampling_draws` allows, each is replaced by a group on a profile
    /// freshly drawn from the profile generator (group numbers P, P+1, ... in the episode log,
    /// which keeps every dialogue played). Returns the number of groups drawn.
    pub(super) fn resample(
        &mut self,
        step: u64,
        records: &mut [EpisodeRecord],
        seqs: &mut [TokenSequence],
        rewards: &mut [f32],
        timings: &mut Timings,
    ) -> Result<u64> {
        let g = self.cfg.file.grpo.group_size;
        let budget = self.cfg.file.grpo.dynamic_sampling_draws;
        let p = self.cfg.file.grpo.profiles_per_step;
        let sim_stream = derive(derive(self.cfg.file.seed, streams::SIMULATOR), step);
        let mut drawn = 0usize;
        let mut round = 0u64;
        loop {
            let bad: Vec<usize> = zero_std_groups(rewards, g)?
                .iter()
                .enumerate()
                .filter(|(_, &z)| z)
                .map(|(i, _)| i)
                .take(budget - drawn)
                .collect();
            if bad.is_empty() {
                return Ok(drawn as u64);
            }
            round += 1;
            let mut jobs = Vec::with_capacity(bad.len() * g);
            for k in 0..bad.len() {
                let group = (p + drawn + k) as u64;
                let pi = rand::Rng::random_range(&mut self.profile_rng, 0..self.profiles.len());
                let seed = derive(sim_stream, group);
                let profile = self.difficulty.profile(&self.profiles[pi]);
                for sample in 0..g {
                    jobs.push(EpisodeJob {
                        profile: profile.clone(),
                        seed,
                        step,
                        group,
                        sample: sample as u64,
                    });
                }
            }
            let (r2, s2, t2) = self.play(step, &jobs, round)?;
            let w2 = self.rewards(&r2)?;
            for (k, &gi) in bad.iter().enumerate() {
                let (dst, src) = (gi * g..(gi + 1) * g, k * g..(k + 1) * g);
                records[dst.clone()].clone_from_slice(&r2[src.clone()]);
                seqs[dst.clone()].clone_from_slice(&s2[src.clone()]);
                rewards[dst].copy_from_slice(&w2[src]);
            }
            timings.rollout_s += t2.rollout_s;
            timings.simulate_s += t2.simulate_s;
            timings.generated_tokens += t2.generated_tokens;
            drawn += bad.len();
        }
    }
}
