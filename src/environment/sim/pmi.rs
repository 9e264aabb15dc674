//! How far what the user said makes the reply's own words more likely: the pointwise mutual
//! information (Church & Hanks, "Word association norms, mutual information, and lexicography",
//! 1990) of the reply with the user's messages, read token by token by the fluency judge's
//! language model. A token's PMI is its log-probability after the user's messages less its
//! log-probability after one of the `generic` messages that anyone in distress might write, and the
//! reply is read against the generic message it fits best, so comfort that follows some distress
//! ("You're not alone in this" after loneliness) reads at or below zero and what answers this
//! person in particular reads above it (maximum mutual information as a reply's relevance: Li et
//! al., "A Diversity-Promoting Objective Function for Neural Conversation Models", NAACL 2016).
//! Only the reply's own words are read: a token inside one of the user's content words is
//! predictable from their message whatever the reply does with it (a slot fill), so it is left out,
//! as specificity's embedding reading leaves those words out (docs/REWARD.md, "Specificity").

use std::collections::BTreeSet;
use std::path::Path;

use serde::Deserialize;

use super::fluency::Fluency;
use super::text::words;
use crate::error::{Error, Result};

/// `specificity.pmi` in `data/appraiser.yaml`: read the reply's own words by their PMI with the
/// user's messages instead of by their embedding's closeness to them.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PmiUse {
    /// Mean PMI (nats per own token) at which a reply starts to read as about this person.
    pub floor: f64,
    /// Mean PMI from which it reads as fully about this person.
    pub ceiling: f64,
    /// Messages anyone in distress might write; the reply is read against the one it fits best.
    pub generic: Vec<String>,
    /// The language model's chat template before a user's message.
    pub user_open: String,
    /// The template after it (the judge's own prefix, an assistant turn, follows).
    pub user_close: String,
    /// The latest tokens of the user's messages read (the dialogue's start is cut beyond them).
    pub max_context_tokens: usize,
}

impl PmiUse {
    /// `(pmi - floor) / (ceiling - floor)` clamped to [0, 1].
    pub fn score(&self, pmi: f64) -> f64 {
        ((pmi - self.floor) / (self.ceiling - self.floor)).clamp(0.0, 1.0)
    }

    /// A user's message in the model's chat template.
    pub fn user_turn(&self, message: &str) -> String {
        format!("{}{message}{}", self.user_open, self.user_close)
    }

    /// What is wrong with the settings, if anything (checked when the rules load).
    pub fn problem(&self) -> Option<&'static str> {
        if !(self.floor.is_finite() && self.ceiling.is_finite() && self.floor < self.ceiling) {
            return Some("needs finite floor < ceiling (nats per token)");
        }
        if self.generic.is_empty() {
            return Some("needs at least one generic message");
        }
        if self.max_context_tokens == 0 {
            return Some("max_context_tokens must be at least 1");
        }
        None
    }
}

/// A `pmi:` block alone in a file, as a trial setting is kept beside its results: read and checked
/// as `data/appraiser.yaml`'s would be.
pub fn load_setting(path: &Path) -> Result<PmiUse> {
    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Setting {
        pmi: PmiUse,
    }
    let s: Setting = crate::profile::yaml::read_yaml(path)?;
    match s.pmi.problem() {
        Some(problem) => Err(Error::input(path, "pmi", problem)),
        None => Ok(s.pmi),
    }
}

/// Which of a text's tokens are its own words: not inside a whitespace-separated word that is one
/// of `drop` (the user's content words, read as [`words`] reads them). `offsets` are the tokens'
/// byte spans in `text`, as the tokenizer gives them.
pub fn own_tokens(text: &str, offsets: &[(usize, usize)], drop: &BTreeSet<String>) -> Vec<bool> {
    let mut dropped: Vec<(usize, usize)> = Vec::new();
    let mut at = 0;
    for token in text.split_whitespace() {
        let start = text[at..].find(token).map_or(at, |i| i + at);
        at = start + token.len();
        if let [w] = words(token).as_slice() {
            if drop.contains(w) {
                dropped.push((start, at));
            }
        }
    }
    offsets
        .iter()
        .map(|&(a, b)| !dropped.iter().any(|&(s, e)| a < e && b > s))
        .collect()
}

/// The mean gain (nats per own token past the first) of a reply's tokens after the user's
/// messages (`after_user`) over after one generic message (`after_generic`). The first token is
/// not read (how a reply opens says little). `None` when no own token is left.
pub fn mean_gain(after_user: &[f64], after_generic: &[f64], own: &[bool]) -> Option<f64> {
    let read: Vec<usize> = (1..after_user.len())
        .filter(|&i| own.get(i).copied().unwrap_or(false))
        .collect();
    (!read.is_empty()).then(|| {
        read.iter()
            .map(|&i| after_user[i] - after_generic[i])
            .sum::<f64>()
            / read.len() as f64
    })
}

/// The reply's PMI with what the user said: its least mean gain over the generic messages (one
/// per message, [`mean_gain`]), so a stock line that some generic message predicts as well as this
/// user's words gains nothing, whichever feeling it answers. `None` when nothing was read.
pub fn pmi(gains: &[Option<f64>]) -> Option<f64> {
    gains.iter().flatten().copied().reduce(f64::min)
}

/// Each generic message's [`mean_gain`] for `reply` after `users`' messages (the latest
/// `max_context_tokens` of them), read by the fluency judge's language model.
pub fn gains(
    f: &Fluency,
    p: &PmiUse,
    users: &[&str],
    reply: &str,
    user_words: &BTreeSet<String>,
) -> Result<Vec<Option<f64>>> {
    let (ids, offsets) = f.tokens_with_offsets(reply)?;
    let own = own_tokens(reply, &offsets, user_words);
    let said = f.encode_all(&users.join("\n\n"))?;
    let said = &said[said.len().saturating_sub(p.max_context_tokens)..];
    let prefix = [
        f.encode_all(&p.user_open)?,
        said.to_vec(),
        f.encode_all(&p.user_close)?,
        f.prefix().to_vec(),
    ]
    .concat();
    let after_user = f.logprobs_after(&prefix, &ids)?;
    p.generic
        .iter()
        .map(|g| {
            let prefix = [f.encode_all(&p.user_turn(g))?, f.prefix().to_vec()].concat();
            Ok(mean_gain(
                &after_user,
                &f.logprobs_after(&prefix, &ids)?,
                &own,
            ))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_users_words_are_not_the_replys_own() {
        let text = "So March, again.";
        // Tokens: "So" (0,2), " March" (2,8), "," (8,9), " again" (9,15), "." (15,16).
        let offsets = [(0, 2), (2, 8), (8, 9), (9, 15), (15, 16)];
        let drop: BTreeSet<String> = ["march".to_string()].into();
        // "March," is one word of the user's: its comma goes with it.
        assert_eq!(
            own_tokens(text, &offsets, &drop),
            [true, false, false, true, true]
        );
        assert!(own_tokens(text, &offsets, &BTreeSet::new())
            .iter()
            .all(|o| *o));
    }

    #[test]
    fn pmi_is_the_least_gain_over_the_generic_messages_on_own_tokens() {
        let user = [-9.0, -1.0, -2.0, -3.0];
        let (g1, g2) = ([-9.0, -2.0, -2.0, -5.0], [-9.0, -4.0, -9.0, -3.0]);
        // Token 0 unread; token 2 not own; tokens 1 and 3. Against the first message: gains 1
        // and 2, mean 1.5; against the second: 3 and 0, mean 1.5 as well.
        let own = [true, true, false, true];
        assert_eq!(mean_gain(&user, &g1, &own), Some(1.5));
        assert_eq!(mean_gain(&user, &g2, &own), Some(1.5));
        // With token 2 read, the second message's gain there (7) lifts its mean to 10 / 3; the
        // first fits the reply better, (1 + 0 + 2) / 3 = 1, and decides.
        let all = [true; 4];
        let gains = [mean_gain(&user, &g1, &all), mean_gain(&user, &g2, &all)];
        assert_eq!(gains[0], Some(1.0));
        assert_eq!(pmi(&gains), Some(1.0));
        assert_eq!(mean_gain(&user, &g1, &[true, false, false, false]), None);
        assert_eq!(pmi(&[None, None]), None);
        assert_eq!(pmi(&[]), None);
    }

    #[test]
    fn the_scale_runs_from_floor_to_ceiling() {
        let p = PmiUse {
            floor: 0.1,
            ceiling: 0.5,
            generic: vec!["x".into()],
            user_open: "<u>".into(),
            user_close: "</u>".into(),
            max_context_tokens: 8,
        };
        assert_eq!(p.score(0.0), 0.0);
        assert!((p.score(0.3) - 0.5).abs() < 1e-12);
        assert_eq!(p.score(0.9), 1.0);
        assert_eq!(p.user_turn("hi"), "<u>hi</u>");
        assert!(p.problem().is_none());
        assert!(PmiUse { ceiling: 0.1, ..p }.problem().is_some());
    }
}
