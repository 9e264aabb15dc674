//! The model's worker for `serve-model`: one thread that owns the model, takes every request
//! waiting at the moment (up to a batch cap), and generates the replies of requests with the same
//! sampling settings in one batched, KV-cached call (`ChatModel::generate`). Concurrent clients
//! therefore share decoding steps instead of queueing one by one. A request whose client has hung
//! up (its answer channel closed) is dropped before it is encoded.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use tokio::sync::{mpsc, oneshot};

use crate::error::Result;
use crate::model::{ChatMessage, ChatModel, Generation, SamplingParams};

/// What the worker needs of a model (a seam so batching is testable without weights).
pub trait BatchModel {
    /// Token ids of a conversation with the generation prompt.
    fn encode(&self, messages: &[ChatMessage]) -> Result<Vec<u32>>;
    /// Replies to every prompt, in one batch.
    fn generate(
        &self,
        prompts: &[Vec<u32>],
        seeds: &[u64],
        params: &SamplingParams,
    ) -> Result<Vec<Generation>>;
    /// Longest prompt plus reply the model takes.
    fn context_length(&self) -> usize;
    /// Called once before serving. Default: nothing.
    fn prepare_to_serve(&self) -> Result<()> {
        Ok(())
    }
}

impl BatchModel for ChatModel {
    fn encode(&self, messages: &[ChatMessage]) -> Result<Vec<u32>> {
        self.encode_chat(messages, true)
    }

    fn generate(
        &self,
        prompts: &[Vec<u32>],
        seeds: &[u64],
        params: &SamplingParams,
    ) -> Result<Vec<Generation>> {
        ChatModel::generate(self, prompts, seeds, params)
    }

    fn context_length(&self) -> usize {
        self.config.max_position_embeddings
    }

    /// A served model's adapters never change, so they are merged into its weights once: each
    /// call then decodes one product per projection, as the trainer's rollouts do (in f32 on
    /// the CPU `generate` alone would decode unmerged; `Llama::decodes_merged`).
    fn prepare_to_serve(&self) -> Result<()> {
        self.model.keep_adapters_merged()
    }
}

/// One chat request for the worker.
pub struct GenJob {
    pub messages: Vec<ChatMessage>,
    pub params: SamplingParams,
    pub seed: u64,
    pub done: oneshot::Sender<GenResult>,
}

/// A reply with its prompt length, or why there is none.
pub type GenResult = std::result::Result<(Generation, usize), GenError>;

/// Why a request got no reply.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum GenError {
    /// The request cannot be served as sent (prompt too long): a 400.
    BadRequest(String),
    /// The model failed: a 500.
    Failed(String),
}

/// How the worker batched, for `/v1/health` and the tests.
#[derive(Debug, Default)]
pub struct BatchStats {
    /// Generation calls made.
    pub batches: AtomicU64,
    /// Requests answered.
    pub requests: AtomicU64,
    /// The largest batch so far.
    pub largest: AtomicU64,
    /// Requests dropped because no one waited for their answer any more.
    pub abandoned: AtomicU64,
}

/// Runs until every sender is dropped and the queue is drained.
pub fn run_generator<M: BatchModel>(
    model: &M,
    mut rx: mpsc::Receiver<GenJob>,
    max_batch: usize,
    stats: Arc<BatchStats>,
) {
    while let Some(first) = rx.blocking_recv() {
        let mut jobs = vec![first];
        while jobs.len() < max_batch.max(1) {
            match rx.try_recv() {
                Ok(j) => jobs.push(j),
                Err(_) => break,
            }
        }
        // Requests with equal sampling settings share one generation call, in arrival order.
        while !jobs.is_empty() {
            let params = jobs[0].params.clone();
            let (same, rest): (Vec<GenJob>, Vec<GenJob>) =
                jobs.into_iter().partition(|j| j.params == params);
            jobs = rest;
            generate_group(model, same, &params, &stats);
        }
    }
}

fn generate_group<M: BatchModel>(
    model: &M,
    group: Vec<GenJob>,
    params: &SamplingParams,
    stats: &BatchStats,
) {
    let mut ready = Vec::new();
    for job in group {
        if job.done.is_closed() {
            stats.abandoned.fetch_add(1, Ordering::Relaxed);
            continue;
        }
        match model.encode(&job.messages) {
            Ok(p) if p.len() + params.max_new_tokens > model.context_length() => {
                let msg = format!(
                    "the prompt has {} tokens and max_tokens is {}: together more than the model's context of {} tokens; shorten the conversation or lower max_tokens",
                    p.len(),
                    params.max_new_tokens,
                    model.context_length()
                );
                let _ = job.done.send(Err(GenError::BadRequest(msg)));
            }
            Ok(p) => ready.push((p, job)),
            Err(e) => {
                let _ = job.done.send(Err(GenError::BadRequest(format!(
                    "encoding the messages: {e}"
                ))));
            }
        }
    }
    if ready.is_empty() {
        return;
    }
    let prompts: Vec<Vec<u32>> = ready.iter().map(|(p, _)| p.clone()).collect();
    let seeds: Vec<u64> = ready.iter().map(|(_, j)| j.seed).collect();
    stats.batches.fetch_add(1, Ordering::Relaxed);
    stats
        .requests
        .fetch_add(ready.len() as u64, Ordering::Relaxed);
    stats
        .largest
        .fetch_max(ready.len() as u64, Ordering::Relaxed);
    match model.generate(&prompts, &seeds, params) {
        Ok(gens) => {
            for ((p, job), g) in ready.into_iter().zip(gens) {
                let _ = job.done.send(Ok((g, p.len())));
            }
        }
        Err(e) => {
            for (_, job) in ready {
                let _ = job
                    .done
                    .send(Err(GenError::Failed(format!("generation failed: {e}"))));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Role;
    use std::sync::Mutex;

    /// Replies with the prompt length as text and records each batch's size.
    struct Fake {
        batches: Mutex<Vec<usize>>,
    }

    impl BatchModel for Fake {
        fn encode(&self, messages: &[ChatMessage]) -> Result<Vec<u32>> {
            Ok(messages
                .iter()
                .flat_map(|m| m.content.bytes().map(u32::from))
                .collect())
        }
        fn generate(
            &self,
            prompts: &[Vec<u32>],
            _seeds: &[u64],
            _params: &SamplingParams,
        ) -> Result<Vec<Generation>> {
            self.batches.lock().unwrap().push(prompts.len());
            Ok(prompts
                .iter()
                .map(|p| Generation {
                    tokens: vec![1],
                    text: p.len().to_string(),
                    stopped: true,
                })
                .collect())
        }
        fn context_length(&self) -> usize {
            100
        }
    }

    fn job(text: &str, max_new_tokens: usize) -> (GenJob, oneshot::Receiver<GenResult>) {
        let (done, rx) = oneshot::channel();
        let params = SamplingParams {
            max_new_tokens,
            ..Default::default()
        };
        let messages = vec![ChatMessage::new(Role::User, text)];
        (
            GenJob {
                messages,
                params,
                seed: 0,
                done,
            },
            rx,
        )
    }

    #[test]
    fn waiting_requests_share_a_batch_per_sampling_setting() {
        let (tx, rx) = mpsc::channel(64);
        let mut answers = Vec::new();
        // Five requests wait before the worker starts: three with max_tokens 10, two with 20,
        // and one whose prompt (95 bytes) + 10 exceeds the context of 100.
        for (text, m) in [
            ("a", 10),
            ("bb", 20),
            ("ccc", 10),
            ("dddd", 20),
            ("eeeee", 10),
        ] {
            let (j, r) = job(text, m);
            tx.try_send(j).unwrap();
            answers.push(r);
        }
        let (long, long_rx) = job(&"x".repeat(95), 10);
        tx.try_send(long).unwrap();
        drop(tx);
        let fake = Fake {
            batches: Mutex::new(Vec::new()),
        };
        let stats = Arc::new(BatchStats::default());
        run_generator(&fake, rx, 64, stats.clone());
        assert_eq!(*fake.batches.lock().unwrap(), vec![3, 2]);
        let texts: Vec<String> = answers
            .into_iter()
            .map(|r| r.blocking_recv().unwrap().unwrap().0.text)
            .collect();
        assert_eq!(
            texts,
            ["1", "2", "3", "4", "5"],
            "each request gets its own reply"
        );
        assert!(matches!(
            long_rx.blocking_recv().unwrap(),
            Err(GenError::BadRequest(_))
        ));
        assert_eq!(stats.largest.load(Ordering::Relaxed), 3);
        assert_eq!(stats.batches.load(Ordering::Relaxed), 2);
    }

    #[test]
    fn the_batch_cap_splits_a_long_queue() {
        let (tx, rx) = mpsc::channel(64);
        let mut answers = Vec::new();
        for _ in 0..5 {
            let (j, r) = job("a", 10);
            tx.try_send(j).unwrap();
            answers.push(r);
        }
        drop(tx);
        let fake = Fake {
            batches: Mutex::new(Vec::new()),
        };
        run_generator(&fake, rx, 2, Arc::new(BatchStats::default()));
        assert_eq!(*fake.batches.lock().unwrap(), vec![2, 2, 1]);
    }

    #[test]
    fn requests_whose_client_hung_up_are_not_generated() {
        let (tx, rx) = mpsc::channel(64);
        let (kept, kept_rx) = job("a", 10);
        let (gone, gone_rx) = job("bb", 10);
        let (also_kept, also_rx) = job("ccc", 10);
        for j in [kept, gone, also_kept] {
            tx.try_send(j).unwrap();
        }
        drop(gone_rx); // the client hung up while its request waited
        drop(tx);
        let fake = Fake {
            batches: Mutex::new(Vec::new()),
        };
        let stats = Arc::new(BatchStats::default());
        run_generator(&fake, rx, 64, stats.clone());
        assert_eq!(
            *fake.batches.lock().unwrap(),
            vec![2],
            "one batch of the two kept"
        );
        assert_eq!(kept_rx.blocking_recv().unwrap().unwrap().0.text, "1");
        assert_eq!(also_rx.blocking_recv().unwrap().unwrap().0.text, "3");
        assert_eq!(stats.abandoned.load(Ordering::Relaxed), 1);
        assert_eq!(stats.requests.load(Ordering::Relaxed), 2);
    }
}
