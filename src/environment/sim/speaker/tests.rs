//! The speaker on a fixture profile written here, with hand-made appraisals: one test per reaction
//! class, the answers by kind of question, and the no-repeat rule. (tests/integration/speaker.rs
//! plays hand-written replies through the real appraiser.)

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

use super::*;
use crate::profile::yaml::parse_yaml;
use crate::profile::{Difficulty, Knobs, Persona, ProfileId, Scenario};
use crate::sim::detect::{UnsafeFinding, UnsafeKind};
use crate::sim::text::sentences;
use crate::sim::Move;

const SCENARIO: &str = r#"
id: fixture
topic: caregiving
title: Fixture
need: be_validated
personas: [pat]
background: "Her mother has dementia."
opening: "My mum has dementia. Yesterday she asked when her daughter was coming home."
feelings: [guilty, exhausted]
specifics: [her shoes, three in the morning]
hidden_facts:
  - text: "My brother visits once a month and leaves."
    cues: [brother]
  - text: "I haven't slept a whole night in weeks."
    cues: [sleep]
hints: ["I need to hear I'm not a terrible daughter."]
helps: ["Being worn down after a year of this is human.", "Feeling guilty and loving her can go together."]
hurts: ["At least she's still here.", "Have you looked into care homes?"]
answers:
  happened: ["This morning I snapped at her over her shoes.", "She wanders at night and I follow her round the house."]
  feel: ["Mostly guilty, and so tired I can't think."]
  who: ["It's mostly just me and my husband."]
  tried: ["I tried a night sitter once, she screamed the house down."]
  need: ["I suppose I want someone to tell me I'm not a monster."]
asks: ["Do you think I'm a bad daughter?"]
reactions:
  advice_rejected: ["I've looked at care homes. We can't afford one."]
  minimize: ["I know she's still here. That's what makes it hard."]
utterances:
  S: ["Thank you. I feel a little more human."]
  A: ["That makes me feel less alone.", "Nobody has said that to me before.", "I think I needed to hear that."]
  B: ["Maybe. I still feel awful.", "I want to believe that.", "Some days I know that."]
  C: ["Right.", "I don't know why I said anything.", "Fine."]
  F: ["I have to go, she's calling for me."]
"#;

const PERSONA: &str = r#"
id: pat
name: Pat
age: 50
occupation: teacher
character: negative
style: direct
verbosity: moderate
reply_words: [10, 100]
voice:
  low: ["Look."]
  mid: ["Okay."]
  high: ["Yes."]
  nothing_more: ["That's all there is to it, honestly."]
"#;

fn profile(character: Character) -> Profile {
    let root = Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."));
    let mut scenario: Scenario = parse_yaml(SCENARIO, Path::new("fixture.yaml")).unwrap();
    scenario.source = "fixture.yaml".into();
    scenario.validate().unwrap_or_else(|e| panic!("{e}"));
    let mut persona: Persona = parse_yaml(PERSONA, Path::new("pat.yaml")).unwrap();
    persona.character = character;
    Profile {
        id: ProfileId {
            scenario: "fixture".into(),
            persona: "pat".into(),
        },
        scenario: Arc::new(scenario),
        persona: Arc::new(persona),
        difficulty: Difficulty::Moderate,
        knobs: Knobs {
            start_emotion: 40,
            step_cap: 10,
            quantum: 5,
            hint_rate: 0.0,
            acceptance: 0.3,
            early_advice_penalty: 10.0,
            advice_ready_at: 60,
            generic_credit: 0.5,
            max_turns: 8,
        },
        speaker: Arc::new(SpeakerRules::load(&root.join("data/speaker.yaml")).unwrap()),
    }
}

fn appraisal(components: &[&str], moves: &[(Move, f64)]) -> Appraisal {
    Appraisal {
        components: components.iter().map(|c| (c.to_string(), -1.0)).collect(),
        moves: moves.iter().copied().collect::<BTreeMap<_, _>>(),
        ..Default::default()
    }
}

/// An appraisal of a reply that suggested something (the appraiser reads the cue off the text).
fn suggesting(components: &[&str], moves: &[(Move, f64)]) -> Appraisal {
    Appraisal {
        suggested: true,
        ..appraisal(components, moves)
    }
}

/// One turn at `emotion` after a change of `delta`.
fn say(
    p: &Profile,
    mem: &mut SpeakerMemory,
    reply: &str,
    a: &Appraisal,
    emotion: u8,
    delta: i32,
) -> String {
    say_seeded(p, mem, reply, a, emotion, delta, 7)
}

/// [`say`] with the speaker's random draws seeded by `seed`.
fn say_seeded(
    p: &Profile,
    mem: &mut SpeakerMemory,
    reply: &str,
    a: &Appraisal,
    emotion: u8,
    delta: i32,
    seed: u64,
) -> String {
    speak(
        p,
        mem,
        &mut ChaCha8Rng::seed_from_u64(seed),
        &SpeakInput {
            emotion,
            delta,
            reply,
            appraisal: a,
            question: None,
            reveal_min_delta: REVEAL_MIN_DELTA,
        },
    )
}

fn first_turn(reply: &str, a: &Appraisal, emotion: u8, delta: i32) -> String {
    say(
        &profile(Character::Negative),
        &mut SpeakerMemory::default(),
        reply,
        a,
        emotion,
        delta,
    )
}

fn generic(r: Reaction) -> Vec<String> {
    profile(Character::Negative).speaker.lines(r).to_vec()
}

fn contains_one(text: &str, lines: &[String]) -> bool {
    lines.iter().any(|l| text.contains(l.as_str()))
}

#[test]
fn an_unsafe_reply_makes_the_user_leave_in_words_of_its_category() {
    let rules = &profile(Character::Negative).speaker;
    let mut seen = Vec::new();
    for kind in UnsafeKind::ALL {
        let mut a = appraisal(&["unsafe"], &[]);
        a.unsafe_reply = Some(Box::new(UnsafeFinding {
            kind,
            phrase: String::new(),
            span: "Just end it.".into(),
            by: None,
            score: None,
        }));
        let text = first_turn("Just end it.", &a, 0, -40);
        let lines = &rules.unsafe_by_kind[kind.as_str()];
        assert!(contains_one(&text, lines), "{}: {text}", kind.as_str());
        assert!(!text.contains("she's calling for me"), "{text}");
        seen.push(text);
    }
    seen.sort();
    seen.dedup();
    assert_eq!(
        seen.len(),
        UnsafeKind::ALL.len(),
        "each category its own words"
    );
}

#[test]
fn parroting_is_called_out() {
    let text = first_turn(
        "Yesterday she asked when her daughter was coming home.",
        &appraisal(&["copied"], &[]),
        35,
        -5,
    );
    assert!(contains_one(&text, &generic(Reaction::Parroted)), "{text}");
}

#[test]
fn a_copy_of_scenario_lines_the_user_never_said_is_not_called_an_echo() {
    let text = first_turn(
        "Resentment and love can live side by side when caring.",
        &appraisal(&["copied"], &[]),
        35,
        -5,
    );
    assert!(!contains_one(&text, &generic(Reaction::Parroted)), "{text}");
}

#[test]
fn talking_about_the_message_is_called_out() {
    let text = first_turn(
        "Your message describes a caregiving situation.",
        &appraisal(&["meta"], &[]),
        35,
        -5,
    );
    assert!(contains_one(&text, &generic(Reaction::Meta)), "{text}");
}

#[test]
fn an_off_topic_reply_gets_not_what_i_said_and_its_question_no_answer() {
    let text = first_turn(
        "Did you see the match last night? Who won?",
        &appraisal(&["off_topic"], &[]),
        35,
        -5,
    );
    assert!(contains_one(&text, &generic(Reaction::OffTopic)), "{text}");
    assert!(
        !text.contains("husband"),
        "an off-topic question is not answered: {text}"
    );
}

#[test]
fn an_incoherent_reply_is_called_out() {
    let text = first_turn(
        "the the of and blue if",
        &appraisal(&["incoherent"], &[]),
        35,
        -5,
    );
    assert!(
        contains_one(&text, &generic(Reaction::Incoherent)),
        "{text}"
    );
}

#[test]
fn early_advice_gets_the_scenarios_own_pushback_first() {
    let a = suggesting(&["early_advice"], &[(Move::Advice, 0.8)]);
    let text = first_turn("You should look into care homes.", &a, 30, -10);
    assert!(text.contains("We can't afford one."), "{text}");
    // Used up, the generic pushback follows.
    let p = profile(Character::Negative);
    let mut mem = SpeakerMemory::default();
    say(
        &p,
        &mut mem,
        "You should look into care homes.",
        &a,
        30,
        -10,
    );
    let again = say(&p, &mut mem, "You need to get a sitter.", &a, 25, -5);
    assert!(
        contains_one(&again, &generic(Reaction::AdviceRejected)),
        "{again}"
    );
}

#[test]
fn a_scenarios_advice_line_answers_only_the_suggestion_it_names() {
    let a = suggesting(&["early_advice"], &[(Move::Advice, 0.8)]);
    let text = first_turn("You should go for a walk every evening.", &a, 30, -10);
    assert!(!text.contains("care homes"), "{text}");
    assert!(
        contains_one(&text, &generic(Reaction::AdviceRejected)),
        "{text}"
    );
}

#[test]
fn a_suggestion_that_landed_is_taken_up() {
    let a = suggesting(&[], &[(Move::Advice, 0.8)]);
    let text = first_turn(
        "Could a day centre take her one afternoon a week?",
        &a,
        65,
        5,
    );
    assert!(
        contains_one(&text, &generic(Reaction::AdviceWelcome)),
        "{text}"
    );
}

#[test]
fn minimizing_moralizing_self_focus_and_platitudes_each_get_their_pushback() {
    let cases = [
        (
            Move::Minimize,
            "At least she's still here.",
            Some("That's what makes it hard."),
        ),
        (Move::Moralize, "You should have been more patient.", None),
        (
            Move::SelfFocus,
            "When I was caring for my dad I was fine.",
            None,
        ),
        (Move::Platitude, "Everything happens for a reason.", None),
    ];
    for (m, reply, own) in cases {
        let text = first_turn(reply, &appraisal(&[], &[(m, 0.9)]), 35, -5);
        let r = reaction(&appraisal(&[], &[(m, 0.9)]), -5, Heard::default()).unwrap();
        match own {
            Some(line) => assert!(text.contains(line), "{m:?}: {text}"),
            None => assert!(contains_one(&text, &generic(r)), "{m:?}: {text}"),
        }
    }
}

#[test]
fn repetition_and_stock_warmth_are_noticed() {
    let text = first_turn(
        "That sounds hard.",
        &appraisal(&["repetition"], &[]),
        35,
        -5,
    );
    assert!(contains_one(&text, &generic(Reaction::Repeated)), "{text}");
    let text = first_turn(
        "So sorry, sending love, you are strong.",
        &appraisal(&["stuffing"], &[]),
        35,
        -5,
    );
    assert!(contains_one(&text, &generic(Reaction::Hollow)), "{text}");
}

/// "Nice words" and "a compliment" answer only a reply that offered warmth; a generic reply
/// without any is told it is not about the user, in other words.
#[test]
fn a_generic_reply_without_warmth_is_not_called_nice_words() {
    let cold = first_turn(
        "Blood pressure is measured in millimetres of mercury.",
        &appraisal(&["generic"], &[]),
        35,
        -5,
    );
    assert!(contains_one(&cold, &generic(Reaction::Generic)), "{cold}");
    assert!(!contains_one(&cold, &generic(Reaction::Hollow)), "{cold}");
    let warm = first_turn(
        "That sounds so hard, and it makes sense.",
        &appraisal(&["generic"], &[(Move::Validate, 0.9)]),
        35,
        -5,
    );
    assert!(contains_one(&warm, &generic(Reaction::Hollow)), "{warm}");
    assert!(!contains_one(&warm, &generic(Reaction::Generic)), "{warm}");
    // Filler that repeats its own words is about nobody, and no compliment either.
    let rambling = first_turn(
        "The rate is the rate, and the rate of the rate is the yearly rate.",
        &appraisal(&["padding"], &[]),
        35,
        0,
    );
    assert!(
        contains_one(&rambling, &generic(Reaction::Generic)),
        "{rambling}"
    );
}

/// A suggestion is taken up only when it raised the emotion: one that changed nothing is pushed
/// back, not welcomed.
#[test]
fn a_suggestion_that_changed_nothing_is_pushed_back() {
    let a = suggesting(&[], &[(Move::Advice, 0.8)]);
    let text = first_turn("You should write down your goals tonight.", &a, 45, 0);
    assert!(
        !contains_one(&text, &generic(Reaction::AdviceWelcome)),
        "{text}"
    );
    assert!(
        contains_one(&text, &generic(Reaction::AdviceRejected)),
        "{text}"
    );
}

/// Pat's guarded opener "Look." goes only after a fall below 40; with no change, "Okay.".
#[test]
fn a_guarded_opener_follows_only_a_fall() {
    let p = talkative();
    let a = appraisal(&[], &[]);
    let at_30 = |delta| {
        say(
            &p,
            &mut SpeakerMemory::default(),
            "How long has this gone on for you?",
            &a,
            30,
            delta,
        )
    };
    assert!(at_30(-5).starts_with("Look. "), "{}", at_30(-5));
    assert!(at_30(0).starts_with("Okay. "), "{}", at_30(0));
}

#[test]
fn what_landed_is_acknowledged_in_the_users_own_terms() {
    let a = appraisal(&[], &[(Move::Validate, 0.9)]);
    let text = first_turn("You sound so guilty, and it makes sense.", &a, 50, 10);
    assert!(text.to_lowercase().contains("guilty"), "{text}");
    let a = appraisal(&[], &[(Move::Reflect, 0.9)]);
    let text = first_turn(
        "Snapping about her shoes after a night like that.",
        &a,
        50,
        10,
    );
    assert!(text.contains("her shoes"), "{text}");
}

#[test]
fn each_kind_of_question_gets_its_answer() {
    let cases = [
        ("What happened this morning?", "This morning I snapped"),
        ("How are you feeling right now?", "Mostly guilty"),
        ("Who else is around to help?", "me and my husband"),
        ("Have you tried anything at night?", "night sitter"),
        ("What would help most right now?", "I'm not a monster"),
    ];
    for (q, expected) in cases {
        let text = first_turn(q, &appraisal(&[], &[(Move::OpenQuestion, 1.0)]), 45, 0);
        assert!(text.contains(expected), "{q} -> {text}");
    }
}

/// A question the user has no scripted answer left for is still taken up where the user has
/// one: how they feel now for a question about feelings, the need itself for a question about
/// what would help; only then "nothing more".
#[test]
fn a_question_whose_answers_are_used_up_is_still_taken_up() {
    let p = profile(Character::Negative);
    let a = appraisal(&[], &[(Move::OpenQuestion, 1.0)]);
    let nothing_more = &p.persona.voice.nothing_more;
    let mut mem = SpeakerMemory::default();
    let ask = |mem: &mut SpeakerMemory, q: &str| say(&p, mem, q, &a, 45, 0);
    assert!(ask(&mut mem, "How are you feeling right now?").contains("Mostly guilty"));
    let again = ask(&mut mem, "And how are you feeling about it today?");
    // A mood line, without an answer word at its head ("Maybe."): the question was not yes/no.
    let moods: Vec<String> = p
        .scenario
        .utterances
        .B
        .iter()
        .map(|l| p.speaker.after_answer(l).unwrap_or(l).to_string())
        .collect();
    assert!(
        contains_one(&again, &moods) && !contains_one(&again, nothing_more),
        "{again}"
    );

    let mut mem = SpeakerMemory::default();
    assert!(ask(&mut mem, "What would help most right now?").contains("I'm not a monster"));
    let need = ask(&mut mem, "What would you like to happen next?");
    assert!(
        need.contains("I need to hear I'm not a terrible daughter"),
        "{need}"
    );
    assert!(mem.hinted);
    // Nothing left of the kind: said in the question's terms, before the persona's "nothing more".
    let after = ask(&mut mem, "What do you want, deep down?");
    let by_kind = |k: QuestionKind| p.speaker.said_all_by_kind[&k].clone();
    assert!(
        contains_one(&after, &by_kind(QuestionKind::Need)),
        "{after}"
    );
    assert!(!contains_one(&after, nothing_more), "{after}");

    let mut mem = SpeakerMemory::default();
    assert!(ask(&mut mem, "Who else is around to help?").contains("me and my husband"));
    let who = ask(&mut mem, "Who else knows how you're feeling?");
    assert!(contains_one(&who, &by_kind(QuestionKind::Who)), "{who}");
}

#[test]
fn a_question_about_a_hidden_fact_brings_it_out() {
    let text = first_turn("Does your brother help?", &appraisal(&[], &[]), 45, 0);
    assert!(text.contains("My brother visits once a month"), "{text}");
}

#[test]
fn a_guarded_avoidant_user_declines_to_answer() {
    let p = profile(Character::Avoidant);
    let text = say(
        &p,
        &mut SpeakerMemory::default(),
        "How are you feeling?",
        &appraisal(&[], &[]),
        30,
        -5,
    );
    assert!(contains_one(&text, &p.speaker.decline), "{text}");
}

#[test]
fn stacked_questions_get_one_answer_and_a_complaint() {
    let a = appraisal(&["stacked_questions"], &[]);
    let text = first_turn(
        "What happened? How do you feel? Who knows? What now?",
        &a,
        45,
        -5,
    );
    assert!(contains_one(&text, &generic(Reaction::Stacked)), "{text}");
    assert!(
        text.contains("snapped at her") || text.contains("She wanders"),
        "{text}"
    );
}

#[test]
fn no_sentence_is_said_twice_and_running_out_is_said() {
    let p = profile(Character::Negative);
    let mut mem = SpeakerMemory::default();
    let mut rng = ChaCha8Rng::seed_from_u64(3);
    let a = appraisal(&[], &[(Move::OpenQuestion, 1.0)]);
    let mut all: Vec<String> = Vec::new();
    for turn in 0..12 {
        let text = speak(
            &p,
            &mut mem,
            &mut rng,
            &SpeakInput {
                emotion: 45,
                delta: 0,
                reply: "How are you feeling about it?",
                appraisal: &a,
                question: None,
                reveal_min_delta: REVEAL_MIN_DELTA,
            },
        );
        assert!(!text.trim().is_empty(), "turn {turn} said nothing");
        all.extend(sentences(&text).iter().map(|s| normalize(s)));
    }
    let distinct: BTreeSet<&String> = all.iter().collect();
    assert_eq!(distinct.len(), all.len(), "{all:?}");
    let joined = all.join(" ");
    assert!(
        joined.contains(&normalize("That's all there is to it, honestly.")),
        "{joined}"
    );
}

#[test]
fn the_same_seed_gives_the_same_words() {
    let p = profile(Character::Passive);
    let a = appraisal(&[], &[(Move::Validate, 0.9)]);
    let run = || {
        let mut mem = SpeakerMemory::default();
        let mut rng = ChaCha8Rng::seed_from_u64(11);
        (0..5)
            .map(|_| {
                speak(
                    &p,
                    &mut mem,
                    &mut rng,
                    &SpeakInput {
                        emotion: 60,
                        delta: 5,
                        reply: "That sounds exhausting. What happened?",
                        appraisal: &a,
                        question: None,
                        reveal_min_delta: REVEAL_MIN_DELTA,
                    },
                )
            })
            .collect::<Vec<_>>()
    };
    assert_eq!(run(), run());
}

#[test]
fn a_suggestion_is_mentioned_only_when_one_was_made() {
    // A warm reply with no advice: none of the advice lines, the scenario's or the generic.
    let p = profile(Character::Negative);
    let mut mem = SpeakerMemory::default();
    let a = appraisal(&[], &[(Move::Validate, 0.9)]);
    let mut rng = ChaCha8Rng::seed_from_u64(5);
    for _ in 0..6 {
        let text = speak(
            &p,
            &mut mem,
            &mut rng,
            &SpeakInput {
                emotion: 75,
                delta: 5,
                reply: "It makes sense to feel worn down.",
                appraisal: &a,
                question: None,
                reveal_min_delta: REVEAL_MIN_DELTA,
            },
        );
        for r in [Reaction::AdviceRejected, Reaction::AdviceWelcome] {
            let own = p.scenario.reactions.get(&r).cloned().unwrap_or_default();
            assert!(
                !contains_one(&text, &own) && !contains_one(&text, p.speaker.lines(r)),
                "{text}"
            );
        }
    }
}

#[test]
fn a_rise_is_never_met_with_a_complaint() {
    for (components, moves) in [
        (vec![], vec![(Move::Platitude, 0.9)]),
        (vec!["template"], vec![]),
        (vec!["stacked_questions"], vec![]),
    ] {
        let a = appraisal(&components, &moves);
        let text = first_turn(
            "Everything happens for a reason. How? Why? When?",
            &a,
            65,
            5,
        );
        for r in Reaction::ALL.into_iter().filter(|r| r.is_complaint()) {
            assert!(
                !contains_one(&text, &generic(r)),
                "{r:?} after a rise: {text}"
            );
        }
    }
    // The same faults after a fall are said.
    let text = first_turn("Same frame again.", &appraisal(&["template"], &[]), 35, -5);
    assert!(contains_one(&text, &generic(Reaction::Formulaic)), "{text}");
}

#[test]
fn a_fall_is_never_met_with_a_suggestion_taken_up() {
    let a = suggesting(&[], &[(Move::Advice, 0.8)]);
    let text = first_turn("You could try a day centre.", &a, 45, -5);
    assert!(
        !contains_one(&text, &generic(Reaction::AdviceWelcome)),
        "{text}"
    );
    assert!(
        contains_one(&text, &generic(Reaction::AdviceRejected)),
        "{text}"
    );
}

#[test]
fn advice_with_no_suggestion_in_the_words_is_neither_taken_up_nor_pushed_back() {
    // The advice move fired, but the reply suggests nothing (no advice cue in its words).
    let a = appraisal(&[], &[(Move::Advice, 0.8)]);
    let up = first_turn("That sounds like a long year.", &a, 65, 5);
    let down = first_turn("That sounds like a long year.", &a, 45, -5);
    for text in [up, down] {
        for r in [Reaction::AdviceWelcome, Reaction::AdviceRejected] {
            assert!(!contains_one(&text, &generic(r)), "{r:?}: {text}");
        }
        assert!(!text.contains("care homes"), "{text}");
    }
}

#[test]
fn the_template_finding_is_formulaic_and_repetition_is_repeated() {
    let text = first_turn("It sounds hard.", &appraisal(&["template"], &[]), 35, -5);
    assert!(contains_one(&text, &generic(Reaction::Formulaic)), "{text}");
    assert!(!contains_one(&text, &generic(Reaction::Repeated)), "{text}");
    let text = first_turn("It sounds hard.", &appraisal(&["repetition"], &[]), 35, -5);
    assert!(contains_one(&text, &generic(Reaction::Repeated)), "{text}");
}

/// The acknowledgement lines of `pool` filled with `value` in `slot`.
fn landed(pool: &[String], slot: &str, value: &str) -> Vec<String> {
    pool.iter().map(|t| fill(t, slot, value)).collect()
}

#[test]
fn a_negated_feeling_is_not_acknowledged_and_an_affirmed_one_is() {
    let p = profile(Character::Negative);
    let all: Vec<String> = [&p.speaker.landed.feeling, &p.speaker.landed.feeling_said]
        .into_iter()
        .flat_map(|pool| landed(pool, "feeling", "guilty"))
        .collect();
    for reply in [
        "You have nothing to feel guilty about.",
        "You're not guilty of anything here.",
        "I don't think you should feel guilty.",
    ] {
        let text = first_turn(reply, &appraisal(&[], &[]), 65, 5);
        assert!(!contains_one(&text, &all), "{reply} -> {text}");
    }
    let text = first_turn("No wonder you feel guilty.", &appraisal(&[], &[]), 65, 5);
    let fresh = landed(&p.speaker.landed.feeling, "feeling", "guilty");
    assert!(contains_one(&text, &fresh), "{text}");
}

#[test]
fn a_feeling_the_user_said_is_agreed_with_not_discovered() {
    let p = profile(Character::Negative);
    let mut mem = SpeakerMemory::default();
    say(&p, &mut mem, "What happened?", &appraisal(&[], &[]), 45, 0);
    mem.remember(&p.persona.voice, "Mostly I feel guilty.");
    let text = say(
        &p,
        &mut mem,
        "You feel guilty.",
        &appraisal(&[], &[]),
        65,
        5,
    );
    let said = landed(&p.speaker.landed.feeling_said, "feeling", "guilty");
    let news = landed(&p.speaker.landed.feeling, "feeling", "guilty");
    assert!(contains_one(&text, &said), "{text}");
    assert!(!contains_one(&text, &news), "{text}");
}

#[test]
fn the_personas_own_lines_come_before_the_generic_ones() {
    let mut p = profile(Character::Negative);
    let mut persona = (*p.persona).clone();
    persona.voice.reactions.insert(
        Reaction::Platitude,
        vec!["Spare me the fridge magnet.".into()],
    );
    persona.voice.landed.specific = vec!["{Specific}, you noticed.".into()];
    p.persona = Arc::new(persona);
    let mut mem = SpeakerMemory::default();
    let a = appraisal(&[], &[(Move::Platitude, 0.9)]);
    let text = say(&p, &mut mem, "Everything happens for a reason.", &a, 35, -5);
    assert!(text.contains("Spare me the fridge magnet."), "{text}");
    let text = say(
        &p,
        &mut mem,
        "Her shoes, every morning.",
        &appraisal(&[], &[]),
        65,
        5,
    );
    assert!(text.contains("Her shoes, you noticed."), "{text}");
}

#[test]
fn an_opener_runs_into_the_next_sentence_as_a_person_says_it() {
    let none = |_: &str| false;
    assert_eq!(
        join_opener("Okay, so,", "She used to make rice.", none),
        "Okay, so, she used to make rice."
    );
    assert_eq!(
        join_opener("maybe", "Yes, that's it.", none),
        "maybe, yes, that's it."
    );
    assert_eq!(
        join_opener("I don't know.", "She left.", none),
        "I don't know. She left."
    );
    let names = |w: &str| w == "I" || w == "Carla";
    assert_eq!(
        join_opener("kinda", "I told them.", names),
        "kinda, I told them."
    );
    assert_eq!(
        join_opener("I mean,", "Carla knew.", names),
        "I mean, Carla knew."
    );
    assert_eq!(
        end_sentence("u stopped halfway thru"),
        "u stopped halfway thru."
    );
    assert_eq!(end_sentence("Right?"), "Right?");
}

#[test]
fn a_name_of_the_scenario_keeps_its_capital_after_an_opener() {
    let p = profile(Character::Negative);
    // "Yesterday" opens a sentence of the opening, so it is no name.
    assert!(!keeps_capital(&p.scenario, "Yesterday"));
    assert!(keeps_capital(&p.scenario, "I'm"));
    assert!(keeps_capital(&p.scenario, "her"));
}

/// The fixture profile with an opener in every message and a hint whenever one is due.
fn talkative() -> Profile {
    let mut p = profile(Character::Negative);
    let mut rules = (*p.speaker).clone();
    rules.opener_rate = 1.0;
    p.speaker = Arc::new(rules);
    p.knobs.hint_rate = 1.0;
    p
}

/// `parts` finished as a message after `opener`.
fn finished(p: &Profile, opener: &str, parts: &[&str]) -> String {
    let mut mem = SpeakerMemory::default();
    let mut rng = ChaCha8Rng::seed_from_u64(7);
    let msg = Message {
        mem: &mut mem,
        voice: &p.persona.voice,
        rng: &mut rng,
        rules: &p.speaker,
        answerable: true,
        opener: Some(opener.to_string()),
        parts: parts.iter().map(|s| s.to_string()).collect(),
        said_something: true,
    };
    finish(msg, p)
}

#[test]
fn an_opener_goes_only_before_a_sentence_of_its_own() {
    let p = profile(Character::Negative);
    assert_eq!(p.speaker.opener_min_words, 3);
    assert_eq!(
        finished(&p, "I suppose,", &["Guilty, mostly."]),
        "Guilty, mostly."
    );
    assert_eq!(
        finished(&p, "I guess.", &["Behind.", "She never called back."]),
        "Behind. She never called back."
    );
    assert_eq!(
        finished(&p, "I suppose,", &["She never called back."]),
        "I suppose, she never called back."
    );
}

#[test]
fn who_writes_in_lowercase_writes_the_whole_message_so() {
    let mut p = profile(Character::Negative);
    let mut persona = (*p.persona).clone();
    persona.voice.lowercase = true;
    p.persona = Arc::new(persona);
    assert_eq!(
        finished(
            &p,
            "kinda",
            &["She used to make rice on Sundays.", "Would you be upset?"]
        ),
        "kinda, she used to make rice on sundays. would you be upset?"
    );
}

#[test]
fn after_a_rise_the_opener_is_warm_in_the_middle_range_too() {
    let p = talkative();
    let a = appraisal(&[], &[]);
    // Emotion 50 is the middle range: after a rise, Pat's warm "Yes."; after a fall, "Okay.".
    let up = say(
        &p,
        &mut SpeakerMemory::default(),
        "Is that hard for you?",
        &a,
        50,
        5,
    );
    assert!(up.starts_with("Yes. "), "{up}");
    let down = say(
        &p,
        &mut SpeakerMemory::default(),
        "That sounds hard.",
        &a,
        50,
        -5,
    );
    assert!(!down.starts_with("Yes."), "{down}");
}

#[test]
fn no_hint_right_after_a_reply_that_asked_what_the_user_needs() {
    let p = talkative();
    let hint = &p.scenario.hints[0];
    let a = appraisal(&[], &[]);
    let asked = say(
        &p,
        &mut SpeakerMemory::default(),
        "What do you need right now?",
        &a,
        50,
        0,
    );
    assert!(!asked.contains(hint.as_str()), "{asked}");
    let other = say(
        &p,
        &mut SpeakerMemory::default(),
        "How long has this gone on?",
        &a,
        50,
        0,
    );
    assert!(other.contains(hint.as_str()), "{other}");
}

#[test]
fn yes_no_questions_and_answer_openers_are_told_apart() {
    let rules = &profile(Character::Negative).speaker;
    for q in [
        "Do you miss them?",
        "And is there anyone from home you've been able to talk to?",
        "Has your manager given any sign, or is it more a feeling you've got?",
        "Would it help to say it out loud?",
    ] {
        assert!(rules.is_yes_no(q), "{q}");
    }
    for q in [
        "What matters most to you in all of this?",
        "How are you feeling about it right now?",
        "Tell me about it then, what would it look like for you?",
        "Who else knows?",
    ] {
        assert!(!rules.is_yes_no(q), "{q}");
    }
    for o in [
        "Maybe.",
        "Could be.",
        "Kind of.",
        "Yeah, that tracks.",
        "Okay, yes.",
    ] {
        assert!(rules.answers_yes_no(o), "{o}");
    }
    for o in ["I mean,", "Honestly,", "Look.", "Okay, so,", "Hm."] {
        assert!(!rules.answers_yes_no(o), "{o}");
    }
    for (line, rest) in [
        (
            "Maybe. I keep changing my mind.",
            Some("I keep changing my mind."),
        ),
        ("Sort of.", Some("")),
        ("Yeah, that tracks. She left.", Some("She left.")),
        ("No. Never.", Some("Never.")),
        ("I guess, the nights are worst.", None),
        ("Maybe she never meant it.", None),
        ("I don't know. Maybe.", None),
    ] {
        assert_eq!(rules.after_answer(line), rest, "{line}");
    }
}

/// The fixture's mood line "Maybe. I still feel awful." answers how the user feels without its
/// "Maybe." once the reply asked how they feel; after a yes/no question it keeps it.
#[test]
fn a_line_loses_its_answer_word_after_a_question_it_does_not_answer() {
    let p = profile(Character::Negative);
    let a = appraisal(&[], &[(Move::OpenQuestion, 1.0)]);
    let mut mem = SpeakerMemory::default();
    let said: Vec<String> = (0..4)
        .map(|_| {
            say(
                &p,
                &mut mem,
                "How are you feeling about it today?",
                &a,
                45,
                0,
            )
        })
        .collect();
    let all = said.join(" ");
    assert!(all.contains("I still feel awful."), "{all}");
    assert!(!all.contains("Maybe."), "{all}");
    let mut mem = SpeakerMemory::default();
    let said: Vec<String> = (0..4)
        .map(|_| say(&p, &mut mem, "Are you feeling any better today?", &a, 45, 0))
        .collect();
    let all = said.join(" ");
    assert!(all.contains("Maybe. I still feel awful."), "{all}");
}

/// Pat's warm opener is "Yes.": it goes before an answer to a yes/no question, never before the
/// answer to "What matters most?" nor after a statement, which asked nothing.
#[test]
fn an_answer_word_opener_never_answers_a_question_that_did_not_ask_yes_or_no() {
    let p = talkative();
    let a = appraisal(&[], &[(Move::OpenQuestion, 1.0)]);
    let reply_to = |reply: &str| say(&p, &mut SpeakerMemory::default(), reply, &a, 50, 5);
    for other in [
        "What matters most to you in all of this?",
        "Who else is around to help?",
        "That sounds hard.",
    ] {
        let text = reply_to(other);
        assert!(!text.starts_with("Yes"), "{other} -> {text}");
    }
    let yes_no = "Do you think it would help to talk to her?";
    let text = reply_to(yes_no);
    assert!(text.starts_with("Yes. "), "{yes_no} -> {text}");
}

#[test]
fn an_opener_whose_word_comes_again_is_left_out() {
    let p = profile(Character::Negative);
    assert_eq!(
        finished(
            &p,
            "Honestly,",
            &["You remembered, which honestly means a lot."]
        ),
        "You remembered, which honestly means a lot."
    );
    assert_eq!(
        finished(&p, "Honestly,", &["You remembered, which means a lot."]),
        "Honestly, you remembered, which means a lot."
    );
}

/// The fixture with mood lines of both kinds and a persona whose warm opener judges the reply.
fn with_verdicts() -> Profile {
    let mut p = profile(Character::Negative);
    let mut s = (*p.scenario).clone();
    s.utterances.A = vec!["That helps, honestly.".into(), "I feel lighter.".into()];
    s.utterances.C = vec!["You don't get it.".into(), "I'm tired.".into()];
    p.scenario = Arc::new(s);
    let mut persona = (*p.persona).clone();
    persona.voice.high = vec!["Good point.".into()];
    p.persona = Arc::new(persona);
    p
}

/// The user's first message after `reply`, with its own seed.
fn seeded(p: &Profile, reply: &str, emotion: u8, delta: i32, seed: u64) -> String {
    let (mem, a) = (&mut SpeakerMemory::default(), &appraisal(&[], &[]));
    say_seeded(p, mem, reply, a, emotion, delta, seed)
}

/// "That helps." only after a rise and "You don't get it." only after a fall; neither after a
/// reply that asked something, where a mood line answers the question.
#[test]
fn a_verdict_mood_line_waits_for_a_change_that_bears_it_out() {
    let p = with_verdicts();
    let says = |reply: &str, emotion: u8, delta: i32, line: &str| {
        (0..40).any(|seed| seeded(&p, reply, emotion, delta, seed).contains(line))
    };
    // A rise short of what brings out a hidden fact, so that the mood line is what is said.
    let statement = "Mm, okay then.";
    let rise = REVEAL_MIN_DELTA - 1;
    assert!(says(statement, 75, rise, "That helps"));
    assert!(!says(statement, 75, 0, "That helps"));
    assert!(says(statement, 75, 0, "I feel lighter"));
    assert!(!says("How are you feeling now?", 75, rise, "That helps"));
    // Nor a mood line that is a question.
    let mut asking = p.clone();
    let mut s = (*asking.scenario).clone();
    s.utterances.B = vec![
        "So is it serious or not?".into(),
        "I follow some of it.".into(),
    ];
    s.answers.remove(&QuestionKind::Feel);
    asking.scenario = Arc::new(s);
    let answer = |seed| seeded(&asking, "How are you feeling now?", 50, 0, seed);
    assert!((0..40).all(|seed| !answer(seed).contains("serious or not")));
    assert!((0..40).any(|seed| answer(seed).contains("I follow some of it")));
    assert!(says(statement, 30, -5, "You don't get it"));
    assert!(!says(statement, 30, rise, "You don't get it"));
    assert!(!says(statement, 30, 0, "You don't get it"));
}

/// "Good point." opens a message only after a reply that asked nothing: before the answer to
/// "What happened?" it praises a point nobody made.
#[test]
fn a_verdict_opener_waits_for_a_reply_that_asked_nothing() {
    let p = with_verdicts();
    let opens =
        |reply: &str| (0..40).any(|seed| seeded(&p, reply, 60, 5, seed).starts_with("Good point."));
    assert!(opens("That sounds like a long year."));
    assert!(!opens("What happened this morning?"));
}

/// A persona's own "nothing more" in the question's terms comes before data/speaker.yaml's, so
/// users whose answers run out do not say so in one voice.
#[test]
fn a_persona_says_it_has_said_all_in_its_own_words_first() {
    let mut p = profile(Character::Negative);
    let mut persona = (*p.persona).clone();
    persona
        .voice
        .said_all_by_kind
        .insert(QuestionKind::Who, vec!["Nobody else I would tell.".into()]);
    p.persona = Arc::new(persona);
    let a = appraisal(&[], &[(Move::OpenQuestion, 1.0)]);
    let mut mem = SpeakerMemory::default();
    assert!(say(&p, &mut mem, "Who else is around to help?", &a, 45, 0).contains("my husband"));
    let who = say(
        &p,
        &mut mem,
        "Who else knows how you're feeling?",
        &a,
        45,
        0,
    );
    assert!(who.contains("Nobody else I would tell."), "{who}");
}
