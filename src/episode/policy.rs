//! The policy seam: anything that answers a batch of live dialogues. The scripted policy
//! (`script:FILE.yaml`, DESIGN section 6) serves tests, probes and baselines.

use std::path::{Path, PathBuf};

use serde::Deserialize;

use super::record::{PolicyRef, Turn};
use crate::error::{Error, Result};
use crate::profile::ProfileId;

/// One live dialogue waiting for a reply.
#[derive(Clone, Debug)]
pub struct PolicyRequest<'a> {
    /// Index of the dialogue in the rollout (stable for its whole life).
    pub episode: usize,
    pub profile: &'a ProfileId,
    /// The dialogue so far; the last turn is the user's.
    pub turns: &'a [Turn],
    /// 1-based index of the reply asked for.
    pub turn: u32,
}

/// A reply: what the user sees, and an optional hidden thought.
#[derive(Clone, Debug, PartialEq)]
pub struct PolicyReply {
    pub text: String,
    pub think: Option<String>,
}

/// Anything that answers a batch of dialogues.
pub trait Policy {
    /// What to log as the policy.
    fn describe(&self) -> PolicyRef;
    /// One reply per request, in order.
    fn reply_batch(&mut self, requests: &[PolicyRequest<'_>]) -> Result<Vec<PolicyReply>>;
    /// Called when a dialogue ends (policies that keep per-dialogue state may drop it).
    fn finished(&mut self, _episode: usize) {}
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ScriptFile {
    replies: Vec<String>,
}

/// Replies used in order, one per policy turn; when they run out, the last one repeats.
#[derive(Clone, Debug)]
pub struct ScriptedPolicy {
    name: String,
    replies: Vec<String>,
}

impl ScriptedPolicy {
    /// A script from a list of replies (at least one).
    pub fn new(name: impl Into<String>, replies: Vec<String>) -> Result<Self> {
        let name = name.into();
        if replies.is_empty() {
            return Err(Error::input(
                PathBuf::from(&name),
                "replies",
                "needs at least one reply",
            ));
        }
        Ok(ScriptedPolicy { name, replies })
    }

    /// Loads `replies: [...]` from a YAML file.
    pub fn load(path: &Path) -> Result<Self> {
        let file: ScriptFile = crate::profile::yaml::read_yaml(path)?;
        Self::new(format!("script:{}", path.display()), file.replies)
            .map_err(|_| Error::input(path, "replies", "needs at least one reply"))
    }

    /// The reply for a 1-based turn.
    pub fn reply(&self, turn: u32) -> &str {
        let i = (turn.max(1) as usize - 1).min(self.replies.len() - 1);
        &self.replies[i]
    }
}

impl Policy for ScriptedPolicy {
    fn describe(&self) -> PolicyRef {
        PolicyRef {
            model: self.name.clone(),
            checkpoint: None,
        }
    }

    fn reply_batch(&mut self, requests: &[PolicyRequest<'_>]) -> Result<Vec<PolicyReply>> {
        Ok(requests
            .iter()
            .map(|r| PolicyReply {
                text: self.reply(r.turn).to_string(),
                think: None,
            })
            .collect())
    }
}

/// A policy built per dialogue from its profile (tests write attuned listeners this way).
pub struct FnPolicy<F> {
    pub name: String,
    pub f: F,
}

impl<F: FnMut(&ProfileId, u32, &[Turn]) -> String> Policy for FnPolicy<F> {
    fn describe(&self) -> PolicyRef {
        PolicyRef {
            model: self.name.clone(),
            checkpoint: None,
        }
    }

    fn reply_batch(&mut self, requests: &[PolicyRequest<'_>]) -> Result<Vec<PolicyReply>> {
        Ok(requests
            .iter()
            .map(|r| PolicyReply {
                text: (self.f)(r.profile, r.turn, r.turns),
                think: None,
            })
            .collect())
    }
}
