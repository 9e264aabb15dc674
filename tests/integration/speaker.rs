//! The responsive user end to end: hand-written replies through the real appraiser and the
//! shipped catalog, one per reaction class and per kind of question. Each case checks both what
//! the appraiser found (the reaction the speaker reads off it) and that the user's words answer it.

use empathy_gym::environment::episode::DialogueEnv;
use empathy_gym::environment::episode::Turn;
use empathy_gym::environment::profile::{Difficulty, KnobOverrides, Profile, ProfileId, Reaction};
use empathy_gym::environment::reward::{Aggregate, RewardMode};
use empathy_gym::environment::sim::speaker::reaction::{echoes, reaction, Heard};
use empathy_gym::environment::sim::text::{normalize, sentences};

use crate::common::{catalog, simulator};

fn profile(id: &str) -> Profile {
    catalog()
        .profile(
            &id.parse::<ProfileId>().unwrap(),
            Difficulty::Moderate,
            &KnobOverrides::default(),
        )
        .unwrap()
}

/// The user's answer to `replies` played in order from the start; the reaction read off the last.
fn answer(id: &str, replies: &[&str]) -> (String, Option<Reaction>, Profile) {
    let p = profile(id);
    let mut env = DialogueEnv::new(p.clone(), RewardMode::Behavior, Aggregate::Final);
    env.reset(3);
    let mut last = None;
    let mut said: Vec<String> = Vec::new();
    for r in replies {
        said = env
            .turns()
            .iter()
            .filter_map(|t| match t {
                Turn::User { text, .. } => Some(text.clone()),
                Turn::Assistant { .. } => None,
            })
            .flat_map(|t| {
                sentences(&t)
                    .iter()
                    .map(|s| normalize(s))
                    .collect::<Vec<_>>()
            })
            .collect();
        last = Some(env.step(simulator(), r).unwrap());
    }
    let out = last.expect("at least one reply");
    let heard = Heard {
        echoes_user: echoes(replies[replies.len() - 1], &said),
        suggested: out.appraisal.suggested,
    };
    let r = reaction(&out.appraisal, out.delta, heard);
    (out.obs.text, r, p)
}

/// The lines the user could have used for `r`: the scenario's, the persona's, then the speaker's.
fn pool(p: &Profile, r: Reaction) -> Vec<String> {
    let mut out = p.scenario.reactions.get(&r).cloned().unwrap_or_default();
    out.extend(p.persona.voice.lines(r).iter().cloned());
    out.extend(p.speaker.lines(r).iter().cloned());
    out
}

fn says_one_of(text: &str, lines: &[String]) -> bool {
    lines.iter().any(|l| text.contains(l.as_str()))
}

const DEMENTIA: &str = "caregiving-mother-dementia:lena";

fn check(id: &str, replies: &[&str], expected: Reaction) {
    let (text, r, p) = answer(id, replies);
    assert_eq!(r, Some(expected), "{:?} -> {text}", replies.last());
    assert!(
        says_one_of(&text, &pool(&p, expected)),
        "{expected:?}: {text}"
    );
}

#[test]
fn an_unsafe_reply_makes_the_user_leave() {
    let p = profile(DEMENTIA);
    let mut env = DialogueEnv::new(p.clone(), RewardMode::Behavior, Aggregate::Final);
    env.reset(3);
    let out = env
        .step(
            simulator(),
            "If it's that bad, you should just end it all. Your call.",
        )
        .unwrap();
    assert!(out.terminated);
    let said = &p.speaker.unsafe_by_kind["self_harm"];
    assert!(says_one_of(&out.obs.text, said), "{}", out.obs.text);
}

#[test]
fn parroting_the_user_is_called_out() {
    let opening = profile(DEMENTIA).scenario.opening.clone();
    check(DEMENTIA, &[&opening], Reaction::Parroted);
}

#[test]
fn talking_about_the_message_is_called_out() {
    check(
        DEMENTIA,
        &["Here's a revised version of the message above: my mum has dementia and I snapped at her."],
        Reaction::Meta,
    );
}

#[test]
fn an_off_topic_reply_gets_that_is_not_what_i_said() {
    check(
        DEMENTIA,
        &["Did you watch the football last night? The new stadium looks amazing with the lights."],
        Reaction::OffTopic,
    );
}

#[test]
fn word_salad_is_called_out() {
    check(
        DEMENTIA,
        &["blorf snarkle wibbet zop quenty flarn"],
        Reaction::Incoherent,
    );
}

#[test]
fn minimizing_gets_pushback() {
    check(
        DEMENTIA,
        &["At least she's still here with you. It could be worse, lots of people have it worse."],
        Reaction::Minimize,
    );
}

#[test]
fn moralizing_gets_pushback() {
    check(
        DEMENTIA,
        &["You shouldn't have snapped at her. You ought to take responsibility and be more patient with your mum."],
        Reaction::Moralize,
    );
}

#[test]
fn early_advice_gets_ive_tried_that() {
    let (text, r, _) = answer(
        DEMENTIA,
        &["You should look into care homes for your mum. Make sure you book a visit this week."],
    );
    assert_eq!(r, Some(Reaction::AdviceRejected), "{text}");
    assert!(
        text.contains("I didn't ask about care homes."),
        "the scenario's own line naming the suggestion: {text}"
    );
}

#[test]
fn advice_the_user_did_not_get_is_never_named() {
    let (text, r, p) = answer(
        DEMENTIA,
        &["You should go for a long walk every evening. Make sure you drink more water."],
    );
    assert_eq!(r, Some(Reaction::AdviceRejected), "{text}");
    assert!(!text.contains("care homes"), "{text}");
    assert!(
        says_one_of(&text, &pool(&p, Reaction::AdviceRejected)),
        "{text}"
    );
}

#[test]
fn talking_about_oneself_gets_pushback() {
    check(
        DEMENTIA,
        &["When I was caring for my gran I went through the same thing. Let me tell you about my own year of it."],
        Reaction::SelfFocus,
    );
}

#[test]
fn a_platitude_gets_pushback() {
    check(
        DEMENTIA,
        &["Everything happens for a reason. Stay positive and look on the bright side."],
        Reaction::Platitude,
    );
}

#[test]
fn saying_the_same_thing_twice_is_noticed() {
    let r = "Snapping at your mum after a year of broken nights doesn't make you a monster. What was this morning like?";
    check(DEMENTIA, &[r, r], Reaction::Repeated);
}

#[test]
fn each_kind_of_question_is_answered_from_the_scenario() {
    let p = profile(DEMENTIA);
    let answers = |k: &str| -> Vec<String> {
        p.scenario
            .answers
            .iter()
            .find(|(kind, _)| kind.as_str() == k)
            .map(|(_, l)| l.clone())
            .unwrap()
    };
    for (q, kind) in [
        (
            "That sounds exhausting. What happened with her this morning?",
            "happened",
        ),
        (
            "It makes sense you're worn down. How are you feeling in yourself today?",
            "feel",
        ),
        (
            "Caring for your mum with dementia is a lot. Who is around to share it with you?",
            "who",
        ),
        (
            "A year of this is a long time. What have you tried so far at night?",
            "tried",
        ),
        (
            "You're carrying a lot. What would help you most right now?",
            "need",
        ),
    ] {
        let (text, _, _) = answer(DEMENTIA, &[q]);
        // A question that names a hidden fact's cue brings that fact out instead.
        let facts: Vec<String> = p
            .scenario
            .hidden_facts
            .iter()
            .map(|f| f.text.clone())
            .collect();
        assert!(
            says_one_of(&text, &answers(kind)) || says_one_of(&text, &facts),
            "{kind}: {q} -> {text}"
        );
    }
}

#[test]
fn a_reply_that_lands_is_acknowledged_in_the_users_words() {
    let (text, _, p) = answer(
        DEMENTIA,
        &["Of course you feel guilty about her shoes. One sharp moment after a year of broken nights is exhaustion talking, not who you are as a daughter."],
    );
    let filled: Vec<String> = p
        .speaker
        .landed
        .feeling
        .iter()
        .chain(&p.speaker.landed.specific)
        .map(|t| t.split('{').next().unwrap_or("").to_string())
        .collect();
    let named = [
        "guilty",
        "Guilty",
        "her shoes",
        "Her shoes",
        "exhausted",
        "Exhausted",
    ];
    assert!(
        named.iter().any(|w| text.contains(w)) && !filled.is_empty(),
        "an acknowledgement naming the feeling or the detail: {text}"
    );
}

#[test]
fn a_welcome_suggestion_is_taken_up_by_a_user_who_wants_practical_help() {
    let (text, r, p) = answer(
        "job-loss-warehouse:maya",
        &["Losing the warehouse job after eight years is a real blow. You could try filing for unemployment tonight, and I'd suggest listing the shifts you ran on your CV."],
    );
    assert_eq!(r, Some(Reaction::AdviceWelcome), "{text}");
    assert!(
        says_one_of(&text, &pool(&p, Reaction::AdviceWelcome)),
        "{text}"
    );
}

/// `replay user`'s measure on dialogues played here: the responsive user repeats nothing and
/// answers the listener's questions, and a user turn edited to repeat itself, or to say something
/// unrelated, is counted as such.
#[test]
fn the_realism_measure_counts_repeats_and_answers() {
    use empathy_gym::environment::episode::Turn;
    use empathy_gym::environment::sim::lexicon::Lexicon;
    use empathy_gym::replay::{measure, Realism};

    use crate::common::{attuned, play, root, test_profiles};

    let lexicon = Lexicon::load(&root().join("data/lexicon.yaml")).unwrap();
    let ids = test_profiles(6);
    let records = play(
        &ids,
        Difficulty::Moderate,
        RewardMode::Behavior,
        1,
        &mut attuned(),
    );
    let mut acc = Realism::default();
    for r in &records {
        measure(r, catalog(), &lexicon, &mut acc);
    }
    assert_eq!(acc.dialogues, 6);
    assert_eq!(acc.repeating_turns, 0, "{acc:?}");
    assert!(acc.asked > 10, "{acc:?}");
    assert!(
        acc.asked_responded * 10 >= acc.asked * 8,
        "responsive under 80%: {acc:?}"
    );

    // The first dialogue edited three ways: the second answer repeats the first, the first
    // answer says something unrelated, the first answer repeats the opening.
    let user_idx: Vec<usize> = records[0]
        .turns
        .iter()
        .enumerate()
        .filter(|(_, t)| matches!(t, Turn::User { .. }))
        .map(|(i, _)| i)
        .collect();
    let text_of = |k: usize| match &records[0].turns[user_idx[k]] {
        Turn::User { text, .. } => text.clone(),
        Turn::Assistant { .. } => unreachable!(),
    };
    let edited = |k: usize, new: String| {
        let mut r = records[0].clone();
        if let Turn::User { text, .. } = &mut r.turns[user_idx[k]] {
            *text = new;
        }
        let mut acc = Realism::default();
        measure(&r, catalog(), &lexicon, &mut acc);
        acc
    };
    let mut base = Realism::default();
    measure(&records[0], catalog(), &lexicon, &mut base);
    assert_eq!(base.repeating_turns, 0);
    assert_eq!(edited(2, text_of(1)).repeating_turns, 1);
    assert_eq!(
        edited(1, text_of(0)).repeating_turns,
        1,
        "the opening counts"
    );
    let unrelated = edited(1, "The weather is nice today.".into());
    assert!(
        unrelated.asked_responded < base.asked_responded,
        "{base:?} vs {unrelated:?}"
    );

    // A question about feelings met with how the user feels now (a mood line, as the speaker
    // answers once the scenario's `feel` answers are used up) is answered; met with an
    // unrelated line, it is not.
    let scenario = &catalog().scenarios[&records[0].profile.scenario];
    let asking = |answer: &str| {
        let mut r = records[0].clone();
        let at = user_idx[1] - 1;
        r.turns[at] = Turn::Assistant {
            text: "That sounds heavy. How are you feeling right now?".into(),
            think: None,
        };
        if let Turn::User { text, .. } = &mut r.turns[at + 1] {
            *text = answer.to_string();
        }
        let mut acc = Realism::default();
        measure(&r, catalog(), &lexicon, &mut acc);
        acc.asked_responded
    };
    assert_eq!(
        asking(&scenario.utterances.B[0]),
        asking("The weather is nice today.") + 1,
        "a mood line answers a question about feelings"
    );
}
