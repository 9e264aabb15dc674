//! Where the parts of JSON and YAML text are, for the text mutations: words, numbers, lines,
//! JSON members (key and value) and strings, YAML values. A light scan, not a parser: it never
//! fails, and on broken text it finds what it can.

use std::ops::Range;

fn is_ident(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_'
}

/// Identifier-like runs: `[A-Za-z_][A-Za-z0-9_-]*`.
pub fn word_spans(d: &[u8]) -> Vec<Range<usize>> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < d.len() {
        if (d[i].is_ascii_alphabetic() || d[i] == b'_') && (i == 0 || !is_ident(d[i - 1])) {
            let start = i;
            while i < d.len() && (is_ident(d[i]) || d[i] == b'-') {
                i += 1;
            }
            out.push(start..i);
        } else {
            i += 1;
        }
    }
    out
}

/// Numbers: an optional minus, digits, and what follows them of `.`, exponent and digits.
pub fn number_spans(d: &[u8]) -> Vec<Range<usize>> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < d.len() {
        let starts_digit = d[i].is_ascii_digit();
        let starts_minus = d[i] == b'-' && d.get(i + 1).is_some_and(u8::is_ascii_digit);
        if (starts_digit || starts_minus) && (i == 0 || !is_ident(d[i - 1]) && d[i - 1] != b'-') {
            let start = i;
            i += 1;
            while i < d.len() {
                let c = d[i];
                let exp_sign = (c == b'+' || c == b'-') && matches!(d[i - 1], b'e' | b'E');
                if c.is_ascii_digit() || c == b'.' || c == b'e' || c == b'E' || exp_sign {
                    i += 1;
                } else {
                    break;
                }
            }
            out.push(start..i);
        } else {
            i += 1;
        }
    }
    out
}

/// Lines, each with its newline.
pub fn line_spans(d: &[u8]) -> Vec<Range<usize>> {
    let mut out = Vec::new();
    let mut start = 0;
    for (i, &b) in d.iter().enumerate() {
        if b == b'\n' {
            out.push(start..i + 1);
            start = i + 1;
        }
    }
    if start < d.len() {
        out.push(start..d.len());
    }
    out
}

/// The end of the JSON value starting at or after `start` (whitespace skipped).
pub fn json_value_end(d: &[u8], start: usize) -> usize {
    let mut i = start;
    while i < d.len() && d[i].is_ascii_whitespace() {
        i += 1;
    }
    match d.get(i) {
        Some(b'"') => string_end(d, i),
        Some(b'[') | Some(b'{') => {
            let mut depth = 0usize;
            while i < d.len() {
                match d[i] {
                    b'"' => {
                        i = string_end(d, i);
                        continue;
                    }
                    b'[' | b'{' => depth += 1,
                    b']' | b'}' => {
                        depth = depth.saturating_sub(1);
                        if depth == 0 {
                            return i + 1;
                        }
                    }
                    _ => {}
                }
                i += 1;
            }
            d.len()
        }
        _ => {
            while i < d.len() && !matches!(d[i], b',' | b'}' | b']' | b'\n') {
                i += 1;
            }
            i
        }
    }
}

/// The end (after the closing quote) of the JSON string whose opening quote is at `i`.
pub fn string_end(d: &[u8], mut i: usize) -> usize {
    i += 1;
    while i < d.len() {
        match d[i] {
            b'\\' => i += 2,
            b'"' => return i + 1,
            _ => i += 1,
        }
    }
    d.len()
}

/// JSON members `"key": value`: (the whole member, the value).
pub fn json_members(d: &[u8]) -> Vec<(Range<usize>, Range<usize>)> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < d.len() {
        if d[i] == b'"' {
            let end = string_end(d, i);
            let mut j = end;
            while j < d.len() && d[j].is_ascii_whitespace() {
                j += 1;
            }
            if d.get(j) == Some(&b':') {
                let mut v = j + 1;
                while v < d.len() && d[v].is_ascii_whitespace() {
                    v += 1;
                }
                let v_end = json_value_end(d, v);
                out.push((i..v_end, v..v_end));
            }
            i = end;
        } else {
            i += 1;
        }
    }
    out
}

/// JSON string contents (between the quotes), keys included.
pub fn json_strings(d: &[u8]) -> Vec<Range<usize>> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < d.len() {
        if d[i] == b'"' {
            let end = string_end(d, i);
            if end > i + 1 {
                out.push(i + 1..end - 1);
            }
            i = end;
        } else {
            i += 1;
        }
    }
    out
}

/// YAML values: the rest of a line after `key: ` or `- `, without the newline.
pub fn yaml_values(d: &[u8]) -> Vec<Range<usize>> {
    let mut out = Vec::new();
    for line in line_spans(d) {
        let text = &d[line.clone()];
        let end = line.start + text.iter().position(|&b| b == b'\n').unwrap_or(text.len());
        let indent = text.iter().take_while(|&&b| b == b' ').count();
        let after_dash = if text[indent..].starts_with(b"- ") {
            Some(line.start + indent + 2)
        } else {
            None
        };
        let after_colon = text
            .windows(2)
            .position(|w| w == b": ")
            .map(|p| line.start + p + 2);
        if let Some(v) = after_colon.or(after_dash) {
            if v < end {
                out.push(v..end);
            }
        }
    }
    out
}
