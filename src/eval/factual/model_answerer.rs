//! A chat model as the [`Answerer`] of the factual suite: each prompt is one user message, all
//! prompts of a call are sampled in one batch, each with its own seed.

use super::run::Answerer;
use crate::error::Result;
use crate::model::{ChatMessage, ChatModel, Role, SamplingParams};

/// Answers prompts with a chat model.
pub struct ModelAnswerer<'m> {
    pub model: &'m ChatModel,
    pub params: SamplingParams,
    pub seed: u64,
    /// Prompts answered so far (prompt `i` of the run samples with seed `derive(seed, i)`).
    answered: u64,
}

impl<'m> ModelAnswerer<'m> {
    /// An answerer with its own seed stream.
    pub fn new(model: &'m ChatModel, params: SamplingParams, seed: u64) -> Self {
        ModelAnswerer {
            model,
            params,
            seed,
            answered: 0,
        }
    }
}

impl Answerer for ModelAnswerer<'_> {
    fn answer_batch(&mut self, prompts: &[String]) -> Result<Vec<String>> {
        let ids = prompts
            .iter()
            .map(|p| {
                self.model
                    .encode_chat(&[ChatMessage::new(Role::User, p.clone())], true)
            })
            .collect::<Result<Vec<_>>>()?;
        let seeds: Vec<u64> = (0..prompts.len() as u64)
            .map(|i| crate::seed::derive(self.seed, self.answered + i))
            .collect();
        self.answered += prompts.len() as u64;
        Ok(self
            .model
            .generate(&ids, &seeds, &self.params)?
            .into_iter()
            .map(|g| g.text)
            .collect())
    }
}
