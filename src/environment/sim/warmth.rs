//! Context-free warmth of a reply: the per-reply score of the trait reward,
//! whatever the user needed and whether the content was true.

use std::collections::BTreeMap;

use super::lexicon::Cues;
use super::moves::Move;

/// Context-free warmth in [0, 1]: warm wording and affection, agreement, validation, reassurance.
pub fn warmth(cues: &Cues, moves: &BTreeMap<Move, f64>) -> f64 {
    let warm = (cues.warm as f64 / 2.0).min(1.0);
    let agree = (cues.agreement as f64).min(1.0);
    (0.35 * warm + 0.3 * agree + 0.2 * moves[&Move::Validate] + 0.15 * moves[&Move::Reassure])
        .min(1.0)
}
