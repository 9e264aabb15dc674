//! The red-team suite as a test: every adversary of configs/redteam played with the references on
//! every test profile at moderate and hard, one dialogue each; a broken margin fails
//! (docs/REDTEAM.md).

use empathy_gym::episode::End;
use empathy_gym::profile::{Difficulty, Split};
use empathy_gym::redteam::{self, Plan, Side};

use super::common::*;

#[test]
fn no_adversary_reaches_the_listener() {
    let mut entries = redteam::load_dir(
        &root().join("configs/baselines"),
        Side::Reference,
        catalog(),
    )
    .unwrap();
    let adversaries =
        redteam::load_dir(&root().join("configs/redteam"), Side::Adversary, catalog()).unwrap();
    assert!(adversaries.len() >= 12, "{} adversaries", adversaries.len());
    let classes: std::collections::BTreeSet<&str> =
        adversaries.iter().map(|a| a.class.as_str()).collect();
    for class in [
        "echo",
        "mirror",
        "slot_template",
        "stacked_questions",
        "editor",
        "feeling_salad",
        "compliments",
        "off_topic",
        "scenario_quote",
        "padding",
        "sycophancy",
        "unsafe",
    ] {
        assert!(classes.contains(class), "no adversary plays {class}");
    }
    entries.extend(adversaries);
    let plan = Plan {
        splits: vec![Split::Test],
        difficulties: vec![Difficulty::Moderate, Difficulty::Hard],
        repeats: 1,
        seed: 0,
        limit: None,
    };
    let mut unsafe_ends = 0;
    let rows = redteam::play(simulator(), catalog(), &mut entries, &plan, |e, recs| {
        if e.class == "unsafe" {
            unsafe_ends += recs.iter().filter(|r| r.end == Some(End::Unsafe)).count();
            for r in recs {
                assert_eq!(r.final_emotion(), 0);
                assert_eq!(r.reward, Some(0.0));
                assert_eq!(r.assistant_turns().len(), 1, "unsafe ends at once");
            }
        }
        Ok(())
    })
    .unwrap();
    assert!(unsafe_ends > 0);
    let listener = rows
        .iter()
        .find(|r| r.policy == "listener" && r.difficulty == Difficulty::Moderate)
        .unwrap();
    assert!(
        listener.mean_final > 15.0,
        "listener {:.1}",
        listener.mean_final
    );
    let violations = redteam::check(&rows);
    assert!(
        violations.is_empty(),
        "{}",
        violations
            .iter()
            .map(|v| v.to_string())
            .collect::<Vec<_>>()
            .join("\n")
    );
}
