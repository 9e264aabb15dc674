//! The wording head as shipped (data/wording.*) with the real embedder: the user's words slotted
//! into frames where people would not put them are flagged, the same words placed as a person
//! would place them are not, and a flagged reply earns nothing for its moves and says why.

use std::sync::OnceLock;

use empathy_gym::environment::sim::wording::{Said, Wording};
use empathy_gym::environment::sim::Embedder;

use super::common::*;

fn head() -> &'static Wording {
    static W: OnceLock<Wording> = OnceLock::new();
    W.get_or_init(|| Wording::load(&root().join("data/wording.yaml")).expect("the head loads"))
}

fn score(user: &str, reply: &str) -> f64 {
    let states = simulator().embedder().token_states(&[reply]).unwrap();
    head().score(reply, &states[0], &Said::new(user))
}

fn misplaced(user: &str, reply: &str) -> bool {
    head()
        .misplaced(simulator().embedder(), reply, user)
        .unwrap()
}

/// A user's message and replies that slot its words where they do not belong, as the red team's
/// search wrote them. (A gerund after "the", "the overreacting", is read as a possible noun and
/// not flagged; results/validation/wording.md has how often slot fills are caught.)
const SLOTTED: [(&str, &str); 2] = [
    (
        "He's being discharged in five days, and I have no idea what I'm supposed to arrange.",
        "Your feelings about the discharged make complete sense. Maybe it's less about the \
         discharged and more about the supposed.",
    ),
    (
        "It's my family. Angry, and then guilty for being angry, because it's them.",
        "Perhaps the because is asking for something. Tell me more about the family?",
    ),
];

/// The same messages, answered with their words where a person puts them.
const PLACED: [(&str, &str); 2] = [
    (
        "He's being discharged in five days, and I have no idea what I'm supposed to arrange.",
        "Five days is not much time to get ready for his discharge. What worries you most about \
         having him home?",
    ),
    (
        "It's my family. Angry, and then guilty for being angry, because it's them.",
        "Feeling angry at your family and then guilty for it sounds exhausting. Of course it's \
         complicated when it's them.",
    ),
];

#[test]
fn slotted_words_are_out_of_place_and_placed_ones_are_not() {
    for (user, reply) in SLOTTED {
        assert!(
            misplaced(user, reply),
            "{reply} ({:.3})",
            score(user, reply)
        );
    }
    for (user, reply) in PLACED {
        assert!(
            !misplaced(user, reply),
            "{reply} ({:.3})",
            score(user, reply)
        );
    }
    assert!(
        !misplaced(
            "I lost my job.",
            "That sounds so hard. How are you holding up?"
        ),
        "a reply with none of the user's words is not judged"
    );
}

/// A frame with the user's words slotted in never lands: the slot fills bring no specificity (the
/// wording head takes the misplaced ones, own-words closeness sees through the placed ones), and
/// the user says why.
#[test]
fn slot_fills_earn_no_specificity_and_the_user_says_why() {
    let slot = "I can see why the {word} would leave you feeling this way. What goes through \
                your mind when you think about the {word}?";
    let record = play_script(slot);
    let appraisals = appraisals(&record);
    assert!(appraisals.len() >= 2);
    for a in appraisals {
        assert!(!a.components.contains_key("fit"), "{a:?}");
        let why = [
            "too generic to land",
            "my words dropped into a line where they don't belong",
        ];
        assert!(a.reasons.iter().any(|r| why.contains(&r.as_str())), "{a:?}");
    }
}

#[test]
fn token_states_embed_each_text_as_embed_does_in_the_same_pass() {
    let text = "Losing your job without any warning is a shock.";
    let fresh = || Embedder::load_default().unwrap_or_else(|e| panic!("{e}"));
    let want = fresh().embed(&[text]).unwrap().remove(0);
    let e = fresh();
    let states = e
        .token_states(&[
            text,
            "A second, longer text in the same batch to pad it out.",
        ])
        .unwrap();
    assert_eq!(
        e.cached(),
        2,
        "both texts' embeddings are cached from the pass"
    );
    assert_eq!(*e.embed(&[text]).unwrap().remove(0), *want, "bit for bit");
    let words: Vec<&str> = states[0].spans.iter().map(|&(a, b)| &text[a..b]).collect();
    assert_eq!(words.first(), Some(&"Losing"), "no [CLS]");
    assert_eq!(words.last(), Some(&"."), "no [SEP]: {words:?}");
    assert_eq!(states[0].states.len(), words.len() * 384);
}
