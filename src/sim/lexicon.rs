//! Lexical cues (`data/lexicon.yaml`) for the moves that embeddings blur: questions, advice
//! imperatives, minimizing, toxic positivity, clichés, plus the warmth and agreement vocabulary of
//! the trait reward.

use std::collections::{BTreeMap, HashSet};
use std::path::Path;

use serde::Deserialize;

use super::moves::Move;
use super::text::{count_phrases, normalize};
use crate::error::{Error, Result};

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct LexiconFile {
    cues: BTreeMap<Move, Vec<String>>,
    open_question_starts: Vec<String>,
    open_invitations: Vec<String>,
    feelings: Vec<String>,
    sympathy: Vec<String>,
    presence: Vec<String>,
    warmth: WarmthFile,
    stopwords: Vec<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct WarmthFile {
    words: Vec<String>,
    emoji: Vec<String>,
    agreement: Vec<String>,
}

/// The loaded, normalized lexicon.
#[derive(Clone, Debug)]
pub struct Lexicon {
    cues: BTreeMap<Move, Vec<String>>,
    open_starts: Vec<String>,
    open_invitations: Vec<String>,
    /// Normalized feeling words.
    pub feelings: Vec<String>,
    sympathy: Vec<String>,
    presence: Vec<String>,
    warm_words: Vec<String>,
    warm_emoji: Vec<String>,
    agreement: Vec<String>,
    /// Words that never count as content.
    pub stopwords: HashSet<String>,
}

/// Counts of lexical evidence in one reply.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Cues {
    /// Phrase hits per move (open questions counted separately).
    pub hits: BTreeMap<Move, usize>,
    /// Open questions or invitations to say more.
    pub open_questions: usize,
    /// Questions that are not open.
    pub closed_questions: usize,
    /// Warm words and emoji.
    pub warm: usize,
    /// Phrases of agreement with the user.
    pub agreement: usize,
    /// Expressions of sympathy ("so sorry to hear"): an emotional reaction toward `validate`.
    pub sympathy: usize,
    /// Offers of presence and wishes ("here for you", "I hope things get better"): an emotional
    /// reaction toward `reassure`.
    pub presence: usize,
}

impl Cues {
    /// True when the reply suggests something: an advice cue. The one rule by which the
    /// appraiser flags a suggestion for the speaker and `replay user` reads one.
    pub fn suggests(&self) -> bool {
        self.hits.get(&Move::Advice).is_some_and(|n| *n > 0)
    }
}

impl Lexicon {
    /// Loads and normalizes `data/lexicon.yaml`.
    pub fn load(path: &Path) -> Result<Self> {
        let file: LexiconFile = crate::profile::yaml::read_yaml(path)?;
        let norm = |v: Vec<String>| -> Vec<String> {
            v.iter()
                .map(|p| normalize(p))
                .filter(|p| p.trim() != "")
                .collect()
        };
        for m in [
            Move::Validate,
            Move::Advice,
            Move::Minimize,
            Move::Platitude,
        ] {
            if !file.cues.contains_key(&m) {
                return Err(Error::input(
                    path,
                    format!("cues.{}", m.as_str()),
                    "missing cue list",
                ));
            }
        }
        Ok(Lexicon {
            cues: file.cues.into_iter().map(|(m, v)| (m, norm(v))).collect(),
            open_starts: norm(file.open_question_starts),
            open_invitations: norm(file.open_invitations),
            feelings: norm(file.feelings),
            sympathy: norm(file.sympathy),
            presence: norm(file.presence),
            warm_words: norm(file.warmth.words),
            warm_emoji: file.warmth.emoji,
            agreement: norm(file.warmth.agreement),
            stopwords: file.stopwords.iter().map(|w| w.to_lowercase()).collect(),
        })
    }

    /// Finds the lexical cues in a reply.
    pub fn cues(&self, reply: &str) -> Cues {
        let padded = normalize(reply);
        let hits = self
            .cues
            .iter()
            .map(|(m, phrases)| (*m, count_phrases(&padded, phrases)))
            .collect();
        let (open, closed) = self.questions(reply);
        let invitations = count_phrases(&padded, &self.open_invitations);
        let emoji = self
            .warm_emoji
            .iter()
            .filter(|e| reply.contains(e.as_str()))
            .count();
        Cues {
            hits,
            open_questions: open + invitations,
            closed_questions: closed,
            warm: count_phrases(&padded, &self.warm_words) + emoji,
            agreement: count_phrases(&padded, &self.agreement),
            sympathy: count_phrases(&padded, &self.sympathy),
            presence: count_phrases(&padded, &self.presence),
        }
    }

    /// Counts open and closed questions: sentences ending in '?', open when they start (or their
    /// last clause starts) with an open opener.
    fn questions(&self, reply: &str) -> (usize, usize) {
        let (mut open, mut closed) = (0, 0);
        let mut start = 0;
        for (i, c) in reply.char_indices() {
            if matches!(c, '.' | '!' | '?' | '\n') {
                if c == '?' {
                    let sentence = &reply[start..i];
                    let clause = sentence
                        .rsplit([',', ';', ':', '-'])
                        .next()
                        .unwrap_or(sentence);
                    let is_open = [sentence, clause].iter().any(|s| {
                        let padded = normalize(s);
                        self.open_starts
                            .iter()
                            .any(|w| padded.starts_with(w.as_str()))
                    });
                    if is_open {
                        open += 1;
                    } else {
                        closed += 1;
                    }
                }
                start = i + c.len_utf8();
            }
        }
        (open, closed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lexicon() -> Lexicon {
        Lexicon::load(&Path::new(env!("CARGO_MANIFEST_DIR")).join("data/lexicon.yaml")).unwrap()
    }

    #[test]
    fn finds_questions_and_cues() {
        let lx = lexicon();
        let c = lx.cues("That sounds exhausting. What has been the hardest part? Do you sleep?");
        assert_eq!(c.open_questions, 1);
        assert_eq!(c.closed_questions, 1);
        assert!(c.hits[&Move::Validate] >= 1);
        let c = lx.cues("At least you have your health. Everything happens for a reason!");
        assert!(c.hits[&Move::Minimize] >= 1);
        assert!(c.hits[&Move::Platitude] >= 1);
        let c = lx.cues("So sorry to hear that. I'm here for you, and I hope things get better.");
        // Overlapping phrases each count ("so sorry", "sorry to hear"); the appraiser caps them.
        assert_eq!((c.sympathy, c.presence), (2, 3), "{c:?}");
        let c = lx.cues("You're absolutely right, I completely agree! Sending hugs ❤️");
        assert!(c.agreement >= 2 && c.warm >= 2, "{c:?}");
    }

    #[test]
    fn a_question_after_a_comma_clause_is_open() {
        let c = lexicon().cues("I'm sorry, what happened next?");
        assert_eq!((c.open_questions, c.closed_questions), (1, 0));
    }
}
