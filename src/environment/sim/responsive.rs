//! Responsiveness: how far a reply, in its own words, answers what this user said rather than
//! what anyone might be told. A small network over the sentence encoder's embeddings of the user's
//! message and of the reply with the user's content words taken out reads the probability that
//! the reply was written in answer to that message. `empathy-gym perception responsive` fits it
//! on human (message, reply) pairs against the same replies put after a similar message from
//! another conversation, one of each, so its log-odds estimate how much more likely the reply is
//! after its own message than after one like it: a pointwise mutual information
//! (noise-contrastive estimation; Gutmann & Hyvärinen, AISTATS 2010). A generic reply, as likely
//! after any such message, reads near even odds: the "dull response" that maximum mutual
//! information decoding penalizes (Li et al., NAACL 2016). The weights and their sources are in
//! `data/responsive.yaml`.
//!
//! The user's own content words and every feeling word are taken out of the reply before it is
//! read ([`own_words`]), in the fit as in the appraiser: the user's words dropped into a stock
//! frame bring the reply near the message without answering it, a reply that restates the user is
//! credited for that by its shared words, not twice, and naming a feeling is the `validate` move's
//! to credit, not a sign that the reply is about this person.

use std::collections::BTreeSet;
use std::path::Path;

use serde::{Deserialize, Serialize};

use super::mlp::{sigmoid, Mlp};
use super::text::words;
use super::wording::WIDTH;
use crate::error::{Error, Result};

/// The network's input: the elementwise product of the two embeddings and their absolute
/// difference (the pair features of sentence-pair classifiers; Conneau et al., EMNLP 2017).
pub const INPUT: usize = 2 * WIDTH;

/// `data/responsive.yaml`: how the weights were made.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ResponsiveMeta {
    /// The weights file, next to this one.
    pub weights: String,
    pub hidden: usize,
    /// What the weights were fit on, with each source's terms.
    pub sources: Vec<String>,
    /// The fitting settings and what they gave, for a person to read.
    pub fit: serde_yaml::Value,
}

/// The loaded head.
pub struct Responsive {
    pub meta: ResponsiveMeta,
    net: Mlp,
}

const FIX: &str = "fit it again with `empathy-gym perception responsive`, or restore it from git";

impl Responsive {
    /// Loads `meta_path` and the weights it names.
    pub fn load(meta_path: &Path) -> Result<Self> {
        let meta: ResponsiveMeta = crate::profile::yaml::read_yaml(meta_path)?;
        let path = meta_path.with_file_name(&meta.weights);
        let bytes = std::fs::read(&path).map_err(|e| Error::io(&path, e))?;
        let net = Mlp::from_safetensors(&bytes, [INPUT, meta.hidden, 1], &path, FIX)?;
        Ok(Responsive { meta, net })
    }

    /// The probability that `own` (the embedding of a reply's own words) answers `message` (the
    /// embedding of what the user said), at even odds.
    pub fn probability(&self, message: &[f32], own: &[f32]) -> f64 {
        probability(&self.net, message, own)
    }
}

/// The network's probability that `own` answers `message`.
pub fn probability(net: &Mlp, message: &[f32], own: &[f32]) -> f64 {
    sigmoid(net.logits(&features(message, own))[0])
}

/// The network's input for a pair of embeddings: `[u * r, |u - r|]`.
pub fn features(message: &[f32], own: &[f32]) -> Vec<f32> {
    let product = message.iter().zip(own).map(|(u, r)| u * r);
    let distance = message.iter().zip(own).map(|(u, r)| (u - r).abs());
    product.chain(distance).collect()
}

/// How much more a reply belongs after this message than after a random one, in [0, 1]: `2p - 1`
/// of the head's even-odds probability `p`, and 0 at or below even odds (a reply as likely
/// anywhere says nothing about this person).
pub fn responsiveness(p: f64) -> f64 {
    (2.0 * p - 1.0).clamp(0.0, 1.0)
}

/// The content words of `messages` (four letters or more, not a stopword): the words a reply
/// takes from the user, and which it is read without.
pub fn content_words<'a>(
    messages: impl IntoIterator<Item = &'a str>,
    stopwords: &std::collections::HashSet<String>,
) -> BTreeSet<String> {
    messages
        .into_iter()
        .flat_map(words)
        .filter(|w| w.chars().count() >= 4 && !stopwords.contains(w))
        .collect()
}

/// What a reply says in its own words: `reply` without the content words of `messages` and
/// without any one-word feeling of `feelings` (the lexicon's, normalized). Naming the feeling is the
/// `validate` move's to credit; how far the reply answers is read from what else it says, so a
/// stock "It's okay to feel sad" reads as what it is, a line that fits anyone.
pub fn own_words<'a>(
    reply: &str,
    messages: impl IntoIterator<Item = &'a str>,
    stopwords: &std::collections::HashSet<String>,
    feelings: &[String],
) -> String {
    let mut drop = content_words(messages, stopwords);
    // One-word feelings only: a phrase's words ("burned out") are not feelings alone.
    drop.extend(
        (feelings.iter().map(|f| f.trim()))
            .filter(|f| !f.contains(' '))
            .map(String::from),
    );
    super::text::without_words(reply, &drop)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_features_are_the_product_then_the_distance() {
        assert_eq!(
            features(&[0.5, -1.0], &[0.5, 2.0]),
            vec![0.25, -2.0, 0.0, 3.0]
        );
    }

    #[test]
    fn responsiveness_is_zero_at_even_odds_and_one_at_certainty() {
        assert_eq!(responsiveness(0.5), 0.0);
        assert_eq!(responsiveness(0.2), 0.0);
        assert!((responsiveness(0.75) - 0.5).abs() < 1e-12);
        assert_eq!(responsiveness(1.0), 1.0);
    }

    #[test]
    fn content_words_skip_short_words_and_stopwords() {
        let stop: std::collections::HashSet<String> = ["about", "there"].map(String::from).into();
        let got = content_words(["My sister moved out there", "Thinking about her"], &stop);
        let want: BTreeSet<String> = ["sister", "moved", "thinking"].map(String::from).into();
        assert_eq!(got, want);
    }

    #[test]
    fn own_words_leave_out_the_users_words_and_every_feeling() {
        let stop: std::collections::HashSet<String> = ["about"].map(String::from).into();
        let feelings = [" sad ".to_string(), " burned out ".to_string()];
        assert_eq!(
            own_words(
                "Losing the apartment sounds sad, and burned out. What about it worries you?",
                ["They are selling the apartment I rent."],
                &stop,
                &feelings,
            ),
            "Losing the sounds , and burned out. What about it worries you?"
        );
    }

    #[test]
    fn a_head_reads_its_network() {
        // One hidden unit on the first product feature: p = sigmoid(4 * u0 * r0 - 1).
        let mut w1 = vec![0.0; INPUT];
        w1[0] = 4.0;
        let net = Mlp {
            input: INPUT,
            hidden: 1,
            outputs: 1,
            w1,
            b1: vec![0.0],
            w2: vec![1.0],
            b2: vec![-1.0],
        };
        let mut u = vec![0.0; WIDTH];
        let mut r = vec![0.0; WIDTH];
        u[0] = 1.0;
        r[0] = 0.5;
        assert!((probability(&net, &u, &r) - sigmoid(1.0)).abs() < 1e-9);
        r[0] = -0.5;
        assert!((probability(&net, &u, &r) - sigmoid(-1.0)).abs() < 1e-9);
    }
}
