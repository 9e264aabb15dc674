//! Copying: which words of a reply stand in runs shared with a source text (what the user said, the
//! scenario's own lines). First and second person fold into one token first, so a
//! pronoun-swapped mirror ("you lost your job") matches its source ("I lost my job") as an echo
//! does. Motivational interviewing counts a reflection only when the listener restates in their
//! own words (Miller & Rollnick 2013, ch. 5; MITI 4.2.1, "Reflection").

use crate::sim::text::words;

/// A word with first and second person folded together, and "am"/"are" too (they follow the
/// pronoun in a swap).
fn fold(w: &str) -> &str {
    match w {
        "i" | "me" | "you" | "ye" => "<p>",
        "my" | "your" => "<p's>",
        "mine" | "yours" => "<p's>",
        "myself" | "yourself" => "<p-self>",
        "i'm" | "you're" => "<p-are>",
        "i've" | "you've" => "<p-have>",
        "i'll" | "you'll" => "<p-will>",
        "i'd" | "you'd" => "<p-would>",
        "am" | "are" => "<are>",
        other => other,
    }
}

/// The folded words of a text.
pub fn folded(text: &str) -> Vec<String> {
    words(text).iter().map(|w| fold(w).to_string()).collect()
}

/// Which of `reply`'s words lie in a run shared with `source`: runs of at least `min_run` words,
/// or a whole source sentence of at least `min_sentence` words. Marks `covered` (one flag per
/// reply word) and returns nothing; call once per source.
pub fn mark_copied(
    reply: &[String],
    source: &str,
    min_run: usize,
    min_sentence: usize,
    covered: &mut [bool],
) {
    let src = folded(source);
    if src.is_empty() || reply.is_empty() {
        return;
    }
    // Longest common run ending at (i, j), by dynamic programming over one row at a time.
    let mut prev = vec![0usize; src.len() + 1];
    let mut cur = vec![0usize; src.len() + 1];
    let mut runs: Vec<(usize, usize)> = Vec::new(); // (end in reply, length)
    for (i, word) in reply.iter().enumerate() {
        for (j, theirs) in src.iter().enumerate() {
            cur[j + 1] = if word == theirs { prev[j] + 1 } else { 0 };
            if cur[j + 1] >= min_run {
                runs.push((i, cur[j + 1]));
            }
        }
        std::mem::swap(&mut prev, &mut cur);
    }
    for (end, len) in runs {
        covered[end + 1 - len..=end]
            .iter_mut()
            .for_each(|c| *c = true);
    }
    // Whole short sentences quoted verbatim ("It's hard to explain to people.").
    for sentence in crate::sim::text::sentences(source) {
        let s = folded(sentence);
        if s.len() < min_sentence || s.len() >= min_run {
            continue;
        }
        for start in 0..reply.len().saturating_sub(s.len() - 1) {
            if reply[start..start + s.len()] == s[..] {
                covered[start..start + s.len()]
                    .iter_mut()
                    .for_each(|c| *c = true);
            }
        }
    }
}

/// Which of the reply's words (as [`words`] splits them) are copied from the sources.
pub fn copied_mask(
    reply: &str,
    sources: &[&str],
    min_run: usize,
    min_sentence: usize,
) -> Vec<bool> {
    let r = folded(reply);
    let mut covered = vec![false; r.len()];
    for s in sources {
        mark_copied(&r, s, min_run, min_sentence, &mut covered);
    }
    covered
}

/// How much of a word mask is marked: (marked words, share of all words).
pub fn coverage(mask: &[bool]) -> (usize, f64) {
    let n = mask.iter().filter(|c| **c).count();
    (n, n as f64 / mask.len().max(1) as f64)
}

/// How much of a reply is copied from the sources: (copied words, share of the reply's words).
pub fn copied(reply: &str, sources: &[&str], min_run: usize, min_sentence: usize) -> (usize, f64) {
    coverage(&copied_mask(reply, sources, min_run, min_sentence))
}

/// The reply's words that are not in any source text at all (after folding): what the reply adds
/// of its own. A template's frame is what stays when the slots are taken out.
pub fn own_words(reply: &str, sources: &[&str]) -> Vec<String> {
    let seen: std::collections::HashSet<String> = sources.iter().flat_map(|s| folded(s)).collect();
    folded(reply)
        .into_iter()
        .filter(|w| !seen.contains(w))
        .collect()
}

/// Which of the reply's words (as [`words`] splits them) stand in a bare list of the user's words:
/// at least `min_items` words that `is_users` accepts, one after another, joined by nothing but
/// commas, "and" or "or" ("thousand, minimums and statements"). A person reflecting names things
/// in phrases ("the minimums, the statements"); a slot filled from the user's text lists them.
pub fn bare_list_mask(reply: &str, min_items: usize, is_users: impl Fn(&str) -> bool) -> Vec<bool> {
    // Each word with whether list glue precedes it: a comma, "and" or "or" (and spaces), nothing
    // else, since the last listed word.
    let mut tokens: Vec<(String, bool)> = Vec::new();
    let (mut clean, mut joined) = (false, false);
    let mut word = String::new();
    let push = |word: &mut String,
                clean: &mut bool,
                joined: &mut bool,
                tokens: &mut Vec<(String, bool)>| {
        if word.is_empty() {
            return;
        }
        let w = crate::sim::text::normalize(word).trim().to_string();
        word.clear();
        if w == "and" || w == "or" {
            *joined = true;
            return;
        }
        tokens.push((w, *clean && *joined));
        (*clean, *joined) = (true, false);
    };
    for c in reply.chars() {
        if c.is_alphanumeric() || c == '\'' || c == '\u{2019}' {
            word.push(c);
        } else {
            push(&mut word, &mut clean, &mut joined, &mut tokens);
            match c {
                ',' | '&' => joined = true,
                ' ' => {}
                _ => clean = false,
            }
        }
    }
    push(&mut word, &mut clean, &mut joined, &mut tokens);
    // `words` splits the same way, "and"/"or" included: map back onto its indices.
    let all = words(reply);
    let mut mask = vec![false; all.len()];
    let mut run: Vec<usize> = Vec::new(); // token indices of the current list
    let flush = |run: &mut Vec<usize>, mask: &mut Vec<bool>| {
        if run.len() >= min_items {
            for &t in run.iter() {
                if let Some(m) = mask.get_mut(t) {
                    *m = true;
                }
            }
        }
        run.clear();
    };
    // Token i of `tokens` is word index of the i-th non-glue word in `all`.
    let word_index: Vec<usize> = all
        .iter()
        .enumerate()
        .filter(|(_, w)| w.as_str() != "and" && w.as_str() != "or")
        .map(|(i, _)| i)
        .collect();
    for (t, (w, glued)) in tokens.iter().enumerate() {
        let users = is_users(w);
        if !(users && *glued && !run.is_empty()) {
            flush(&mut run, &mut mask);
        }
        if users {
            if let Some(&i) = word_index.get(t) {
                run.push(i);
            }
        }
    }
    flush(&mut run, &mut mask);
    mask
}

#[cfg(test)]
mod tests {
    use super::*;

    const USER: &str = "I told my best friend my parents are splitting up. It got posted in the group chat with a joke.";

    #[test]
    fn an_echo_is_all_copied() {
        let (n, share) = copied(USER, &[USER], 4, 3);
        assert_eq!(n, 20);
        assert_eq!(share, 1.0);
    }

    #[test]
    fn a_pronoun_swapped_mirror_is_copied() {
        let mirror = "So you told your best friend your parents are splitting up. I hear you.";
        let (n, share) = copied(mirror, &[USER], 4, 3);
        // "you told your best friend your parents are splitting up" = 10 words of 14
        assert_eq!(n, 10);
        assert!((share - 10.0 / 14.0).abs() < 1e-9);
    }

    #[test]
    fn a_reflection_in_new_words_is_not_copied() {
        let own = "Someone you trusted turned something private into a joke for everyone to see. That's a real betrayal.";
        assert_eq!(copied(own, &[USER], 4, 3).0, 0);
        // Naming two of the user's details is reflecting, not copying: "group chat" is 2 words.
        let named = "Your best friend let the group chat laugh at your family. No wonder you feel betrayed.";
        // "your best friend" is 3 folded words, below a run of 4.
        assert_eq!(copied(named, &[USER], 4, 3).0, 0);
    }

    #[test]
    fn a_short_quoted_sentence_counts() {
        let user = "Kind of. It's hard to explain. I don't know.";
        let reply = "You said: It's hard to explain. What do you mean?";
        // "it's hard to explain" is 4 words (a run); "i don't know" (3) is not in the reply
        assert_eq!(copied(reply, &[user], 4, 3).0, 4);
        let reply = "I don't know either, honestly.";
        // "i don't know" is a whole 3-word sentence of the user's, quoted
        assert_eq!(copied(reply, &[user], 4, 3).0, 3);
    }

    #[test]
    fn bare_lists_of_the_users_words_are_found() {
        let users = |w: &str| ["thousand", "minimums", "statements", "cards"].contains(&w);
        let mask = bare_list_mask(
            "It sounds like thousand, minimums and statements are weighing on you.",
            3,
            users,
        );
        let marked: Vec<String> =
            words("It sounds like thousand, minimums and statements are weighing on you.")
                .into_iter()
                .zip(&mask)
                .filter(|(_, m)| **m)
                .map(|(w, _)| w)
                .collect();
        assert_eq!(marked, ["thousand", "minimums", "statements"]);
        // Named in phrases, the same words are a reflection.
        let phrased =
            "The thousand on the cards, the minimums, the statements you stopped opening.";
        assert!(!bare_list_mask(phrased, 3, users).iter().any(|m| *m));
        // Two items are ordinary speech.
        assert!(!bare_list_mask("Cards and statements, yes.", 3, users)
            .iter()
            .any(|m| *m));
        // Words in a row without commas or "and" are prose, not a list.
        assert!(!bare_list_mask("thousand minimums statements", 3, users)
            .iter()
            .any(|m| *m));
    }

    #[test]
    fn own_words_drop_everything_the_user_said() {
        let reply = "It sounds like friend, chat and joke have been weighing on you.";
        let own = own_words(reply, &[USER]);
        // "it", "friend", "chat", "joke" and "you" (folded with "I"/"my") were all said
        assert_eq!(
            own,
            ["sounds", "like", "and", "have", "been", "weighing", "on"]
        );
    }
}
