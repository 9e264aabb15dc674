//! The frozen honest dialogues (tests/data/honest-listener/) under today's rules: the learned
//! detectors of templates never fire on a skilled listener's own replies, and honest listening
//! ends above the static listener script on the same users.

use empathy_gym::episode::{
    rollout, EpisodeJob, EpisodeRecord, RolloutOptions, ScriptedPolicy, Turn,
};
use empathy_gym::profile::{KnobOverrides, ProfileId};
use empathy_gym::replay::{rerun, RerunSettings};

use super::common::*;

fn frozen() -> Vec<EpisodeRecord> {
    let path = root().join("tests/data/honest-listener/episodes.jsonl");
    std::fs::read_to_string(&path)
        .expect("the fixture")
        .lines()
        .map(|l| serde_json::from_str(l).expect("an episode record"))
        .collect()
}

fn mean_final_of(records: &[EpisodeRecord]) -> f64 {
    records
        .iter()
        .map(|r| f64::from(r.final_emotion()))
        .sum::<f64>()
        / records.len() as f64
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
    let jobs: Vec<EpisodeJob> = logged
        .iter()
        .enumerate()
        .map(|(i, r)| EpisodeJob {
            profile: catalog()
                .profile(
                    &ProfileId {
                        scenario: r.profile.scenario.clone(),
                        persona: r.profile.persona.clone(),
                    },
                    r.profile.difficulty,
                    &KnobOverrides::default(),
                )
                .unwrap(),
            seed: r.simulator.seed,
            step: 0,
            group: i as u64,
            sample: 0,
        })
        .collect();
    let opts = RolloutOptions {
        run: "test".into(),
        ..Default::default()
    };
    let scripted = rollout(simulator(), &mut listener, &jobs, &opts, |_| Ok(())).unwrap();
    let (honest, stat) = (mean_final_of(&again), mean_final_of(&scripted));
    assert!(
        honest > stat,
        "honest listening {honest:.1} against the static listener {stat:.1}"
    );
}
