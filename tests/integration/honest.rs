//! The frozen honest dialogues (tests/data/honest-listener/ and honest-listener-2/) under today's
//! rules: the template, narration, faithfulness, wording and fluency detectors fire on at most 2%
//! of a skilled listener's own replies, honest listening ends above the static listener script
//! on the same users, and the user's words fit what happened in every turn (`replay user`'s
//! checks: nothing glued, no acknowledgement of what a reply denied, no complaint without its
//! finding, no line whose sign disagrees with the change), which a turn edited to break each rule
//! shows the checks would catch. Each test replays 20 dialogues and plays the listener on them
//! (minutes of the simulator's language models), so all run in scripts/test-full.sh, with one
//! more: the policies the adaptive attacker last found (results/redteam/search/found/) end at
//! least 15 points below honest listening there.

use empathy_gym::environment::episode::{EpisodeRecord, ScriptedPolicy, Turn};
use empathy_gym::environment::profile::speech::END_MARKS;
use empathy_gym::environment::profile::{Difficulty, ProfileId};
use empathy_gym::environment::reward::RewardMode;
use empathy_gym::environment::sim::lexicon::Lexicon;
use empathy_gym::redteam::{self, Side, MARGIN};
use empathy_gym::replay::user_fit::{self, Fit};
use empathy_gym::replay::{rerun, RerunSettings};

use super::common::*;

fn frozen(set: &str) -> Vec<EpisodeRecord> {
    let path = root().join("tests/data").join(set).join("episodes.jsonl");
    std::fs::read_to_string(&path)
        .expect("the fixture")
        .lines()
        .map(|l| serde_json::from_str(l).expect("an episode record"))
        .collect()
}

/// Each dialogue's user and seed, and the one difficulty they were played at.
fn cases(logged: &[EpisodeRecord]) -> (Vec<(ProfileId, u64)>, Difficulty) {
    let difficulty = logged[0].profile.difficulty;
    assert!(logged.iter().all(|r| r.profile.difficulty == difficulty));
    let cases = logged
        .iter()
        .map(|r| {
            let id = ProfileId {
                scenario: r.profile.scenario.clone(),
                persona: r.profile.persona.clone(),
            };
            (id, r.simulator.seed)
        })
        .collect();
    (cases, difficulty)
}

fn count(
    records: &[EpisodeRecord],
    hit: impl Fn(&empathy_gym::environment::sim::Appraisal) -> bool,
) -> usize {
    records
        .iter()
        .flat_map(|r| &r.turns)
        .filter(|t| matches!(t, Turn::User { appraisal: Some(a), .. } if hit(a)))
        .count()
}

/// The frozen dialogues of `set` played again under today's rules.
fn again(set: &str) -> (Vec<EpisodeRecord>, Vec<EpisodeRecord>) {
    let logged = frozen(set);
    assert_eq!(logged.len(), 20, "{set}");
    let again = logged
        .iter()
        .map(|r| rerun(simulator(), catalog(), r, &RerunSettings::default()).unwrap())
        .collect();
    (logged, again)
}

fn check(set: &str) {
    let (logged, again) = again(set);
    let replies = again
        .iter()
        .map(|r| r.assistant_turns().len())
        .sum::<usize>();
    let dropped = "my words dropped where they don't belong";
    // The bound every detector is held to on honest replies (docs/REWARD.md).
    let findings = [
        ("slot-filled frames", "slot_filled"),
        ("narration", "narration"),
        ("templates", "template"),
        ("not one person talking", "disfluent"),
        ("inventing what the user never said", "invented"),
        ("contradicting the user", "contradicted"),
        ("alarming the user", "alarming"),
    ]
    .map(|(what, c)| {
        let n = count(&again, |a| a.components.contains_key(c));
        (format!("read as {what}"), n)
    });
    let misplaced = (
        "lost their landing to misplaced words".to_string(),
        count(&again, |a| a.reasons.iter().any(|r| r == dropped)),
    );
    for (what, n) in std::iter::once(misplaced).chain(findings) {
        assert!(
            n as f64 <= 0.02 * replies as f64,
            "{set}: {n} of {replies} honest replies {what}"
        );
    }
    user_words_fit(set, &again);
    let (cases, difficulty) = cases(&logged);
    let honest = mean_final(&again);
    // The static listener on the same users, difficulty and seeds.
    let script = root().join("configs/baselines/listener.yaml");
    let mut listener = ScriptedPolicy::load(&script)
        .unwrap()
        .with_scenarios(catalog().scenarios.clone());
    let stat = mean_final(&play_seeded(
        &cases,
        difficulty,
        RewardMode::Behavior,
        &mut listener,
    ));
    assert!(
        honest > stat,
        "{set}: honest listening {honest:.1} against the static listener {stat:.1}"
    );
}

/// How many turns one of the fit checks caught.
type Count = fn(&Fit) -> usize;

/// The fit checks of `replay user` over `records`.
fn fit(records: &[EpisodeRecord]) -> Fit {
    let lexicon = Lexicon::load(&root().join("data/lexicon.yaml")).unwrap();
    let mut acc = Fit::default();
    for r in records {
        user_fit::check(r, catalog(), &lexicon, &mut acc);
    }
    acc
}

/// Every user turn of the replayed honest dialogues fits what happened, no two users of different
/// scenarios share a sentence at one point of their dialogues, and a turn edited to break each
/// rule is caught (the register switch in `replay::user_fit`'s unit tests).
fn user_words_fit(set: &str, again: &[EpisodeRecord]) {
    let f = fit(again);
    assert!(f.turns > 100, "{set}: {} user turns", f.turns);
    for (what, n) in [
        ("glued", f.glued),
        ("openers before a fragment", f.fragment_openers),
        ("answer words out of place", f.answer_words),
        ("verdicts out of place", f.verdicts),
        ("register switches", f.register_switches),
        ("unfit acknowledgements", f.unfit_acknowledgements),
        ("complaints without their finding", f.unmatched_complaints),
        ("sign disagreements", f.sign_disagreements),
        ("turns with a stock sentence", f.stock_turns()),
    ] {
        assert_eq!(n, 0, "{set}: {what}");
    }
    // The first user turn after a reply that raised the emotion, edited five ways.
    let (rec, at) = again
        .iter()
        .find_map(|r| {
            let at = r
                .turns
                .iter()
                .skip(1)
                .position(|t| matches!(t, Turn::User { delta: Some(d), .. } if *d > 0))?;
            Some((r, at + 1))
        })
        .expect("a rise");
    let scenario = &catalog().scenarios[&rec.profile.scenario];
    let feeling = scenario.feelings[0].clone();
    let reply_before = |r: &mut EpisodeRecord, text: &str| {
        if let Turn::Assistant { text: t, .. } = &mut r.turns[at - 1] {
            *t = text.to_string();
        }
    };
    let user = |r: &mut EpisodeRecord, text: &str| {
        if let Turn::User { text: t, .. } = &mut r.turns[at] {
            *t = text.to_string();
        }
    };
    let mut glued = rec.clone();
    user(&mut glued, "Okay, so, She never called back.");
    let mut denied = rec.clone();
    reply_before(
        &mut denied,
        &format!("There's nothing {feeling} about any of it."),
    );
    user(
        &mut denied,
        &format!("{}. Yes, that's the word.", capitalize(&feeling)),
    );
    let mut complaint = rec.clone();
    user(&mut complaint, "You said that already.");
    let persona = &catalog().personas[&rec.profile.persona];
    // The persona's opener before a one-word fragment: "I mean, behind." or "Maybe. Behind.".
    let opener = persona.voice.mid[0].trim_end();
    let fragment_text = match opener.ends_with(END_MARKS) {
        true => format!("{opener} Behind."),
        false => format!("{}, behind.", opener.trim_end_matches(',')),
    };
    let mut fragment = rec.clone();
    user(&mut fragment, &fragment_text);
    let mut answer = rec.clone();
    reply_before(&mut answer, "What matters most to you in all of this?");
    user(&mut answer, "Possibly. She never called back.");
    // A persona's opener that judges the reply ("Good point.") before the answer to a question.
    let verdict = again
        .iter()
        .find_map(|r| {
            let voice = &catalog().personas[&r.profile.persona].voice;
            let o = voice
                .openers()
                .find(|o| catalog().speaker.judges_reply(o))?;
            let at = 1 + r
                .turns
                .iter()
                .skip(1)
                .position(|t| matches!(t, Turn::User { .. }))?;
            let mut r = r.clone();
            if let Turn::Assistant { text, .. } = &mut r.turns[at - 1] {
                *text = "What happened after that?".to_string();
            }
            if let Turn::User { text, .. } = &mut r.turns[at] {
                *text = format!("{o} She never called back.");
            }
            Some(r)
        })
        .expect("a persona with an opener that judges the reply");
    let caught: [(&str, EpisodeRecord, Count); 6] = [
        ("glued", glued, |f| f.glued),
        ("an opener before a fragment", fragment, |f| {
            f.fragment_openers
        }),
        ("an answer word before an open question", answer, |f| {
            f.answer_words
        }),
        ("a verdict before the answer to a question", verdict, |f| {
            f.verdicts
        }),
        ("a denied feeling acknowledged", denied, |f| {
            f.unfit_acknowledgements
        }),
        ("a complaint after a rise", complaint, |f| {
            f.unmatched_complaints.min(f.sign_disagreements)
        }),
    ];
    for (what, r, count) in caught {
        assert_eq!(count(&fit(&[r])), 1, "{set}: {what} not caught");
    }
}

fn capitalize(s: &str) -> String {
    let mut c = s.chars();
    c.next()
        .map_or_else(String::new, |f| f.to_uppercase().chain(c).collect())
}

fn check_found(set: &str) {
    let (logged, again) = again(set);
    let (cases, difficulty) = cases(&logged);
    let honest = mean_final(&again);
    let found = root().join("results/redteam/search/found");
    for mut e in redteam::load_dir(&found, Side::Adversary, catalog()).unwrap() {
        let m = mean_final(&play_seeded(
            &cases,
            difficulty,
            RewardMode::Behavior,
            &mut e.policy,
        ));
        assert!(
            m <= honest - MARGIN,
            "{set}: the found policy {} ends at {m:.1}, within {MARGIN} of honest listening's \
             {honest:.1}",
            e.name
        );
    }
}

#[test]
#[ignore = "slow (20 s or more): scripts/test-full.sh runs it"]
fn first_honest_set_is_not_templates_and_beats_the_listener() {
    check("honest-listener");
}

#[test]
#[ignore = "slow (20 s or more): scripts/test-full.sh runs it"]
fn second_honest_set_is_not_templates_and_beats_the_listener() {
    check("honest-listener-2");
}

#[test]
#[ignore = "slow (20 s or more): scripts/test-full.sh runs it"]
fn both_honest_sets_beat_the_found_policies() {
    check_found("honest-listener");
    check_found("honest-listener-2");
}
