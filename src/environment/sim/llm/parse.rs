//! Strict parsing of the LLM user's two answers (data/llm-simulator.yaml states the formats):
//! the emotion analysis `Change: <signed whole number>` + `Reasons: a; b`, and the reply
//! `Reply: <text>`. Anything else is an error that says what was wrong, so the call is retried
//! and, failing that, counted and logged.

/// The most reasons kept from one analysis.
pub const MAX_REASONS: usize = 5;
/// The longest reply kept, in characters.
pub const MAX_REPLY_CHARS: usize = 1200;

/// A parsed emotion analysis.
#[derive(Clone, Debug, PartialEq)]
pub struct Analysis {
    /// The signed change in points, before quantization and clamping (docs/DESIGN.md section 23).
    pub change: i32,
    pub reasons: Vec<String>,
}

fn value_of<'a>(line: &'a str, key: &str) -> Option<&'a str> {
    let rest = line.strip_prefix(key)?;
    Some(rest.trim())
}

/// Parses `Change: +5` and `Reasons: a; b` (two lines, in this order, nothing else but blank
/// lines; the change a whole number in -100..=100 written with its sign unless it is 0).
pub fn parse_analysis(text: &str) -> Result<Analysis, String> {
    let lines: Vec<&str> = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    let [change_line, reasons_line] = lines.as_slice() else {
        return Err(format!(
            "expected two lines, `Change: ...` and `Reasons: ...`, got {} non-empty lines",
            lines.len()
        ));
    };
    let change_text = value_of(change_line, "Change:")
        .ok_or_else(|| "the first line does not start with `Change:`".to_string())?;
    let digits = change_text.trim_start_matches(['+', '-']);
    let signs = change_text.len() - digits.len();
    if digits.is_empty() || !digits.chars().all(|c| c.is_ascii_digit()) || signs > 1 {
        return Err(format!(
            "`Change: {change_text}` is not a signed whole number"
        ));
    }
    let change: i32 = change_text
        .trim_start_matches('+')
        .parse()
        .map_err(|_| format!("`Change: {change_text}` is not a signed whole number"))?;
    if signs == 0 && change != 0 {
        return Err(format!("`Change: {change_text}` has no sign (+ or -)"));
    }
    if !(-100..=100).contains(&change) {
        return Err(format!("`Change: {change}` is outside -100..=100"));
    }
    let reasons_text = value_of(reasons_line, "Reasons:")
        .ok_or_else(|| "the second line does not start with `Reasons:`".to_string())?;
    let reasons: Vec<String> = reasons_text
        .split(';')
        .map(|r| r.trim().to_string())
        .filter(|r| !r.is_empty())
        .collect();
    if reasons.is_empty() {
        return Err("`Reasons:` gives no reason".into());
    }
    if reasons.len() > MAX_REASONS {
        return Err(format!(
            "`Reasons:` gives {} reasons, at most {MAX_REASONS}",
            reasons.len()
        ));
    }
    Ok(Analysis { change, reasons })
}

/// Parses `Reply: <text>` (the text may run over several lines; they are joined with spaces;
/// surrounding quotes are removed). Refuses an empty reply, one that repeats the analysis format,
/// and one longer than [`MAX_REPLY_CHARS`].
pub fn parse_reply(text: &str) -> Result<String, String> {
    let t = text.trim();
    let body = t
        .strip_prefix("Reply:")
        .ok_or_else(|| "the answer does not start with `Reply:`".to_string())?;
    if body
        .lines()
        .any(|l| l.trim_start().starts_with("Change:") || l.trim_start().starts_with("Reasons:"))
    {
        return Err("the reply contains a `Change:` or `Reasons:` line".into());
    }
    let joined = body
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join(" ");
    let unquoted = joined
        .strip_prefix('"')
        .and_then(|s| s.strip_suffix('"'))
        .unwrap_or(&joined)
        .trim();
    if unquoted.is_empty() {
        return Err("`Reply:` is empty".into());
    }
    if unquoted.chars().count() > MAX_REPLY_CHARS {
        return Err(format!(
            "the reply is longer than {MAX_REPLY_CHARS} characters"
        ));
    }
    Ok(unquoted.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn analysis_in_the_format_parses() {
        let a =
            parse_analysis("Change: +10\nReasons: you named it; you asked about Dana\n").unwrap();
        assert_eq!(a.change, 10);
        assert_eq!(a.reasons, ["you named it", "you asked about Dana"]);
        let b = parse_analysis("  Change: -5 \n\n Reasons: advice already \n").unwrap();
        assert_eq!((b.change, b.reasons.len()), (-5, 1));
        assert_eq!(
            parse_analysis("Change: 0\nReasons: fine").unwrap().change,
            0
        );
    }

    #[test]
    fn analysis_off_the_format_is_refused_with_the_reason() {
        let cases = [
            ("I feel better now.", "two lines"),
            ("Change: +10", "two lines"),
            ("Change: ten\nReasons: x", "signed whole number"),
            ("Change: 10\nReasons: x", "no sign"),
            ("Change: +-5\nReasons: x", "signed whole number"),
            ("Change: +5.5\nReasons: x", "signed whole number"),
            ("Change: +500\nReasons: x", "outside"),
            ("Reasons: x\nChange: +5", "does not start with `Change:`"),
            ("Change: +5\nReasons: ;  ;", "no reason"),
            ("Change: +5\nReasons: a\nmore text", "two lines"),
            ("Change: +5\nReasons: a;b;c;d;e;f", "at most 5"),
        ];
        for (text, want) in cases {
            let e = parse_analysis(text).unwrap_err();
            assert!(e.contains(want), "{text:?}: {e}");
        }
    }

    #[test]
    fn replies_parse_strictly() {
        assert_eq!(
            parse_reply("Reply: Yeah. That's it.").unwrap(),
            "Yeah. That's it."
        );
        assert_eq!(
            parse_reply("Reply: \"Okay,\n fine.\"").unwrap(),
            "Okay, fine."
        );
        assert!(parse_reply("Okay, fine.")
            .unwrap_err()
            .contains("does not start"));
        assert!(parse_reply("Reply:   ").unwrap_err().contains("empty"));
        assert!(parse_reply("Reply: ok\nChange: +5")
            .unwrap_err()
            .contains("Change"));
        let long = format!("Reply: {}", "a".repeat(MAX_REPLY_CHARS + 1));
        assert!(parse_reply(&long).unwrap_err().contains("longer"));
    }
}
