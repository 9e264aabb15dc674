//! The frozen honest dialogues (tests/data/honest-listener/) under today's rules: the template and
//! narration detectors never fire on a skilled listener's own replies, the wording head costs at
//! most 2% of them, and honest listening ends above the static listener script on the same users.

use empathy_gym::episode::{EpisodeRecord, ScriptedPolicy, Turn};
use empathy_gym::profile::ProfileId;
use empathy_gym::replay::{rerun, RerunSettings};
use empathy_gym::reward::RewardMode;

use super::common::*;

fn frozen() -> Vec<EpisodeRecord> {
    let path = root().join("tests/data/honest-listener/episodes.jsonl");
    std::fs::read_to_string(&path)
        .expect("the fixture")
        .lines()
        .map(|l| serde_json::from_str(l).expect("an episode record"))
        .collect()
}

#[test]
fn honest_replies_are_not_templates_and_beat_the_static_listener() {
    let logged = frozen();
    assert_eq!(logged.len(), 20);
    let again: Vec<EpisodeRecord> = logged
        .iter()
        .map(|r| rerun(simulator(), catalog(), r, &RerunSettings::default()).unwrap())
        .collect();
    let dropped = "my words dropped where they don't belong";
    let replies = again
        .iter()
        .map(|r| r.assistant_turns().len())
        .sum::<usize>();
    let cost: usize = again
        .iter()
        .flat_map(|r| &r.turns)
        .filter(|t| matches!(t, Turn::User { appraisal: Some(a), .. } if a.reasons.iter().any(|r| r == dropped)))
        .count();
    let slotted: usize = again
        .iter()
        .flat_map(|r| &r.turns)
        .filter(|t| matches!(t, Turn::User { appraisal: Some(a), .. } if a.components.contains_key("slot_filled")))
        .count();
    // The bound every detector is held to on honest replies (docs/REWARD.md).
    for (what, n) in [
        ("lost their landing to misplaced words", cost),
        ("read as slot-filled frames", slotted),
    ] {
        assert!(
            n as f64 <= 0.02 * replies as f64,
            "{n} of {replies} honest replies {what}"
        );
    }
    for r in &again {
        for t in &r.turns {
            if let Turn::User {
                appraisal: Some(a), ..
            } = t
            {
                for name in ["narration", "template"] {
                    assert!(
                        !a.components.contains_key(name),
                        "{name} on an honest reply to {}:{}: {a:?}",
                        r.profile.scenario,
                        r.profile.persona
                    );
                }
            }
        }
    }
    // The static listener on the same users, difficulty and seeds.
    let script = root().join("configs/baselines/listener.yaml");
    let mut listener = ScriptedPolicy::load(&script)
        .unwrap()
        .with_scenarios(catalog().scenarios.clone());
    let difficulty = logged[0].profile.difficulty;
    assert!(logged.iter().all(|r| r.profile.difficulty == difficulty));
    let cases: Vec<(ProfileId, u64)> = logged
        .iter()
        .map(|r| {
            let id = ProfileId {
                scenario: r.profile.scenario.clone(),
                persona: r.profile.persona.clone(),
            };
            (id, r.simulator.seed)
        })
        .collect();
    let scripted = play_seeded(&cases, difficulty, RewardMode::Behavior, &mut listener);
    let (honest, stat) = (mean_final(&again), mean_final(&scripted));
    assert!(
        honest > stat,
        "honest listening {honest:.1} against the static listener {stat:.1}"
    );
}
