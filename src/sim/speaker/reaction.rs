//! What the user reacts to in a reply: read off the appraisal (its moves and named components), so
//! the words follow the same findings that moved the emotion. Pure functions.

use crate::profile::speech::Reaction;
use crate::sim::{Appraisal, Move};

/// A move counts as made at this score (the appraiser's reasons use the same cut).
const MADE: f64 = 0.5;

fn has(a: &Appraisal, component: &str) -> bool {
    a.components.contains_key(component)
}

fn made(a: &Appraisal, m: Move) -> bool {
    a.moves.get(&m).is_some_and(|s| *s >= MADE)
}

/// The one reaction the user voices about `a` (a reply that changed the emotion by `delta`), by
/// precedence: leaving; not being talked to; the roadblocks (Gordon 1970), which name what the
/// reply did and so come before a bare "off topic"; then repetition (of the user's words, or of the
/// listener's own frame) and stock warmth. `None`: nothing to push back on.
pub fn reaction(a: &Appraisal, delta: i32) -> Option<Reaction> {
    if a.unsafe_reply.is_some() {
        return Some(Reaction::Unsafe);
    }
    let ordered = [
        (has(a, "gibberish") || has(a, "incoherent"), Reaction::Incoherent),
        (has(a, "meta"), Reaction::Meta),
        (has(a, "copied"), Reaction::Parroted),
        (made(a, Move::SelfFocus), Reaction::SelfFocus),
        (made(a, Move::Minimize), Reaction::Minimize),
        (made(a, Move::Moralize), Reaction::Moralize),
        (
            made(a, Move::Advice) && (has(a, "early_advice") || delta < 0),
            Reaction::AdviceRejected,
        ),
        (made(a, Move::Advice), Reaction::AdviceWelcome),
        (
            has(a, "off_topic") || made(a, Move::ChangeTopic),
            Reaction::OffTopic,
        ),
        (made(a, Move::Platitude), Reaction::Platitude),
        (has(a, "repetition") || has(a, "template"), Reaction::Repeated),
        (
            ["stuffing", "feeling_salad", "flattery", "sycophancy", "padding"]
                .iter()
                .any(|c| has(a, c))
                || (has(a, "generic") && delta <= 0),
            Reaction::Hollow,
        ),
    ];
    ordered.into_iter().find(|(on, _)| *on).map(|(_, r)| r)
}

/// The question sentences of a reply (ending in '?'), in order.
pub fn questions(reply: &str) -> Vec<&str> {
    reply
        .split_inclusive(['.', '!', '?', '\n'])
        .map(str::trim)
        .filter(|s| s.ends_with('?'))
        .collect()
}
