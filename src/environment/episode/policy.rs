//! The policy seam: anything that answers a batch of live dialogues. The scripted policy
//! (`script:FILE.yaml`; docs/REDTEAM.md, "Adversaries are scripted policies with placeholders")
//! serves tests, probes, baselines and the red-team suite; its replies may hold placeholders
//! filled from the dialogue (`super::template`).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::Deserialize;

use super::record::{PolicyRef, Turn};
use super::template;
use crate::error::{Error, Result};
use crate::profile::{ProfileId, Scenario};

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
    /// The hack class an adversary plays (the red-team table groups by it); absent for
    /// honest scripts.
    #[serde(default)]
    class: Option<String>,
    replies: Vec<String>,
    /// Feeling words for `{feeling_said}`.
    #[serde(default)]
    feelings: Vec<String>,
    /// Word -> replacement for `{sentence_synonyms}`.
    #[serde(default)]
    synonyms: BTreeMap<String, String>,
}

/// Replies used in order, one per policy turn; when they run out, the last one repeats. A reply
/// may hold placeholders (`{user}`, `{user_you}`, ..., see [`template::PLACEHOLDERS`]); `{helps}`
/// and `{feeling}` need the scenarios ([`ScriptedPolicy::with_scenarios`]).
#[derive(Clone, Debug)]
pub struct ScriptedPolicy {
    name: String,
    replies: Vec<String>,
    scenarios: BTreeMap<String, Arc<Scenario>>,
    class: Option<String>,
    lists: template::WordLists,
}

impl ScriptedPolicy {
    /// A script from a list of replies (at least one).
    pub fn new(name: impl Into<String>, replies: Vec<String>) -> Result<Self> {
        let name = name.into();
        let file = PathBuf::from(&name);
        if replies.is_empty() {
            return Err(Error::input(file, "replies", "needs at least one reply"));
        }
        for (i, r) in replies.iter().enumerate() {
            if let Some(p) = template::unknown_placeholder(r) {
                let known: Vec<&str> = template::PLACEHOLDERS.iter().map(|(k, _)| *k).collect();
                return Err(Error::input(
                    file,
                    format!("replies[{i}]"),
                    format!(
                        "unknown placeholder {{{p}}}: use one of {{{}}}",
                        known.join("}, {")
                    ),
                ));
            }
        }
        Ok(ScriptedPolicy {
            name,
            replies,
            scenarios: BTreeMap::new(),
            class: None,
            lists: template::WordLists::default(),
        })
    }

    /// Loads `replies: [...]` from a YAML file.
    pub fn load(path: &Path) -> Result<Self> {
        let file: ScriptFile = crate::profile::yaml::read_yaml(path)?;
        Self::new(path.display().to_string(), file.replies).map(|mut p| {
            p.name = format!("script:{}", path.display());
            p.class = file.class;
            p.lists = template::WordLists {
                feelings: file.feelings,
                synonyms: file.synonyms,
            };
            p
        })
    }

    /// Gives the script word lists for `{feeling_said}` and `{sentence_synonyms}`.
    pub fn with_lists(mut self, lists: template::WordLists) -> Self {
        self.lists = lists;
        self
    }

    /// The hack class the script plays, when it is an adversary.
    pub fn class(&self) -> Option<&str> {
        self.class.as_deref()
    }

    /// Lets `{helps}` and `{feeling}` read the scenarios of the dialogues played.
    pub fn with_scenarios(mut self, scenarios: BTreeMap<String, Arc<Scenario>>) -> Self {
        self.scenarios = scenarios;
        self
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
            .map(|r| {
                let text = self.reply(r.turn);
                let text = if template::has_placeholders(text) {
                    template::render(
                        text,
                        &template::Context {
                            turns: r.turns,
                            scenario: self.scenarios.get(&r.profile.scenario).map(|s| &**s),
                            turn: r.turn,
                            lists: &self.lists,
                        },
                    )
                } else {
                    text.to_string()
                };
                PolicyReply { text, think: None }
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
