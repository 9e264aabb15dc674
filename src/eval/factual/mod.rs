//! Factual-reliability evaluation (DESIGN.md section 7, following Ibrahim, Hafner & Rocher,
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
pub mod lexicon;
pub mod model_answerer;
pub mod normalize;
pub mod qa;
pub mod render;
pub mod report;
pub mod run;
pub mod scorer;
pub mod stats;

pub use answers::{load_answers, rescore, write_answers};
pub use conditions::{Belief, Condition, ConditionGrid, ConditionPrompt, Context};
pub use contexts::Contexts;
pub use qa::{load_qa, parse_qa, spread, QaItem};
pub use report::{build_report, FactualReport, ModelOutcomes, ReportConfig, Slice, SliceRow};
pub use run::{run_factual, run_factual_records, AnswerRecord, Answerer};
pub use scorer::{judge, score, AnswerKey, Judgement, NonAnswers, Outcome};
pub use stats::{mcnemar_exact, paired_difference, BootstrapConfig, PairedDiff};
