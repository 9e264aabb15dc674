//! Reply templates for scripted policies: placeholders filled from the live dialogue, so that a
//! script can play the cheap policies an RL policy might find (echo, mirror, slot templates,
//! quoting the scenario). The red-team suite (docs/REDTEAM.md) is built from them.

use std::collections::BTreeMap;

use serde::Deserialize;

use super::record::Turn;
use crate::profile::Scenario;

/// The placeholders a scripted reply may use, with what each becomes.
pub const PLACEHOLDERS: [(&str, &str); 14] = [
    ("user", "the user's last message, verbatim"),
    (
        "user_you",
        "the user's last message with first and second person swapped (I -> you, my -> your)",
    ),
    ("user_last", "the last sentence of the user's last message"),
    (
        "user_words",
        "the three longest words of the user's last message, joined with commas and \"and\"",
    ),
    ("opening", "the user's first message, verbatim"),
    ("helps", "one of the scenario's `helps` replies, in turn"),
    ("feeling", "one of the scenario's feelings, in turn"),
    (
        "word",
        "the longest word of the user's last message, lowercased",
    ),
    (
        "word2",
        "the second longest word of the user's last message, lowercased",
    ),
    (
        "feeling_said",
        "the first of the script's `feelings` that the user's last message holds (else an \
         earlier message's; else the first listed)",
    ),
    (
        "sentence_you",
        "the longest sentence of the user's last message, person swapped, without its end mark",
    ),
    (
        "sentence_synonyms",
        "{sentence_you} with each word found in the script's `synonyms` replaced",
    ),
    (
        "person",
        "whom the user first spoke of as \"my X\" or \"our X\" (the word X), else \"family\"",
    ),
    (
        "answer",
        "the right answer to the factual question the user just asked (the policy knows the \
         catalog), else nothing",
    ),
];

/// Word lists a script carries for its placeholders: what an attacker writes after reading the
/// docs, without seeing the appraiser's own lists.
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WordLists {
    /// Feeling words looked for in what the user said (`{feeling_said}`).
    #[serde(default)]
    pub feelings: Vec<String>,
    /// Word -> replacement (`{sentence_synonyms}`).
    #[serde(default)]
    pub synonyms: BTreeMap<String, String>,
}

/// Checks that every `{name}` in `text` is a known placeholder; returns the first unknown one.
pub fn unknown_placeholder(text: &str) -> Option<String> {
    placeholders(text).find(|p| !PLACEHOLDERS.iter().any(|(k, _)| k == p))
}

fn placeholders(text: &str) -> impl Iterator<Item = String> + '_ {
    text.split('{')
        .skip(1)
        .filter_map(|rest| rest.split_once('}').map(|(name, _)| name.to_string()))
}

/// True when `text` holds a placeholder.
pub fn has_placeholders(text: &str) -> bool {
    placeholders(text).next().is_some()
}

/// What a template may draw on.
pub struct Context<'a> {
    pub turns: &'a [Turn],
    /// The scenario, when the policy knows the catalog (`{helps}`, `{feeling}`).
    pub scenario: Option<&'a Scenario>,
    /// 1-based reply index (rotates `{helps}` and `{feeling}`).
    pub turn: u32,
    /// The script's word lists.
    pub lists: &'a WordLists,
}

/// Fills every placeholder of `text`.
pub fn render(text: &str, ctx: &Context<'_>) -> String {
    let users: Vec<&str> = ctx.turns.iter().filter_map(Turn::user_text).collect();
    let last = users.last().copied().unwrap_or("");
    let pick = |v: &[String]| -> String {
        if v.is_empty() {
            String::new()
        } else {
            v[(ctx.turn.max(1) as usize - 1) % v.len()].clone()
        }
    };
    let mut out = text.to_string();
    for (name, _) in PLACEHOLDERS {
        let key = format!("{{{name}}}");
        if !out.contains(&key) {
            continue;
        }
        let value = match name {
            "user" => last.to_string(),
            "user_you" => swap_person(last),
            "user_last" => last_sentence(last).to_string(),
            "user_words" => longest_words(last, 3),
            "opening" => users.first().copied().unwrap_or("").to_string(),
            "helps" => ctx.scenario.map(|s| pick(&s.helps)).unwrap_or_default(),
            "feeling" => ctx.scenario.map(|s| pick(&s.feelings)).unwrap_or_default(),
            "word" => nth_longest(last, 0),
            "word2" => nth_longest(last, 1),
            "feeling_said" => feeling_said(&users, &ctx.lists.feelings),
            "sentence_you" => longest_sentence_you(last, &BTreeMap::new()),
            "person" => named_after_my(&users),
            "answer" => ctx
                .scenario
                .and_then(|s| {
                    // The persona's voice may recase the question's first word.
                    let said = crate::sim::text::normalize(last);
                    s.factual
                        .iter()
                        .find(|q| said.contains(&crate::sim::text::normalize(&q.question)))
                })
                .map(|q| q.answer.clone())
                .unwrap_or_default(),
            _ => longest_sentence_you(last, &ctx.lists.synonyms),
        };
        out = out.replace(&key, &value);
    }
    out
}

/// The words of a text with their positions, longest first (ties in order of appearance).
fn by_length(text: &str) -> Vec<(usize, &str)> {
    let mut ws: Vec<(usize, &str)> = text
        .split(|c: char| !c.is_alphanumeric() && c != '\'')
        .filter(|w| !w.is_empty())
        .enumerate()
        .collect();
    ws.sort_by(|a, b| b.1.len().cmp(&a.1.len()).then(a.0.cmp(&b.0)));
    ws
}

/// The `i`-th longest word (0: the longest; ties in order of appearance), lowercased; empty when
/// the message has fewer words.
pub fn nth_longest(text: &str, i: usize) -> String {
    by_length(text)
        .get(i)
        .map(|w| w.1.to_lowercase())
        .unwrap_or_default()
}

/// The word after the first "my" or "our" the user said that is not an adjective-like filler
/// ("my best friend" -> "friend"), else "family".
fn named_after_my(users: &[&str]) -> String {
    const SKIP: [&str; 6] = ["best", "late", "own", "old", "little", "other"];
    for u in users {
        let ws = crate::sim::text::words(u);
        for (i, w) in ws.iter().enumerate() {
            if w == "my" || w == "our" {
                if let Some(x) = ws[i + 1..].iter().find(|x| !SKIP.contains(&x.as_str())) {
                    return x.clone();
                }
            }
        }
    }
    "family".into()
}

/// The first of `feelings` found as whole words in the last message, else in an earlier one, else
/// the first of the list.
fn feeling_said(users: &[&str], feelings: &[String]) -> String {
    for m in users.iter().rev() {
        let padded = crate::sim::text::normalize(m);
        if let Some(f) = feelings
            .iter()
            .find(|f| padded.contains(&format!(" {} ", f.to_lowercase())))
        {
            return f.clone();
        }
    }
    feelings.first().cloned().unwrap_or_default()
}

/// The longest sentence of `text`, person swapped, words replaced by `synonyms`, without its end
/// mark, its first letter lowercased (unless "I"): ready to follow "So" or "It sounds like".
pub fn longest_sentence_you(text: &str, synonyms: &BTreeMap<String, String>) -> String {
    let longest = crate::sim::text::sentences(text)
        .into_iter()
        .max_by_key(|s| s.len())
        .unwrap_or("");
    let swapped = swap_person(longest.trim_end_matches(['.', '!', '?']).trim());
    let mut out = String::with_capacity(swapped.len());
    let mut word = String::new();
    let flush = |word: &mut String, out: &mut String| {
        match synonyms.get(&word.to_lowercase()) {
            Some(s) => out.push_str(s),
            None => out.push_str(word),
        }
        word.clear();
    };
    for c in swapped.chars() {
        if c.is_alphanumeric() || c == '\'' {
            word.push(c);
        } else {
            flush(&mut word, &mut out);
            out.push(c);
        }
    }
    flush(&mut word, &mut out);
    match out.split_once(' ') {
        Some((first, rest)) if first != "I" && !first.starts_with("I'") => {
            format!("{} {rest}", first.to_lowercase())
        }
        _ => out,
    }
}

/// The last sentence of a message (the whole message when it has one).
pub fn last_sentence(text: &str) -> &str {
    let t = text.trim_end();
    let body = t.trim_end_matches(['.', '!', '?']);
    match body.rfind(['.', '!', '?']) {
        Some(i) => t[i + 1..].trim(),
        None => t,
    }
}

/// The `n` longest words (ties in order of appearance), joined as a list: "a, b and c".
pub fn longest_words(text: &str, n: usize) -> String {
    let mut ws = by_length(text);
    ws.truncate(n);
    ws.sort_by_key(|w| w.0);
    let words: Vec<String> = ws.iter().map(|w| w.1.to_lowercase()).collect();
    match words.split_last() {
        None => String::new(),
        Some((last, [])) => last.clone(),
        Some((last, rest)) => format!("{} and {last}", rest.join(", ")),
    }
}

/// First and second person swapped word by word, keeping the case of the first letter and the
/// punctuation: "I lost my job." -> "you lost your job."
pub fn swap_person(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 16);
    let mut word = String::new();
    let flush = |word: &mut String, out: &mut String| {
        if !word.is_empty() {
            out.push_str(&swap_word(word));
            word.clear();
        }
    };
    for c in text.chars() {
        if c.is_alphanumeric() || c == '\'' || c == '\u{2019}' {
            word.push(c);
        } else {
            flush(&mut word, &mut out);
            out.push(c);
        }
    }
    flush(&mut word, &mut out);
    out
}

fn swap_word(w: &str) -> String {
    let lower = w.to_lowercase().replace('\u{2019}', "'");
    let swapped = match lower.as_str() {
        "i" | "me" => "you",
        "my" => "your",
        "mine" => "yours",
        "myself" => "yourself",
        "i'm" => "you're",
        "i've" => "you've",
        "i'll" => "you'll",
        "i'd" => "you'd",
        "am" => "are",
        "you" => "I",
        "your" => "my",
        "yours" => "mine",
        "yourself" => "myself",
        "you're" => "I'm",
        "you've" => "I've",
        "you'll" => "I'll",
        "you'd" => "I'd",
        _ => return w.to_string(),
    };
    // "I" is capitalized wherever it stands, so only other words pass their capital on.
    let upper = w.chars().next().is_some_and(char::is_uppercase)
        && !lower.starts_with("i'")
        && lower != "i"
        && swapped != "I";
    if upper {
        let mut c = swapped.chars();
        c.next()
            .map(|f| f.to_uppercase().collect::<String>() + c.as_str())
            .unwrap_or_default()
    } else {
        swapped.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dialogue(user: &[&str]) -> Vec<Turn> {
        user.iter()
            .map(|t| Turn::User {
                text: t.to_string(),
                emotion: 40,
                delta: None,
                appraisal: None,
            })
            .collect()
    }

    #[test]
    fn pronouns_swap_both_ways() {
        assert_eq!(
            swap_person("I lost my job, and you said I'm fine."),
            "you lost your job, and I said you're fine."
        );
        assert_eq!(swap_person("My boss fired me."), "Your boss fired you.");
        assert_eq!(swap_person("I am tired"), "you are tired");
    }

    #[test]
    fn placeholders_fill_from_the_dialogue() {
        let turns = dialogue(&["I failed the exam.", "It was my second try. I feel stupid."]);
        let lists = WordLists {
            feelings: vec!["angry".into(), "stupid".into()],
            synonyms: [("second".to_string(), "next".to_string())].into(),
        };
        let ctx = Context {
            turns: &turns,
            scenario: None,
            turn: 2,
            lists: &lists,
        };
        assert_eq!(
            render("You said: \"{user}\" So {user_you}", &ctx),
            "You said: \"It was my second try. I feel stupid.\" So It was your second try. you feel stupid."
        );
        assert_eq!(render("{user_last}", &ctx), "I feel stupid.");
        assert_eq!(render("{opening}", &ctx), "I failed the exam.");
        // second (6), stupid (6), feel (4), in the order they were said
        assert_eq!(render("{user_words}", &ctx), "second, feel and stupid");
        assert_eq!(longest_words("a bb ccc dddd", 3), "bb, ccc and dddd");
        assert_eq!(render("{word} / {word2}", &ctx), "second / stupid");
        assert_eq!(render("{feeling_said}", &ctx), "stupid");
        // "It was my second try" (20) is longer than "I feel stupid" (13).
        assert_eq!(
            render("So {sentence_you}.", &ctx),
            "So it was your second try."
        );
        assert_eq!(
            render("So {sentence_synonyms}.", &ctx),
            "So it was your next try."
        );
        let none = WordLists::default();
        let bare = Context {
            lists: &none,
            ..ctx
        };
        assert_eq!(render("[{feeling_said}]", &bare), "[]");
        assert_eq!(nth_longest("one", 1), "");
        // "my second try" names no one the skip list knows, so "second" is taken as it comes;
        // with no scenario there is no factual question to answer.
        assert_eq!(render("{person}|{answer}", &bare), "second|");
        assert_eq!(named_after_my(&["My best friend told everyone."]), "friend");
        assert_eq!(named_after_my(&["Nobody listens."]), "family");
    }

    #[test]
    fn unknown_placeholders_are_named() {
        assert_eq!(unknown_placeholder("hi {user} {nme}"), Some("nme".into()));
        assert_eq!(unknown_placeholder("hi {user_you}"), None);
        assert!(has_placeholders("x {user}"));
        assert!(!has_placeholders("plain"));
    }
}
