//! Mutations of JSON and YAML text that keep most of the document intact, so that the input
//! reaches past the syntax check to the typed fields and the validation: numbers replaced by
//! boundary values, a value replaced by one of another type, string contents replaced by odd
//! ones, members and lines dropped, duplicated or swapped, words replaced by words of the seeds
//! (an enum's other variant, a key of another section), deep nesting, truncation, and splices.

use std::collections::BTreeSet;

use rand::Rng;
use rand_chacha::ChaCha8Rng;

use super::spans::{json_members, json_strings, line_spans, number_spans, word_spans, yaml_values};
use super::values::{json_escape, json_value, odd_string, yaml_value, NUMBER_TEXTS};
use crate::fuzz::Kind;

/// Words of the seeds, for replacing a word by another.
pub struct Dictionary(Vec<String>);

impl Dictionary {
    /// The distinct words (identifiers of two characters or more) of `seeds`, at most 4096.
    pub fn of(seeds: &[Vec<u8>]) -> Self {
        let mut words = BTreeSet::new();
        for s in seeds {
            for r in word_spans(s) {
                if r.len() >= 2 && r.len() <= 64 {
                    words.insert(String::from_utf8_lossy(&s[r]).into_owned());
                }
            }
            if words.len() > 4096 {
                break;
            }
        }
        Dictionary(words.into_iter().collect())
    }

    fn pick(&self, rng: &mut ChaCha8Rng) -> Option<&str> {
        (!self.0.is_empty()).then(|| self.0[rng.random_range(0..self.0.len())].as_str())
    }
}

fn pick<T: Clone>(rng: &mut ChaCha8Rng, items: &[T]) -> Option<T> {
    (!items.is_empty()).then(|| items[rng.random_range(0..items.len())].clone())
}

/// Nesting deep enough to pass the parsers' recursion limits, as a value. YAML stops at 1000
/// levels: libyaml is very slow on far deeper unclosed nesting, which would only slow the
/// campaign down.
fn nested(rng: &mut ChaCha8Rng, kind: Kind) -> String {
    let depths: &[usize] = match kind {
        Kind::Yaml => &[64, 127, 128, 129, 200, 1000],
        _ => &[64, 127, 128, 129, 200, 1000, 10_000, 100_000],
    };
    let depth = depths[rng.random_range(0..depths.len())];
    let closed = rng.random_bool(0.8);
    let (open, close) = match (kind, rng.random_range(0..2)) {
        (_, 0) => ("[", "]"),
        (Kind::Yaml, _) => ("{a: ", "}"),
        _ => ("{\"a\":", "}"),
    };
    let mut s = open.repeat(depth);
    if closed {
        s.push_str(&close.repeat(depth));
    }
    s
}

/// YAML nesting by indentation: `a:` lines, each indented one step more.
fn yaml_block_nesting(rng: &mut ChaCha8Rng) -> String {
    let depth = rng.random_range(100..400);
    let mut s = String::new();
    for i in 0..depth {
        s.push_str(&" ".repeat(i));
        s.push_str("a:\n");
    }
    s
}

/// One text mutation of `data` (JSON or YAML by `kind`); `other` is another input to splice
/// lines from. Falls back to a byte mutation when the text offers nothing to work on.
pub fn mutate(
    data: &mut Vec<u8>,
    other: &[u8],
    kind: Kind,
    dict: &Dictionary,
    rng: &mut ChaCha8Rng,
    max_len: usize,
) {
    let json = kind != Kind::Yaml;
    let done = match rng.random_range(0..16) {
        0 | 1 => pick(rng, &number_spans(data)).map(|r| {
            let n = NUMBER_TEXTS[rng.random_range(0..NUMBER_TEXTS.len())];
            data.splice(r, n.bytes());
        }),
        2 | 3 => {
            let spans = if json {
                json_members(data).into_iter().map(|(_, v)| v).collect()
            } else {
                yaml_values(data)
            };
            pick(rng, &spans).map(|r| {
                let v = if json {
                    json_value(rng)
                } else {
                    yaml_value(rng)
                };
                data.splice(r, v.into_bytes());
            })
        }
        4 => {
            let spans = if json {
                json_strings(data)
            } else {
                yaml_values(data)
            };
            pick(rng, &spans).map(|r| {
                let s = odd_string(rng);
                let v = if json {
                    json_escape(&s)
                } else {
                    format!("\"{}\"", json_escape(&s))
                };
                data.splice(r, v.into_bytes());
            })
        }
        5 if json => pick(rng, &json_members(data)).map(|(m, _)| {
            // Drop the member with the comma after it (or before it, when it is the last).
            let mut end = m.end;
            while end < data.len() && data[end].is_ascii_whitespace() {
                end += 1;
            }
            if data.get(end) == Some(&b',') {
                data.drain(m.start..end + 1);
            } else {
                let mut start = m.start;
                while start > 0 && data[start - 1].is_ascii_whitespace() {
                    start -= 1;
                }
                if start > 0 && data[start - 1] == b',' {
                    start -= 1;
                }
                data.drain(start..m.end);
            }
        }),
        6 if json => pick(rng, &json_members(data)).map(|(m, _)| {
            // The same key twice.
            let mut copy = vec![b','];
            copy.extend_from_slice(&data[m.clone()]);
            data.splice(m.end..m.end, copy);
        }),
        7 if json => {
            let members = json_members(data);
            match (pick(rng, &members), pick(rng, &members)) {
                (Some((_, a)), Some((_, b))) if a.end <= b.start || b.end <= a.start => {
                    let (first, second) = if a.start < b.start { (a, b) } else { (b, a) };
                    let va = data[first.clone()].to_vec();
                    let vb = data[second.clone()].to_vec();
                    data.splice(second, va);
                    data.splice(first, vb);
                    Some(())
                }
                _ => None,
            }
        }
        5..=7 => {
            let lines = line_spans(data);
            pick(rng, &lines).map(|l| match rng.random_range(0..3) {
                0 => {
                    data.drain(l);
                }
                1 => {
                    let copy = data[l.clone()].to_vec();
                    data.splice(l.end..l.end, copy);
                }
                _ => {
                    let text = data[l.clone()].to_vec();
                    let indent = text.iter().take_while(|&&b| b == b' ').count();
                    let new_indent = if rng.random_bool(0.5) {
                        indent + rng.random_range(1..=4)
                    } else {
                        indent.saturating_sub(rng.random_range(1..=4))
                    };
                    let mut line = vec![b' '; new_indent];
                    line.extend_from_slice(&text[indent..]);
                    data.splice(l, line);
                }
            })
        }
        8 => {
            let lines = line_spans(data);
            match (pick(rng, &lines), pick(rng, &lines)) {
                (Some(a), Some(b)) if a.end <= b.start => {
                    let la = data[a.clone()].to_vec();
                    let lb = data[b.clone()].to_vec();
                    data.splice(b, la);
                    data.splice(a, lb);
                    Some(())
                }
                _ => None,
            }
        }
        9 => {
            let theirs = line_spans(other);
            let ours = line_spans(data);
            pick(rng, &theirs).map(|t| {
                let at = pick(rng, &ours).map_or(data.len(), |l| l.start);
                data.splice(at..at, other[t].iter().copied());
            })
        }
        10 => {
            let at = rng.random_range(0..=data.len());
            data.truncate(at);
            Some(())
        }
        11 => {
            let spans = if json {
                json_members(data).into_iter().map(|(_, v)| v).collect()
            } else {
                yaml_values(data)
            };
            let value = if !json && rng.random_bool(0.3) {
                format!("\n{}", yaml_block_nesting(rng))
            } else {
                nested(rng, kind)
            };
            pick(rng, &spans).map(|r| {
                data.splice(r, value.into_bytes());
            })
        }
        12 | 13 => {
            let words = word_spans(data);
            match (pick(rng, &words), dict.pick(rng)) {
                (Some(r), Some(w)) => {
                    data.splice(r, w.bytes());
                    Some(())
                }
                _ => None,
            }
        }
        14 => {
            let ours = line_spans(data);
            let theirs = line_spans(other);
            match (pick(rng, &ours), pick(rng, &theirs)) {
                (Some(a), Some(b)) => {
                    data.truncate(a.start);
                    data.extend_from_slice(&other[b.start..]);
                    Some(())
                }
                _ => None,
            }
        }
        _ => None,
    };
    if done.is_none() {
        super::bytes::mutate(data, other, &None, rng, max_len);
    }
    data.truncate(max_len);
}
