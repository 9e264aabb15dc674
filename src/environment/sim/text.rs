//! Text normalization and phrase matching shared by the lexical cues and the warmth score.

use crate::profile::persona::Voice;

pub use crate::profile::speech::{normalize, Negation};

/// True when `phrase` (normalized, see [`normalize`]) occurs in `padded` at least once without a
/// negation ([`Negation`]) among the words before it: "no wonder you feel foolish" affirms
/// "foolish", "there's nothing foolish in it" does not.
pub fn affirmed(padded: &str, phrase: &str, neg: Negation<'_>) -> bool {
    let mut padded = padded.to_string();
    for a in neg.affirming {
        padded = padded.replace(&normalize(a), " ");
    }
    padded
        .match_indices(phrase)
        .any(|(at, _)| !negation_in_window(&padded[..at], neg))
}

/// True when a negation stands among the last `neg.window` words of `before` (normalized), not
/// counting those inside an `affirming` phrase.
pub fn negated(before: &str, neg: Negation<'_>) -> bool {
    let mut before = before.to_string();
    for a in neg.affirming {
        before = before.replace(&normalize(a), " ");
    }
    negation_in_window(&before, neg)
}

/// The window check of [`negated`] on text whose `affirming` phrases are already blanked.
fn negation_in_window(before: &str, neg: Negation<'_>) -> bool {
    let words: Vec<&str> = before.split_whitespace().collect();
    words[words.len().saturating_sub(neg.window)..]
        .iter()
        .any(|w| neg.negations.iter().any(|n| n == w))
}

/// Counts how many of `phrases` (already normalized, see [`normalize`]) occur in `padded`.
pub fn count_phrases(padded: &str, phrases: &[String]) -> usize {
    phrases
        .iter()
        .filter(|p| padded.contains(p.as_str()))
        .count()
}

/// The words of a text (letters, digits, apostrophes), lowercased.
pub fn words(text: &str) -> Vec<String> {
    normalize(text)
        .split_whitespace()
        .map(str::to_string)
        .collect()
}

/// `text` without the words in `drop` (compared as [`words`] spells them); punctuation stays. What
/// is left of a reply says what the listener said in words of their own.
pub fn without_words(text: &str, drop: &std::collections::BTreeSet<String>) -> String {
    let kept: Vec<String> = text
        .split_whitespace()
        .map(|token| match words(token).as_slice() {
            [w] if drop.contains(w) => token
                .chars()
                .filter(|c| !c.is_alphanumeric() && !matches!(c, '\'' | '\u{2019}'))
                .collect(),
            _ => token.to_string(),
        })
        .filter(|t| !t.is_empty())
        .collect();
    kept.join(" ")
}

/// The sentences of a user message. The speaker builds messages from a finite bank of lines, so
/// embedding them sentence by sentence hits the embedder's cache across dialogues.
pub fn sentences(text: &str) -> Vec<&str> {
    let parts: Vec<&str> = crate::profile::speech::sentences(text).collect();
    if parts.is_empty() {
        vec![text]
    } else {
        parts
    }
}

/// The sentences of a reply, each trimmed with its end mark; a line break also ends one.
pub fn reply_sentences(text: &str) -> Vec<&str> {
    crate::profile::speech::split_after(text, &['.', '!', '?', '\n']).collect()
}

/// The clauses of a reply: split at sentence marks, commas, semicolons, colons, dashes and a
/// standalone "but". A negation or a condition reaches no further than its clause ("Not to pry,
/// but at least you ..." still says "at least you").
pub fn clauses(reply: &str) -> impl Iterator<Item = &str> {
    reply
        .split(['.', '!', '?', ',', ';', ':', '\u{2014}', '\u{2013}', '\n'])
        .flat_map(|part| part.split(" but "))
        .flat_map(|part| part.split(" - "))
        .filter(|c| !c.trim().is_empty())
}

/// The sentences of a user message, with the persona's voice opener (which may end in a comma and
/// run into the next sentence, "idk I've tried that.") split off first, so that every part is a
/// sentence the user can say on its own.
pub fn user_sentences<'a>(voice: &Voice, text: &'a str) -> Vec<&'a str> {
    match opener_of(voice, text) {
        Some(o) => {
            let (head, rest) = text.split_at(o.len());
            let mut out = vec![head.trim_end_matches(',')];
            // The speaker runs an opener into the next sentence with a comma.
            out.extend(sentences(rest.trim_start_matches([',', ' '])));
            out
        }
        None => sentences(text),
    }
}

/// The persona's voice opener that `text` starts with, the longest when several do.
pub fn opener_of<'v>(voice: &'v Voice, text: &str) -> Option<&'v str> {
    voice
        .openers()
        .filter(|o| text.starts_with(o.as_str()))
        .max_by_key(|o| o.len())
        .map(String::as_str)
}

/// The sentences of a user message as the speaker remembers them and `replay user` compares them:
/// normalized, with the persona's voice opener split off first when there is a `voice`.
pub fn said_sentences(voice: Option<&Voice>, text: &str) -> Vec<String> {
    let parts = match voice {
        Some(v) => user_sentences(v, text),
        None => sentences(text),
    };
    // A bare mark ("ur message just ends??") is no sentence: remembered, it would make every
    // later line with one count as said before.
    parts
        .iter()
        .map(|s| normalize(s))
        .filter(|s| !s.trim().is_empty())
        .collect()
}

/// True when a reply loops: at least four sentences, fewer than half of them distinct.
pub fn looping(reply: &str) -> bool {
    let all: Vec<String> = sentences(reply)
        .iter()
        .map(|s| super::text::normalize(s))
        .collect();
    let distinct: std::collections::BTreeSet<&String> = all.iter().collect();
    all.len() >= 4 && distinct.len() * 2 < all.len()
}

/// True when a reply stops mid-sentence, as a reply cut at a token cap does: it ends on a comma,
/// colon, semicolon or dash right after a letter, or its last fragment (after the last end mark)
/// holds at least `min_words` words and ends on one of `dangling`, words a finished sentence does
/// not end on ("the", "and", "to", "my"). People often leave off the final period, so a missing
/// end mark alone is not enough.
pub fn cut_off(
    reply: &str,
    min_words: usize,
    dangling: &std::collections::BTreeSet<String>,
) -> bool {
    let t = reply.trim_end();
    let mut tail = t.chars().rev();
    match (tail.next(), tail.next()) {
        (Some(',' | ':' | ';' | '-' | '\u{2013}'), Some(before)) => return before.is_alphabetic(),
        (Some(last), _) if last.is_alphanumeric() => {}
        _ => return false,
    }
    let start = t.rfind(['.', '!', '?', '\n']).map_or(0, |i| i + 1);
    let fragment = words(&t[start..]);
    fragment.len() >= min_words && fragment.last().is_some_and(|w| dangling.contains(w))
}

/// The spans of consecutive sentences (first and last index) that the restatement check reads,
/// given each sentence's word count: every sentence of `min` words or more, and the reply
/// re-segmented so that a sentence of fewer than `min` words is read with the one before it (the
/// first ones with those after them, until the span has `min` words). A restatement cut into
/// fragments ("Your sibling wants you. kind of to move four shifts. away job for him.") is read
/// whole, and a reply of full sentences costs one span per sentence.
pub fn restatement_spans(lens: &[usize], min: usize) -> Vec<(usize, usize)> {
    let mut units: Vec<(usize, usize, usize)> = Vec::new(); // first, last, words
    for (i, &n) in lens.iter().enumerate() {
        match units.last_mut() {
            Some((_, last, w)) if *w < min || n < min => {
                *last = i;
                *w += n;
            }
            _ => units.push((i, i, n)),
        }
    }
    let mut spans: Vec<(usize, usize)> = (0..lens.len())
        .filter(|&i| lens[i] >= min)
        .map(|i| (i, i))
        .collect();
    for (a, b, w) in units {
        if w >= min && !spans.contains(&(a, b)) {
            spans.push((a, b));
        }
    }
    spans
}

/// Consecutive sentences read as one: the end marks between them dropped, so that cutting a
/// sentence into fragments does not change how it reads. One sentence is returned as it is.
pub fn read_together(parts: &[&str]) -> String {
    match parts {
        [one] => (*one).to_string(),
        [init @ .., last] => {
            let mut out: Vec<&str> = init
                .iter()
                .map(|p| p.trim_end_matches(['.', '!', '?', ';', ':', ' ']))
                .collect();
            out.push(last);
            out.join(" ")
        }
        [] => String::new(),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_reply_splits_at_line_breaks_and_a_quote_opening_a_line_opens_it() {
        assert_eq!(
            super::reply_sentences("Here's a possible response:\n\n\"I'm so sorry.\" Then more"),
            [
                "Here's a possible response:",
                "\"I'm so sorry.\"",
                "Then more"
            ]
        );
    }

    #[test]
    fn fragments_are_read_as_one_sentence() {
        use super::read_together;
        assert_eq!(
            read_together(&["So you've got.", "kind of about four."]),
            "So you've got kind of about four."
        );
        assert_eq!(
            read_together(&["One whole sentence."]),
            "One whole sentence."
        );
        assert_eq!(
            read_together(&["Wait!", "really?", "yes."]),
            "Wait really yes."
        );
        assert_eq!(read_together(&[]), "");
    }

    #[test]
    fn restatement_spans_read_fragments_together() {
        use super::restatement_spans;
        // Full sentences: one span each.
        assert_eq!(
            restatement_spans(&[6, 9, 5], 5),
            vec![(0, 0), (1, 1), (2, 2)]
        );
        // A restatement cut into fragments of 4, 6 and 4 words, then a stock line and a question:
        // the sentences of 5+ words alone, and the three fragments read as one.
        assert_eq!(
            restatement_spans(&[4, 6, 4, 6, 7], 5),
            vec![(1, 1), (3, 3), (4, 4), (0, 2)]
        );
        // Short fragments after a full sentence are read with it.
        assert_eq!(
            restatement_spans(&[6, 3, 3, 3, 3, 8, 7], 5),
            vec![(0, 0), (5, 5), (6, 6), (0, 4)]
        );
        // Too few words in all: nothing to read.
        assert_eq!(restatement_spans(&[2, 1], 5), Vec::<(usize, usize)>::new());
        assert_eq!(restatement_spans(&[], 5), Vec::<(usize, usize)>::new());
    }

    use super::*;

    #[test]
    fn without_words_drops_the_words_and_keeps_the_punctuation() {
        let drop: std::collections::BTreeSet<String> =
            ["engagement", "grandmother's"].map(String::from).into();
        assert_eq!(
            without_words(
                "Of course you feel sad about the Engagement. Your grandmother's call?",
                &drop
            ),
            "Of course you feel sad about the . Your call?"
        );
        assert_eq!(
            without_words("Nothing shared here.", &drop),
            "Nothing shared here."
        );
        assert_eq!(without_words("engagement", &drop), "");
    }

    #[test]
    fn cut_replies_are_told_from_finished_ones() {
        let dangling: std::collections::BTreeSet<String> =
            ["the", "and", "of", "i"].map(String::from).into();
        let cut = |t: &str| cut_off(t, 3, &dangling);
        assert!(cut(
            "That sounds hard. When you think about the interview, the part of"
        ));
        assert!(cut("Everyone has their own story to tell, and I"));
        assert!(cut("I hear you, and I wonder whether,"));
        assert!(!cut("That sounds hard. What happened?"));
        assert!(!cut("You said \"enough.\""));
        assert!(!cut("I'm here (whenever you want)."));
        assert!(
            !cut("hang in there, you've got this"),
            "no period, but finished"
        );
        assert!(!cut("Its not silly, its cruel ;-;"), "an emoticon ends it");
        assert!(
            !cut("That sounds hard. Take the"),
            "too short a fragment to judge"
        );
        assert!(
            !cut("That sounds so hard \u{2764}\u{fe0f}"),
            "an emoji ends it"
        );
        assert!(!cut(""));
    }

    #[test]
    fn normalize_pads_and_folds() {
        assert_eq!(normalize("That’s  HARD, Maya!"), " that's hard maya ");
        assert_eq!(normalize(""), " ");
    }

    #[test]
    fn a_phrase_after_a_negation_is_not_affirmed() {
        let negations: Vec<String> = ["not", "no", "nothing", "don't"].map(String::from).to_vec();
        let affirming = vec!["no wonder".to_string()];
        let neg = Negation {
            negations: &negations,
            affirming: &affirming,
            window: 5,
        };
        let f = |reply: &str| affirmed(&normalize(reply), " foolish ", neg);
        assert!(!f("There's nothing foolish in it."));
        assert!(!f("You're not being foolish."));
        assert!(!f("I don't think you're foolish."));
        assert!(f("No wonder you feel foolish."));
        assert!(f("It's strange to say, but you feel foolish."));
        assert!(!f("There's no need to feel foolish."));
        // One affirmed occurrence is enough.
        assert!(f("Not foolish, I said; but you feel foolish."));
        assert!(!f("That sounds hard."));
    }

    #[test]
    fn phrases_match_whole_words_only() {
        let padded = normalize("At least you tried. Leasing is fine.");
        let phrases = vec![normalize("at least"), normalize("lease")];
        assert_eq!(count_phrases(&padded, &phrases), 1);
    }

    #[test]
    fn looping_replies_are_caught() {
        assert!(looping(
            "You're not stuck. You're not stuck. You're not stuck. You're not stuck. You"
        ));
        assert!(!looping(
            "That sounds hard. What happened? How are you now? I'm here."
        ));
        assert!(!looping("Okay. Okay."));
    }
}
