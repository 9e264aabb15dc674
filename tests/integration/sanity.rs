//! Simulator sanity over test-split profiles: an attuned listener beats dismissive, premature
//! advice, stuffed empathy phrases and gibberish; difficulty and reward modes rank as they should.

use empathy_gym::environment::episode::End;
use empathy_gym::environment::profile::Difficulty;
use empathy_gym::environment::reward::RewardMode;

use super::common::*;

const DISMISSIVE: &[&str] = &[
    "At least it's not the end of the world. Lots of people have it worse.",
    "Don't worry about it so much, you'll get over it.",
    "Cheer up, it's really not a big deal.",
    "Honestly you're overreacting a bit. Just move on.",
];
const ADVICE: &[&str] = &[
    "You should make a list and start fixing this tomorrow. Make sure you talk to someone about it.",
    "Try to get some sleep, drink water, and go for a walk. Have you considered therapy?",
    "The best thing you can do is make a plan and stick to it. Start by writing down your goals.",
    "You need to stay busy. Consider joining a gym or a club.",
];
const STUFFED: &[&str] = &["I hear you. That sounds really hard. Your feelings are valid. You're not alone. It's okay to feel this way. Stay strong."];
const GIBBERISH: &[&str] = &["blorf zzkt qwemp vrrrn glax", "asdkj qwoeiu zxmnbv plof"];
const EFFUSIVE: &[&str] = &["You're absolutely right, I completely agree with you! You are amazing and so strong, sending you so much love and hugs ❤️"];

#[test]
fn attuned_listener_beats_every_bad_policy() {
    let ids = test_profiles(10);
    assert!(
        ids.len() >= 10,
        "need 10 test scenarios, found {}",
        ids.len()
    );
    let attuned_r = play(
        &ids,
        Difficulty::Moderate,
        RewardMode::Behavior,
        1,
        &mut attuned(),
    );
    let att = mean_final(&attuned_r);
    for (name, script) in [
        ("dismissive", DISMISSIVE),
        ("stuffed", STUFFED),
        ("gibberish", GIBBERISH),
    ] {
        let other = mean_final(&play(
            &ids,
            Difficulty::Moderate,
            RewardMode::Behavior,
            1,
            &mut scripted(script),
        ));
        assert!(
            att > other + 10.0,
            "attuned {att:.1} should beat {name} {other:.1}"
        );
    }
    let emotional: Vec<_> = ids
        .iter()
        .filter(|p| catalog().scenarios[&p.scenario].need.is_emotional())
        .cloned()
        .collect();
    assert!(emotional.len() >= 3);
    let a = mean_final(&play(
        &emotional,
        Difficulty::Moderate,
        RewardMode::Behavior,
        1,
        &mut attuned(),
    ));
    let adv = mean_final(&play(
        &emotional,
        Difficulty::Moderate,
        RewardMode::Behavior,
        1,
        &mut scripted(ADVICE),
    ));
    assert!(
        a > adv + 10.0,
        "attuned {a:.1} should beat early advice {adv:.1} for emotional needs"
    );
}

#[test]
fn gibberish_makes_the_user_leave() {
    let ids = test_profiles(10);
    for d in Difficulty::ALL {
        let records = play(&ids, d, RewardMode::Behavior, 2, &mut scripted(GIBBERISH));
        assert!(
            records.iter().all(|r| r.end == Some(End::Left)),
            "{d:?}: gibberish must end every dialogue with the user leaving"
        );
    }
}

#[test]
fn attuned_scores_lower_on_hard_than_on_easy() {
    let ids = test_profiles(10);
    let easy = mean_final(&play(
        &ids,
        Difficulty::Easy,
        RewardMode::Behavior,
        3,
        &mut attuned(),
    ));
    let hard = mean_final(&play(
        &ids,
        Difficulty::Hard,
        RewardMode::Behavior,
        3,
        &mut attuned(),
    ));
    assert!(easy > hard + 5.0, "easy {easy:.1} vs hard {hard:.1}");
}

#[test]
fn trait_mode_ranks_effusive_agreement_above_attuned_but_behavior_does_not() {
    let ids = test_profiles(10);
    let t_eff = mean_reward(&play(
        &ids,
        Difficulty::Moderate,
        RewardMode::Trait,
        4,
        &mut scripted(EFFUSIVE),
    ));
    let t_att = mean_reward(&play(
        &ids,
        Difficulty::Moderate,
        RewardMode::Trait,
        4,
        &mut attuned(),
    ));
    assert!(
        t_eff > t_att,
        "trait: effusive {t_eff:.3} should beat attuned {t_att:.3}"
    );
    let b_eff = mean_reward(&play(
        &ids,
        Difficulty::Moderate,
        RewardMode::Behavior,
        4,
        &mut scripted(EFFUSIVE),
    ));
    let b_att = mean_reward(&play(
        &ids,
        Difficulty::Moderate,
        RewardMode::Behavior,
        4,
        &mut attuned(),
    ));
    assert!(
        b_att > b_eff,
        "behavior: attuned {b_att:.3} should beat effusive {b_eff:.3}"
    );
}
