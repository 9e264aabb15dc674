//! One step's row of metrics.csv (`metrics::StepMetrics`), assembled from the step's
//! dialogues, rewards, sequences, update statistics and timings.

use super::critic_update::CriticStats;
use super::metrics::StepMetrics;
use super::sequence::TokenSequence;
use super::stability::{collapsed, repeated_reply_rate, Baseline, StabilityConfig};
use super::update::UpdateStats;
use crate::environment::episode::EpisodeRecord;
use crate::error::Result;
use crate::learning::credit::frac_reward_zero_std;

/// Wall-clock seconds of one step's phases.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Timings {
    /// Generating replies.
    pub rollout_s: f64,
    /// The rest of the rollout: the simulator (appraisal, speaker) and bookkeeping.
    pub simulate_s: f64,
    /// Forward/backward passes and the optimizer.
    pub train_s: f64,
    /// Tokens generated.
    pub generated_tokens: usize,
}

/// The algorithm-side numbers of a step.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct AlgoStats {
    /// Token-weighted mean of the update's advantages.
    pub adv_mean: f64,
    /// Token-weighted population std of the update's advantages.
    pub adv_std: f64,
    /// The subsampled KL estimate.
    pub kl_sample: Option<f64>,
    /// PPO's critic update.
    pub critic: Option<CriticStats>,
    /// Groups drawn by dynamic sampling.
    pub extra_draws: u64,
}

/// What a step is compared with: the run's first measured values and the previous step's.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct History {
    /// First measured entropy and reply length of the run.
    pub baseline: Baseline,
    /// The previous step's mean reply length.
    pub prev_reply_len: Option<f64>,
}

impl History {
    /// The history after `row`.
    pub fn after(mut self, row: &StepMetrics) -> Self {
        if self.baseline.entropy.is_none() {
            self.baseline.entropy = row.entropy;
        }
        if self.baseline.reply_len.is_none() {
            self.baseline.reply_len = Some(row.reply_len_mean);
        }
        self.prev_reply_len = Some(row.reply_len_mean);
        self
    }

    /// The history of a run from its metrics rows so far.
    pub fn of(rows: &[StepMetrics]) -> Self {
        rows.iter().fold(History::default(), |h, r| h.after(r))
    }
}

/// Everything a row is computed from.
pub struct StepInputs<'a> {
    /// The step (1-based).
    pub step: u64,
    /// The dialogues, group after group.
    pub records: &'a [EpisodeRecord],
    /// Their rewards, same order.
    pub rewards: &'a [f32],
    /// Dialogues per group.
    pub group_size: usize,
    /// Their token sequences, same order.
    pub seqs: &'a [TokenSequence],
    /// The update, when one ran.
    pub update: Option<&'a UpdateStats>,
    /// The learning rate the next step would use (logged when no step was applied).
    pub next_lr: f64,
    /// Phase timings.
    pub timings: Timings,
    /// Advantages, KL sample, critic, dynamic sampling.
    pub algo: AlgoStats,
    /// The run so far, for the change and collapse columns.
    pub history: History,
    /// The collapse thresholds.
    pub stability: StabilityConfig,
}

/// The metrics row of a step.
pub fn step_metrics(inp: &StepInputs<'_>) -> Result<StepMetrics> {
    let n = inp.records.len().max(1) as f64;
    let rewards: Vec<f64> = inp.rewards.iter().map(|&r| r as f64).collect();
    let finals: Vec<f64> = inp
        .records
        .iter()
        .map(|r| f64::from(r.final_emotion()))
        .collect();
    let reply_lens: Vec<usize> = inp
        .seqs
        .iter()
        .flat_map(|s| s.replies().iter().map(|r| r.len()))
        .collect();
    let t = &inp.timings;
    let (lr, grad_norm) = match inp.update.and_then(UpdateStats::last_applied) {
        Some((lr, g)) => (lr, Some(g)),
        None => (inp.next_lr, None),
    };
    let reply_len_mean = mean(&reply_lens.iter().map(|&l| l as f64).collect::<Vec<_>>());
    let repeat_rate = repeated_reply_rate(
        inp.records
            .iter()
            .flat_map(|r| r.assistant_turns().into_iter().map(|(t, _)| t)),
    );
    let entropy = inp.update.and_then(|u| u.entropy);
    let critic = inp.algo.critic;
    let loss = inp.update.map(|u| u.loss).unwrap_or_default();
    let phases = inp.update.map(|u| u.phases).unwrap_or_default();
    Ok(StepMetrics {
        step: inp.step,
        reward_mean: mean(&rewards),
        reward_std: population_std(&rewards),
        frac_reward_zero_std: frac_reward_zero_std(inp.rewards, inp.group_size)?,
        final_emotion_mean: mean(&finals),
        success_rate: finals.iter().filter(|&&e| e >= 100.0).count() as f64 / n,
        failure_rate: finals.iter().filter(|&&e| e < 10.0).count() as f64 / n,
        kl: loss.mean_kl(),
        clip_frac_low: loss.clip_frac_low(),
        clip_frac_high: loss.clip_frac_high(),
        entropy,
        policy_tokens: inp.update.map_or(0, |u| u.tokens as u64),
        reply_len_mean,
        t_rollout_s: t.rollout_s,
        t_simulate_s: t.simulate_s,
        t_train_s: t.train_s,
        t_logprob_s: phases.logprob_s,
        t_forward_s: phases.forward_s,
        t_backward_s: phases.backward_s,
        t_optimizer_s: phases.optimizer_s,
        tokens_per_s: if t.rollout_s > 0.0 {
            t.generated_tokens as f64 / t.rollout_s
        } else {
            0.0
        },
        lr,
        grad_norm,
        skipped: inp.update.is_some_and(UpdateStats::skipped),
        adv_mean: inp.algo.adv_mean,
        adv_std: inp.algo.adv_std,
        reply_len_delta: inp.history.prev_reply_len.map(|p| reply_len_mean - p),
        repeat_rate,
        kl_sample: inp.algo.kl_sample,
        value_loss: critic.map(|c| c.value_loss),
        explained_var: critic.and_then(|c| c.explained_var),
        value_clip_frac: critic.map(|c| c.clip_frac),
        extra_draws: inp.algo.extra_draws,
        collapse: collapsed(
            &inp.stability,
            &inp.history.baseline,
            entropy,
            reply_len_mean,
            repeat_rate,
        ),
        sim_failures: inp
            .records
            .iter()
            .map(|r| r.simulator_failures() as u64)
            .sum(),
        unsafe_rate: inp
            .records
            .iter()
            .filter(|r| r.end == Some(crate::environment::episode::End::Unsafe))
            .count() as f64
            / n,
        // The difficulty columns are the plan's: `DifficultyPlan::record` fills them.
        ..StepMetrics::default()
    })
}

fn mean(xs: &[f64]) -> f64 {
    if xs.is_empty() {
        0.0
    } else {
        xs.iter().sum::<f64>() / xs.len() as f64
    }
}

/// Population standard deviation (divisor n) of the batch's rewards.
fn population_std(xs: &[f64]) -> f64 {
    let m = mean(xs);
    mean(&xs.iter().map(|x| (x - m).powi(2)).collect::<Vec<_>>()).sqrt()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mean_and_population_std_by_hand() {
        // [0.2, 0.4, 0.6, 0.8]: mean 0.5; squared deviations 0.09 + 0.01 + 0.01 + 0.09 = 0.2;
        // / 4 = 0.05; sqrt = 0.223607.
        let xs = [0.2, 0.4, 0.6, 0.8];
        assert!((mean(&xs) - 0.5).abs() < 1e-12);
        assert!((population_std(&xs) - 0.05f64.sqrt()).abs() < 1e-12);
        assert_eq!(mean(&[]), 0.0);
        assert_eq!(population_std(&[0.3, 0.3]), 0.0);
    }
}
