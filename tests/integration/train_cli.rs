//! The `train` and `export` commands end to end on a tiny model with the real simulator: a bad
//! `--set` key is exit code 2, a run stopped and resumed completes, its log replays, it exports.

use anyhow::Result;
use empathy_gym::learning::train::read_metrics;

use crate::train::tiny_model_dir;

fn eg(args: &[&str]) -> std::process::Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_empathy-gym"))
        .args(args)
        .arg("--catalog")
        .arg(crate::common::root())
        .env("EMPATHY_GYM_MODELS", crate::common::models())
        .output()
        .expect("run empathy-gym")
}

fn output_text(o: &std::process::Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// A tiny-model training config written to `work/cfg.yaml`: run `cli` in `work`, one-turn
/// dialogues, 2 steps of 1 profile x 2 dialogues; `extra` adds top-level sections. Tests change
/// the rest with `--set`.
fn tiny_config(work: &std::path::Path, model: &std::path::Path, extra: &str) -> Result<String> {
    let cfg = work.join("cfg.yaml");
    std::fs::write(
        &cfg,
        format!(
            "run: cli\nresults_dir: {}\nmodel:\n  path: {}\nlora:\n  rank: 2\nenv:\n  knobs:\n    max_turns: 1\n\
sampling:\n  max_new_tokens: 4\ngrpo:\n  steps: 2\n  profiles_per_step: 1\n  group_size: 2\n{extra}",
            work.display(),
            model.display()
        ),
    )?;
    Ok(cfg.to_string_lossy().into_owned())
}

#[test]
#[ignore = "slow (20 s or more): scripts/test-full.sh runs it"]
fn train_and_export_commands_with_the_real_simulator() -> Result<()> {
    let model = tiny_model_dir()?;
    let work = tempfile::tempdir()?;
    let cfg = tiny_config(work.path(), model.path(), "")?;
    let cfg = cfg.as_str();
    // A misspelt key through --set is bad input: exit code 2, the file and the key named.
    let o = eg(&["train", "--config", cfg, "--set", "grpo.stepz=3"]);
    assert_eq!(o.status.code(), Some(2), "{}", output_text(&o));
    assert!(
        output_text(&o).contains("unknown field `stepz`"),
        "{}",
        output_text(&o)
    );

    let o = eg(&["train", "--config", cfg, "--stop-after", "1", "--quiet"]);
    assert!(o.status.success(), "{}", output_text(&o));
    crate::common::assert_words_for_people("train", &output_text(&o));
    assert!(
        output_text(&o).contains("profiles (train, moderate)"),
        "{}",
        output_text(&o)
    );
    let run = work.path().join("cli");
    let run_s = run.to_str().unwrap();
    let o = eg(&["train", "--resume", run_s, "--quiet"]);
    assert!(o.status.success(), "{}", output_text(&o));
    let out = output_text(&o);
    crate::common::assert_words_for_people("train --resume", &out);
    // The end summary: the quarters (here step 1 against step 2), the reward curve, and the
    // typical dialogues of the first and last step side by side.
    for part in [
        "resumed after step 1",
        "| metric | step 1 | step 2 | change |",
        "| mean reward |",
        "| mean final emotion |",
        "mean reward per step, steps 1-2: ",
        "a typical dialogue (the median reward) of the first and of the last step",
        "step 1: ",
        " │ step 2: ",
    ] {
        assert!(out.contains(part), "missing `{part}` in:\n{out}");
    }
    let rows = read_metrics(&run.join("metrics.csv"))?;
    assert_eq!(rows.iter().map(|m| m.step).collect::<Vec<_>>(), vec![1, 2]);
    let resolved = std::fs::read_to_string(run.join("config.yaml"))?;
    assert!(
        resolved.contains("eps_high: 0.28"),
        "defaults are written out: {resolved}"
    );
    assert!(run.join("reward.svg").is_file() && run.join("emotion.svg").is_file());
    // Episodes carry the appraiser's verdicts and replay verifies them.
    let o = eg(&[
        "replay",
        "verify",
        run.join("episodes.jsonl").to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", output_text(&o));
    let hf = work.path().join("hf");
    let o = eg(&["export", run_s, "--out", hf.to_str().unwrap()]);
    assert!(o.status.success(), "{}", output_text(&o));
    crate::common::assert_words_for_people("export", &output_text(&o));
    assert!(hf.join("model.safetensors").is_file() && hf.join("tokenizer.json").is_file());
    Ok(())
}

/// The families beside Llama train too: two GRPO steps with the real simulator and an export, on
/// the tiny Qwen3 and Gemma 3 reference models, chosen with `--set model.path=...`.
#[test]
#[ignore = "slow (20 s or more): scripts/test-full.sh runs it"]
fn train_runs_on_qwen3_and_gemma3_shaped_models() -> Result<()> {
    let work = tempfile::tempdir()?;
    let llama = tiny_model_dir()?;
    let cfg = tiny_config(work.path(), llama.path(), "")?;
    for family in ["qwen3", "gemma3"] {
        let folder = crate::model::families::family_folder(family, work.path())?;
        let set_model = format!("model.path={}", folder.display());
        let set_run = format!("run={family}");
        let o = eg(&[
            "train", "--config", &cfg, "--set", &set_model, "--set", &set_run, "--quiet",
        ]);
        assert!(o.status.success(), "{family}: {}", output_text(&o));
        let run = work.path().join(family);
        let rows = read_metrics(&run.join("metrics.csv"))?;
        assert_eq!(rows.iter().map(|m| m.step).collect::<Vec<_>>(), vec![1, 2]);
        assert!(
            rows.iter()
                .all(|m| m.reward_mean.is_finite() && m.policy_tokens > 0),
            "{family}"
        );
        let hf = work.path().join(format!("{family}-hf"));
        let o = eg(&[
            "export",
            run.to_str().unwrap(),
            "--out",
            hf.to_str().unwrap(),
        ]);
        assert!(o.status.success(), "{family}: {}", output_text(&o));
        let exported: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(hf.join("config.json"))?)?;
        let class = if family == "qwen3" {
            "Qwen3ForCausalLM"
        } else {
            "Gemma3ForCausalLM"
        };
        assert_eq!(exported["architectures"][0], class);
    }
    Ok(())
}

/// A Qwen3 policy thinks natively exactly when `env.think` asks for think-then-say.
#[test]
fn env_think_turns_qwen3_thinking_on_and_off() -> Result<()> {
    use empathy_gym::model::ChatTemplate;
    let work = tempfile::tempdir()?;
    let folder = crate::model::families::family_folder("qwen3", work.path())?;
    // The fixture's own template is plain ChatML; a Qwen3 one (it holds </think>) replaces it.
    let tc = serde_json::json!({
        "chat_template": ChatTemplate::Qwen3 { thinking: false }.to_jinja(),
        "eos_token": "<|im_end|>",
    });
    std::fs::write(folder.join("tokenizer_config.json"), tc.to_string())?;
    for think in [false, true] {
        let extra = format!("env:\n  think: {think}\n");
        let cfg = crate::train::config(&folder, work.path(), &extra)?;
        let model = empathy_gym::learning::train::load_policy(&cfg, &candle_core::Device::Cpu)?;
        assert_eq!(model.template, ChatTemplate::Qwen3 { thinking: think });
    }
    Ok(())
}

/// `difficulty: auto` with the real simulator: the run logs its level and knobs, its dialogues
/// say `auto` and replay exactly; commands without a controller refuse `auto` with a message.
#[test]
#[ignore = "slow (20 s or more): scripts/test-full.sh runs it"]
fn auto_difficulty_trains_logs_its_knobs_and_replays() -> Result<()> {
    let model = tiny_model_dir()?;
    let work = tempfile::tempdir()?;
    let cfg = tiny_config(work.path(), model.path(), "")?;
    let o = eg(&[
        "train",
        "--config",
        &cfg,
        "--quiet",
        "--set",
        "run=auto",
        "--set",
        "grpo.steps=3",
        "--set",
        "env.difficulty=auto",
    ]);
    assert!(o.status.success(), "{}", output_text(&o));
    assert!(output_text(&o).contains("profiles (train, auto)"));
    let run = work.path().join("auto");
    let rows = read_metrics(&run.join("metrics.csv"))?;
    assert_eq!(rows[0].difficulty_level, Some(0.5));
    // A random tiny model leaves the user well below the target emotion 50: easier each step.
    assert!(
        rows[2].difficulty_level < rows[0].difficulty_level,
        "{rows:?}"
    );
    assert!(rows[2].start_emotion > rows[0].start_emotion, "{rows:?}");
    assert!(run.join("difficulty.svg").is_file());
    let episodes = run.join("episodes.jsonl");
    let text = std::fs::read_to_string(&episodes)?;
    assert!(text.lines().all(|l| l.contains("\"difficulty\":\"auto\"")));
    let o = eg(&["replay", "verify", episodes.to_str().unwrap()]);
    assert!(o.status.success(), "{}", output_text(&o));
    // Outside training there is no controller: a clear refusal, exit code 2.
    let script = work.path().join("script.yaml");
    std::fs::write(&script, "replies: [\"I hear you.\"]\n")?;
    let policy = format!("script:{}", script.display());
    let o = eg(&[
        "rollout",
        "--policy",
        &policy,
        "--split",
        "test",
        "--difficulty",
        "auto",
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", output_text(&o));
    assert!(
        output_text(&o).contains("calibrates itself between training steps"),
        "{}",
        output_text(&o)
    );
    Ok(())
}

/// A two-step run with `simulator: {kind: llm, config: FILE}` against the OpenAI-compatible
/// stand-in; returns the run folder and the command's output.
fn train_against_llm_user(
    work: &std::path::Path,
    model: &std::path::Path,
    answers: crate::stand_in::Answers,
    args: &[&str],
) -> Result<(std::path::PathBuf, crate::stand_in::StandInServer, String)> {
    let server = crate::stand_in::StandIn::new(answers).start();
    let settings = crate::stand_in::llm_settings(
        work,
        &server.url,
        "retries: 0\ntimeout_s: 30\nparse_retries: 1\n",
    );
    let simulator = format!("simulator:\n  kind: llm\n  config: {settings}\n");
    let cfg = tiny_config(work, model, &simulator)?;
    let mut all = vec!["train", "--config", &cfg, "--quiet", "--set", "run=llm"];
    all.extend_from_slice(args);
    let o = eg(&all);
    assert!(o.status.success(), "{}", output_text(&o));
    Ok((work.join("llm"), server, output_text(&o)))
}

fn episodes(run: &std::path::Path) -> Vec<empathy_gym::environment::episode::EpisodeRecord> {
    let log =
        empathy_gym::environment::episode::read_episodes(&run.join("episodes.jsonl")).unwrap();
    assert!(log.errors.is_empty());
    log.records.into_iter().map(|(_, r)| r).collect()
}

/// An LLM user whose answers ignore the format: every step's malformed answers are in
/// metrics.csv's `sim_failures` and in the records, and the run completes at the start emotion.
#[test]
fn train_against_an_llm_user_that_ignores_the_format_counts_failures_every_step() -> Result<()> {
    let model = tiny_model_dir()?;
    let work = tempfile::tempdir()?;
    let (run, server, out) = train_against_llm_user(
        work.path(),
        model.path(),
        crate::stand_in::Answers::IgnoreFormat,
        &[],
    )?;
    let rows = read_metrics(&run.join("metrics.csv"))?;
    assert_eq!(rows.len(), 2);
    let records = episodes(&run);
    assert_eq!(records.len(), 4, "2 steps x 2 dialogues, none lost");
    for row in &rows {
        // 2 dialogues x 1 turn x (analysis + reply) x 2 answers each (parse_retries 1).
        assert_eq!(row.sim_failures, 8, "{row:?}");
        assert_eq!(row.final_emotion_mean, 40.0, "the change fell back to 0");
        let logged: usize = records
            .iter()
            .filter(|r| r.step == row.step)
            .map(|r| r.simulator_failures())
            .sum();
        assert_eq!(logged as u64, row.sim_failures);
    }
    for r in &records {
        assert_eq!(r.simulator.kind, "llm");
        assert_eq!(r.simulator.model.as_deref(), Some("tiny"));
        let a = r.turns.iter().find_map(|t| match t {
            empathy_gym::environment::episode::Turn::User {
                appraisal: Some(a), ..
            } => a.llm.as_ref(),
            _ => None,
        });
        let trace = a.expect("the user turn's llm trace");
        assert!(trace.fallback_change && trace.fallback_reply, "{trace:?}");
        assert!(trace.failures[0].starts_with("analysis 1:"), "{trace:?}");
    }
    assert_eq!(server.requests(), 16, "every answer came over HTTP");
    assert!(
        out.contains("LLM simulator: 16 malformed or failed answers over the run"),
        "{out}"
    );
    let resolved = std::fs::read_to_string(run.join("config.yaml"))?;
    assert!(resolved.contains("simulator:\n  kind: llm\n"), "{resolved}");
    Ok(())
}

/// An LLM user that answers in the format: no failures, the emotion moves by the parsed change,
/// the user speaks the parsed reply; the run resumes with its simulator and its log verifies.
#[test]
fn train_against_a_well_formed_llm_user_moves_the_emotion_and_resumes() -> Result<()> {
    let model = tiny_model_dir()?;
    let work = tempfile::tempdir()?;
    let (run, server, _) = train_against_llm_user(
        work.path(),
        model.path(),
        crate::stand_in::Answers::WellFormed,
        &["--stop-after", "1"],
    )?;
    let o = eg(&["train", "--resume", run.to_str().unwrap(), "--quiet"]);
    assert!(o.status.success(), "{}", output_text(&o));
    assert!(output_text(&o).contains("resumed after step 1"));
    let rows = read_metrics(&run.join("metrics.csv"))?;
    assert_eq!(rows.iter().map(|m| m.step).collect::<Vec<_>>(), vec![1, 2]);
    for row in &rows {
        assert_eq!(row.sim_failures, 0, "{row:?}");
        // +10 from the start 40 (moderate) in the one turn.
        assert_eq!(row.final_emotion_mean, 50.0, "{row:?}");
    }
    let records = episodes(&run);
    assert_eq!(records.len(), 4);
    for r in &records {
        assert_eq!(r.emotions(), [40, 50]);
        assert_eq!(r.simulator_failures(), 0);
        let said = r.turns.last().and_then(|t| match t {
            empathy_gym::environment::episode::Turn::User { text, .. } => Some(text.as_str()),
            _ => None,
        });
        assert_eq!(said, Some("Okay. I'm at 50 now."));
    }
    assert_eq!(
        server.requests(),
        2 * 2 * 2,
        "steps x dialogues x (analysis + reply)"
    );
    let o = eg(&[
        "replay",
        "verify",
        run.join("episodes.jsonl").to_str().unwrap(),
        "--simulator",
        "llm",
        "--simulator-config",
        work.path().join("llm.yaml").to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", output_text(&o));
    Ok(())
}
