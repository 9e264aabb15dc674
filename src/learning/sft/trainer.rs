//! The SFT loop: each step takes `sft.batch` examples in a seeded order (a fresh shuffle per
//! epoch), minimizes the mean negative log-likelihood of their supporter tokens
//! ([`masked_nll`]) with AdamW on the LoRA adapters, and logs a row of `sft.csv`. Checkpoints
//! are the trainer's (`train::checkpoint`), so a run stopped anywhere resumes exactly; the order
//! is a pure function of (seed, step) and needs no saved generator. At each checkpoint the loss
//! on the held-out dialogues is measured.
//!
//! The run directory is a training run's: `config.yaml` is the resolved config, so `export`
//! merges an SFT run's adapters into an HF folder that `train` can start GRPO from
//! (`model.path`), with the SFT policy as its reference.

use std::path::{Path, PathBuf};
use std::time::Instant;

use candle_core::backprop::GradStore;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use rand::seq::SliceRandom;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

use super::corpus::{Corpus, Example};
use super::log::{loss_svg, read_rows, SftLog, SftRow, SFT_FILE, SFT_SVG};
use super::tokens::Tokenizing;
use crate::environment::episode::model_policy::DEFAULT_SYSTEM;
use crate::error::{Error, Result};
use crate::learning::optimize::{masked_nll, AdamW, StepOutcome};
use crate::learning::train::checkpoint::{
    copies, latest_checkpoint, load_checkpoint, remove_leftovers, save_checkpoint, Checkpoint,
};
use crate::learning::train::restore::restore_adapters;
use crate::learning::train::run_files::{create_run_dir, CONFIG_FILE};
use crate::learning::train::sequence::TokenSequence;
use crate::learning::train::trainer::streams;
use crate::learning::train::update::{
    fill_missing, micro_inputs, set_dropout_seed, trainable_grads,
};
use crate::learning::train::TrainConfig;
use crate::model::{AdapterMode, ChatModel, Pass};
use crate::seed::derive;

/// What an SFT trainer is built from.
pub struct SftParts {
    /// The validated configuration (its `sft:` section).
    pub cfg: TrainConfig,
    /// The policy, with LoRA attached.
    pub model: ChatModel,
    /// The examples.
    pub corpus: Corpus,
    /// Show a progress bar.
    pub progress: bool,
}

/// A running SFT.
pub struct SftTrainer {
    cfg: TrainConfig,
    model: ChatModel,
    opt: AdamW,
    train: Vec<TokenSequence>,
    validation: Vec<TokenSequence>,
    /// Examples left out because their first supporter turn does not fit `sft.max_tokens`.
    too_long: usize,
    step: u64,
    log: SftLog,
    bar: ProgressBar,
}

impl SftTrainer {
    /// A fresh run: creates the run directory, writes the resolved config and, with a validation
    /// part, row 0 of `sft.csv` (the held-out loss before training).
    pub fn start(parts: SftParts) -> Result<Self> {
        let dir = parts.cfg.run_dir.clone();
        create_run_dir(&dir, &dir.join(SFT_FILE), &parts.cfg.to_yaml()?)?;
        let log = SftLog::create(&dir)?;
        let mut t = Self::assemble(parts, log, 0)?;
        // Row 0: the held-out loss of the policy before any update, the baseline of the curve.
        let t0 = Instant::now();
        if let Some(v) = t.validation_loss()? {
            t.log.append(&SftRow {
                step: 0,
                loss: None,
                tokens: 0,
                lr: None,
                grad_norm: None,
                validation_loss: Some(v),
                seconds: t0.elapsed().as_secs_f64(),
            })?;
        }
        Ok(t)
    }

    /// Continues the run in `parts.cfg.run_dir` from its latest checkpoint (from step 0 when it
    /// has none), dropping the rows written after that checkpoint.
    pub fn resume(parts: SftParts) -> Result<Self> {
        let dir = parts.cfg.run_dir.clone();
        remove_leftovers(&dir)?;
        let Some(ckpt_dir) = latest_checkpoint(&dir)? else {
            let log = SftLog::resume(&dir, 0)?;
            return Self::assemble(parts, log, 0);
        };
        let ckpt = load_checkpoint(&ckpt_dir, &parts.model.device)?;
        restore_adapters(&parts.model, &ckpt, &ckpt_dir)?;
        let log = SftLog::resume(&dir, ckpt.step)?;
        let mut t = Self::assemble(parts, log, ckpt.step)?;
        t.opt.load_state(ckpt.optimizer)?;
        Ok(t)
    }

    fn assemble(parts: SftParts, log: SftLog, step: u64) -> Result<Self> {
        let SftParts {
            cfg,
            model,
            corpus,
            progress,
        } = parts;
        let sft = &cfg.file.sft;
        let system = cfg
            .file
            .env
            .system_prompt
            .as_deref()
            .unwrap_or(DEFAULT_SYSTEM);
        // The template's own end of turn, the stop token a reply is sampled to end with.
        let end_of_turn = model.template.stop_strings().first().copied().unwrap_or("");
        let encode = |t: &str| model.encode(t);
        let tok = Tokenizing {
            template: &model.template,
            system,
            end_of_turn,
            max_tokens: sft.max_tokens,
            encode: &encode,
        };
        let mut too_long = 0;
        let mut sequences = |examples: &[Example]| -> Result<Vec<TokenSequence>> {
            let mut out = Vec::with_capacity(examples.len());
            for e in examples {
                match tok.sequence(&e.messages)? {
                    Some(s) => out.push(s),
                    None => too_long += 1,
                }
            }
            Ok(out)
        };
        let train = sequences(&corpus.train)?;
        let validation = sequences(&corpus.validation)?;
        if train.is_empty() {
            return Err(Error::input(
                cfg.run_dir.join(CONFIG_FILE),
                "sft.max_tokens",
                format!(
                    "no training example fits in {} tokens: raise sft.max_tokens",
                    sft.max_tokens
                ),
            ));
        }
        let vars = model.trainable();
        if vars.is_empty() {
            return Err(Error::Other(
                "the model has no trainable adapters; load it with LoRA".into(),
            ));
        }
        let opt = AdamW::new(vars, cfg.file.optim)?;
        let bar = ProgressBar::with_draw_target(
            Some(sft.steps),
            if progress {
                ProgressDrawTarget::stderr()
            } else {
                ProgressDrawTarget::hidden()
            },
        );
        if let Ok(s) = ProgressStyle::with_template(
            "sft   [{bar:30}] {pos}/{len} {elapsed_precise} eta {eta} {msg}",
        ) {
            bar.set_style(s.progress_chars("=> "));
        }
        bar.set_position(step);
        Ok(SftTrainer {
            cfg,
            model,
            opt,
            train,
            validation,
            too_long,
            step,
            log,
            bar,
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
    pub fn run_dir(&self) -> &Path {
        &self.cfg.run_dir
    }

    /// Training and validation sequences, and the examples left out as too long.
    pub fn sizes(&self) -> (usize, usize, usize) {
        (self.train.len(), self.validation.len(), self.too_long)
    }

    /// Trains until `sft.steps`, or until step `stop_after` if given; checkpoints (with the
    /// validation loss) every `checkpoint.every` steps and where it stops; writes `sft.svg` when
    /// the run is complete. Returns this session's rows.
    pub fn run(&mut self, stop_after: Option<u64>) -> Result<Vec<SftRow>> {
        let total = self.cfg.file.sft.steps;
        let end = stop_after.map_or(total, |s| s.min(total));
        let mut rows = Vec::new();
        while self.step < end {
            let mut row = self.step()?;
            let save = self.step.is_multiple_of(self.cfg.file.checkpoint.every) || self.step == end;
            if save {
                row.validation_loss = self.validation_loss()?;
            }
            self.log.append(&row)?;
            if save {
                self.save()?;
            }
            self.bar.inc(1);
            self.bar
                .set_message(format!("loss {:.3}", row.loss.unwrap_or(f64::NAN)));
            rows.push(row);
        }
        self.bar.finish();
        if self.step >= total {
            let svg = self.cfg.run_dir.join(SFT_SVG);
            let all = read_rows(self.log.path())?;
            std::fs::write(&svg, loss_svg(&all)).map_err(|e| Error::io(&svg, e))?;
        }
        Ok(rows)
    }

    /// One step on the next batch: the loss before the update, then one AdamW step.
    pub fn step(&mut self) -> Result<SftRow> {
        let t0 = Instant::now();
        let step = self.step + 1;
        let sft = &self.cfg.file.sft;
        let picked = batch_indices(self.cfg.file.seed, self.train.len(), sft.batch, step);
        let seqs: Vec<&TokenSequence> = picked.iter().map(|&i| &self.train[i]).collect();
        let tokens: usize = seqs.iter().map(|s| s.policy_tokens()).sum();
        let dropout = derive(derive(self.cfg.file.seed, streams::DROPOUT), step);
        let mut acc = GradStore::default();
        let mut loss = 0.0;
        for (mi, chunk) in seqs.chunks(sft.micro_batch).enumerate() {
            set_dropout_seed(&self.model, dropout, 0, mi)?;
            let (ids, mask) = micro_inputs(chunk, &self.model.device)?;
            let (lp, checkpointed) = if self.cfg.file.model.gradient_checkpointing {
                let (lp, ck) =
                    self.model
                        .scored_logprobs_checkpointed(&ids, AdapterMode::On, 1.0, &mask)?;
                (lp, Some(ck))
            } else {
                let lp =
                    self.model
                        .scored_logprobs(&ids, AdapterMode::On, Pass::Train, 1.0, &mask)?;
                (lp, None)
            };
            let l = masked_nll(&lp, &mask, tokens)?;
            loss += l.to_scalar::<f32>()? as f64;
            let grads = match checkpointed {
                Some(ck) => ck.backward(&l)?,
                None => l.backward()?,
            };
            acc.extend(trainable_grads(&self.opt, grads))?;
        }
        fill_missing(&self.opt, &mut acc)?;
        let (lr, grad_norm) = match self.opt.step(loss, &acc)? {
            StepOutcome::Applied { lr, grad_norm, .. } => (Some(lr), Some(grad_norm)),
            StepOutcome::Skipped(_) => (None, None),
        };
        self.step = step;
        Ok(SftRow {
            step,
            loss: Some(loss),
            tokens,
            lr,
            grad_norm,
            validation_loss: None,
            seconds: t0.elapsed().as_secs_f64(),
        })
    }

    /// The mean negative log-likelihood of the held-out supporter tokens under the current
    /// adapters (`None` without a validation part).
    pub fn validation_loss(&self) -> Result<Option<f64>> {
        let seqs: Vec<&TokenSequence> = self.validation.iter().collect();
        let tokens: usize = seqs.iter().map(|s| s.policy_tokens()).sum();
        if tokens == 0 {
            return Ok(None);
        }
        let mut loss = 0.0;
        for chunk in seqs.chunks(self.cfg.file.sft.micro_batch) {
            let (ids, mask) = micro_inputs(chunk, &self.model.device)?;
            let lp = self
                .model
                .scored_logprobs(&ids, AdapterMode::On, Pass::Infer, 1.0, &mask)?;
            loss += masked_nll(&lp, &mask, tokens)?.to_scalar::<f32>()? as f64;
        }
        Ok(Some(loss))
    }

    /// Saves a checkpoint of the current state; returns its directory.
    pub fn save(&self) -> Result<PathBuf> {
        let ckpt = Checkpoint {
            step: self.step,
            adapters: copies(self.model.trainable())?,
            optimizer: self.opt.state()?,
            rngs: Default::default(),
            meta: serde_json::json!({ "run": self.cfg.file.run, "trainer": "sft" }),
            critic: None,
        };
        save_checkpoint(&self.cfg.run_dir, &ckpt)
    }
}

/// The training examples of step `step` (1-based): positions `(step-1)*batch ..` of the endless
/// sequence of epochs, each epoch a seeded shuffle of `0..n` (`n` > 0).
pub fn batch_indices(seed: u64, n: usize, batch: usize, step: u64) -> Vec<usize> {
    let first = (step - 1) as usize * batch;
    let mut epoch_of: Option<(usize, Vec<usize>)> = None;
    (first..first + batch)
        .map(|p| {
            let epoch = p / n;
            if epoch_of.as_ref().is_none_or(|(e, _)| *e != epoch) {
                let mut order: Vec<usize> = (0..n).collect();
                let s = derive(derive(seed, streams::SFT_ORDER), epoch as u64);
                order.shuffle(&mut ChaCha8Rng::seed_from_u64(s));
                epoch_of = Some((epoch, order));
            }
            epoch_of.as_ref().map_or(0, |(_, order)| order[p % n])
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_example_once_per_epoch_in_a_seeded_order() {
        // 10 examples, batches of 4: steps 1-2 and half of 3 are epoch 0.
        let steps: Vec<Vec<usize>> = (1..=5).map(|s| batch_indices(3, 10, 4, s)).collect();
        let flat: Vec<usize> = steps.concat();
        let mut epoch0 = flat[..10].to_vec();
        epoch0.sort_unstable();
        assert_eq!(epoch0, (0..10).collect::<Vec<_>>());
        let mut epoch1 = flat[10..20].to_vec();
        epoch1.sort_unstable();
        assert_eq!(epoch1, (0..10).collect::<Vec<_>>());
        assert_ne!(flat[..10], flat[10..20], "each epoch is shuffled anew");
        assert_eq!(
            batch_indices(3, 10, 4, 4),
            steps[3],
            "a pure function of the step"
        );
        assert_ne!(batch_indices(4, 10, 4, 1), steps[0], "and of the seed");
    }
}
