//! The policy as the trainer runs it: the chat model answering every live dialogue of a step in
//! one batched generation, recording per dialogue the exact token sequence it was sampled from
//! and the ids it sampled (see [`super::sequence`]), so the update trains on exactly those tokens.
//!
//! Prompts grow by concatenation: the first prompt is the rendered system prompt and opening; each
//! later prompt is the previous one, plus the sampled reply, plus the template text up to the next
//! reply (the user's answer and the generation prompt), so each dialogue's cache carries over from
//! one reply to the next and only the new text is prefilled (`ChatModel::generate_continuing`).
//! Think-then-say: the `<think>` part stays in
//! the sequence (it is trained on) while the user sees only the reply.

use std::time::Instant;

use super::sequence::{text_after_reply, TokenSequence};
use crate::environment::episode::{
    split_think, ModelPolicy, Policy, PolicyRef, PolicyReply, PolicyRequest,
};
use crate::error::{Error, Result};
use crate::model::Continuation;

/// A [`ModelPolicy`] that records token sequences.
pub struct TrainPolicy<'m> {
    inner: ModelPolicy<'m>,
    seqs: Vec<TokenSequence>,
    /// The stop token that ended each dialogue's last reply (None when the length cap did).
    last_stop: Vec<Option<u32>>,
    /// Each dialogue's cache after its last reply, continued by the next.
    conts: Vec<Option<Continuation>>,
    gen_seconds: f64,
    generated: usize,
}

impl<'m> TrainPolicy<'m> {
    /// A recorder for `episodes` dialogues (indexed as the rollout's jobs).
    pub fn new(inner: ModelPolicy<'m>, episodes: usize) -> Self {
        TrainPolicy {
            inner,
            seqs: vec![TokenSequence::new(); episodes],
            last_stop: vec![None; episodes],
            conts: (0..episodes).map(|_| None).collect(),
            gen_seconds: 0.0,
            generated: 0,
        }
    }

    /// Seconds spent generating so far.
    pub fn generation_seconds(&self) -> f64 {
        self.gen_seconds
    }

    /// Tokens sampled so far.
    pub fn generated_tokens(&self) -> usize {
        self.generated
    }

    /// How many dialogues' caches are held (a dialogue's cache is dropped when it ends).
    pub fn cached_dialogues(&self) -> usize {
        self.conts.iter().filter(|c| c.is_some()).count()
    }

    /// The recorded sequences, one per dialogue.
    pub fn into_sequences(self) -> Vec<TokenSequence> {
        self.seqs
    }

    /// Extends dialogue `req.episode`'s sequence up to the point where reply `req.turn` starts and
    /// returns it as the prompt.
    fn prompt(&mut self, req: &PolicyRequest<'_>) -> Result<Vec<u32>> {
        let model = self.inner.model;
        let i = req.episode;
        if i >= self.seqs.len() {
            return Err(Error::Other(format!(
                "TrainPolicy: dialogue {i} but only {} recorded",
                self.seqs.len()
            )));
        }
        let done = self.seqs[i].replies().len();
        if done + 1 != req.turn as usize {
            return Err(Error::Other(format!(
                "TrainPolicy: dialogue {i} asks for reply {} after {done} replies",
                req.turn
            )));
        }
        let messages = self.inner.messages(req.turns);
        if done == 0 {
            let ids = model.encode_chat(&messages, true)?;
            self.seqs[i].push_context(&ids);
        } else {
            let stop = self.last_stop[i].map(|s| model.decode(&[s])).transpose()?;
            let tail = text_after_reply(&model.template, &messages, stop.as_deref())
                .ok_or_else(|| Error::Other(format!("dialogue {i}: no reply to continue from")))?;
            let ids = model.encode(&tail)?;
            self.seqs[i].push_context(&ids);
        }
        Ok(self.seqs[i].ids().to_vec())
    }

    /// The sampling seed of reply `turn` of dialogue `episode` (derived from the step's seed).
    fn seed_of(&self, episode: usize, turn: u32) -> u64 {
        crate::seed::derive(self.inner.seed, ((episode as u64) << 8) | u64::from(turn))
    }
}

impl Policy for TrainPolicy<'_> {
    fn describe(&self) -> PolicyRef {
        self.inner.describe()
    }

    fn reply_batch(&mut self, requests: &[PolicyRequest<'_>]) -> Result<Vec<PolicyReply>> {
        let prompts = requests
            .iter()
            .map(|r| self.prompt(r))
            .collect::<Result<Vec<_>>>()?;
        let seeds: Vec<u64> = requests
            .iter()
            .map(|r| self.seed_of(r.episode, r.turn))
            .collect();
        let mut conts: Vec<Option<Continuation>> = requests
            .iter()
            .map(|r| self.conts[r.episode].take())
            .collect();
        let t0 = Instant::now();
        let gens = self.inner.model.generate_continuing(
            &prompts,
            &seeds,
            &self.inner.params,
            &mut conts,
        )?;
        self.gen_seconds += t0.elapsed().as_secs_f64();
        for (r, c) in requests.iter().zip(conts) {
            self.conts[r.episode] = c;
        }
        let mut out = Vec::with_capacity(gens.len());
        for (r, g) in requests.iter().zip(gens) {
            self.generated += g.tokens.len();
            self.seqs[r.episode].push_reply(&g.tokens);
            self.last_stop[r.episode] = if g.stopped {
                g.tokens.last().copied()
            } else {
                None
            };
            let (text, think) = if self.inner.think {
                split_think(&g.text)
            } else {
                (g.text.trim().to_string(), None)
            };
            out.push(PolicyReply { text, think });
        }
        Ok(out)
    }

    fn finished(&mut self, episode: usize) {
        self.conts[episode] = None;
    }
}
