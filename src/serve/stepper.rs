//! The simulator's worker for `serve-env`: one thread that takes every step request waiting at
//! the moment, appraises their replies in one batch through the environment's [`step_batch`] (the
//! one dialogue loop's step; embeddings are batch-independent, so a batched step equals a lone one
//! and `replay verify` re-runs it exactly), and writes each dialogue that ended to the episode log
//! at once, flushed per line (through a [`LogSink`], which keeps what the log cannot take yet).
//! HTTP handlers never run the simulator themselves.

use std::sync::Arc;

use tokio::sync::{mpsc, oneshot};

use super::log_sink::{LogSink, Unwritten};
use crate::environment::episode::{step_batch, DialogueEnv, EpisodeRecord, PolicyRef, StepOutcome};
use crate::environment::profile::Profile;
use crate::environment::sim::Simulator;
use crate::error::Result;

/// A job for the worker.
pub enum Job {
    /// Embed what the users of this profile can say (the appraiser's cache) before its first step.
    Prepare {
        profile: Profile,
        done: oneshot::Sender<Result<()>>,
    },
    /// Appraise one reply and let the user answer.
    Step(Box<StepJob>),
    /// Try again to write the records the log could not take.
    Flush,
}

/// One reply to one episode.
pub struct StepJob {
    pub env: DialogueEnv,
    pub reply: String,
    pub think: Option<String>,
    pub policy: PolicyRef,
    /// The record's `run` and `sample`.
    pub run: String,
    pub number: u64,
    pub done: oneshot::Sender<StepDone>,
}

/// What a step gives back: the environment (always, to be put back), the outcome, and the record
/// when the dialogue ended (already written to the log).
pub struct StepDone {
    pub env: DialogueEnv,
    pub outcome: Result<StepOutcome>,
    pub record: Option<EpisodeRecord>,
}

/// Counts of the episodes that finished.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Written {
    pub episodes: u64,
    pub resolved: u64,
    pub left: u64,
    pub max_turns: u64,
    pub unsafe_end: u64,
    /// Finished episodes the log could not take by shutdown, and where they went instead.
    pub unwritten: Option<Unwritten>,
}

/// Runs the worker until every sender is dropped and the queue is drained; returns what finished.
/// At most `max_batch` steps go into one appraisal batch.
pub fn run_worker(
    sim: Arc<dyn Simulator>,
    mut rx: mpsc::UnboundedReceiver<Job>,
    mut log: LogSink,
    max_batch: usize,
    finished: Arc<std::sync::atomic::AtomicU64>,
) -> Written {
    let mut written = Written::default();
    while let Some(first) = rx.blocking_recv() {
        let mut steps = Vec::new();
        let mut next = Some(first);
        while let Some(job) = next.take() {
            match job {
                Job::Prepare { profile, done } => {
                    let _ = done.send(sim.prepare(std::slice::from_ref(&profile)));
                }
                Job::Step(s) => steps.push(*s),
                Job::Flush => log.flush(),
            }
            if steps.len() < max_batch.max(1) {
                next = rx.try_recv().ok();
            }
        }
        if steps.is_empty() {
            continue;
        }
        let results = step_all(sim.as_ref(), &mut steps);
        for (job, outcome) in steps.into_iter().zip(results) {
            let StepJob {
                env,
                policy,
                run,
                number,
                done,
                ..
            } = job;
            let mut record = None;
            if outcome.is_ok() && env.is_done() {
                let mut rec = env.record(sim.as_ref(), policy);
                rec.run = run;
                rec.sample = number;
                count(&mut written, &rec);
                finished.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                log.write(rec.clone());
                record = Some(rec);
            }
            let _ = done.send(StepDone {
                env,
                outcome,
                record,
            });
        }
    }
    written.unwritten = log.finish();
    written
}

/// Steps every job in one batch; when the batch fails (a simulator error), steps them one by one
/// so that only the failing request sees the error.
fn step_all(sim: &dyn Simulator, steps: &mut [StepJob]) -> Vec<Result<StepOutcome>> {
    let replies: Vec<(String, Option<String>)> = steps
        .iter()
        .map(|s| (s.reply.clone(), s.think.clone()))
        .collect();
    // step_batch builds every input and appraises before it changes any environment, so a failed
    // batch leaves them all as they were.
    let batch = {
        let mut envs: Vec<&mut DialogueEnv> = steps.iter_mut().map(|s| &mut s.env).collect();
        step_batch(sim, &mut envs, &replies).ok()
    };
    match batch {
        Some(outcomes) => outcomes.into_iter().map(Ok).collect(),
        None => steps
            .iter_mut()
            .zip(replies)
            .map(|(s, (reply, think))| {
                step_batch(sim, &mut [&mut s.env], &[(reply, think)]).map(|mut v| v.remove(0))
            })
            .collect(),
    }
}

fn count(w: &mut Written, rec: &EpisodeRecord) {
    use crate::environment::episode::End;
    w.episodes += 1;
    match rec.end {
        Some(End::Resolved) => w.resolved += 1,
        Some(End::Left) => w.left += 1,
        Some(End::Unsafe) => w.unsafe_end += 1,
        _ => w.max_turns += 1,
    }
}
