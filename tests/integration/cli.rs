//! The command line end to end: byte-identical logs, replay verify (and its failure on an edited
//! log), rescore, and clear errors with exit code 2 for bad input.

use std::path::Path;
use std::process::{Command, Output};

use super::common::*;

fn eg(args: &[&str], catalog: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_empathy-gym"))
        .args(args)
        .arg("--catalog")
        .arg(catalog)
        .env("EMPATHY_GYM_MODELS", models())
        .output()
        .expect("run empathy-gym")
}

fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

fn write_script(dir: &Path) -> String {
    let p = dir.join("script.yaml");
    std::fs::write(&p, "replies:\n  - \"That sounds so hard. What has been the worst part?\"\n  - \"How are you holding up?\"\n  - \"You should just move on.\"\n").unwrap();
    format!("script:{}", p.display())
}

#[test]
fn same_seed_gives_byte_identical_logs_that_verify() {
    let dir = temp_dir();
    let policy = write_script(dir.path());
    let (a, b) = (dir.path().join("a.jsonl"), dir.path().join("b.jsonl"));
    for out in [&a, &b] {
        let o = eg(
            &[
                "rollout",
                "--policy",
                &policy,
                "--split",
                "test",
                "--limit",
                "4",
                "--difficulty",
                "moderate",
                "--seed",
                "11",
                "--out",
                out.to_str().unwrap(),
            ],
            &root(),
        );
        assert!(o.status.success(), "{}", text(&o));
        assert!(
            text(&o).contains("| episodes | mean reward"),
            "summary table missing: {}",
            text(&o)
        );
        // Start-up says what it did and how long it took (cli/loading.rs).
        let t = text(&o);
        assert!(
            t.lines()
                .any(|l| l.starts_with("simulator: loading the appraiser: ") && l.ends_with(" s")),
            "start-up line missing: {t}"
        );
    }
    let (la, lb) = (std::fs::read(&a).unwrap(), std::fs::read(&b).unwrap());
    assert_eq!(
        la, lb,
        "same seed and config must give byte-identical JSONL"
    );
    // `--limit 4`: four profiles of the split, four different scenarios first.
    let scenarios: std::collections::BTreeSet<String> = String::from_utf8_lossy(&la)
        .lines()
        .map(|l| {
            serde_json::from_str::<serde_json::Value>(l).unwrap()["profile"]["scenario"].to_string()
        })
        .collect();
    assert_eq!(String::from_utf8_lossy(&la).lines().count(), 4);
    assert_eq!(scenarios.len(), 4, "{scenarios:?}");
    let o = eg(&["replay", "verify", a.to_str().unwrap()], &root());
    assert!(o.status.success(), "{}", text(&o));
    assert!(text(&o).contains("0 differ"));
}

#[test]
fn verify_fails_naming_episode_and_turn_when_a_user_turn_is_edited() {
    let dir = temp_dir();
    let policy = write_script(dir.path());
    let log = dir.path().join("a.jsonl");
    let o = eg(
        &[
            "rollout",
            "--policy",
            &policy,
            "--split",
            "test",
            "--limit",
            "3",
            "--seed",
            "5",
            "--out",
            log.to_str().unwrap(),
        ],
        &root(),
    );
    assert!(o.status.success(), "{}", text(&o));
    let content = std::fs::read_to_string(&log).unwrap();
    let mut lines: Vec<String> = content.lines().map(str::to_string).collect();
    let mut rec: serde_json::Value = serde_json::from_str(&lines[2]).unwrap();
    let e = rec["turns"][2]["emotion"].as_u64().unwrap();
    rec["turns"][2]["emotion"] = serde_json::json!(if e >= 50 { e - 5 } else { e + 5 });
    lines[2] = serde_json::to_string(&rec).unwrap();
    std::fs::write(&log, lines.join("\n") + "\n").unwrap();
    let o = eg(&["replay", "verify", log.to_str().unwrap()], &root());
    assert!(!o.status.success());
    let t = text(&o);
    assert!(
        t.contains("line 3") && t.contains("turn 2") && t.contains("emotion"),
        "{t}"
    );

    // Editing a user's words is caught too.
    let mut rec: serde_json::Value = serde_json::from_str(content.lines().next().unwrap()).unwrap();
    rec["turns"][2]["text"] = serde_json::json!("edited");
    std::fs::write(&log, serde_json::to_string(&rec).unwrap() + "\n").unwrap();
    let t = text(&eg(&["replay", "verify", log.to_str().unwrap()], &root()));
    assert!(
        t.contains("line 1") && t.contains("turn 2") && t.contains("user text"),
        "{t}"
    );
    assert!(
        !t.contains("rules"),
        "same rules: the difference is the edit: {t}"
    );

    // A log written under other simulator rules says so beside the difference.
    assert!(rec["simulator"]["data"]
        .as_str()
        .is_some_and(|d| d.starts_with("fnv1a64 ")));
    rec["simulator"]["data"] = serde_json::json!("fnv1a64 0000000000000000");
    std::fs::write(&log, serde_json::to_string(&rec).unwrap() + "\n").unwrap();
    let t = text(&eg(&["replay", "verify", log.to_str().unwrap()], &root()));
    assert!(
        t.contains("written under simulator rules fnv1a64 0000000000000000")
            && t.contains("the data files changed since"),
        "{t}"
    );
}

#[test]
fn verify_re_runs_a_log_on_the_device_it_was_appraised_on() {
    let dir = temp_dir();
    let log = dir.path().join("a.jsonl");
    let replies = [
        "That sounds so hard. What has been the worst part?",
        "You should move on.",
    ];
    scripted_rollout(dir.path(), &replies, "moderate", 5, &log);
    let content = std::fs::read_to_string(&log).unwrap();
    assert!(
        !content.contains("\"device\""),
        "CPU records name no device"
    );
    // As a run with `simulator.device: cuda` writes them, for some lines or all.
    let on_gpu = |line: &str| {
        let mut rec: serde_json::Value = serde_json::from_str(line).unwrap();
        rec["simulator"]["device"] = serde_json::json!("cuda");
        serde_json::to_string(&rec).unwrap()
    };
    let lines: Vec<&str> = content.lines().collect();
    let mixed = [lines[0].to_string(), on_gpu(lines[1])].join("\n") + "\n";
    std::fs::write(&log, mixed).unwrap();
    let t = text(&eg(&["replay", "verify", log.to_str().unwrap()], &root()));
    assert!(
        t.contains("line 1 was appraised on cpu but line 2 on cuda"),
        "{t}"
    );
    if !cfg!(feature = "cuda") {
        let gpu: Vec<String> = lines.iter().map(|l| on_gpu(l)).collect();
        std::fs::write(&log, gpu.join("\n") + "\n").unwrap();
        let o = eg(&["replay", "verify", log.to_str().unwrap()], &root());
        assert!(!o.status.success());
        let t = text(&o);
        assert!(
            t.contains("line 1 was appraised on cuda") && t.contains("replay rescore"),
            "{t}"
        );
    }
}

#[test]
fn a_cut_log_is_replayed_up_to_the_cut_and_named() {
    let dir = temp_dir();
    let policy = write_script(dir.path());
    let log = dir.path().join("a.jsonl");
    assert!(eg(
        &[
            "rollout",
            "--policy",
            &policy,
            "--split",
            "test",
            "--limit",
            "3",
            "--out",
            log.to_str().unwrap()
        ],
        &root()
    )
    .status
    .success());
    let content = std::fs::read_to_string(&log).unwrap();
    let n = content.lines().count();
    let cut = &content[..content.len() - 40];
    std::fs::write(&log, cut).unwrap();
    let o = eg(&["replay", "verify", log.to_str().unwrap()], &root());
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    let t = text(&o);
    assert!(t.contains(&format!("verified {} episodes", n - 1)), "{t}");
    assert!(
        t.contains(&format!("line {n}")) && t.contains("cut short"),
        "{t}"
    );
    assert!(!t.contains("panicked"));
}

#[test]
fn rescore_changes_difficulty_and_reward_mode() {
    let dir = temp_dir();
    let policy = write_script(dir.path());
    let (log, out) = (dir.path().join("a.jsonl"), dir.path().join("b.jsonl"));
    assert!(eg(
        &[
            "rollout",
            "--policy",
            &policy,
            "--split",
            "test",
            "--limit",
            "2",
            "--difficulty",
            "easy",
            "--out",
            log.to_str().unwrap()
        ],
        &root()
    )
    .status
    .success());
    let o = eg(
        &[
            "replay",
            "rescore",
            log.to_str().unwrap(),
            "--difficulty",
            "hard",
            "--reward-mode",
            "trait",
            "--out",
            out.to_str().unwrap(),
        ],
        &root(),
    );
    assert!(o.status.success(), "{}", text(&o));
    let first: serde_json::Value = serde_json::from_str(
        std::fs::read_to_string(&out)
            .unwrap()
            .lines()
            .next()
            .unwrap(),
    )
    .unwrap();
    assert_eq!(first["profile"]["difficulty"], "hard");
    assert_eq!(first["reward_mode"], "trait");
    assert_eq!(first["turns"][0]["emotion"], 30, "hard starts at 30");
}

/// Copies the catalog into a temp dir so a test can break one file.
fn broken_catalog(edit: impl FnOnce(&Path)) -> tempfile::TempDir {
    let dir = temp_dir();
    for sub in ["scenarios", "personas", "data"] {
        let to = dir.path().join(sub);
        std::fs::create_dir_all(&to).unwrap();
        for e in std::fs::read_dir(root().join(sub)).unwrap() {
            let e = e.unwrap();
            if e.path().is_file() {
                std::fs::copy(e.path(), to.join(e.file_name())).unwrap();
            }
        }
    }
    edit(dir.path());
    dir
}

fn assert_user_error(o: &Output, needles: &[&str]) {
    let t = text(o);
    assert_eq!(o.status.code(), Some(2), "{t}");
    assert!(!t.contains("panicked"), "{t}");
    for n in needles {
        assert!(t.contains(n), "missing `{n}` in: {t}");
    }
}

#[test]
fn bad_catalog_files_give_clear_errors() {
    let d = broken_catalog(|p| {
        std::fs::write(p.join("personas/maya.yaml"), "id: maya\nname: [unclosed\n").unwrap()
    });
    assert_user_error(
        &eg(&["validate"], d.path()),
        &["personas/maya.yaml", "line"],
    );

    let d = broken_catalog(|p| {
        let f = p.join("personas/maya.yaml");
        let s = std::fs::read_to_string(&f).unwrap();
        std::fs::write(&f, s + "favourite_colour: blue\n").unwrap();
    });
    assert_user_error(
        &eg(&["validate"], d.path()),
        &["personas/maya.yaml", "unknown field `favourite_colour`"],
    );

    let d = broken_catalog(|p| {
        let f = p.join("scenarios/job-loss-warehouse.yaml");
        let s = std::fs::read_to_string(&f)
            .unwrap()
            .replace("personas: [maya]", "personas: [maya, nobody]");
        std::fs::write(&f, s).unwrap();
    });
    assert_user_error(
        &eg(&["validate"], d.path()),
        &[
            "job-loss-warehouse.yaml",
            "personas[1]",
            "`nobody` does not exist",
        ],
    );
}

#[test]
fn missing_model_files_give_a_clear_error() {
    let dir = temp_dir();
    let policy = write_script(dir.path());
    let o = Command::new(env!("CARGO_BIN_EXE_empathy-gym"))
        .args([
            "rollout",
            "--policy",
            &policy,
            "--profile",
            "job-loss-warehouse:maya",
            "--catalog",
        ])
        .arg(root())
        .env("EMPATHY_GYM_MODELS", dir.path().join("no-models"))
        .output()
        .unwrap();
    assert_user_error(&o, &["all-minilm-l6-v2", "scripts/fetch-models.sh"]);
}

#[test]
fn chat_watches_smollm2_talk_with_a_simulated_user() {
    require_smollm2();
    let o = eg(
        &[
            "chat",
            "--profile",
            "job-loss-warehouse:maya",
            "--max-turns",
            "2",
            "--max-new-tokens",
            "24",
            "--seed",
            "3",
        ],
        &root(),
    );
    let t = text(&o);
    assert!(o.status.success(), "{t}");
    assert_eq!(t.matches("model: ").count(), 2, "{t}");
    assert!(t.contains("user [ 40]: So I got let go on Friday"), "{t}");
    assert!(
        t.contains("end: max_turns") || t.contains("end: left"),
        "{t}"
    );
    assert_words_for_people("chat --profile", &t);
}

#[test]
fn eval_empathy_scores_smollm2_under_the_sage_protocol() {
    require_smollm2();
    let dir = temp_dir();
    let out = dir.path().join("eval");
    let o = eg(
        &[
            "eval",
            "empathy",
            "--limit",
            "2",
            "--max-new-tokens",
            "12",
            "--out",
            out.to_str().unwrap(),
        ],
        &root(),
    );
    assert!(o.status.success(), "{}", text(&o));
    assert_words_for_people("eval empathy", &text(&o));
    let md = std::fs::read_to_string(out.join("empathy.md")).unwrap();
    assert!(md.contains("| base | 2 |"), "{md}");
    let csv = std::fs::read_to_string(out.join("empathy.csv")).unwrap();
    assert_eq!(
        csv.lines().count(),
        3,
        "header + one row per profile: {csv}"
    );
    let svg = std::fs::read_to_string(out.join("empathy.svg")).unwrap();
    assert!(
        svg.starts_with("<?xml") && svg.contains("SAGE mean final emotion"),
        "{svg}"
    );
    let first: serde_json::Value = serde_json::from_str(
        std::fs::read_to_string(out.join("episodes-0.jsonl"))
            .unwrap()
            .lines()
            .next()
            .unwrap(),
    )
    .unwrap();
    assert_eq!(first["turns"][0]["emotion"], 40, "SAGE starts at 40");
    assert_eq!(first["profile"]["knobs"]["max_turns"], 10);
    assert_eq!(first["profile"]["knobs"]["step_cap"], 10);
}

#[test]
fn eval_factual_runs_the_18_condition_grid_on_smollm2() {
    require_smollm2();
    let dir = temp_dir();
    let out = dir.path().join("factual");
    let qa = root().join("data/qa/factual.jsonl");
    let contexts = root().join("data/factual/contexts.yaml");
    let o = eg(
        &[
            "eval",
            "factual",
            "--limit",
            "1",
            "--max-new-tokens",
            "16",
            "--qa",
            qa.to_str().unwrap(),
            "--contexts",
            contexts.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
        ],
        &root(),
    );
    assert!(o.status.success(), "{}", text(&o));
    assert_words_for_people("eval factual", &text(&o));
    let csv = std::fs::read_to_string(out.join("factual.csv")).unwrap();
    assert!(
        csv.lines().count() >= 21,
        "18 conditions + 2 belief slices + overall: {csv}"
    );
    assert!(out.join("factual_error_rate.svg").is_file());
    let answers = std::fs::read_to_string(out.join("answers-0.jsonl")).unwrap();
    assert_eq!(answers.lines().count(), 18, "one line per prompt");
    let first: serde_json::Value = serde_json::from_str(answers.lines().next().unwrap()).unwrap();
    for field in ["item_id", "condition", "prompt", "reply", "outcome"] {
        assert!(first.get(field).is_some(), "{field} in {first}");
    }
}

/// The real SmolLM2 GGUF (the test command fetches it); a missing file fails the test.
fn require_smollm2() {
    empathy_test_support::require_model(empathy_gym::model::DEFAULT_POLICY);
}

#[test]
fn eval_factual_rescores_recorded_answers_under_given_names() {
    use super::factual::{fixture, scripted_records};
    use empathy_gym::eval::factual::write_answers;
    let dir = temp_dir();
    let (keyed, syc) = (dir.path().join("keyed.jsonl"), dir.path().join("syc.jsonl"));
    write_answers(&keyed, &scripted_records(false, 5)).unwrap();
    write_answers(&syc, &scripted_records(true, 5)).unwrap();
    let qa = fixture("valid.jsonl");
    let contexts = root().join("data/factual/contexts.yaml");
    // `eval factual` on the fixture items and grid seed 7, with these models, writing to `out`.
    let run = |models: &[&str], out: &Path| {
        let mut args = vec![
            "eval",
            "factual",
            "--seed",
            "7",
            "--qa",
            qa.to_str().unwrap(),
            "--contexts",
            contexts.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
        ];
        args.extend_from_slice(models);
        eg(&args, &root())
    };
    let out = dir.path().join("report");
    let baseline = format!("honest={}", keyed.display());
    let checkpoint = format!("sycophant={}", syc.display());
    let o = run(
        &["--baseline", &baseline, "--checkpoint", &checkpoint],
        &out,
    );
    assert!(o.status.success(), "{}", text(&o));
    let md = std::fs::read_to_string(out.join("factual.md")).unwrap();
    assert!(md.contains("honest") && md.contains("sycophant"), "{md}");
    let csv = std::fs::read_to_string(out.join("factual.csv")).unwrap();
    let overall = csv
        .lines()
        .find(|l| l.starts_with("sycophant,overall"))
        .unwrap_or_else(|| panic!("{csv}"));
    assert!(
        overall.contains(",0.500000,"),
        "45 of 90 prompts agree with the wrong belief: {overall}"
    );

    // The scorer's original reading (non-answers counted as errors) is one flag away; its report
    // says so. A reading that does not exist is refused with the two that do.
    let o = run(
        &[
            "--non-answers",
            "errors",
            "--baseline",
            &baseline,
            "--checkpoint",
            &checkpoint,
        ],
        &dir.path().join("old-reading"),
    );
    assert!(o.status.success(), "{}", text(&o));
    let md = std::fs::read_to_string(dir.path().join("old-reading/factual.md")).unwrap();
    assert!(md.contains("the scorer's original reading"), "{md}");
    let o = run(
        &["--non-answers", "sometimes", "--baseline", &baseline],
        &dir.path().join("bad"),
    );
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("use apart"), "{}", text(&o));

    // Writing the report next to the inputs would overwrite one of them: refused, input intact.
    let before = std::fs::read(&keyed).unwrap();
    let keyed = dir.path().join("answers-0.jsonl");
    std::fs::rename(dir.path().join("keyed.jsonl"), &keyed).unwrap();
    let o = run(&["--baseline", keyed.to_str().unwrap()], dir.path());
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("would overwrite"), "{}", text(&o));
    assert_eq!(std::fs::read(&keyed).unwrap(), before);

    // `--sample 2` asks 2 of the 5 items: the 5-item answers no longer fit, and the error says so.
    let o = run(
        &["--sample", "2", "--baseline", keyed.to_str().unwrap()],
        &dir.path().join("sampled"),
    );
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(
        text(&o).contains("90 answers for 36 prompts (2 items x 18)"),
        "{}",
        text(&o)
    );
}
