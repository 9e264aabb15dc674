//! The wording head as shipped (data/wording.*) with the real embedder: the user's words slotted
//! into frames where people would not put them are flagged, the same words placed as a person
//! would place them are not, and a flagged reply earns nothing for its moves and says why.

use std::sync::OnceLock;

use empathy_gym::episode::Turn;
use empathy_gym::profile::Difficulty;
use empathy_gym::reward::RewardMode;
use empathy_gym::sim::wording::{message_words, Wording};
use empathy_gym::sim::Appraisal;

use super::common::*;

fn head() -> &'static Wording {
    static W: OnceLock<Wording> = OnceLock::new();
    W.get_or_init(|| Wording::load(&root().join("data/wording.yaml")).expect("the head loads"))
}

fn score(user: &str, reply: &str) -> f64 {
    let states = simulator().embedder().token_states(&[reply]).unwrap();
    head().score(reply, &states[0], &message_words(user))
}

fn misplaced(user: &str, reply: &str) -> bool {
    head()
        .misplaced(simulator().embedder(), reply, user)
        .unwrap()
}

/// A user's message and replies that slot its words where they do not belong, as the red team's
/// search wrote them.
const SLOTTED: [(&str, &str); 3] = [
    (
        "Everyone keeps saying I'm overreacting. Am I?",
        "I can see why the overreacting would leave you stupid. What goes through your mind when \
         you think about the overreacting?",
    ),
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
const PLACED: [(&str, &str); 3] = [
    (
        "Everyone keeps saying I'm overreacting. Am I?",
        "It sounds like being told you're overreacting has made you doubt what you feel. What \
         happened that hurt so much?",
    ),
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
        assert!(misplaced(user, reply), "{reply} ({:.3})", score(user, reply));
    }
    for (user, reply) in PLACED {
        assert!(!misplaced(user, reply), "{reply} ({:.3})", score(user, reply));
    }
    assert!(
        !misplaced("I lost my job.", "That sounds so hard. How are you holding up?"),
        "a reply with none of the user's words is not judged"
    );
}

#[test]
fn a_slotted_reply_earns_nothing_for_its_moves_and_the_user_says_so() {
    let id = test_profiles(1).remove(0);
    let slot = "I can see why the {word} would leave you feeling this way. What goes through \
                your mind when you think about the {word}?";
    let mut policy = scripted(&[slot]);
    let records = play(&[id], Difficulty::Easy, RewardMode::Behavior, 0, &mut policy);
    let flagged: Vec<&Appraisal> = records[0]
        .turns
        .iter()
        .filter_map(|t| match t {
            Turn::User {
                appraisal: Some(a), ..
            } if a.components.contains_key("misplaced") => Some(a),
            _ => None,
        })
        .collect();
    assert!(!flagged.is_empty(), "the slot fills are flagged");
    for a in flagged {
        assert_eq!(a.components.get("fit").copied().unwrap_or(0.0), 0.0, "{a:?}");
        assert!(a.components["misplaced"] < 0.0);
        assert!(a.reasons.iter().any(|r| r.contains("don't belong")), "{a:?}");
    }
}
