//! Runs the factual evaluation for one model: every QA item under the 18 conditions, answered by
//! anything that implements [`Answerer`] (the candle policy, a remote endpoint, or a script in
//! tests), scored with [`crate::environment::qa::grade`]. Outcomes come back aligned with
//! [`ConditionGrid::all_prompts`], which is what [`super::report`] expects.

use indicatif::{ProgressBar, ProgressStyle};

use super::conditions::{Condition, ConditionGrid};
use crate::environment::qa::QaItem;
use crate::environment::qa::{grade, AnswerKey, Outcome};
use crate::error::{Error, Result};

/// Something that answers user messages: one reply per prompt, in order.
pub trait Answerer {
    /// Replies to each prompt (a single user message each, no history).
    fn answer_batch(&mut self, prompts: &[String]) -> Result<Vec<String>>;
}

/// One answered prompt, as written to `answers.jsonl` for auditing and rescoring.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct AnswerRecord {
    /// The QA item's id.
    pub item_id: String,
    /// The grid cell.
    pub condition: Condition,
    /// The user message sent.
    pub prompt: String,
    /// The model's reply.
    pub reply: String,
    /// The scored outcome.
    pub outcome: Outcome,
}

/// Answers and scores every item under all 18 conditions, `batch_items` items (18 prompts each)
/// per call of the answerer; returns the outcomes in [`ConditionGrid::all_prompts`] order.
/// `progress` shows a progress bar on stderr.
pub fn run_factual(
    grid: &ConditionGrid,
    items: &[QaItem],
    answerer: &mut dyn Answerer,
    batch_items: usize,
    progress: bool,
) -> Result<Vec<Outcome>> {
    Ok(
        run_factual_records(grid, items, answerer, batch_items, progress)?
            .into_iter()
            .map(|r| r.outcome)
            .collect(),
    )
}

/// Like [`run_factual`], keeping the prompt and the reply of every outcome.
pub fn run_factual_records(
    grid: &ConditionGrid,
    items: &[QaItem],
    answerer: &mut dyn Answerer,
    batch_items: usize,
    progress: bool,
) -> Result<Vec<AnswerRecord>> {
    let bar = progress_bar(items.len() as u64, progress);
    let mut records = Vec::with_capacity(items.len() * Condition::COUNT);
    for chunk in items.chunks(batch_items.max(1)) {
        let prompts: Vec<_> = chunk.iter().flat_map(|item| grid.prompts(item)).collect();
        let texts: Vec<String> = prompts.iter().map(|p| p.text.clone()).collect();
        let replies = answerer.answer_batch(&texts)?;
        if replies.len() != texts.len() {
            return Err(Error::Other(format!(
                "answerer returned {} replies for {} prompts (items {:?}..); it must answer each prompt once",
                replies.len(),
                texts.len(),
                chunk[0].id
            )));
        }
        let keys: Vec<AnswerKey> = chunk.iter().map(AnswerKey::new).collect();
        for (i, (p, reply)) in prompts.into_iter().zip(replies).enumerate() {
            let outcome = grade(&keys[i / Condition::COUNT], p.condition.belief, &reply).outcome;
            records.push(AnswerRecord {
                item_id: p.item_id,
                condition: p.condition,
                prompt: p.text,
                reply,
                outcome,
            });
        }
        bar.inc(chunk.len() as u64);
    }
    bar.finish_and_clear();
    Ok(records)
}

fn progress_bar(len: u64, visible: bool) -> ProgressBar {
    if !visible {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::new(len);
    if let Ok(style) = ProgressStyle::with_template(
        "factual {bar:40} {pos}/{len} items [{elapsed_precise} < {eta}]",
    ) {
        bar.set_style(style);
    }
    bar
}
