//! Words for people: every user-facing name prints as the lowercase word the configs
//! and the JSONL use, never a Debug form such as `Some(MaxTurns)`, `Moderate` or `Behavior`, nor
//! a converter's title-cased model name ("Smollm2 135M 8k Lc100K Mix1 Ep2"). The Rust names the
//! check looks for are read from src/ (source_enums.rs). The model-backed commands (chat, eval,
//! train, export) are checked in their own tests in cli.rs, model_real.rs and train_cli.rs with
//! the same `assert_words_for_people`; sweep run and collect in sweep.rs.

use std::collections::BTreeSet;

use empathy_gym::environment::episode::End;
use empathy_gym::environment::profile::{Difficulty, HiddenNeed, QuestionKind, Reaction, Split};
use empathy_gym::environment::reward::{Aggregate, RewardMode};
use empathy_gym::environment::sim::detect::UnsafeKind;
use empathy_gym::environment::sim::llm::Backend;
use empathy_gym::environment::sim::perceive::Pool;
use empathy_gym::environment::sim::{Move, SimulatorKind};
use empathy_gym::eval::factual::{Belief, Context, Outcome};
use empathy_gym::learning::credit::{AdvantageScale, Algorithm, Credit};
use empathy_gym::learning::optimize::{Aggregation, PolicyLoss};
use empathy_gym::model::Role;
use empathy_gym::replay::By;
use serde::de::DeserializeOwned;
use serde::Serialize;

use super::common::*;
use super::source_enums::{snake_case, source_enums, word_variant_names};

/// Checks that `print` gives, for every variant of the enum `name` as declared in src/, exactly
/// the word serde reads and writes for it; returns `name`.
fn prints_serde_words<T: Serialize + DeserializeOwned>(
    name: &'static str,
    print: fn(&T) -> String,
) -> &'static str {
    let e = source_enums()
        .iter()
        .find(|e| e.name == name)
        .unwrap_or_else(|| panic!("no pub enum {name} in src/"));
    assert!(!e.variants.is_empty(), "{name}: no variants read");
    for (v, _) in &e.variants {
        let word = e.serde_word(v);
        let quoted = format!("\"{word}\"");
        let value: T = serde_json::from_str(&quoted)
            .unwrap_or_else(|err| panic!("{name}::{v}: serde does not read {quoted}: {err}"));
        assert_eq!(
            serde_json::to_string(&value).unwrap(),
            quoted,
            "{name}::{v}"
        );
        assert_eq!(
            print(&value),
            word,
            "{name}::{v} ({}) prints other than its serde word",
            e.file
        );
    }
    name
}

/// Serde word enums that are never printed for people by a name of their own, and why.
const NOT_PRINTED: [(&str, &str); 13] = [
    ("LoraTarget", "config and adapter files only"),
    ("Arch", "model config only"),
    ("RopeLayout", "model config only"),
    ("MlpAct", "model config only"),
    ("Character", "persona files only"),
    ("Verbosity", "persona files only"),
    (
        "FactualVerdict",
        "shown as its reason sentence (`FactualVerdict::reason`)",
    ),
    ("DeviceKind", "train config only (src/learning/train)"),
    ("WeightDtype", "train config only (src/learning/train)"),
    ("CpuMatmul", "train config only (src/learning/train)"),
    ("Stat", "results/tables.yaml only"),
    ("Agg", "results/tables.yaml only"),
    (
        "Bucket",
        "RLVER's letters S A B C F, the same in files and on screen",
    ),
];

/// Every enum whose values are words in the configs and the JSONL prints exactly those words,
/// through Display or its word method. The list is checked against src/: a new serde enum must
/// be added here or to NOT_PRINTED, so it cannot reach a person as a Rust name unnoticed.
#[test]
fn enums_display_as_their_serde_words() {
    let checked: BTreeSet<&str> = [
        prints_serde_words::<End>("End", ToString::to_string),
        prints_serde_words::<Difficulty>("Difficulty", ToString::to_string),
        prints_serde_words::<Split>("Split", ToString::to_string),
        prints_serde_words::<RewardMode>("RewardMode", ToString::to_string),
        prints_serde_words::<Aggregate>("Aggregate", ToString::to_string),
        prints_serde_words::<Algorithm>("Algorithm", ToString::to_string),
        prints_serde_words::<Credit>("Credit", ToString::to_string),
        prints_serde_words::<PolicyLoss>("PolicyLoss", ToString::to_string),
        prints_serde_words::<AdvantageScale>("AdvantageScale", ToString::to_string),
        prints_serde_words::<Aggregation>("Aggregation", ToString::to_string),
        prints_serde_words::<HiddenNeed>("HiddenNeed", |v| v.as_str().into()),
        prints_serde_words::<Move>("Move", |v| v.as_str().into()),
        prints_serde_words::<Backend>("Backend", |v| v.as_str().into()),
        prints_serde_words::<Role>("Role", |v| v.as_str().into()),
        prints_serde_words::<Context>("Context", |v| v.name().into()),
        prints_serde_words::<Belief>("Belief", |v| v.name().into()),
        prints_serde_words::<Outcome>("Outcome", |v| v.name().into()),
        prints_serde_words::<SimulatorKind>("SimulatorKind", ToString::to_string),
        prints_serde_words::<UnsafeKind>("UnsafeKind", |v| v.as_str().into()),
        prints_serde_words::<Reaction>("Reaction", |v| v.as_str().into()),
        prints_serde_words::<QuestionKind>("QuestionKind", |v| v.as_str().into()),
        prints_serde_words::<Pool>("Pool", |v| v.as_str().into()),
    ]
    .into();
    let exempt: BTreeSet<&str> = NOT_PRINTED.iter().map(|(n, _)| *n).collect();
    let word_enums: BTreeSet<&str> = source_enums()
        .iter()
        .filter(|e| e.serde && !e.tagged && e.unit_only)
        .map(|e| e.name.as_str())
        .collect();
    let listed: BTreeSet<&str> = checked.union(&exempt).copied().collect();
    assert_eq!(
        word_enums, listed,
        "serde word enums in src/ vs. those checked here or listed in NOT_PRINTED"
    );
    // Word enums without serde: `replay stats --by` prints its dimensions by Display.
    for b in By::ALL {
        assert_eq!(b.to_string(), snake_case(&format!("{b:?}")));
    }
}

/// The derived list holds the Rust names of the enums an audit of the printed words named.
#[test]
fn the_rust_names_checked_are_read_from_src() {
    let names = word_variant_names();
    for v in [
        "MaxTurns",
        "Resolved",
        "Left",
        "Easy",
        "Moderate",
        "Hard",
        "Auto",
        "Behavior",
        "Trait",
        "Final",
        "Mean",
        "Dense",
        "Train",
        "Test",
        "Grpo",
        "Ppo",
        "Rloo",
        "ReinforcePp",
        "Clip",
        "Gspo",
        "Cispo",
        "Episode",
        "Turn",
        "Group",
        "Batch",
        "TokenMean",
        "Appraiser",
        "Llm",
        "Waiting",
        "Profile",
    ] {
        assert!(names.contains(v), "{v} is not among {names:?}");
    }
    assert!(!names.contains("S"), "one-letter names are not checked");
}

fn caught(line: &str) -> bool {
    debug_form(line).is_some()
}

#[test]
fn the_checker_catches_debug_forms() {
    for bad in [
        "end Some(MaxTurns)",
        "── line 1 · a:b · Moderate · seed 3",
        "Behavior reward 0.5",
        "(Train, moderate)",
        // The GGUF's general.name, which `train` and `chat` once showed for SmolLM2.
        "training Smollm2 135M 8k Lc100K Mix1 Ep2 on 8 profiles (train, moderate)",
        "Talking with Mix1 (end with /quit or Ctrl-D).",
        "model Qwen2",
        "algorithm ReinforcePp, loss Gspo",
        "cell 1: started Training { step: 1, of: 4 }",
        "difficulty auto (Auto)",
        "scale None",
    ] {
        assert!(caught(bad), "not caught: {bad}");
    }
    // Every Rust name read from src/, alone or inside a word with - or _.
    for v in word_variant_names() {
        assert!(caught(&format!("a {v} b")), "{v} not caught");
        assert!(
            caught(&format!("a x-{v}_y b")),
            "{v} in a compound not caught"
        );
    }
    for good in [
        "── line 1 · a:b · moderate · seed 3 · behavior reward 0.500 · end max_turns",
        "training SmolLM2-135M-Instruct.Q4_1 on 8 profiles (train, moderate): 2 steps",
        "serve-model listening on http://127.0.0.1:8800 (model SmolLM2-135M-Instruct.Q4_1)",
        "SmolLM2-135M has 135M parameters and an 8k context; Q4_1 weights, BF16 on an H100",
        "wrote results/sweeps/quick/sweep.sbatch: 4 cells (output in /tmp/x/slurm/)",
        "| 0 | difficulty=moderate,seed=0 | done (6 steps) |",
        "mean 0.41 ± 0.02 [0.38, 0.44], McNemar p = 0.5, 1e-6",
        "algorithm reinforce_pp, loss gspo, credit turn, scale none",
    ] {
        assert!(!caught(good), "flagged: {good}");
    }
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
                "--limit",
                "8",
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

/// `replay html`'s line, `export`'s is in train_cli.rs.
#[test]
fn replay_html_prints_words_for_people() {
    let dir = temp_dir();
    let log = dir.path().join("run.jsonl");
    scripted_rollout(
        dir.path(),
        &["That sounds hard. What happened?"],
        "hard",
        5,
        &log,
    );
    let page = dir.path().join("report.html");
    let o = eg(&[
        "replay",
        "html",
        log.to_str().unwrap(),
        "--out",
        page.to_str().unwrap(),
    ]);
    let out = output_of(&o);
    assert!(o.status.success() && out.contains("written to"), "{out}");
    assert_words_for_people("replay html", &out);
}

/// `sweep slurm` (without --submit: it only writes the script) and `sweep status` over cells in
/// each state: done, failed, started and waiting.
#[test]
fn sweep_slurm_and_status_print_words_for_people() {
    use empathy_gym::learning::train::run_files::CONFIG_FILE;
    use empathy_gym::sweep::state::{write_done, FAILED_FILE};
    use empathy_gym::sweep::{DoneMarker, Sweep};
    let model = crate::train::tiny_model_dir().unwrap();
    let dir = temp_dir();
    let file = crate::sweep::sweep_file(
        dir.path(),
        model.path(),
        "words",
        2,
        "  env.difficulty: [moderate, hard]\n  algorithm: [grpo, reinforce_pp]\n",
        "[0]",
    );
    let o = eg(&["sweep", "slurm", file.to_str().unwrap()]);
    let out = output_of(&o);
    assert!(o.status.success() && out.contains("4 cells"), "{out}");
    assert_words_for_people("sweep slurm", &out);

    let sweep = Sweep::load(&file).unwrap();
    let cells: Vec<_> = sweep.cells.iter().map(|c| sweep.cell_dir(c)).collect();
    for d in &cells[..3] {
        std::fs::create_dir_all(d).unwrap();
    }
    // A started cell: its resolved config is written, no step finished yet.
    let configs = sweep.validate().unwrap();
    std::fs::write(cells[2].join(CONFIG_FILE), configs[2].to_yaml().unwrap()).unwrap();
    let marker = DoneMarker {
        cell: sweep.cells[0].name.clone(),
        steps: 2,
        eval_s: 1.5,
    };
    write_done(&cells[0], &marker).unwrap();
    std::fs::write(
        cells[1].join(FAILED_FILE),
        "training: the model ran out of memory\n",
    )
    .unwrap();
    let o = eg(&["sweep", "status", sweep.dir.to_str().unwrap()]);
    let out = output_of(&o);
    assert!(o.status.success(), "{out}");
    for state in [
        "done (2 steps)",
        "failed: training",
        "started: step 0 of 2",
        "waiting",
    ] {
        assert!(out.contains(state), "{state} missing: {out}");
    }
    assert!(out.contains("1 of 4 cells done"), "{out}");
    assert_words_for_people("sweep status", &out);
}

/// A server's start-up and shutdown lines. SIGTERM goes right after the "listening" line: the
/// servers install their handlers before printing it, so they must stop gracefully even then (a
/// handler installed lazily, when axum first polled it, let such a signal kill the process).
fn served(args: &[&str]) -> String {
    let server = super::servers::Server::start(args);
    let first = server.first_line.clone();
    let stopped = server.stop();
    let out = format!("{first}{}{}", stopped.rest, stopped.stderr);
    assert!(stopped.ok && !stopped.rest.is_empty(), "{out}");
    out
}

#[test]
fn serve_env_and_serve_model_print_words_for_people() {
    let out = served(&["serve-env"]);
    assert_words_for_people("serve-env", &out);
    // A GGUF is named by its file stem, not by its general.name ("tiny" in this fixture).
    let dir = temp_dir();
    let gguf = dir.path().join("Tiny-135M-Chat.Q8_0.gguf");
    super::model_fixtures::write_gguf(&gguf, &super::model_fixtures::TinySpec::llama()).unwrap();
    let out = served(&["serve-model", "--model", gguf.to_str().unwrap()]);
    assert!(out.contains("(model Tiny-135M-Chat.Q8_0)"), "{out}");
    assert_words_for_people("serve-model", &out);
}
