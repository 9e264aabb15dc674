//! A chat LLM as the policy: every live dialogue is rendered with the model's chat template and all
//! of them are sampled in one batch. Think-then-say: a `<think>...</think>` section before the
//! reply is split off; the user sees only the reply. Each dialogue's KV cache carries over to its
//! next reply as far as the newly rendered prompt repeats the tokens cached (re-rendering a reply's
//! text does not always give back its sampled ids): a policy's weights must not change while it
//! lives (the trainer makes one per step).

use super::policy::{Policy, PolicyReply, PolicyRequest};
use super::record::{PolicyRef, Turn};
use crate::error::Result;
use crate::model::{ChatMessage, ChatModel, Continuation, Role, SamplingParams};

/// The default system prompt of the policy.
pub const DEFAULT_SYSTEM: &str = "You are a warm, attentive listener. Someone is telling you about something hard in their life. Reply in two or three sentences.";

/// A chat model playing the policy.
pub struct ModelPolicy<'m> {
    pub model: &'m ChatModel,
    pub params: SamplingParams,
    pub system: String,
    /// Seed of this rollout; sequence `episode` at turn `t` samples with a seed derived from it.
    pub seed: u64,
    /// Logged as the policy's checkpoint.
    pub checkpoint: Option<String>,
    /// Whether the model is asked to think before it answers.
    pub think: bool,
    /// Each dialogue's cache after its last reply, by episode index.
    conts: Vec<Option<Continuation>>,
}

impl<'m> ModelPolicy<'m> {
    /// A policy with the default system prompt and sampling.
    pub fn new(model: &'m ChatModel, params: SamplingParams, seed: u64) -> Self {
        ModelPolicy {
            model,
            params,
            system: DEFAULT_SYSTEM.to_string(),
            seed,
            checkpoint: None,
            think: false,
            conts: Vec::new(),
        }
    }

    /// How many dialogues' caches are held (a dialogue's cache is dropped when it ends).
    pub fn cached_dialogues(&self) -> usize {
        self.conts.iter().filter(|c| c.is_some()).count()
    }

    /// The chat messages the model sees for a dialogue so far.
    pub fn messages(&self, turns: &[Turn]) -> Vec<ChatMessage> {
        let mut system = self.system.clone();
        if self.think {
            system.push_str(" First think inside <think></think>, then write your reply.");
        }
        let mut out = vec![ChatMessage::new(Role::System, system)];
        for t in turns {
            out.push(match t {
                Turn::User { text, .. } => ChatMessage::new(Role::User, text.clone()),
                Turn::Assistant { text, .. } => ChatMessage::new(Role::Assistant, text.clone()),
            });
        }
        out
    }
}

/// Splits `<think>...</think>` off a generated text: (reply, thought).
pub fn split_think(text: &str) -> (String, Option<String>) {
    if let (Some(a), Some(b)) = (text.find("<think>"), text.find("</think>")) {
        if a < b {
            let thought = text[a + 7..b].trim().to_string();
            let reply = format!("{}{}", &text[..a], &text[b + 8..])
                .trim()
                .to_string();
            return (reply, Some(thought));
        }
    }
    (text.trim().to_string(), None)
}

impl Policy for ModelPolicy<'_> {
    fn describe(&self) -> PolicyRef {
        PolicyRef {
            model: self.model.name.clone(),
            checkpoint: self.checkpoint.clone(),
        }
    }

    fn reply_batch(&mut self, requests: &[PolicyRequest<'_>]) -> Result<Vec<PolicyReply>> {
        let prompts = requests
            .iter()
            .map(|r| self.model.encode_chat(&self.messages(r.turns), true))
            .collect::<Result<Vec<_>>>()?;
        let seeds: Vec<u64> = requests
            .iter()
            .map(|r| crate::seed::derive(self.seed, ((r.episode as u64) << 8) | u64::from(r.turn)))
            .collect();
        let need = requests.iter().map(|r| r.episode + 1).max().unwrap_or(0);
        if self.conts.len() < need {
            self.conts.resize_with(need, || None);
        }
        let mut conts: Vec<Option<Continuation>> = requests
            .iter()
            .map(|r| self.conts[r.episode].take())
            .collect();
        let gens = self
            .model
            .generate_continuing(&prompts, &seeds, &self.params, &mut conts)?;
        for (r, c) in requests.iter().zip(conts) {
            self.conts[r.episode] = c;
        }
        Ok(gens
            .into_iter()
            .map(|g| {
                let (text, think) = if self.think {
                    split_think(&g.text)
                } else {
                    (g.text.trim().to_string(), None)
                };
                PolicyReply { text, think }
            })
            .collect())
    }

    fn finished(&mut self, episode: usize) {
        if let Some(c) = self.conts.get_mut(episode) {
            *c = None;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::split_think;

    #[test]
    fn think_is_split_off() {
        let (r, t) = split_think("<think>She is scared.</think> That sounds frightening.");
        assert_eq!(r, "That sounds frightening.");
        assert_eq!(t.as_deref(), Some("She is scared."));
        assert_eq!(
            split_think("Just a reply."),
            ("Just a reply.".to_string(), None)
        );
    }
}
