//! Profiles as data: scenarios, personas, difficulty presets and the train/test split.

pub mod auto;
pub mod catalog;
mod check;
pub mod difficulty;
pub mod lines;
pub mod need;
pub mod persona;
pub mod scenario;
pub mod speech;
pub mod split;
pub mod yaml;

pub use catalog::{Catalog, Coverage, Profile};
pub use difficulty::{Difficulty, KnobOverrides, Knobs, Presets};
pub use need::HiddenNeed;
pub use persona::{Character, Persona, Verbosity};
pub use scenario::{FactualTurn, HiddenFact, Scenario, Utterances};
pub use speech::{QuestionKind, Reaction, SpeakerRules};
pub use split::{ProfileId, Split, Splits};
