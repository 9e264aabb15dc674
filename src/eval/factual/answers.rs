//! Recorded answers (`answers-N.jsonl`, one [`AnswerRecord`] per line): written, read back and re-scored
//! with the current scorer, so a model answered once can be compared again, or judged by an
//! improved scorer, without generating anything.

use std::path::Path;

use super::conditions::{Condition, ConditionGrid};
use super::run::AnswerRecord;
use crate::environment::qa::QaItem;
use crate::environment::qa::{grade, AnswerKey};
use crate::error::{Error, Result};

/// Writes `records` as `answers-N.jsonl`, one JSON object per line.
pub fn write_answers(path: &Path, records: &[AnswerRecord]) -> Result<()> {
    let mut text = String::new();
    for r in records {
        text.push_str(&serde_json::to_string(r).map_err(|e| Error::Other(e.to_string()))?);
        text.push('\n');
    }
    std::fs::write(path, text).map_err(|e| Error::io(path, e))
}

/// Reads `answers-N.jsonl`; a broken line is an error naming the file and the line.
pub fn load_answers(path: &Path) -> Result<Vec<AnswerRecord>> {
    let text = std::fs::read_to_string(path).map_err(|e| Error::io(path, e))?;
    text.lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
        .map(|(i, l)| {
            serde_json::from_str(l).map_err(|e| {
                Error::input(
                    path,
                    format!("line {}", i + 1),
                    format!("not an answer record ({e}); expected an answers-N.jsonl written by `eval factual`"),
                )
            })
        })
        .collect()
}

/// Checks that `records` answer exactly the prompts of `items` under `grid` (same order, same
/// text) and re-judges every reply. A mismatch names the line and says what differs.
pub fn rescore(
    grid: &ConditionGrid,
    items: &[QaItem],
    records: Vec<AnswerRecord>,
    path: &Path,
) -> Result<Vec<AnswerRecord>> {
    let prompts = grid.all_prompts(items);
    if records.len() != prompts.len() {
        return Err(Error::input(
            path,
            "whole file",
            format!(
                "{} answers for {} prompts ({} items x 18); use the same --qa, --limit, --sample and --seed as the run that wrote it",
                records.len(),
                prompts.len(),
                items.len()
            ),
        ));
    }
    let keys: Vec<AnswerKey> = items.iter().map(AnswerKey::new).collect();
    records
        .into_iter()
        .zip(prompts)
        .enumerate()
        .map(|(i, (mut r, p))| {
            if r.item_id != p.item_id || r.condition != p.condition || r.prompt != p.text {
                return Err(Error::input(
                    path,
                    format!("line {}", i + 1),
                    format!(
                        "recorded prompt {:?} ({}, {}) is not the prompt this grid asks ({:?}, {}); use the same --qa, --contexts and --seed as the run that wrote it",
                        r.prompt,
                        r.item_id,
                        r.condition.name(),
                        p.text,
                        p.condition.name()
                    ),
                ));
            }
            r.outcome = grade(&keys[i / Condition::COUNT], r.condition.belief, &r.reply).outcome;
            Ok(r)
        })
        .collect()
}
