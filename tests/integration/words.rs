//! Words for people (issue 15): every user-facing name prints as the lowercase word the configs
//! and the JSONL use, never a Debug form such as `Some(MaxTurns)`, `Moderate` or `Behavior`.
//! The model-backed commands (chat, eval, train) are checked in their own tests in cli.rs and
//! train_cli.rs with the same `assert_words_for_people`.

use empathy_gym::episode::End;
use empathy_gym::profile::{Difficulty, Split};
use empathy_gym::reward::{Aggregate, RewardMode};

use super::common::*;

/// Display gives exactly the serde word, so what a person reads is what the files say.
fn same_as_serde<T: serde::Serialize + std::fmt::Display>(values: &[T]) {
    for v in values {
        assert_eq!(serde_json::to_string(v).unwrap(), format!("\"{v}\""));
    }
}

#[test]
fn enums_display_as_their_serde_words() {
    same_as_serde(&[End::Resolved, End::Left, End::MaxTurns]);
    same_as_serde(&Difficulty::ALL);
    same_as_serde(&[RewardMode::Behavior, RewardMode::Trait]);
    same_as_serde(&[Aggregate::Final, Aggregate::Mean, Aggregate::Dense]);
    same_as_serde(&[Split::Train, Split::Test]);
}

#[test]
fn the_checker_catches_debug_forms() {
    for bad in [
        "end Some(MaxTurns)",
        "── line 1 · a:b · Moderate · seed 3",
        "Behavior reward 0.5",
        "(Train, moderate)",
    ] {
        let caught = std::panic::catch_unwind(|| assert_words_for_people("probe", bad));
        assert!(caught.is_err(), "not caught: {bad}");
    }
    assert_words_for_people(
        "probe",
        "── line 1 · a:b · moderate · seed 3 · behavior reward 0.500 · end max_turns",
    );
}

#[test]
fn validate_rollout_and_replay_print_words_for_people() {
    let dir = temp_dir();
    let script = dir.path().join("script.yaml");
    std::fs::write(
        &script,
        "replies:\n  - \"That sounds so hard. What has been the worst part?\"\n  - \"You should just move on.\"\n",
    )
    .unwrap();
    let log = dir.path().join("run.jsonl");
    let log_s = log.to_str().unwrap();
    let policy = format!("script:{}", script.display());
    let rescored = dir.path().join("rescored.jsonl");
    let runs: [(&str, Vec<&str>); 5] = [
        ("validate", vec!["validate"]),
        (
            "rollout",
            vec![
                "rollout",
                "--policy",
                &policy,
                "--split",
                "test",
                "--difficulty",
                "moderate",
                "--seed",
                "3",
                "--out",
                log_s,
            ],
        ),
        ("replay show", vec!["replay", "show", log_s]),
        ("replay verify", vec!["replay", "verify", log_s]),
        (
            "replay rescore",
            vec![
                "replay",
                "rescore",
                log_s,
                "--difficulty",
                "hard",
                "--reward-mode",
                "trait",
                "--out",
                rescored.to_str().unwrap(),
            ],
        ),
    ];
    for (what, args) in runs {
        let o = eg(&args);
        let out = output_of(&o);
        assert!(o.status.success(), "{what}: {out}");
        assert_words_for_people(what, &out);
    }
    let show = output_of(&eg(&["replay", "show", log_s]));
    assert!(
        show.contains("· moderate ·") && show.contains("behavior reward"),
        "{show}"
    );
}
