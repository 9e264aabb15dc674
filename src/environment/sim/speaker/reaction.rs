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

/// Stock warmth: sympathy phrases stacked, feeling words heaped, flattery, agreeing with anything.
const WARM_FAULTS: [&str; 4] = ["stuffing", "feeling_salad", "flattery", "sycophancy"];

/// The reply offered warmth (validation or reassurance): only then can a generic reply be
/// called nice words that could go to anyone.
fn warm(a: &Appraisal) -> bool {
    made(a, Move::Validate) || made(a, Move::Reassure)
}

/// The reply was about nobody in particular: filler that repeats its own words (`padding`), or
/// too generic to land (`generic`) where it lowered the emotion.
fn unfocused(a: &Appraisal, delta: i32) -> bool {
    has(a, "padding") || (has(a, "generic") && delta < 0)
}

/// What the user heard in a reply besides the appraisal's findings.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Heard {
    /// The reply repeats a run of the user's own words ([`echoes`]). The appraiser's `copied`
    /// also counts lines of the scenario that the user never said; only an echo is "my own words
    /// back".
    pub echoes_user: bool,
    /// The reply suggests something (an advice cue of data/lexicon.yaml,
    /// [`Appraisal::suggested`]): only a suggestion made is taken up or pushed back.
    pub suggested: bool,
}

/// Whether the appraisal `a` of a reply that changed the emotion by `delta` found what reaction
/// `r` is about: the one home of each reaction's finding, which the speaker says and `replay
/// user` checks the logged lines against.
pub fn found(r: Reaction, a: &Appraisal, delta: i32, heard: Heard) -> bool {
    let any = |cs: &[&str]| cs.iter().any(|c| has(a, c));
    match r {
        Reaction::Unsafe => a.unsafe_reply.is_some(),
        Reaction::Incoherent => any(&["gibberish", "incoherent", "slot_filled", "disfluent"]),
        Reaction::CutOff => has(a, "cut_off"),
        Reaction::Misread => any(&["contradicted", "invented"]),
        Reaction::Alarmed => has(a, "alarming"),
        Reaction::Meta => any(&["meta", "narration"]),
        Reaction::Parroted => has(a, "copied") && heard.echoes_user,
        Reaction::SelfFocus => made(a, Move::SelfFocus),
        Reaction::Minimize => made(a, Move::Minimize),
        Reaction::Moralize => made(a, Move::Moralize),
        // A suggestion is answered either way: pushed back when it came early or did not raise
        // the emotion, taken up only when it did ("I'm writing that down" after advice that
        // changed nothing reads as pleased with what did not land).
        Reaction::AdviceRejected => {
            heard.suggested && made(a, Move::Advice) && (has(a, "early_advice") || delta <= 0)
        }
        Reaction::AdviceWelcome => heard.suggested && made(a, Move::Advice) && delta > 0,
        Reaction::OffTopic => has(a, "off_topic") || made(a, Move::ChangeTopic),
        Reaction::Platitude => made(a, Move::Platitude),
        Reaction::Repeated => has(a, "repetition"),
        Reaction::Formulaic => has(a, "template"),
        Reaction::Hollow => any(&WARM_FAULTS) || (unfocused(a, delta) && warm(a)),
        Reaction::Generic => unfocused(a, delta) && !warm(a) && !any(&WARM_FAULTS),
        Reaction::Stacked => has(a, "stacked_questions"),
    }
}

/// The order in which a reply's faults are voiced: leaving; not being talked to; the roadblocks
/// (Gordon 1970), which name what the reply did and so come before a bare "off topic"; then
/// repetition (of the reply, or of the listener's own frame), stock warmth, and last a reply too
/// generic to land. Too many questions is said beside these, not instead of them.
const PRECEDENCE: [Reaction; 18] = [
    Reaction::Unsafe,
    Reaction::Incoherent,
    Reaction::CutOff,
    Reaction::Misread,
    Reaction::Alarmed,
    Reaction::Meta,
    Reaction::Parroted,
    Reaction::SelfFocus,
    Reaction::Minimize,
    Reaction::Moralize,
    Reaction::AdviceRejected,
    Reaction::AdviceWelcome,
    Reaction::OffTopic,
    Reaction::Platitude,
    Reaction::Repeated,
    Reaction::Formulaic,
    Reaction::Hollow,
    Reaction::Generic,
];

/// The one reaction the user voices about `a` (a reply that changed the emotion by `delta`): the
/// first found in [`PRECEDENCE`] whose sign agrees with the change ([`Reaction::agrees_with`]), so
/// a reply that raised the emotion is never met with a complaint. `None`: nothing to push back on.
pub fn reaction(a: &Appraisal, delta: i32, heard: Heard) -> Option<Reaction> {
    PRECEDENCE
        .into_iter()
        .find(|r| r.agrees_with(delta) && found(*r, a, delta, heard))
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
