//! Words out of place: how likely some word of a reply was put where it does not belong, read
//! from the sentence encoder's contextual token states by a small network. It is replaced-token
//! detection (ELECTRA; Clark et al., ICLR 2020) learned from people: `empathy-gym perception wording`
//! fits it on human supporter replies against copies of them with one word of the user's message
//! swapped in or inserted, the way a template drops the user's words into a frame ("What has the
//! everyone been like for you?"). The weights, the threshold and their sources are in
//! `data/wording.yaml`.
//!
//! The head judges the tokens of the reply's words that the user's message also holds: those are
//! what a template slots in, and judging only them keeps a long honest reply from being flagged by
//! chance somewhere in its other words. A token is read with its neighbours' states. A reply is
//! `misplaced` when its most suspicious judged token's probability reaches the threshold, which
//! the fit sets so that few honest human replies reach it.

use std::collections::BTreeSet;
use std::path::Path;

use serde::{Deserialize, Serialize};

use super::embed::{Embedder, TokenStates};
use super::mlp::{sigmoid, Mlp};
use crate::error::{Error, Result};

/// The width of a token state (all-MiniLM-L6-v2's hidden size).
pub const WIDTH: usize = 384;

/// The network's input: a token's state, the one before it and the one after it.
pub const INPUT: usize = 3 * WIDTH;

/// `data/wording.yaml`: how the weights were made, and where a reply counts as misplaced.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WordingMeta {
    /// The weights file, next to this one.
    pub weights: String,
    pub hidden: usize,
    /// The probability of the reply's most suspicious token from which it is misplaced.
    pub threshold: f64,
    /// What the weights were fit on, with each source's terms.
    pub sources: Vec<String>,
    /// The fitting settings and what they gave, for a person to read.
    pub fit: serde_yaml::Value,
}

/// The loaded head.
pub struct Wording {
    pub meta: WordingMeta,
    net: Mlp,
}

const FIX: &str = "fit it again with `empathy-gym perception wording`, or restore it from git";

impl Wording {
    /// Loads `meta_path` and the weights it names.
    pub fn load(meta_path: &Path) -> Result<Self> {
        let meta: WordingMeta = crate::profile::yaml::read_yaml(meta_path)?;
        if !(0.0..=1.0).contains(&meta.threshold) {
            return Err(Error::input(
                meta_path,
                "threshold",
                format!("must be a probability in [0, 1]: {FIX}"),
            ));
        }
        let path = meta_path.with_file_name(&meta.weights);
        let bytes = std::fs::read(&path).map_err(|e| Error::io(&path, e))?;
        let net = Mlp::from_safetensors(&bytes, [INPUT, meta.hidden, 1], &path, FIX)?;
        Ok(Wording { meta, net })
    }

    /// The head around a network and its threshold (for tests and the fit's reports).
    pub fn new(net: Mlp, threshold: f64) -> Self {
        let meta = WordingMeta {
            weights: String::new(),
            hidden: net.hidden,
            threshold,
            sources: Vec::new(),
            fit: serde_yaml::Value::Null,
        };
        Wording { meta, net }
    }

    /// The probability of the most suspicious token of `text` (with its `states`) among those
    /// of the `words` of the user's message.
    pub fn score(&self, text: &str, states: &TokenStates, words: &BTreeSet<String>) -> f64 {
        score(&self.net, text, states, words)
    }

    /// Token `k`'s probability of being out of place.
    pub fn token_probability(&self, states: &TokenStates, k: usize) -> f64 {
        sigmoid(self.net.logits(&features(states, k))[0])
    }

    /// Whether `reply` has a word of what the user said (`message`) out of place.
    pub fn misplaced(&self, embedder: &Embedder, reply: &str, message: &str) -> Result<bool> {
        let words = message_words(message);
        if !shares(reply, &words) {
            return Ok(false);
        }
        let states = embedder.token_states(&[reply])?;
        Ok(states
            .first()
            .is_some_and(|s| self.score(reply, s, &words) >= self.meta.threshold))
    }
}

/// The byte spans of the words of `text`: runs of ASCII letters and apostrophes holding a letter.
pub fn word_spans(text: &str) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let mut start = None;
    let is_word = |c: char| c.is_ascii_alphabetic() || c == '\'';
    for (i, c) in text.char_indices().chain(std::iter::once((text.len(), ' '))) {
        match (start, is_word(c)) {
            (None, true) => start = Some(i),
            (Some(s), false) => {
                if text[s..i].chars().any(|c| c.is_ascii_alphabetic()) {
                    out.push((s, i));
                }
                start = None;
            }
            _ => {}
        }
    }
    out
}

/// A word as the head compares it: lowercase, apostrophes at its ends dropped.
fn key(word: &str) -> String {
    word.trim_matches('\'').to_lowercase()
}

/// The words of a user's message the head judges in a reply: three letters or more.
pub fn message_words(message: &str) -> BTreeSet<String> {
    word_spans(message)
        .into_iter()
        .map(|(a, b)| key(&message[a..b]))
        .filter(|w| w.chars().filter(char::is_ascii_alphabetic).count() >= 3)
        .collect()
}

/// Whether `text` holds any of `words`.
fn shares(text: &str, words: &BTreeSet<String>) -> bool {
    word_spans(text)
        .into_iter()
        .any(|(a, b)| words.contains(&key(&text[a..b])))
}

/// The tokens of `states` that lie in a word of `text` that is one of `words`.
pub fn judged(text: &str, states: &TokenStates, words: &BTreeSet<String>) -> Vec<usize> {
    let spans: Vec<(usize, usize)> = word_spans(text)
        .into_iter()
        .filter(|&(a, b)| words.contains(&key(&text[a..b])))
        .collect();
    states
        .spans
        .iter()
        .enumerate()
        .filter(|(_, t)| spans.iter().any(|&(a, b)| t.0 >= a && t.1 <= b && t.0 < t.1))
        .map(|(k, _)| k)
        .collect()
}

/// Token `k`'s input: its state, the state before and the state after (zeros past the ends).
pub fn features(states: &TokenStates, k: usize) -> Vec<f32> {
    let rows: Vec<&[f32]> = states.rows().collect();
    let zeros = [0.0f32; WIDTH];
    let mut x = Vec::with_capacity(INPUT);
    x.extend_from_slice(rows[k]);
    x.extend_from_slice(if k > 0 { rows[k - 1] } else { &zeros });
    x.extend_from_slice(rows.get(k + 1).copied().unwrap_or(&zeros));
    x
}

/// The largest probability of being out of place among the tokens of `text` in `words`; 0 when
/// there are none.
pub fn score(net: &Mlp, text: &str, states: &TokenStates, words: &BTreeSet<String>) -> f64 {
    judged(text, states, words)
        .into_iter()
        .map(|k| sigmoid(net.logits(&features(states, k))[0]))
        .fold(0.0, f64::max)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A 6 -> 1 -> 1 network over 2-wide states (its own token's first value counts): logit
    /// 4 * relu(x0) - 2.
    fn net() -> Mlp {
        Mlp {
            input: 6,
            hidden: 1,
            outputs: 1,
            w1: vec![1.0, 0.0, 0.0, 0.0, 0.0, 0.0],
            b1: vec![0.0],
            w2: vec![4.0],
            b2: vec![-2.0],
        }
    }

    #[test]
    fn words_are_runs_of_letters_and_apostrophes() {
        let t = "It's 3am -- I can't sleep.";
        let w: Vec<&str> = word_spans(t).into_iter().map(|(a, b)| &t[a..b]).collect();
        assert_eq!(w, ["It's", "I", "can't", "sleep"]);
        let m = message_words("My DOG's bed, it's empty");
        assert_eq!(m.into_iter().collect::<Vec<_>>(), ["bed", "dog's", "empty", "it's"]);
    }

    #[test]
    fn only_the_users_words_are_judged_and_the_worst_decides() {
        // "the dog ran": tokens the(0..3) dog(4..7) ran(8..11); the user said "dog" and "ran".
        let text = "the dog ran";
        let states = TokenStates {
            states: vec![9.0, 0.0, 1.0, 0.0, 0.25, 0.0],
            spans: vec![(0, 3), (4, 7), (8, 11)],
        };
        let words = message_words("My dog ran off");
        assert_eq!(judged(text, &states, &words), [1, 2]);
        assert_eq!(features(&states, 0), [9.0, 0.0, 0.0, 0.0, 1.0, 0.0]);
        assert_eq!(features(&states, 2), [0.25, 0.0, 1.0, 0.0, 0.0, 0.0]);
        // logits: dog 4 * 1 - 2 = 2, ran 4 * 0.25 - 2 = -1; "the" (logit 34) is not judged.
        let s = score(&net(), text, &states, &words);
        assert!((s - sigmoid(2.0)).abs() < 1e-9, "{s}");
        assert!((s - 0.880_797).abs() < 1e-6);
        assert_eq!(score(&net(), text, &states, &message_words("nothing")), 0.0);
    }
}
