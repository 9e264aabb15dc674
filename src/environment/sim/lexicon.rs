//! Lexical cues (`data/lexicon.yaml`) for the moves that embeddings blur: questions, advice
//! imperatives, minimizing, toxic positivity, clichés, plus the warmth and agreement vocabulary of
//! the trait reward.

use std::collections::{BTreeMap, HashSet};
use std::path::Path;

use serde::Deserialize;

use super::moves::Move;
use super::text::{clauses, count_phrases, negated, normalize, Negation};
use crate::error::{Error, Result};

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct LexiconFile {
    cues: BTreeMap<Move, Vec<String>>,
    not_cues: Vec<String>,
    listener_subjects: Vec<String>,
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
    /// Per move its phrases, normalized; a leading `^` (kept) anchors one at its clause's start.
    cues: BTreeMap<Move, Vec<String>>,
    not_cues: Vec<String>,
    listener_subjects: Vec<String>,
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
            cues: file
                .cues
                .into_iter()
                .map(|(m, v)| (m, v.iter().map(|p| anchored(p)).collect()))
                .collect(),
            not_cues: norm(file.not_cues),
            listener_subjects: norm(file.listener_subjects),
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

    /// Finds the lexical cues in a reply. A move's phrase counts when some clause of the reply says
    /// it: not under a negation (`neg`, the user's reading: "I won't tell you what to do" tells
    /// nothing), not inside one of `not_cues` ("you must be exhausted" guesses a feeling, it orders
    /// nothing), at its clause's start when anchored, and for advice not with the listener as
    /// its subject ("I'll try to do that").
    pub fn cues(&self, reply: &str, neg: Negation<'_>) -> Cues {
        let padded = normalize(reply);
        let clauses: Vec<String> = clauses(reply).map(normalize).collect();
        let hits = self
            .cues
            .iter()
            .map(|(m, phrases)| {
                let said = |p: &String| {
                    clauses
                        .iter()
                        .any(|c| self.said_in(c, p, *m == Move::Advice, neg))
                };
                (*m, phrases.iter().filter(|p| said(p)).count())
            })
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

    /// Whether `clause` (normalized) says `phrase` (see [`Lexicon::cues`]); `to_user`: the phrase
    /// is something the user is told to do, which the listener's own plans are not.
    fn said_in(&self, clause: &str, phrase: &str, to_user: bool, neg: Negation<'_>) -> bool {
        if let Some(opening) = phrase.strip_prefix('^') {
            return clause.starts_with(opening);
        }
        clause.match_indices(phrase).any(|(at, _)| {
            // Up to the phrase's leading space, so "before" ends in a whole word and a space.
            let before = &clause[..at + 1];
            let own = to_user
                && self
                    .listener_subjects
                    .iter()
                    .any(|s| before.ends_with(s.as_str()));
            let end = at + phrase.len();
            let inside = self.not_cues.iter().any(|n| {
                clause
                    .match_indices(n.as_str())
                    .any(|(from, _)| from <= at && from + n.len() >= end)
            });
            !own && !inside && !negated(before, neg)
        })
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

/// A cue phrase normalized, with its clause-start anchor `^` kept in front.
fn anchored(phrase: &str) -> String {
    match phrase.trim_start().strip_prefix('^') {
        Some(rest) => format!("^{}", normalize(rest)),
        None => normalize(phrase),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lexicon() -> Lexicon {
        Lexicon::load(
            &Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../..")).join("data/lexicon.yaml"),
        )
        .unwrap()
    }

    fn negations() -> Vec<String> {
        ["not", "no", "never", "won't", "isn't", "don't"]
            .map(String::from)
            .to_vec()
    }

    /// A lexicon's cues, read with a few negations and "no wonder" as affirming.
    fn cues(lx: &Lexicon, reply: &str) -> Cues {
        let (negations, affirming) = (negations(), vec![" no wonder ".to_string()]);
        lx.cues(
            reply,
            Negation {
                negations: &negations,
                affirming: &affirming,
                window: 5,
            },
        )
    }

    #[test]
    fn finds_questions_and_cues() {
        let lx = lexicon();
        let c = cues(
            &lx,
            "That sounds exhausting. What has been the hardest part? Do you sleep?",
        );
        assert_eq!(c.open_questions, 1);
        assert_eq!(c.closed_questions, 1);
        assert!(c.hits[&Move::Validate] >= 1);
        let c = cues(
            &lx,
            "At least you have your health. Everything happens for a reason!",
        );
        assert!(c.hits[&Move::Minimize] >= 1);
        assert!(c.hits[&Move::Platitude] >= 1);
        let c = cues(
            &lx,
            "So sorry to hear that. I'm here for you, and I hope things get better.",
        );
        // Overlapping phrases each count ("so sorry", "sorry to hear"); the appraiser caps them.
        assert_eq!((c.sympathy, c.presence), (2, 3), "{c:?}");
        let c = cues(
            &lx,
            "You're absolutely right, I completely agree! Sending hugs ❤️",
        );
        assert!(c.agreement >= 2 && c.warm >= 2, "{c:?}");
    }

    #[test]
    fn a_question_after_a_comma_clause_is_open() {
        let c = cues(&lexicon(), "I'm sorry, what happened next?");
        assert_eq!((c.open_questions, c.closed_questions), (1, 0));
    }

    #[test]
    fn a_cue_counts_only_where_its_clause_says_it() {
        let lx = lexicon();
        let advice = |r: &str| cues(&lx, r).hits[&Move::Advice];
        let minimize = |r: &str| cues(&lx, r).hits[&Move::Minimize];
        let change = |r: &str| cues(&lx, r).hits[&Move::ChangeTopic];
        // Told to do something: counted.
        assert_eq!(advice("You should call her. Try to sleep early."), 2);
        // Negated in its clause, the listener's own plan, or a guess at a feeling: not advice.
        assert_eq!(advice("I'm not going to try to fix it."), 0);
        assert_eq!(advice("Tell me what you need, and I'll try to do that."), 0);
        assert_eq!(
            advice("You must be hearing the same thing from everyone."),
            0
        );
        assert_eq!(
            advice("Staying late every night to make sure nothing slips."),
            0
        );
        // A negation reaches no further than its clause.
        assert_eq!(minimize("Being hurt by that isn't overreacting."), 0);
        assert_eq!(
            minimize("Not to pry, but at least you still have the house."),
            1
        );
        assert_eq!(minimize("Honestly, you're overreacting."), 1);
        // An anchored cue counts at its clause's start only.
        assert_eq!(change("Anyway, did you watch the match?"), 1);
        assert_eq!(change("The world keeps showing it to you anyway."), 0);
        // "No wonder" holds a negation word and affirms: the validation still counts.
        assert!(cues(&lx, "No wonder that sounds so heavy.").hits[&Move::Validate] >= 1);
    }
}
