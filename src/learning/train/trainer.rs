//! The GRPO training loop, read as verbs (STYLE "The trainer"): choose profiles -> roll out
//! groups -> rewards -> group advantages -> update -> log -> checkpoint.
//!
//! Determinism: every random draw comes from the run seed. Profiles are chosen by a ChaCha8 stream
//! whose state is checkpointed; simulator seeds (one per group) and sampling seeds (one per reply)
//! are derived from (seed, step, group / dialogue, turn); LoRA dropout masks from (seed, step).
//! A run resumed from the checkpoint of step k therefore writes the same rows for steps k+1.. as
//! an uninterrupted run (timing columns aside).

use std::path::PathBuf;
use std::time::Instant;

use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

use super::checkpoint::{
    copies, latest_checkpoint, load_checkpoint, remove_leftovers, save_checkpoint, Checkpoint,
    CriticState, CRITIC_FILE,
};
use super::config::TrainConfig;
use super::critic_update::{critic_update, critic_values, CriticUpdateConfig};
use super::difficulty_schedule::DifficultyPlan;
use super::estimate::estimate;
use super::kl_sample::kl_sample;
use super::metrics::{read_metrics, StepMetrics};
use super::progress::Bars;
use super::recording_policy::TrainPolicy;
use super::restore::{restore_adapters, restore_vars, set_critic_dropout};
use super::reward_source::RewardSource;
use super::rng_state::RngState;
use super::run_files::RunFiles;
use super::sequence::TokenSequence;
use super::stability::advantage_stats;
use super::step_stats::{step_metrics, AlgoStats, History, StepInputs, Timings};
use super::update::{policy_update, UpdateConfig, UpdateStats};
use crate::environment::episode::{
    rollout, EpisodeJob, EpisodeRecord, ModelPolicy, RolloutOptions,
};
use crate::environment::profile::Profile;
use crate::environment::sim::Simulator;
use crate::error::{Error, Result};
use crate::learning::credit::{zero_std_groups, Critic};
use crate::learning::optimize::{AdamW, AdamWConfig};
use crate::model::ChatModel;
use crate::seed::derive;

#[path = "dynamic_sampling.rs"]
mod dynamic_sampling;

/// Seed streams of a run (`seed::derive(run_seed, STREAM)`).
pub mod streams {
    /// The profile-choice generator.
    pub const PROFILES: u64 = 1;
    /// Simulator seeds, one per (step, group).
    pub const SIMULATOR: u64 = 2;
    /// Sampling seeds, one per (step, dialogue, turn).
    pub const SAMPLING: u64 = 3;
    /// LoRA dropout masks, per step.
    pub const DROPOUT: u64 = 4;
    /// LoRA initialisation (A matrices).
    pub const LORA_INIT: u64 = 5;
    /// The critic's LoRA initialisation (PPO).
    pub const CRITIC_INIT: u64 = 6;
    /// SFT: the order of the training examples, one shuffle per epoch.
    pub const SFT_ORDER: u64 = 7;
    /// SFT: which dialogues are held out for validation.
    pub const SFT_SPLIT: u64 = 8;
}

/// Name of the profile generator in checkpoints.
const PROFILE_RNG: &str = "profiles";

/// What a trainer is built from.
pub struct TrainerParts<'a> {
    /// The validated configuration.
    pub cfg: TrainConfig,
    /// The policy, with LoRA attached.
    pub model: ChatModel,
    /// The simulated user.
    pub sim: &'a dyn Simulator,
    /// The reward GRPO optimizes.
    pub reward: &'a dyn RewardSource,
    /// The profiles steps draw from (the configured split, resolved).
    pub profiles: Vec<Profile>,
    /// The knobs of each step: the configured preset's, or the auto controller's.
    pub difficulty: DifficultyPlan,
    /// Show progress bars on stderr.
    pub progress: bool,
}

/// A training run in progress.
pub struct Trainer<'a> {
    cfg: TrainConfig,
    model: ChatModel,
    sim: &'a dyn Simulator,
    reward: &'a dyn RewardSource,
    profiles: Vec<Profile>,
    difficulty: DifficultyPlan,
    opt: AdamW,
    profile_rng: ChaCha8Rng,
    step: u64,
    files: RunFiles,
    bars: Bars,
    /// PPO's value head (its adapters live in the model) and its optimizer.
    critic: Option<(Critic, AdamW)>,
    history: History,
}

impl<'a> Trainer<'a> {
    /// A fresh run: creates the run directory and writes the resolved config before step 1.
    pub fn start(parts: TrainerParts<'a>) -> Result<Self> {
        let files = RunFiles::create(&parts.cfg.run_dir, &parts.cfg.to_yaml()?)?;
        let rng = ChaCha8Rng::seed_from_u64(derive(parts.cfg.file.seed, streams::PROFILES));
        Self::assemble(parts, files, rng, 0)
    }

    /// Continues the run in `parts.cfg.run_dir` from its latest checkpoint (from step 0 when it
    /// has none), dropping metrics rows and dialogues written after that checkpoint.
    pub fn resume(parts: TrainerParts<'a>) -> Result<Self> {
        let dir = parts.cfg.run_dir.clone();
        remove_leftovers(&dir)?;
        let Some(ckpt_dir) = latest_checkpoint(&dir)? else {
            let files = RunFiles::resume(&dir, 0)?;
            let rng = ChaCha8Rng::seed_from_u64(derive(parts.cfg.file.seed, streams::PROFILES));
            return Self::assemble(parts, files, rng, 0);
        };
        let ckpt = load_checkpoint(&ckpt_dir, &parts.model.device)?;
        restore_adapters(&parts.model, &ckpt, &ckpt_dir)?;
        let rng = ckpt
            .rngs
            .get(PROFILE_RNG)
            .ok_or_else(|| {
                Error::input(
                    ckpt_dir.join("state.json"),
                    "rngs",
                    "the profile generator is missing",
                )
            })?
            .restore()?;
        let files = RunFiles::resume(&dir, ckpt.step)?;
        let mut t = Self::assemble(parts, files, rng, ckpt.step)?;
        t.opt.load_state(ckpt.optimizer)?;
        let rows = read_metrics(t.files.metrics.path())?;
        t.history = History::of(&rows);
        t.difficulty.replay(&rows, t.files.metrics.path())?;
        match (&mut t.critic, ckpt.critic) {
            (Some((head, opt)), Some(state)) => {
                let vars = head.trainable(&t.model);
                restore_vars(&vars, &state.tensors, &ckpt_dir.join(CRITIC_FILE))?;
                opt.load_state(state.optimizer)?;
            }
            (Some(_), None) => {
                return Err(Error::input(
                    ckpt_dir.join(CRITIC_FILE),
                    "critic",
                    "the checkpoint has no critic (it was written by a critic-free run); resume \
                     with the run's own config.yaml",
                ))
            }
            (None, _) => {}
        }
        Ok(t)
    }

    fn assemble(
        parts: TrainerParts<'a>,
        files: RunFiles,
        rng: ChaCha8Rng,
        step: u64,
    ) -> Result<Self> {
        let p = parts.cfg.file.grpo.profiles_per_step;
        if parts.profiles.len() < p {
            return Err(Error::input(
                parts.cfg.run_dir.join("config.yaml"),
                "grpo.profiles_per_step",
                format!(
                    "{p} profiles per step, but the split has only {}",
                    parts.profiles.len()
                ),
            ));
        }
        let vars = parts.model.trainable();
        if vars.is_empty() {
            return Err(Error::Other(
                "the model has no trainable adapters; load it with LoRA".into(),
            ));
        }
        let opt = AdamW::new(vars, parts.cfg.file.optim)?;
        let mut model = parts.model;
        let critic = if parts.cfg.file.algorithm.has_critic() {
            let seed = derive(parts.cfg.file.seed, streams::CRITIC_INIT);
            let head = Critic::attach(&mut model, seed)?;
            let cfg = AdamWConfig {
                lr: parts.cfg.file.ppo.critic_lr,
                ..parts.cfg.file.optim
            };
            let opt = AdamW::new(head.trainable(&model), cfg)?;
            Some((head, opt))
        } else {
            None
        };
        let bars = Bars::new(parts.progress, parts.cfg.file.grpo.steps, step);
        Ok(Trainer {
            cfg: parts.cfg,
            model,
            sim: parts.sim,
            reward: parts.reward,
            profiles: parts.profiles,
            difficulty: parts.difficulty,
            opt,
            profile_rng: rng,
            step,
            files,
            bars,
            critic,
            history: History::default(),
        })
    }

    /// Steps completed.
    pub fn steps_done(&self) -> u64 {
        self.step
    }

    /// The policy model.
    pub fn model(&self) -> &ChatModel {
        &self.model
    }

    /// The run directory.
    pub fn run_dir(&self) -> &std::path::Path {
        &self.files.dir
    }

    /// Trains until the configured number of steps, or until step `stop_after` if given;
    /// checkpoints every `checkpoint.every` steps and where it stops; writes `reward.svg` and `emotion.svg` when
    /// training is complete. Returns this session's metrics rows.
    pub fn run(&mut self, stop_after: Option<u64>) -> Result<Vec<StepMetrics>> {
        let total = self.cfg.file.grpo.steps;
        let end = stop_after.map_or(total, |s| s.min(total));
        let mut rows = Vec::new();
        while self.step < end {
            let m = self.step()?;
            rows.push(m);
            if self.step.is_multiple_of(self.cfg.file.checkpoint.every) || self.step == end {
                self.save()?;
            }
        }
        self.bars.finish();
        if self.step >= total {
            self.files.write_curves()?;
        }
        Ok(rows)
    }

    /// Saves a checkpoint of the current state; returns its directory.
    pub fn save(&self) -> Result<PathBuf> {
        let ckpt = Checkpoint {
            step: self.step,
            adapters: copies(self.model.trainable())?,
            optimizer: self.opt.state()?,
            rngs: [(
                PROFILE_RNG.to_string(),
                RngState::capture(&self.profile_rng),
            )]
            .into_iter()
            .collect(),
            meta: serde_json::json!({ "run": self.cfg.file.run }),
            critic: match &self.critic {
                Some((head, opt)) => Some(CriticState {
                    tensors: copies(head.trainable(&self.model))?,
                    optimizer: opt.state()?,
                }),
                None => None,
            },
        };
        save_checkpoint(&self.files.dir, &ckpt)
    }

    /// The critic (PPO), if the run has one.
    pub fn critic(&self) -> Option<&Critic> {
        self.critic.as_ref().map(|(c, _)| c)
    }

    /// One training step: rollout (with dynamic sampling's extra groups), rewards, advantages,
    /// update, metrics row.
    pub fn step(&mut self) -> Result<StepMetrics> {
        let step = self.step + 1;
        let jobs = self.jobs(step);
        let (mut records, mut seqs, mut timings) = self.play(step, &jobs, 0)?;
        let mut rewards = self.rewards(&records)?;
        let extra_draws =
            self.resample(step, &mut records, &mut seqs, &mut rewards, &mut timings)?;
        let t0 = Instant::now();
        let (update, mut algo) = self.update(step, &records, &rewards, &seqs)?;
        algo.extra_draws = extra_draws;
        timings.train_s = t0.elapsed().as_secs_f64();
        let mut row = step_metrics(&StepInputs {
            step,
            records: &records,
            rewards: &rewards,
            group_size: self.cfg.file.grpo.group_size,
            seqs: &seqs,
            update: update.as_ref(),
            next_lr: self.opt.next_lr(),
            timings,
            algo,
            history: self.history,
            stability: self.cfg.file.stability,
        })?;
        self.difficulty.record(&mut row);
        self.files.metrics.append(&row)?;
        self.history = self.history.after(&row);
        self.difficulty.observe(&row);
        self.step = step;
        self.bars.step_done(&row);
        Ok(row)
    }

    fn rewards(&self, records: &[EpisodeRecord]) -> Result<Vec<f32>> {
        records
            .iter()
            .map(|r| self.reward.reward(r).map(|x| x as f32))
            .collect()
    }

    /// P profiles drawn without replacement at the step's knobs, G dialogues each, one simulator
    /// seed per group.
    fn jobs(&mut self, step: u64) -> Vec<EpisodeJob> {
        let g = &self.cfg.file.grpo;
        let chosen = rand::seq::index::sample(
            &mut self.profile_rng,
            self.profiles.len(),
            g.profiles_per_step,
        );
        let sim_stream = derive(derive(self.cfg.file.seed, streams::SIMULATOR), step);
        let mut jobs = Vec::with_capacity(self.cfg.batch_size());
        for (group, pi) in chosen.iter().enumerate() {
            let seed = derive(sim_stream, group as u64);
            let profile = self.difficulty.profile(&self.profiles[pi]);
            for sample in 0..g.group_size {
                jobs.push(EpisodeJob {
                    profile: profile.clone(),
                    seed,
                    step,
                    group: group as u64,
                    sample: sample as u64,
                });
            }
        }
        jobs
    }

    /// Plays the jobs through the one rollout loop, writing each dialogue as it ends. `round` 0
    /// is the step's batch; dynamic sampling's rounds 1, 2, ... sample with their own seeds.
    fn play(
        &mut self,
        step: u64,
        jobs: &[EpisodeJob],
        round: u64,
    ) -> Result<(Vec<EpisodeRecord>, Vec<TokenSequence>, Timings)> {
        let env = &self.cfg.file.env;
        let mut seed = derive(derive(self.cfg.file.seed, streams::SAMPLING), step);
        if round > 0 {
            seed = derive(seed, (1 << 32) | round);
        }
        // The rollout decodes with the adapters merged into copies of the weights, made once for
        // the step's turns: the adapters do not change during a rollout, whose decoding steps
        // repay the merge on every device, f32 on the CPU included (there `generate` alone does
        // not merge, `Llama::decodes_merged`; results/perf/step.md, "f32 rollouts decode with
        // the adapters merged").
        let t_merge = Instant::now();
        let _merged = self.model.model.merge_adapters()?;
        let merge_s = t_merge.elapsed().as_secs_f64();
        let mut inner = ModelPolicy::new(&self.model, self.cfg.sampling.clone(), seed);
        if let Some(s) = &env.system_prompt {
            inner.system = s.clone();
        }
        inner.think = env.think;
        let mut policy = TrainPolicy::new(inner, jobs.len());
        let opts = RolloutOptions {
            run: self.cfg.file.run.clone(),
            reward_mode: env.reward_mode,
            aggregate: env.aggregate,
            progress: false,
        };
        let bar = self.bars.rollout(jobs.len());
        let writer = &mut self.files.episodes;
        let t0 = Instant::now();
        let records = rollout(self.sim, &mut policy, jobs, &opts, |rec| {
            bar.inc(1);
            writer.write(rec)
        })?;
        let total = t0.elapsed().as_secs_f64();
        bar.finish_and_clear();
        let timings = Timings {
            rollout_s: merge_s + policy.generation_seconds(),
            simulate_s: (total - policy.generation_seconds()).max(0.0),
            train_s: 0.0,
            generated_tokens: policy.generated_tokens(),
        };
        Ok((records, policy.into_sequences(), timings))
    }

    /// The zero-std filter, the KL sample, the algorithm's advantages, PPO's critic update and
    /// the policy update (None when nothing is left to train, or during `ppo.critic_warmup`).
    fn update(
        &mut self,
        step: u64,
        records: &[EpisodeRecord],
        rewards: &[f32],
        seqs: &[TokenSequence],
    ) -> Result<(Option<UpdateStats>, AlgoStats)> {
        let g = &self.cfg.file.grpo;
        let mut algo = AlgoStats::default();
        let zero = zero_std_groups(rewards, g.group_size)?;
        let keep: Vec<usize> = (0..seqs.len())
            .filter(|&i| !(g.drop_zero_std && zero[i / g.group_size]))
            .filter(|&i| seqs[i].policy_tokens() > 0)
            .collect();
        if keep.is_empty() {
            algo.kl_sample = self.kl_sample_untrained(seqs)?;
            return Ok((None, algo));
        }
        let batch: Vec<&TokenSequence> = keep.iter().map(|&i| &seqs[i]).collect();
        let dropout_seed = derive(derive(self.cfg.file.seed, streams::DROPOUT), step);
        self.bars.training();
        let values = match &self.critic {
            Some((head, _)) => Some(critic_values(&self.model, head, &batch, g.micro_batch)?),
            None => None,
        };
        let est = estimate(&self.cfg, records, rewards, seqs, &keep, values.as_deref())?;
        let tokens: Vec<usize> = batch.iter().map(|s| s.policy_tokens()).collect();
        (algo.adv_mean, algo.adv_std) = advantage_stats(&est.advantages.per_token(&tokens));
        if let (Some((head, opt)), Some(targets)) = (&mut self.critic, &est.critic_targets) {
            let cfg = CriticUpdateConfig {
                clip: self.cfg.file.ppo.cliprange_value,
                iterations: g.iterations,
                micro_batch: g.micro_batch,
            };
            set_critic_dropout(&self.model, dropout_seed)?;
            let (v, r) = (&targets.values, &targets.returns);
            algo.critic = Some(critic_update(&self.model, head, opt, &batch, v, r, &cfg)?);
        }
        if self.critic.is_some() && step <= self.cfg.file.ppo.critic_warmup {
            algo.kl_sample = self.kl_sample_untrained(seqs)?;
            return Ok((None, algo));
        }
        let cfg = UpdateConfig {
            loss: g.loss,
            iterations: g.iterations,
            micro_batch: g.micro_batch,
            dropout_seed,
            temperature: self.cfg.sampling.temperature,
            kl_sample: self.cfg.file.stability.kl_sample,
            checkpoint: self.cfg.file.model.gradient_checkpointing,
        };
        let stats = policy_update(&self.model, &mut self.opt, &batch, &est.advantages, &cfg)?;
        algo.kl_sample = stats.kl_sample;
        Ok((Some(stats), algo))
    }

    /// The KL sample of a step that trains on nothing (every group dropped, or PPO's critic
    /// warm-up): the step's first `stability.kl_sample` dialogues, from two inference passes.
    fn kl_sample_untrained(&self, seqs: &[TokenSequence]) -> Result<Option<f64>> {
        let n = self.cfg.file.stability.kl_sample.min(seqs.len());
        if n == 0 {
            return Ok(None);
        }
        let sample: Vec<&TokenSequence> = seqs[..n].iter().collect();
        kl_sample(&self.model, &sample, self.cfg.sampling.temperature)
    }
}
