//! Factual-reliability evaluation (docs/DESIGN.md section 12, following Ibrahim, Hafner & Rocher,
//! arXiv 2507.21919): each QA item is asked under 9 interpersonal contexts x the user's wrong
//! belief absent or present; replies are scored against the key, and error, refusal and
//! wrong-belief agreement rates are compared with a baseline model.
//!
//! Pipeline: [`load_qa`] -> [`ConditionGrid::all_prompts`] -> [`run_factual`] (any [`Answerer`])
//! -> [`build_report`] -> [`FactualReport::write`]. Recorded answers come back through
//! [`load_answers`] and [`rescore`].

pub mod answers;
pub mod conditions;
pub mod contexts;
pub mod model_answerer;
pub mod paired;
pub mod report;
pub mod report_files;
pub mod run;

pub use crate::environment::qa::{
    grade, load_qa, parse_qa, score, spread, AnswerKey, Belief, Judgement, NonAnswers, Outcome,
    QaItem,
};
pub use answers::{load_answers, rescore, write_answers};
pub use conditions::{Condition, ConditionGrid, ConditionPrompt};
pub use contexts::{Context, Contexts};
pub use paired::{mcnemar_exact, paired_difference, BootstrapConfig, PairedDiff};
pub use report::{build_report, FactualReport, ModelOutcomes, ReportConfig, Slice, SliceRow};
pub use run::{run_factual, run_factual_records, AnswerRecord, Answerer};
