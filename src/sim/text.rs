//! Text normalization and phrase matching shared by the lexical cues and the warmth score.

use crate::profile::persona::Voice;

/// Lowercases, folds curly quotes, turns everything but letters, digits and apostrophes into
/// spaces, collapses runs of spaces, and pads with one space on each side, so that
/// `padded.contains(" phrase ")` is a whole-word match.
pub fn normalize(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 2);
    out.push(' ');
    let mut last_space = true;
    for c in text.chars() {
        let c = match c {
            '\u{2018}' | '\u{2019}' | '`' => '\'',
            c => c,
        };
        if c.is_alphanumeric() || c == '\'' {
            for l in c.to_lowercase() {
                out.push(l);
            }
            last_space = false;
        } else if !last_space {
            out.push(' ');
            last_space = true;
        }
    }
    if !last_space {
        out.push(' ');
    }
    out
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

/// The sentences of a user message, with the persona's voice opener (which may end in a comma and
/// run into the next sentence, "idk I've tried that.") split off first, so that every part is a
/// sentence the user can say on its own.
pub fn user_sentences<'a>(voice: &Voice, text: &'a str) -> Vec<&'a str> {
    let opener = voice
        .low
        .iter()
        .chain(&voice.mid)
        .chain(&voice.high)
        .filter(|o| text.starts_with(o.as_str()))
        .max_by_key(|o| o.len());
    match opener {
        Some(o) => {
            let (head, rest) = text.split_at(o.len());
            let mut out = vec![head];
            out.extend(sentences(rest));
            out
        }
        None => sentences(text),
    }
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

/// True when a reply stops mid-sentence, as a reply cut at a token cap does: its last character
/// is a letter, a digit or a comma, colon, semicolon or dash (no end mark, closing quote or
/// bracket, and no emoji or other symbol a person may end on), and its last sentence holds at
/// least `min_words` words (a one-word sign-off such as "Take care" does not count as cut).
pub fn cut_off(reply: &str, min_words: usize) -> bool {
    let t = reply.trim_end();
    let Some(last) = t.chars().last() else {
        return false;
    };
    let open = last.is_alphanumeric() || matches!(last, ',' | ':' | ';' | '-' | '\u{2013}');
    let start = t.rfind(['.', '!', '?', '\n']).map_or(0, |i| i + 1);
    open && t[start..].split_whitespace().count() >= min_words
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cut_replies_are_told_from_finished_ones() {
        assert!(cut_off(
            "That sounds hard. When you think about the interview, the part that",
            3
        ));
        assert!(cut_off("I hear you, and I wonder whether,", 3));
        assert!(!cut_off("That sounds hard. What happened?", 3));
        assert!(!cut_off("You said \"enough.\"", 3));
        assert!(!cut_off("I'm here (whenever you want).", 3));
        assert!(
            !cut_off("That sounds hard. Take care", 3),
            "a short sign-off"
        );
        assert!(
            !cut_off("That sounds so hard \u{2764}\u{fe0f}", 3),
            "an emoji ends it"
        );
        assert!(!cut_off("", 3));
    }

    #[test]
    fn normalize_pads_and_folds() {
        assert_eq!(normalize("That’s  HARD, Maya!"), " that's hard maya ");
        assert_eq!(normalize(""), " ");
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
