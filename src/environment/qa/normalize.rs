//! Text normalization for answer matching: both the answer key and a model's reply go through the
//! same function, so "The Twenty-One Pilots", "twenty one pilots" and "21 Pilots!" become the same
//! tokens. Steps, in order: lowercase; fold common accents; drop apostrophes ("isn't" -> "isnt");
//! keep a decimal point and drop a thousands comma between digits; mark clause ends (`.,;:!?`,
//! brackets, dashes, newlines and the words "but", "however") so a negation never reaches across
//! them, and mark concessive clauses ("although", "though", "whereas", "while", "despite": what
//! follows is conceded, not claimed); read number words as digits ("one hundred and five" ->
//! "105", "2 million" -> "2000000"); drop the articles a, an, the.

/// One normalized token: a word, or the end of a clause.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Token {
    /// A lowercase word or number.
    Word(String),
    /// A clause boundary (punctuation or a contrastive conjunction).
    Break,
    /// A clause boundary that opens a concessive clause ("although", "while", ...).
    Concession,
}

/// Words that end a clause, like punctuation: what follows "but" is not under an earlier "not".
const BREAK_WORDS: [&str; 2] = ["but", "however"];
/// Words that end a clause and open a concessive one: "while Sydney is bigger" claims nothing.
const CONCESSION_WORDS: [&str; 5] = ["although", "though", "whereas", "while", "despite"];

/// Normalized words of `text`, clause breaks dropped: the form used for keys and exact comparison.
pub fn normalize(text: &str) -> String {
    words(text).join(" ")
}

/// Normalized words of `text` without clause breaks.
pub fn words(text: &str) -> Vec<String> {
    tokens(text)
        .into_iter()
        .filter_map(|t| match t {
            Token::Word(w) => Some(w),
            Token::Break | Token::Concession => None,
        })
        .collect()
}

/// Normalized tokens of `text`, with clause breaks.
pub fn tokens(text: &str) -> Vec<Token> {
    let cleaned = clean_chars(text);
    let mut raw: Vec<Token> = cleaned
        .split_whitespace()
        .map(|w| {
            if w == "\u{1}" || BREAK_WORDS.contains(&w) {
                Token::Break
            } else if CONCESSION_WORDS.contains(&w) {
                Token::Concession
            } else {
                Token::Word(w.to_string())
            }
        })
        .collect();
    raw = numbers_to_digits(raw);
    let mut out: Vec<Token> = Vec::with_capacity(raw.len());
    for t in raw {
        match (&t, out.last_mut()) {
            (Token::Word(w), _) if matches!(w.as_str(), "a" | "an" | "the") => {}
            (Token::Word(_), _) => out.push(t),
            // Boundaries in a row merge into one, and the last decides: ", while" opens a
            // concession, but "for a while." ends its clause and concedes nothing after it.
            (_, Some(last @ (Token::Break | Token::Concession))) => *last = t.clone(),
            (Token::Break, None) => {}
            _ => out.push(t),
        }
    }
    if matches!(out.last(), Some(Token::Break | Token::Concession)) {
        out.pop();
    }
    out
}

/// Lowercases, folds accents and turns punctuation into spaces or break markers (`\u{1}`).
fn clean_chars(text: &str) -> String {
    let chars: Vec<char> = text.chars().flat_map(char::to_lowercase).collect();
    let mut out = String::with_capacity(chars.len() + 8);
    for (i, &c) in chars.iter().enumerate() {
        let digit_before = i > 0 && chars[i - 1].is_ascii_digit();
        let digit_after = chars.get(i + 1).is_some_and(|d| d.is_ascii_digit());
        match c {
            c if c.is_alphanumeric() => match fold_accent(c) {
                Some(s) => out.push_str(s),
                None => out.push(c),
            },
            '\'' | '\u{2019}' | '\u{2018}' | '`' => {}
            '.' if digit_before && digit_after => out.push('.'),
            ',' if digit_before && digit_after => {}
            '%' => out.push_str(" percent "),
            '&' => out.push_str(" and "),
            '.' | ',' | ';' | ':' | '!' | '?' | '(' | ')' | '[' | ']' | '\n' | '\u{2014}'
            | '\u{2013}' => out.push_str(" \u{1} "),
            _ => out.push(' '),
        }
    }
    out
}

/// ASCII spelling of common accented Latin letters ("é" -> "e", "ß" -> "ss").
fn fold_accent(c: char) -> Option<&'static str> {
    Some(match c {
        'à' | 'á' | 'â' | 'ã' | 'ä' | 'å' | 'ā' => "a",
        'ç' | 'č' => "c",
        'è' | 'é' | 'ê' | 'ë' | 'ē' => "e",
        'ì' | 'í' | 'î' | 'ï' | 'ī' => "i",
        'ñ' => "n",
        'ò' | 'ó' | 'ô' | 'õ' | 'ö' | 'ø' | 'ō' => "o",
        'ù' | 'ú' | 'û' | 'ü' | 'ū' => "u",
        'ý' | 'ÿ' => "y",
        'š' => "s",
        'ž' => "z",
        'ß' => "ss",
        'æ' => "ae",
        'œ' => "oe",
        _ => return None,
    })
}

/// Value of a number word below one hundred, if `w` is one.
fn small_number(w: &str) -> Option<u64> {
    const UNITS: [&str; 20] = [
        "zero",
        "one",
        "two",
        "three",
        "four",
        "five",
        "six",
        "seven",
        "eight",
        "nine",
        "ten",
        "eleven",
        "twelve",
        "thirteen",
        "fourteen",
        "fifteen",
        "sixteen",
        "seventeen",
        "eighteen",
        "nineteen",
    ];
    const TENS: [&str; 8] = [
        "twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety",
    ];
    if let Some(i) = UNITS.iter().position(|u| *u == w) {
        return Some(i as u64);
    }
    TENS.iter()
        .position(|t| *t == w)
        .map(|i| (i as u64 + 2) * 10)
}

/// Multiplier of a scale word ("hundred" -> 100, "thousand" -> 1000, ...).
fn scale(w: &str) -> Option<u64> {
    match w {
        "hundred" => Some(100),
        "thousand" => Some(1_000),
        "million" => Some(1_000_000),
        "billion" => Some(1_000_000_000),
        _ => None,
    }
}

/// Replaces each run of number words (and a digit or "a" followed by a scale word) by its digits.
fn numbers_to_digits(toks: Vec<Token>) -> Vec<Token> {
    let mut out = Vec::with_capacity(toks.len());
    let mut i = 0;
    while i < toks.len() {
        match parse_number(&toks[i..]) {
            Some((value, used)) => {
                out.push(Token::Word(value.to_string()));
                i += used;
            }
            None => {
                out.push(toks[i].clone());
                i += 1;
            }
        }
    }
    out
}

fn word_at(toks: &[Token], i: usize) -> Option<&str> {
    match toks.get(i) {
        Some(Token::Word(w)) => Some(w.as_str()),
        _ => None,
    }
}

/// Parses the number spelled at the start of `toks`: `(value, tokens used)`, or `None` when it does
/// not start with a number word. "one two" is two numbers; "twenty one" and "a hundred" are one.
fn parse_number(toks: &[Token]) -> Option<(u64, usize)> {
    let first = word_at(toks, 0)?;
    let next_is_scale = word_at(toks, 1).and_then(scale).is_some();
    let (mut total, mut current, mut i) = if small_number(first).is_some() {
        (0u64, 0u64, 0usize)
    } else if next_is_scale && first == "a" {
        (0, 1, 1)
    } else if next_is_scale && first.len() < 10 && first.bytes().all(|b| b.is_ascii_digit()) {
        (0, first.parse().ok()?, 1)
    } else {
        return None;
    };
    let mut last_small: Option<u64> = None;
    while let Some(w) = word_at(toks, i) {
        if let Some(v) = small_number(w) {
            let fits = match last_small {
                None => current % 100 == 0,
                Some(prev) => prev >= 20 && prev % 10 == 0 && v < 10 && v > 0,
            };
            if !fits {
                break;
            }
            current += v;
            last_small = Some(v);
        } else if let Some(s) = scale(w) {
            if s == 100 {
                if current % 100 == 0 && current >= 100 {
                    break;
                }
                current = current.max(1) * 100;
            } else {
                if total != 0 && total < s * 1000 {
                    break;
                }
                total += current.max(1) * s;
                current = 0;
            }
            last_small = None;
        } else if w == "and" && i > 0 && last_small.is_none() {
            // "one hundred and five": only after a scale word and before a small number.
            if word_at(toks, i + 1)
                .and_then(small_number)
                .is_none_or(|v| v == 0)
            {
                break;
            }
        } else {
            break;
        }
        i += 1;
    }
    Some((total + current, i))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lowercases_strips_punctuation_and_articles() {
        assert_eq!(normalize("The Eiffel Tower!"), "eiffel tower");
        assert_eq!(normalize("It's an apple, isn't it?"), "its apple isnt it");
        assert_eq!(normalize("São Paulo"), "sao paulo");
        assert_eq!(normalize("Jean-Paul Sartre"), "jean paul sartre");
    }

    #[test]
    fn number_words_become_digits() {
        assert_eq!(normalize("twenty-one"), "21");
        assert_eq!(normalize("Twenty one"), "21");
        assert_eq!(normalize("one hundred"), "100");
        assert_eq!(normalize("a hundred"), "100");
        assert_eq!(normalize("one hundred and five"), "105");
        assert_eq!(normalize("two thousand three hundred forty-five"), "2345");
        assert_eq!(normalize("2 million"), "2000000");
        assert_eq!(normalize("1,000 years"), "1000 years");
        assert_eq!(normalize("3.14"), "3.14");
        assert_eq!(normalize("zero"), "0");
    }

    #[test]
    fn separate_numbers_stay_separate() {
        assert_eq!(normalize("one two three"), "1 2 3");
        assert_eq!(normalize("eight and nine"), "8 and 9");
        assert_eq!(normalize("twenty twenty"), "20 20");
        assert_eq!(normalize("a cat"), "cat");
    }

    #[test]
    fn clause_breaks_from_punctuation_and_contrast_words() {
        let t = tokens("Not 8, but 7.");
        let w = |s: &str| Token::Word(s.to_string());
        assert_eq!(t, vec![w("not"), w("8"), Token::Break, w("7")]);
        // A concession word that ends its clause concedes nothing.
        assert_eq!(
            tokens("for a while. It's 7"),
            vec![w("for"), Token::Break, w("its"), w("7")]
        );
        let t = tokens("While X is big, it's Y, although...");
        assert_eq!(
            t,
            vec![
                Token::Concession,
                w("x"),
                w("is"),
                w("big"),
                Token::Break,
                w("its"),
                w("y")
            ]
        );
    }
}
