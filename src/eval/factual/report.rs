//! Aggregates per-prompt outcomes of one or more models into the factual-reliability report
//! (docs/DESIGN.md section 12): per condition, per belief (absent / present, all contexts pooled)
//! and overall, the error rate, the refusal and non-answer rates and the rate of agreeing with the
//! wrong belief, and for every model but the baseline the change in error rate with a clustered
//! bootstrap interval and McNemar's test. Rendering (CSV, markdown, SVG) lives in
//! [`super::report_files`].
//!
//! Definitions: error = `Incorrect` or `AgreesWithWrong`, over all prompts of the slice (refusals
//! and non-answers are not errors, so correct + error + refusal + non-answer rates sum to 1). The
//! agreement rate is over the slice's prompts where the wrong belief was stated, and undefined
//! where there are none. With [`NonAnswers::Errors`] (the scorer's original reading) non-answers
//! count as `Incorrect` everywhere: in the counts, the rates, the interval and McNemar's test.

use std::collections::HashMap;

use super::conditions::{Condition, ConditionPrompt};
use super::paired::{paired_difference, BootstrapConfig, PairedDiff};
use crate::environment::qa::Belief;
use crate::environment::qa::{NonAnswers, Outcome};
use crate::error::{Error, Result};

/// One model's outcomes, aligned with the prompts given to [`build_report`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModelOutcomes {
    /// Display name (unique within a report).
    pub name: String,
    /// One outcome per prompt, in prompt order.
    pub outcomes: Vec<Outcome>,
}

/// Report settings.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ReportConfig {
    /// The model the others are compared with; `None` takes the first model.
    pub baseline: Option<String>,
    /// Bootstrap settings for the intervals (B = 2000, seed 0, 95% by default).
    pub bootstrap: BootstrapConfig,
    /// Non-answers apart (default) or counted as errors.
    pub non_answers: NonAnswers,
}

/// A group of prompts a report row summarizes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Slice {
    /// One of the 18 conditions.
    Condition(Condition),
    /// All contexts with the wrong belief absent, or present.
    Belief(Belief),
    /// Every prompt.
    Overall,
}

impl Slice {
    /// The 21 slices in report order: 18 conditions, belief absent, belief present, overall.
    pub fn all() -> Vec<Slice> {
        let mut v: Vec<Slice> = Condition::all().into_iter().map(Slice::Condition).collect();
        v.extend([
            Slice::Belief(Belief::Absent),
            Slice::Belief(Belief::Present),
            Slice::Overall,
        ]);
        v
    }

    /// Whether a prompt in `condition` belongs to this slice.
    pub fn contains(self, condition: Condition) -> bool {
        match self {
            Slice::Condition(c) => c == condition,
            Slice::Belief(b) => condition.belief == b,
            Slice::Overall => true,
        }
    }

    /// Stable name for CSV (`emotion_sad+wrong`, `belief_present`, `overall`).
    pub fn name(self) -> String {
        match self {
            Slice::Condition(c) => c.name(),
            Slice::Belief(b) => format!("belief_{}", b.name()),
            Slice::Overall => "overall".to_string(),
        }
    }

    /// Short label for tables and charts (`sad + wrong`, `all, no belief`, `overall`).
    pub fn label(self) -> String {
        match self {
            Slice::Condition(c) => c.label(),
            Slice::Belief(Belief::Absent) => "all, no belief".to_string(),
            Slice::Belief(Belief::Present) => "all + wrong".to_string(),
            Slice::Overall => "overall".to_string(),
        }
    }
}

/// Outcome counts of one model on one slice.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Counts {
    /// Prompts in the slice.
    pub n: usize,
    /// `Correct` outcomes.
    pub correct: usize,
    /// `Incorrect` outcomes.
    pub incorrect: usize,
    /// `AgreesWithWrong` outcomes.
    pub agrees_with_wrong: usize,
    /// `Refusal` outcomes.
    pub refusal: usize,
    /// `NonAnswer` outcomes (0 when non-answers are read as errors).
    pub non_answer: usize,
    /// Prompts in the slice that stated the wrong belief.
    pub belief_present: usize,
}

/// One row of the report: a model on a slice.
#[derive(Debug, Clone, PartialEq)]
pub struct SliceRow {
    /// The model's name.
    pub model: String,
    /// Which prompts.
    pub slice: Slice,
    /// Outcome counts.
    pub counts: Counts,
    /// (incorrect + agrees_with_wrong) / n.
    pub error_rate: f64,
    /// refusal / n.
    pub refusal_rate: f64,
    /// non_answer / n.
    pub non_answer_rate: f64,
    /// agrees_with_wrong / belief_present; `None` when no prompt stated the belief.
    pub agree_rate: Option<f64>,
    /// Change against the baseline; `None` on the baseline's own rows.
    pub vs_baseline: Option<PairedDiff>,
}

/// The whole report: rows model-major, slices in [`Slice::all`] order.
#[derive(Debug, Clone, PartialEq)]
pub struct FactualReport {
    /// Name of the baseline model.
    pub baseline: String,
    /// Model names in input order.
    pub models: Vec<String>,
    /// Bootstrap settings used.
    pub bootstrap: BootstrapConfig,
    /// How non-answers were read.
    pub non_answers: NonAnswers,
    /// One row per model and slice.
    pub rows: Vec<SliceRow>,
}

impl FactualReport {
    /// The row of `model` on `slice`, if present.
    pub fn row(&self, model: &str, slice: Slice) -> Option<&SliceRow> {
        self.rows
            .iter()
            .find(|r| r.model == model && r.slice == slice)
    }
}

/// Builds the report from prompts (for their conditions and items) and each model's outcomes.
pub fn build_report(
    prompts: &[ConditionPrompt],
    models: &[ModelOutcomes],
    cfg: &ReportConfig,
) -> Result<FactualReport> {
    let baseline_idx = check_inputs(prompts, models, cfg)?;
    let clusters = item_clusters(prompts);
    let slices = Slice::all();
    let read = |m: &ModelOutcomes| -> Vec<Outcome> {
        m.outcomes
            .iter()
            .map(|&o| cfg.non_answers.read(o))
            .collect()
    };
    let base_errors: Vec<bool> = read(&models[baseline_idx])
        .iter()
        .map(|o| o.is_error())
        .collect();
    let mut rows = Vec::with_capacity(models.len() * slices.len());
    for (m_idx, model) in models.iter().enumerate() {
        let outcomes = read(model);
        let errors: Vec<bool> = outcomes.iter().map(|o| o.is_error()).collect();
        for (s_idx, &slice) in slices.iter().enumerate() {
            let idx: Vec<usize> = (0..prompts.len())
                .filter(|&i| slice.contains(prompts[i].condition))
                .collect();
            let counts = count(&idx, prompts, &outcomes);
            let vs_baseline = if m_idx == baseline_idx || idx.is_empty() {
                None
            } else {
                let pick = |v: &[bool]| idx.iter().map(|&i| v[i]).collect::<Vec<bool>>();
                let cl: Vec<usize> = idx.iter().map(|&i| clusters[i]).collect();
                let stream = (m_idx * slices.len() + s_idx) as u64;
                Some(paired_difference(
                    &pick(&errors),
                    &pick(&base_errors),
                    &cl,
                    &cfg.bootstrap,
                    stream,
                )?)
            };
            rows.push(row(model.name.clone(), slice, counts, vs_baseline));
        }
    }
    Ok(FactualReport {
        baseline: models[baseline_idx].name.clone(),
        models: models.iter().map(|m| m.name.clone()).collect(),
        bootstrap: cfg.bootstrap,
        non_answers: cfg.non_answers,
        rows,
    })
}

/// Checks lengths, names and the baseline; returns the baseline's index.
fn check_inputs(
    prompts: &[ConditionPrompt],
    models: &[ModelOutcomes],
    cfg: &ReportConfig,
) -> Result<usize> {
    if models.is_empty() || prompts.is_empty() {
        return Err(Error::Other(
            "factual report needs at least one model and one prompt".into(),
        ));
    }
    for (i, m) in models.iter().enumerate() {
        if m.outcomes.len() != prompts.len() {
            return Err(Error::Other(format!(
                "model {:?} has {} outcomes for {} prompts; outcomes must align with the prompts",
                m.name,
                m.outcomes.len(),
                prompts.len()
            )));
        }
        if models[..i].iter().any(|o| o.name == m.name) {
            return Err(Error::Other(format!(
                "model name {:?} appears twice; names must be unique",
                m.name
            )));
        }
    }
    match &cfg.baseline {
        None => Ok(0),
        Some(name) => models.iter().position(|m| &m.name == name).ok_or_else(|| {
            let names: Vec<&str> = models.iter().map(|m| m.name.as_str()).collect();
            Error::Other(format!(
                "baseline {name:?} is not among the models {names:?}"
            ))
        }),
    }
}

/// Cluster index of each prompt: its item, numbered in order of first appearance.
fn item_clusters(prompts: &[ConditionPrompt]) -> Vec<usize> {
    let mut ids: HashMap<&str, usize> = HashMap::new();
    prompts
        .iter()
        .map(|p| {
            let next = ids.len();
            *ids.entry(p.item_id.as_str()).or_insert(next)
        })
        .collect()
}

fn count(idx: &[usize], prompts: &[ConditionPrompt], outcomes: &[Outcome]) -> Counts {
    let mut c = Counts::default();
    for &i in idx {
        c.n += 1;
        if prompts[i].condition.belief == Belief::Present {
            c.belief_present += 1;
        }
        match outcomes[i] {
            Outcome::Correct => c.correct += 1,
            Outcome::Incorrect => c.incorrect += 1,
            Outcome::AgreesWithWrong => c.agrees_with_wrong += 1,
            Outcome::Refusal => c.refusal += 1,
            Outcome::NonAnswer => c.non_answer += 1,
        }
    }
    c
}

fn row(model: String, slice: Slice, counts: Counts, vs_baseline: Option<PairedDiff>) -> SliceRow {
    let ratio = |a: usize, b: usize| if b == 0 { 0.0 } else { a as f64 / b as f64 };
    SliceRow {
        model,
        slice,
        error_rate: ratio(counts.incorrect + counts.agrees_with_wrong, counts.n),
        refusal_rate: ratio(counts.refusal, counts.n),
        non_answer_rate: ratio(counts.non_answer, counts.n),
        agree_rate: (counts.belief_present > 0)
            .then(|| ratio(counts.agrees_with_wrong, counts.belief_present)),
        counts,
        vs_baseline,
    }
}
