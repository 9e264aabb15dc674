//! Words out of place: how likely some word of a reply was put where it does not belong, read
//! from the sentence encoder's contextual token states by a small network. It is replaced-token
//! detection (ELECTRA; Clark et al., ICLR 2020) learned from people: `empathy-gym perception wording`
//! fits it on human supporter replies against copies of them with one word of the user's message
//! swapped in or inserted, the way a template drops the user's words into a frame ("What has the
//! everyone been like for you?"). The weights, the threshold and their sources are in
//! `data/wording.yaml`.
//!
//! The head judges the tokens of the reply's words that the user also said, in a place the user
//! did not put them: a word with the same neighbour on either side as where the user said it
//! stands as a person stood it. Those are what a template slots in, and judging only them keeps
//! a long honest reply, which reflects the user's own phrases, from being flagged by chance. A
//! token is read with its neighbours' states. A word is misplaced when its most suspicious
//! token's probability reaches the threshold, which the fit sets so that few honest human replies
//! reach it.
//!
//! The appraiser does not count a misplaced word as one the reply shares with the user: a slot
//! fill shows no listening, so the reply is as specific as its other words make it. A reply most
//! of whose words of the user's are misplaced is a frame with the user's words slotted in, and
//! earns nothing for its moves.

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
    /// The probability (of a word's most suspicious token) from which a word is misplaced.
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

    /// The probability of the most suspicious token of `text` (with its `states`) among those
    /// the head judges against what the user said.
    pub fn score(&self, text: &str, states: &TokenStates, said: &Said) -> f64 {
        score(&self.net, text, states, said)
    }

    /// Whether `reply` has a word of what the user said (`message`) out of place.
    pub fn misplaced(&self, embedder: &Embedder, reply: &str, message: &str) -> Result<bool> {
        let said = Said::new(message);
        if !has_judged_words(reply, &said) {
            return Ok(false);
        }
        let states = embedder.token_states(&[reply])?;
        Ok(states.first().is_some_and(|s| self.flags(reply, s, &said)))
    }

    /// Whether `text` (with its `states`) has a word of what the user said out of place: its
    /// score reaches the threshold.
    pub fn flags(&self, text: &str, states: &TokenStates, said: &Said) -> bool {
        self.score(text, states, said) >= self.meta.threshold
    }

    /// The words of what the user said that `text` (with its `states`) puts out of place, as the
    /// head compares them (lowercase).
    pub fn misplaced_words(
        &self,
        text: &str,
        states: &TokenStates,
        said: &Said,
    ) -> BTreeSet<String> {
        word_scores(&self.net, text, states, said)
            .into_iter()
            .filter(|(_, p)| *p >= self.meta.threshold)
            .map(|((a, b), _)| key(&text[a..b]))
            .collect()
    }
}

/// Whether `text` has a word the head judges against `said`: without one there is nothing to
/// read, and no encoder pass is needed.
pub fn has_judged_words(text: &str, said: &Said) -> bool {
    !judged_words(text, said).is_empty()
}

/// The words of `text` that the user said (those the head could judge, placed as the user placed
/// them or not), as the head compares them.
pub fn used_words(text: &str, said: &Said) -> BTreeSet<String> {
    keys(text)
        .into_iter()
        .filter(|w| said.words.contains(w))
        .collect()
}

/// The byte spans of the words of `text`: runs of ASCII letters and apostrophes holding a letter.
pub fn word_spans(text: &str) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let mut start = None;
    let is_word = |c: char| c.is_ascii_alphabetic() || c == '\'';
    for (i, c) in text
        .char_indices()
        .chain(std::iter::once((text.len(), ' ')))
    {
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

/// The words of `text` as the head compares them, in order.
fn keys(text: &str) -> Vec<String> {
    word_spans(text)
        .into_iter()
        .map(|(a, b)| key(&text[a..b]))
        .collect()
}

/// Letters a word of the user's needs to be judged: shorter ones are mostly function words, which
/// go anywhere.
pub const MIN_LETTERS: usize = 4;

/// What the user said, as the head reads a reply against it: the words it judges
/// ([`MIN_LETTERS`] or more) and every pair of words the user said side by side.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Said {
    pub words: BTreeSet<String>,
    pairs: BTreeSet<(String, String)>,
}

impl Said {
    pub fn new(message: &str) -> Self {
        let all = keys(message);
        Said {
            words: all
                .iter()
                .filter(|w| w.chars().filter(char::is_ascii_alphabetic).count() >= MIN_LETTERS)
                .cloned()
                .collect(),
            pairs: all
                .windows(2)
                .map(|p| (p[0].clone(), p[1].clone()))
                .collect(),
        }
    }
}

/// The byte spans of the words of `text` that the head judges: the user's words with neither
/// neighbour the one the user gave them.
fn judged_words(text: &str, said: &Said) -> Vec<(usize, usize)> {
    let spans = word_spans(text);
    let k: Vec<String> = spans.iter().map(|&(a, b)| key(&text[a..b])).collect();
    let placed = |i: usize| {
        (i > 0 && said.pairs.contains(&(k[i - 1].clone(), k[i].clone())))
            || (i + 1 < k.len() && said.pairs.contains(&(k[i].clone(), k[i + 1].clone())))
    };
    spans
        .into_iter()
        .enumerate()
        .filter(|&(i, _)| said.words.contains(&k[i]) && !placed(i))
        .map(|(_, s)| s)
        .collect()
}

/// The tokens of `states` that lie in a word of `text` the head judges against `said`.
pub fn judged(text: &str, states: &TokenStates, said: &Said) -> Vec<usize> {
    judged_words(text, said)
        .into_iter()
        .flat_map(|w| tokens_in(states, w))
        .collect()
}

/// The tokens of `states` inside the word at bytes `a..b` (empty tokens left out).
fn tokens_in(states: &TokenStates, (a, b): (usize, usize)) -> impl Iterator<Item = usize> + '_ {
    (0..states.spans.len()).filter(move |&k| {
        let t = states.spans[k];
        t.0 >= a && t.1 <= b && t.0 < t.1
    })
}

/// Token `k`'s input: its state, the state before and the state after (zeros past the ends).
pub fn features(states: &TokenStates, k: usize) -> Vec<f32> {
    let rows: Vec<&[f32]> = states.rows().collect();
    let zeros = vec![0.0f32; rows[k].len()];
    let mut x = Vec::with_capacity(3 * rows[k].len());
    x.extend_from_slice(rows[k]);
    x.extend_from_slice(if k > 0 { rows[k - 1] } else { &zeros });
    x.extend_from_slice(rows.get(k + 1).copied().unwrap_or(&zeros));
    x
}

/// Each word of `text` the head judges against `said` (its span) and the largest probability of
/// being out of place among its tokens.
pub fn word_scores(
    net: &Mlp,
    text: &str,
    states: &TokenStates,
    said: &Said,
) -> Vec<((usize, usize), f64)> {
    judged_words(text, said)
        .into_iter()
        .map(|(a, b)| {
            let p = tokens_in(states, (a, b))
                .map(|k| sigmoid(net.logits(&features(states, k))[0]))
                .fold(0.0, f64::max);
            ((a, b), p)
        })
        .collect()
}

/// The largest probability of being out of place among the tokens of `text` the head judges
/// against `said`; 0 when there are none.
pub fn score(net: &Mlp, text: &str, states: &TokenStates, said: &Said) -> f64 {
    word_scores(net, text, states, said)
        .into_iter()
        .map(|(_, p)| p)
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
        assert_eq!(w, ["It's", "am", "I", "can't", "sleep"]);
        let m = Said::new("My DOG's bed, it's empty");
        assert_eq!(
            m.words.into_iter().collect::<Vec<_>>(),
            ["dog's", "empty"],
            "it's is short"
        );
    }

    #[test]
    fn only_the_users_words_are_judged_and_the_worst_decides() {
        // "the puppy fled": tokens the(0..3) puppy(4..9) fled(10..14); the user said "puppy" and
        // "fled", but never side by side.
        let text = "the puppy fled";
        let states = TokenStates {
            states: vec![9.0, 0.0, 1.0, 0.0, 0.25, 0.0],
            spans: vec![(0, 3), (4, 9), (10, 14)],
        };
        let words = Said::new("My puppy, as always, fled the room");
        assert_eq!(judged(text, &states, &words), [1, 2]);
        assert_eq!(features(&states, 0), [9.0, 0.0, 0.0, 0.0, 1.0, 0.0]);
        assert_eq!(features(&states, 2), [0.25, 0.0, 1.0, 0.0, 0.0, 0.0]);
        // logits: puppy 4 * 1 - 2 = 2, fled 4 * 0.25 - 2 = -1; "the" (logit 34) is not judged.
        let s = score(&net(), text, &states, &words);
        assert!((s - sigmoid(2.0)).abs() < 1e-9, "{s}");
        assert!((s - 0.880_797).abs() < 1e-6);
        assert_eq!(score(&net(), text, &states, &Said::new("nothing")), 0.0);
        // Where the user put "puppy" after "the", it stands as they stood it.
        let placed = Said::new("the puppy fled");
        assert!(judged(text, &states, &placed).is_empty());
        let half = Said::new("I saw the puppy. Later it fled");
        assert_eq!(
            judged(text, &states, &half),
            [2],
            "only fled is new after puppy"
        );
    }
}
