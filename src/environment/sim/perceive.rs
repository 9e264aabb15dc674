//! Perception learned from people: how a reply reads to human coders, estimated by a small
//! network fit on human-coded replies (`empathy-gym perception fit`; the data and their terms in
//! `data/perception.yaml`). The heads are EPITOME's three mechanisms of empathy (Sharma et al.,
//! EMNLP 2020: emotional reactions, interpretations, explorations, each "present" at level 1 or
//! 2) and ESConv's eight supporter strategies (Liu et al., ACL 2021), one-vs-rest.
//!
//! Input, as the safety head's: the reply's embedding r, the context's c (the user's last
//! message's last sentences, unit length) and r * c. One hidden layer, one logit per head; each
//! head's probability is its sigmoid.

use std::path::Path;

use serde::{Deserialize, Serialize};

use super::detect::safety::head::{features, INPUT};
use super::mlp::{sigmoid, Mlp};
use crate::error::{Error, Result};

/// The heads, in the network's output order: EPITOME's mechanisms, then ESConv's strategies.
pub const HEADS: [&str; 11] = [
    "emotional_reactions",
    "interpretations",
    "explorations",
    "questions",
    "restatement_or_paraphrasing",
    "reflection_of_feelings",
    "self_disclosure",
    "affirmation_and_reassurance",
    "providing_suggestions",
    "information",
    "other",
];

/// How many of [`HEADS`] come from EPITOME (the rest from ESConv).
pub const EPITOME_HEADS: usize = 3;

/// The head of an ESConv strategy as its file writes it (`Restatement or Paraphrasing`).
pub fn strategy_head(strategy: &str) -> Option<usize> {
    let name = strategy.trim().to_lowercase().replace([' ', '-'], "_");
    HEADS[EPITOME_HEADS..]
        .iter()
        .position(|h| *h == name)
        .map(|i| i + EPITOME_HEADS)
}

/// `data/perception.yaml`: how the weights were made.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PerceptionMeta {
    /// The weights file, next to this one.
    pub weights: String,
    pub hidden: usize,
    /// The heads, in output order (must be [`HEADS`]).
    pub heads: Vec<String>,
    /// What the weights were fit on, with each source's terms.
    pub sources: Vec<String>,
    /// The fitting settings and what they gave, for a person to read.
    pub fit: serde_yaml::Value,
}

/// The loaded network.
pub struct Perception {
    pub meta: PerceptionMeta,
    net: Mlp,
}

const FIX: &str = "fit it again with `empathy-gym perception fit`, or restore it from git";

impl Perception {
    /// Loads `meta_path` and the weights it names.
    pub fn load(meta_path: &Path) -> Result<Self> {
        let meta: PerceptionMeta = crate::environment::profile::yaml::read_yaml(meta_path)?;
        if meta.heads != HEADS {
            return Err(Error::input(
                meta_path,
                "heads",
                format!("must list {} in this order: {FIX}", HEADS.join(", ")),
            ));
        }
        let path = meta_path.with_file_name(&meta.weights);
        let bytes = std::fs::read(&path).map_err(|e| Error::io(&path, e))?;
        let net = Mlp::from_safetensors(&bytes, [INPUT, meta.hidden, HEADS.len()], &path, FIX)?;
        Ok(Perception { meta, net })
    }

    /// Each head's probability for a reply embedding in a context embedding.
    pub fn read(&self, reply: &[f32], context: &[f32]) -> [f64; HEADS.len()] {
        probabilities(&self.net, &features(reply, context))
    }
}

/// Each head's probability for one input of features.
pub fn probabilities(net: &Mlp, x: &[f32]) -> [f64; HEADS.len()] {
    let z = net.logits(x);
    std::array::from_fn(|k| sigmoid(z[k]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strategies_name_their_heads() {
        assert_eq!(strategy_head("Questions"), Some(3));
        assert_eq!(strategy_head("Restatement or Paraphrasing"), Some(4));
        assert_eq!(strategy_head("Self-disclosure"), Some(6));
        assert_eq!(strategy_head("Other"), Some(10));
        assert_eq!(strategy_head(""), None);
        assert_eq!(
            strategy_head("explorations"),
            None,
            "EPITOME's heads are not strategies"
        );
    }
}
