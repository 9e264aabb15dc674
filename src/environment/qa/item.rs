//! The factual QA set: one JSON object per line,
//! `{"id": "q001", "question": "...", "answer": "...", "aliases": ["..."], "wrong": "..."}`.
//! `wrong` is the plausible wrong answer the user asserts in the wrong-belief conditions (the
//! warmth paper's "I think the answer is X"). Loading checks everything the scorer relies on and
//! names the file and line of each problem.

use std::collections::HashMap;
use std::path::Path;

use super::normalize::normalize;
use crate::error::{Error, Result};

/// Where the shipped QA set lives, relative to the repository root.
pub const DEFAULT_QA_PATH: &str = "data/qa/factual.jsonl";

/// One question with its answer key and a wrong answer.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct QaItem {
    /// Unique id (any non-empty string).
    pub id: String,
    /// The question as put to the model.
    pub question: String,
    /// The canonical answer.
    pub answer: String,
    /// Other accepted spellings of the answer; may be empty or absent.
    #[serde(default)]
    pub aliases: Vec<String>,
    /// A plausible wrong answer, stated by the user in the wrong-belief conditions.
    pub wrong: String,
}

/// Reads and validates a QA JSONL file. Blank lines are skipped.
pub fn load_qa(path: &Path) -> Result<Vec<QaItem>> {
    let text = std::fs::read_to_string(path).map_err(|e| Error::io(path, e))?;
    parse_qa(&text, path)
}

/// Parses and validates QA JSONL `text`; `path` is only used in error messages.
pub fn parse_qa(text: &str, path: &Path) -> Result<Vec<QaItem>> {
    let mut items = Vec::new();
    let mut seen: HashMap<String, usize> = HashMap::new();
    for (idx, line) in text.lines().enumerate() {
        let n = idx + 1;
        if line.trim().is_empty() {
            continue;
        }
        let item: QaItem = serde_json::from_str(line).map_err(|e| json_error(path, n, &e))?;
        validate_item(&item, path, n)?;
        if let Some(first) = seen.insert(item.id.clone(), n) {
            return Err(Error::input(
                path,
                format!("line {n}"),
                format!(
                    "id {:?} is already used on line {first}; give every question its own id",
                    item.id
                ),
            ));
        }
        items.push(item);
    }
    if items.is_empty() {
        return Err(Error::input(
            path,
            "line 1",
            "no questions found; write one JSON object per line with id, question, answer, aliases, wrong",
        ));
    }
    Ok(items)
}

/// `n` items spread evenly over `items` (item `floor(i * len / n)` for i in 0..n), so that a small
/// fixed subset covers every topic of a suite written topic by topic; all of them when `n >= len`.
pub fn spread<T>(items: Vec<T>, n: usize) -> Vec<T> {
    let len = items.len();
    if n >= len {
        return items;
    }
    let keep: Vec<usize> = (0..n).map(|i| i * len / n).collect();
    items
        .into_iter()
        .enumerate()
        .filter(|(j, _)| keep.binary_search(j).is_ok())
        .map(|(_, item)| item)
        .collect()
}

/// Turns a serde_json error for one line into an input error naming the line and column.
fn json_error(path: &Path, line: usize, e: &serde_json::Error) -> Error {
    let msg = e.to_string();
    let msg = match msg.rfind(" at line ") {
        Some(i) => msg[..i].to_string(),
        None => msg,
    };
    Error::input(
        path,
        format!("line {line}, column {}", e.column()),
        format!(
            "{msg}; each line must be one JSON object with the fields id, question, answer, \
             aliases (a list, may be empty) and wrong"
        ),
    )
}

/// Checks one parsed item: no empty field, an answer that survives normalization, and a wrong
/// answer that differs from the answer and every alias after normalization.
fn validate_item(item: &QaItem, path: &Path, line: usize) -> Result<()> {
    let at = |field: &str| format!("line {line}, field {field}");
    for (field, value) in [
        ("id", &item.id),
        ("question", &item.question),
        ("answer", &item.answer),
        ("wrong", &item.wrong),
    ] {
        if value.trim().is_empty() {
            return Err(Error::input(path, at(field), "is empty; fill it in"));
        }
    }
    let answer = normalize(&item.answer);
    if answer.is_empty() {
        return Err(Error::input(
            path,
            at("answer"),
            format!(
                "{:?} has no words left after normalization (only articles or punctuation)",
                item.answer
            ),
        ));
    }
    let wrong = normalize(&item.wrong);
    if wrong.is_empty() {
        return Err(Error::input(
            path,
            at("wrong"),
            format!("{:?} has no words left after normalization", item.wrong),
        ));
    }
    if wrong == answer {
        return Err(Error::input(
            path,
            at("wrong"),
            format!(
                "{:?} is the answer {:?} (after normalization); the wrong answer must be wrong",
                item.wrong, item.answer
            ),
        ));
    }
    for (i, alias) in item.aliases.iter().enumerate() {
        let a = normalize(alias);
        if a.is_empty() {
            return Err(Error::input(
                path,
                at(&format!("aliases[{i}]")),
                "is empty after normalization; remove it",
            ));
        }
        if a == wrong {
            return Err(Error::input(
                path,
                at("wrong"),
                format!(
                    "{:?} equals alias {i} {alias:?} (after normalization); the wrong answer must not be an accepted answer",
                    item.wrong
                ),
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<Vec<QaItem>> {
        parse_qa(text, Path::new("qa.jsonl"))
    }

    fn err(text: &str) -> String {
        parse(text).unwrap_err().to_string()
    }

    const OK: &str = r#"{"id":"a","question":"2+2?","answer":"4","aliases":["four"],"wrong":"5"}"#;

    #[test]
    fn parses_items_and_skips_blank_lines() {
        let items = parse(&format!("{OK}\n\n")).unwrap();
        assert_eq!(items.len(), 1);
        assert_eq!(items[0].aliases, vec!["four".to_string()]);
        let no_alias = r#"{"id":"b","question":"q","answer":"x","wrong":"y"}"#;
        assert!(parse(no_alias).unwrap()[0].aliases.is_empty());
    }

    #[test]
    fn missing_field_names_the_line_and_field() {
        let e = err(&format!(
            "{OK}\n{{\"id\":\"b\",\"question\":\"q\",\"answer\":\"x\"}}"
        ));
        assert!(e.starts_with("qa.jsonl: line 2"), "{e}");
        assert!(e.contains("missing field `wrong`"), "{e}");
    }

    #[test]
    fn unknown_field_is_rejected() {
        let e = err(r#"{"id":"b","question":"q","answer":"x","wrong":"y","hint":"z"}"#);
        assert!(
            e.contains("line 1") && e.contains("unknown field `hint`"),
            "{e}"
        );
    }

    #[test]
    fn empty_answer_is_rejected() {
        let e = err(r#"{"id":"b","question":"q","answer":"  ","aliases":[],"wrong":"y"}"#);
        assert!(e.contains("line 1, field answer: is empty"), "{e}");
        let e = err(r#"{"id":"b","question":"q","answer":"The","aliases":[],"wrong":"y"}"#);
        assert!(
            e.contains("field answer") && e.contains("no words left"),
            "{e}"
        );
    }

    #[test]
    fn wrong_equal_to_answer_after_normalization_is_rejected() {
        let e = err(r#"{"id":"b","question":"q","answer":"Twenty-one","aliases":[],"wrong":"21"}"#);
        assert!(
            e.contains("line 1, field wrong") && e.contains("is the answer"),
            "{e}"
        );
    }

    #[test]
    fn empty_file_is_an_error() {
        assert!(err("\n\n").contains("no questions found"));
    }

    #[test]
    fn spread_takes_evenly_spaced_items() {
        // 10 items, 4 kept: floor(0, 2.5, 5, 7.5) = 0, 2, 5, 7.
        assert_eq!(spread((0..10).collect(), 4), vec![0, 2, 5, 7]);
        assert_eq!(spread((0..3).collect(), 5), vec![0, 1, 2]);
        assert_eq!(spread((0..3).collect::<Vec<u8>>(), 0), Vec::<u8>::new());
    }
}
