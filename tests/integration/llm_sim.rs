//! The LLM-played user end to end over HTTP: against `serve-model` with a tiny random model (its
//! output ignores the format: every answer is retried, counted, logged, and the dialogue still
//! completes), and against an OpenAI-compatible stand-in that answers in the format (the emotion
//! moves by the parsed change, the user speaks the parsed reply, one malformed answer is retried
//! and recovered). `replay verify/rescore --simulator llm` and `eval empathy --simulator llm` run
//! end to end.

use std::path::Path;

use empathy_gym::environment::episode::{read_episodes, EpisodeRecord, Turn};

use super::common::*;
use super::model_fixtures::{write_hf, TinySpec};
use super::stand_in::{llm_settings, Answers, StandIn};

/// A tiny random Llama with room for the LLM user's long prompts (its tokenizer spends about one
/// token per character).
fn tiny_model(dir: &Path) -> std::path::PathBuf {
    let model = dir.join("tiny");
    write_hf(&model, &TinySpec::llama()).unwrap();
    let cfg_path = model.join("config.json");
    let mut cfg: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&cfg_path).unwrap()).unwrap();
    cfg["max_position_embeddings"] = serde_json::json!(32768);
    std::fs::write(&cfg_path, cfg.to_string()).unwrap();
    model
}
use super::servers::{http, Server};

const PROFILE: &str = "job-loss-warehouse:maya";

fn sim_config(dir: &Path, url: &str, parse_retries: u32) -> String {
    llm_settings(
        dir,
        url,
        &format!("retries: 1\nbackoff_ms: 10\ntimeout_s: 60\nparse_retries: {parse_retries}\n"),
    )
}

fn script(dir: &Path) -> String {
    let p = dir.join("script.yaml");
    std::fs::write(&p, "replies:\n  - \"That sounds exhausting. What has been the hardest part?\"\n  - \"You were let go after all those years. How are you holding up?\"\n").unwrap();
    format!("script:{}", p.display())
}

fn records(path: &Path) -> Vec<EpisodeRecord> {
    let log = read_episodes(path).unwrap();
    assert!(log.errors.is_empty());
    log.records.into_iter().map(|(_, r)| r).collect()
}

fn output(o: &std::process::Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

#[test]
fn llm_user_against_serve_model_with_a_tiny_model_counts_and_logs_malformed_answers() {
    let dir = temp_dir();
    let model = tiny_model(dir.path());
    let server = Server::start(&[
        "serve-model",
        "--model",
        model.to_str().unwrap(),
        "--name",
        "tiny",
        "--max-tokens",
        "32",
    ]);
    let cfg = sim_config(dir.path(), &server.url, 1);
    let log = dir.path().join("llm.jsonl");
    let o = eg(&[
        "rollout",
        "--policy",
        &script(dir.path()),
        "--profile",
        PROFILE,
        "--repeats",
        "2",
        "--simulator",
        "llm",
        "--simulator-config",
        &cfg,
        "--out",
        log.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", output(&o));
    let recs = records(&log);
    assert_eq!(recs.len(), 2, "nothing lost");
    let mut failures = 0;
    for r in &recs {
        assert_eq!(r.simulator.kind, "llm");
        assert_eq!(r.simulator.backend.as_deref(), Some("openai"));
        assert_eq!(r.simulator.model.as_deref(), Some("tiny"));
        assert_eq!(r.simulator.prompt_version.as_deref(), Some("1"));
        // The change falls back to 0 every turn: the user stays at the start until the turn limit.
        assert_eq!(r.end.map(|e| e.as_str()), Some("max_turns"));
        assert!(r.emotions().iter().all(|&e| e == 40), "{:?}", r.emotions());
        for t in r.turns.iter().skip(1) {
            if let Turn::User { appraisal, .. } = t {
                let trace = appraisal.as_ref().unwrap().llm.as_ref().expect("llm trace");
                // parse_retries 1: two answers per call, both malformed, for both calls.
                assert_eq!((trace.analysis_attempts, trace.reply_attempts), (2, 2));
                assert_eq!(trace.failures.len(), 4, "{:?}", trace.failures);
                assert!(trace.fallback_change && trace.fallback_reply);
            }
        }
        failures += r.simulator_failures();
    }
    assert_eq!(failures, 2 * 8 * 4);
    assert!(
        output(&o).contains(&format!(
            "LLM simulator: {failures} malformed or failed answers"
        )),
        "{}",
        output(&o)
    );
    let (s, b) = http("GET", &format!("{}/v1/health", server.url), None);
    assert_eq!(s, 200);
    let h: serde_json::Value = serde_json::from_str(&b).unwrap();
    assert_eq!(
        h["requests"], failures as u64,
        "every call went over HTTP: {b}"
    );
    assert!(server.stop().ok);
}

#[test]
fn llm_user_reads_well_formed_answers_and_replay_and_eval_work_with_it() {
    let dir = temp_dir();
    let server = StandIn::new(Answers::FirstAnalysisMalformed).start();
    let cfg = sim_config(dir.path(), &server.url, 2);
    let log = dir.path().join("llm.jsonl");
    let o = eg(&[
        "rollout",
        "--policy",
        &script(dir.path()),
        "--profile",
        PROFILE,
        "--simulator",
        "llm",
        "--simulator-config",
        &cfg,
        "--out",
        log.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", output(&o));
    let r = &records(&log)[0];
    // +10 a turn from 40: 50, 60, ..., 100 after six replies; the user resolved.
    assert_eq!(r.emotions(), [40, 50, 60, 70, 80, 90, 100]);
    assert_eq!(r.end.map(|e| e.as_str()), Some("resolved"));
    let Turn::User {
        text, appraisal, ..
    } = &r.turns[2]
    else {
        panic!("a user turn")
    };
    assert_eq!(
        text, "Okay. I'm at 50 now.",
        "the reply call saw the new emotion"
    );
    let a = appraisal.as_ref().unwrap();
    assert_eq!(a.reasons, ["you named it", "you stayed with me"]);
    let trace = a.llm.as_ref().unwrap();
    assert_eq!(
        trace.analysis_attempts, 2,
        "the malformed first answer was re-asked"
    );
    assert_eq!(trace.failures.len(), 1);
    assert!(
        trace.failures[0].contains("analysis 1"),
        "{:?}",
        trace.failures
    );
    assert!(!trace.fallback_change && !trace.fallback_reply);
    assert_eq!(server.requests(), 13, "6 analyses + 1 retry + 6 replies");

    // replay verify --simulator llm re-runs it (the stand-in is deterministic) and says when
    // that holds; the appraiser refuses a log it did not write.
    let v = eg(&["replay", "verify", log.to_str().unwrap()]);
    assert!(!v.status.success());
    assert!(output(&v).contains("--simulator llm"), "{}", output(&v));
    let v = eg(&[
        "replay",
        "verify",
        log.to_str().unwrap(),
        "--simulator",
        "llm",
        "--simulator-config",
        &cfg,
    ]);
    let text = output(&v);
    assert!(v.status.success(), "{text}");
    assert!(
        text.contains("1 identical") && text.contains("temperature 0"),
        "{text}"
    );

    // replay rescore --simulator llm re-judges an appraiser log.
    let base = dir.path().join("base.jsonl");
    let o = eg(&[
        "rollout",
        "--policy",
        &script(dir.path()),
        "--profile",
        PROFILE,
        "--out",
        base.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", output(&o));
    let rescored = dir.path().join("rescored.jsonl");
    let o = eg(&[
        "replay",
        "rescore",
        base.to_str().unwrap(),
        "--simulator",
        "llm",
        "--simulator-config",
        &cfg,
        "--out",
        rescored.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", output(&o));
    let rr = &records(&rescored)[0];
    assert_eq!(rr.simulator.kind, "llm");
    let n = rr.assistant_turns().len() as u8;
    let rising: Vec<u8> = (0..=n).map(|k| (40 + 10 * k).min(100)).collect();
    assert_eq!(
        rr.emotions(),
        rising,
        "the LLM user re-judged every logged reply"
    );

    // eval empathy --simulator llm, with a tiny policy, end to end.
    let model = tiny_model(dir.path());
    let out = dir.path().join("eval");
    let o = eg(&[
        "eval",
        "empathy",
        "--model",
        model.to_str().unwrap(),
        "--limit",
        "2",
        "--max-new-tokens",
        "8",
        "--simulator",
        "llm",
        "--simulator-config",
        &cfg,
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", output(&o));
    let evald = records(&out.join("episodes-0.jsonl"));
    assert_eq!(evald.len(), 2);
    for r in &evald {
        assert_eq!(r.simulator.kind, "llm");
        // SAGE: start 40, +10 a turn (the clamp), resolved after six replies.
        assert_eq!(r.final_emotion(), 100);
    }
    assert!(out.join("empathy.md").is_file());
}

#[test]
fn llm_user_on_the_local_backend_runs_the_model_in_process() {
    let dir = temp_dir();
    let model = tiny_model(dir.path());
    let cfg = dir.path().join("local.yaml");
    std::fs::write(
        &cfg,
        format!(
            "backend: local\nlocal_model: {}\nmax_tokens: 8\nparse_retries: 0\n",
            model.display()
        ),
    )
    .unwrap();
    let log = dir.path().join("local.jsonl");
    let o = eg(&[
        "rollout",
        "--policy",
        &script(dir.path()),
        "--profile",
        PROFILE,
        "--difficulty",
        "hard",
        "--simulator",
        "llm",
        "--simulator-config",
        cfg.to_str().unwrap(),
        "--out",
        log.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", output(&o));
    let r = &records(&log)[0];
    assert_eq!(r.simulator.backend.as_deref(), Some("local"));
    assert!(r.simulator.model.is_some());
    // The random model ignores the format: one malformed answer per call (no re-asks), the
    // dialogue kept to its turn limit at the start emotion.
    let turns = r.assistant_turns().len();
    assert_eq!(turns, 8);
    assert_eq!(r.simulator_failures(), 2 * turns);
    assert!(r.emotions().iter().all(|&e| e == 30), "{:?}", r.emotions());
}
