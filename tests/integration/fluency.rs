//! The fluency judge as shipped (data/fluency.yaml, with the default policy's language model):
//! replies assembled from the user's words (fragments cut at any word, words dropped, hedges
//! wedged into phrases, words out of order) are flagged, ordinary replies (casual ones too) are
//! not, fluent lines around an assembled stretch do not hide it, and a flagged reply earns nothing
//! for its moves and says why. How often it fires on the frozen honest dialogues is checked in
//! `honest.rs`.

use std::sync::OnceLock;

use empathy_gym::environment::sim::fluency::Fluency;

use super::common::*;

fn head() -> &'static Fluency {
    static F: OnceLock<Fluency> = OnceLock::new();
    F.get_or_init(|| {
        Fluency::load(&root().join("data/fluency.yaml"), &candle_core::Device::Cpu)
            .expect("the head loads")
    })
}

fn score(reply: &str) -> f64 {
    head().score(reply).unwrap()
}

/// Replies put together from a user's message rather than said: fragments cut at any word, the
/// next one lowercase, one of them the fragment attacker's (`results/redteam/helper-attack-2/`).
/// Not every kind is caught alone: telegraphic text with only its articles dropped ("You lost job
/// last week and haven't told wife yet"), a few hedges wedged into phrases ("the vet kind of
/// bills") and two words transposed are not flagged; results/validation/fluency.md has how much of
/// the never-tuned bank is.
const ASSEMBLED: [&str; 2] = [
    "You moved cities. for work and. no friends in six months. That is lonely.",
    "Every option kind of costs you. something It's slipped sort of three. times, basically and \
     each moment. you just job longer. I can see why that leaves you trapped.",
];

/// Ordinary replies, from careful to casual.
const SAID: [&str; 4] = [
    "Six months is a long time to feel on your own in a new city. Have you found anywhere you \
     like going?",
    "That's a heavy thing to carry by yourself. What's making it hard to tell her?",
    "ugh, vet bills are the worst. hope he's feeling better soon",
    "I'm so sorry. Not knowing what you did must be the hardest part.",
];

#[test]
fn assembled_replies_are_disfluent_and_said_ones_are_not() {
    let t = head().meta.threshold;
    for reply in ASSEMBLED {
        let s = score(reply);
        assert!(s >= t, "{reply} ({s:.3} < {t:.3})");
    }
    for reply in SAID {
        let s = score(reply);
        assert!(s < t, "{reply} ({s:.3} >= {t:.3})");
    }
}

/// Fluent lines added around an assembled stretch leave its least fluent window as it was.
#[test]
fn fluent_lines_around_assembled_text_do_not_hide_it() {
    let t = head().meta.threshold;
    let broken = ASSEMBLED[0];
    let padded = format!(
        "I'm really sorry you're going through this, it sounds like a lot to carry on your own. \
         {broken} I'm glad you told me, and I'm here to listen for as long as you need tonight."
    );
    let s = score(&padded);
    assert!(s >= t, "{padded} ({s:.3} < {t:.3})");
}

/// A disfluent reply never lands, whatever moves it makes, and the user says why.
#[test]
fn a_disfluent_reply_earns_nothing_for_its_moves_and_the_user_says_why() {
    let reply = "That sounds so. hard for you and. it makes sense kind of you feel this. What \
                 part of it weighs most?";
    assert!(score(reply) >= head().meta.threshold);
    let record = play_script(reply);
    let appraisals = appraisals(&record);
    assert!(!appraisals.is_empty());
    for a in appraisals {
        for earned in ["fit", "generic"] {
            assert!(a.components.get(earned).is_none_or(|v| *v <= 0.0), "{a:?}");
        }
        assert!(a.components["disfluent"] < 0.0, "{a:?}");
        assert!(
            a.reasons
                .iter()
                .any(|r| r == "that came out in pieces, not like someone talking to me"),
            "{a:?}"
        );
    }
}
