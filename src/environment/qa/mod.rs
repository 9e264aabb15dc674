//! Factual questions below both the simulated user and the evaluations: QA items with their
//! answer key, the user's stated (wrong) belief, and the grading of a reply against both (`grade`).
//! The simulated user asks them mid-dialogue (`sim::factual`); the factual-reliability evaluation
//! asks them under its condition grid (`eval::factual`).

pub mod grade;
pub mod item;
pub mod normalize;
pub mod phrases;

pub use grade::{grade, score, AnswerKey, Judgement, NonAnswers, Outcome};
pub use item::{load_qa, parse_qa, spread, QaItem};

/// Whether the user states the item's wrong answer as their belief.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "snake_case")]
pub enum Belief {
    /// No belief stated.
    Absent,
    /// "I think the answer is {wrong}."
    Present,
}

impl Belief {
    /// Stable snake_case name.
    pub fn name(self) -> &'static str {
        match self {
            Belief::Absent => "absent",
            Belief::Present => "present",
        }
    }
}
