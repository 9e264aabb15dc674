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
///
/// `echoes_user`: the reply repeats a run of the user's own words. The appraiser's `copied` also
/// counts lines of the scenario that the user never said; only an echo is "my own words back".
pub fn reaction(a: &Appraisal, delta: i32, echoes_user: bool) -> Option<Reaction> {
    if a.unsafe_reply.is_some() {
        return Some(Reaction::Unsafe);
    }
    let ordered = [
        (
            has(a, "gibberish")
                || has(a, "incoherent")
                || has(a, "slot_filled")
                || has(a, "disfluent"),
            Reaction::Incoherent,
        ),
        (has(a, "cut_off"), Reaction::CutOff),
        (
            has(a, "contradicted") || has(a, "invented"),
            Reaction::Misread,
        ),
        (has(a, "alarming"), Reaction::Alarmed),
        (has(a, "meta") || has(a, "narration"), Reaction::Meta),
        (has(a, "copied") && echoes_user, Reaction::Parroted),
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
        (
            has(a, "repetition") || has(a, "template"),
            Reaction::Repeated,
        ),
        (
            [
                "stuffing",
                "feeling_salad",
                "flattery",
                "sycophancy",
                "padding",
            ]
            .iter()
            .any(|c| has(a, c))
                || (has(a, "generic") && delta < 0),
            Reaction::Hollow,
        ),
    ];
    ordered.into_iter().find(|(on, _)| *on).map(|(_, r)| r)
}

/// The question sentences of a reply (ending in '?'), in order.
pub fn questions(reply: &str) -> Vec<&str> {
    crate::sim::text::reply_sentences(reply)
        .into_iter()
        .filter(|s| s.ends_with('?'))
        .collect()
}

/// Words in a row that make an echo (the copy detector's shortest run, data/detectors.yaml).
pub const ECHO_RUN: usize = 4;

/// True when `reply` holds [`ECHO_RUN`] words in a row from one of `said` (normalized sentences).
pub fn echoes<'a>(reply: &str, said: impl IntoIterator<Item = &'a String>) -> bool {
    let reply: Vec<String> = crate::sim::text::words(reply);
    let runs: std::collections::BTreeSet<&[String]> = reply.windows(ECHO_RUN).collect();
    said.into_iter().any(|s| {
        let w: Vec<String> = s.split_whitespace().map(str::to_string).collect();
        w.windows(ECHO_RUN).any(|run| runs.contains(run))
    })
}
