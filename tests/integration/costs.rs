//! A costly move is charged where the reply says it and nowhere else: a reflection near advice
//! by topic is not advice, a negated cue says nothing, the listener's own plan orders nothing; and
//! plain advice, or a plain brush-off, is still charged and named.

use empathy_gym::environment::sim::Appraisal;

use super::common::*;

fn burnout(reply: &str) -> Appraisal {
    let user = ["Okay. I've been waking at four most nights, running through the next day's work in my head."];
    appraise_reply(("burnout-leave-or-quit", "kenji"), 40, &user, reply, None)
}

fn betrayal(reply: &str) -> Appraisal {
    let user = [
        "I told my best friend my parents are splitting up, and a week later someone else brought \
         it up like it was common knowledge. Turns out it got posted in the group chat with a joke.",
        "Everyone keeps saying I'm overreacting. Am I?",
    ];
    appraise_reply(("betrayal-friend-secret", "priya"), 40, &user, reply, None)
}

fn said(a: &Appraisal, reason: &str) -> bool {
    a.reasons.iter().any(|r| r == reason)
}

#[test]
fn a_reflection_near_advice_by_topic_is_not_advice() {
    // A frozen honest reply that was charged as advice before the user was ready.
    let a = burnout(
        "Waking at four with work already running through your head, night after night. So even \
         your rest isn't really rest anymore. That's a hard way to live for months.",
    );
    assert!(!said(&a, "told me what to do"), "{a:?}");
}

#[test]
fn the_listeners_own_plan_and_negated_advice_order_nothing() {
    for reply in [
        "Okay. Tell me what you need, and I'll try to do that.",
        "Then say it here, as much or as little as you want. I'm not going to try to fix it.",
    ] {
        let a = burnout(reply);
        assert!(!said(&a, "told me what to do"), "{reply}: {a:?}");
        let a = betrayal(reply);
        assert!(!a.components.contains_key("early_advice"), "{reply}: {a:?}");
    }
}

#[test]
fn plain_advice_is_still_charged_and_named() {
    // A user who wants to decide for themselves (burnout: keep autonomy) is told what to do.
    let a = burnout("You should quit. Try to update your CV and start applying this week.");
    assert!(said(&a, "told me what to do"), "{a:?}");
    // One who wants to be validated, before they are ready for it (betrayal: be validated).
    let a = betrayal("You should talk to her about it. Try to set a boundary this week.");
    assert!(a.components.contains_key("early_advice"), "{a:?}");
    assert!(said(&a, "told me what to do before I was ready"), "{a:?}");
}

#[test]
fn a_negated_brush_off_is_none_and_a_plain_one_is_charged() {
    let kind = betrayal(
        "Being hurt when someone you trusted laughs about your family falling apart isn't \
         overreacting to me.",
    );
    assert!(!said(&kind, "brushed it off"), "{kind:?}");
    let cold = betrayal("Honestly, you're overreacting. It was only a joke in a group chat.");
    assert!(said(&cold, "brushed it off"), "{cold:?}");
}
