//! The LLM user's OpenAI-compatible transport against the stand-in: 503 and 429 are retried with
//! backoff until an answer comes (and given up after `retries`), no more than `concurrency`
//! requests are in flight while more dialogues than that run at once, and a server slower than
//! `timeout_s` gives counted failures, not a hang. Each test takes a few seconds at most.

use std::path::Path;
use std::time::{Duration, Instant};

use empathy_gym::environment::episode::{read_episodes, EpisodeRecord, Turn};
use empathy_gym::environment::sim::llm::{ChatBackend, LlmConfigFile, OpenAiBackend};
use empathy_gym::model::{ChatMessage, Role};

use super::common::*;
use super::stand_in::{llm_settings, Answers, StandIn};

const PROFILE: &str = "job-loss-warehouse:maya";

/// The backend the settings `extra` describe, the environment left out.
fn backend(dir: &Path, url: &str, extra: &str) -> OpenAiBackend {
    let path = llm_settings(dir, url, extra);
    let path = Path::new(&path);
    let settings = LlmConfigFile::load(Some(path))
        .unwrap()
        .validate(path, &root(), |_| None)
        .unwrap();
    OpenAiBackend::new(settings).unwrap()
}

fn conversation() -> Vec<ChatMessage> {
    vec![
        ChatMessage::new(Role::System, "Answer `Change: N`."),
        ChatMessage::new(Role::User, "How did that land?"),
    ]
}

/// `rollout --simulator llm` of `repeats` dialogues on PROFILE with the settings file `cfg`.
fn rollout(dir: &Path, cfg: &str, repeats: u32) -> (std::process::Output, Vec<EpisodeRecord>) {
    let script = dir.join("script.yaml");
    std::fs::write(
        &script,
        "replies:\n  - \"That sounds hard. What hurts most?\"\n",
    )
    .unwrap();
    let log = dir.join("llm.jsonl");
    let o = eg(&[
        "rollout",
        "--policy",
        &format!("script:{}", script.display()),
        "--profile",
        PROFILE,
        "--repeats",
        &repeats.to_string(),
        "--simulator",
        "llm",
        "--simulator-config",
        cfg,
        "--out",
        log.to_str().unwrap(),
    ]);
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(o.status.success(), "{text}");
    let log = read_episodes(&log).unwrap();
    assert!(log.errors.is_empty());
    (o, log.records.into_iter().map(|(_, r)| r).collect())
}

#[test]
fn llm_transport_retries_503_and_429_with_backoff_until_an_answer_comes() {
    let dir = temp_dir();
    let mut busy = StandIn::new(Answers::WellFormed);
    busy.errors_first = vec![503, 429, 503];
    let server = busy.start();
    let b = backend(dir.path(), &server.url, "retries: 3\nbackoff_ms: 20\n");
    let t = Instant::now();
    let out = b.complete(&[conversation()]);
    let text = out
        .into_iter()
        .next()
        .unwrap()
        .expect("answered after three refusals");
    assert!(text.starts_with("Change: +10"), "{text}");
    assert_eq!(
        server.requests(),
        4,
        "three refused attempts and the answer"
    );
    // Backoff 20, 40 and 80 ms before the second, third and fourth attempts.
    assert!(
        t.elapsed() >= Duration::from_millis(140),
        "{:?}",
        t.elapsed()
    );

    // More refusals than retries: the call fails with the last status, after 1 + retries tries.
    let mut busy = StandIn::new(Answers::WellFormed);
    busy.errors_first = vec![503; 5];
    let server = busy.start();
    let b = backend(dir.path(), &server.url, "retries: 2\nbackoff_ms: 10\n");
    let err = b
        .complete(&[conversation()])
        .remove(0)
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("HTTP 503") && err.contains("model tiny"),
        "{err}"
    );
    assert_eq!(server.requests(), 3);

    // A 4xx other than 429 is the request's fault: not retried.
    let mut refusing = StandIn::new(Answers::WellFormed);
    refusing.errors_first = vec![400];
    let server = refusing.start();
    let b = backend(dir.path(), &server.url, "retries: 3\nbackoff_ms: 10\n");
    let err = b
        .complete(&[conversation()])
        .remove(0)
        .unwrap_err()
        .to_string();
    assert!(err.contains("HTTP 400"), "{err}");
    assert_eq!(server.requests(), 1);
}

#[test]
fn llm_transport_keeps_requests_in_flight_within_the_concurrency_limit() {
    let dir = temp_dir();
    let mut slow = StandIn::new(Answers::WellFormed);
    slow.delay = Duration::from_millis(50);
    let server = slow.start();
    // Six dialogues at once, each turn's six calls through two slots.
    let cfg = llm_settings(
        dir.path(),
        &server.url,
        "concurrency: 2\nparse_retries: 0\n",
    );
    let (_, records) = rollout(dir.path(), &cfg, 6);
    assert_eq!(records.len(), 6);
    for r in &records {
        assert_eq!(r.emotions(), [40, 50, 60, 70, 80, 90, 100]);
        assert_eq!(r.simulator_failures(), 0);
    }
    assert_eq!(server.requests(), 6 * 6 * 2, "six turns, two calls each");
    assert_eq!(
        server.peak_in_flight(),
        2,
        "never more than `concurrency`, and the limit is used"
    );

    // The stand-in sees the overlap when the limit allows it.
    let mut slow = StandIn::new(Answers::WellFormed);
    slow.delay = Duration::from_millis(50);
    let server = slow.start();
    let b = backend(dir.path(), &server.url, "concurrency: 16\n");
    let answers = b.complete(&vec![conversation(); 6]);
    assert!(answers.iter().all(Result::is_ok));
    assert_eq!(server.peak_in_flight(), 6);
}

#[test]
fn llm_transport_counts_a_server_slower_than_the_timeout_as_failures_not_a_hang() {
    let dir = temp_dir();
    let mut stuck = StandIn::new(Answers::WellFormed);
    stuck.delay = Duration::from_secs(5);
    let server = stuck.start();
    let cfg = llm_settings(
        dir.path(),
        &server.url,
        "timeout_s: 0.1\nretries: 1\nbackoff_ms: 10\nparse_retries: 1\n",
    );
    let t = Instant::now();
    let (o, records) = rollout(dir.path(), &cfg, 1);
    let elapsed = t.elapsed();
    // 16 calls of two 0.1 s attempts; one answer would take 5 s.
    assert!(elapsed < Duration::from_secs(15), "{elapsed:?}");
    let r = &records[0];
    assert_eq!(r.end.map(|e| e.as_str()), Some("max_turns"));
    assert!(r.emotions().iter().all(|&e| e == 40), "{:?}", r.emotions());
    for t in r.turns.iter().skip(1) {
        if let Turn::User { appraisal, .. } = t {
            let trace = appraisal.as_ref().unwrap().llm.as_ref().unwrap();
            // A failed request is not re-asked (parse_retries is for malformed answers).
            assert_eq!((trace.analysis_attempts, trace.reply_attempts), (1, 1));
            assert_eq!(trace.failures.len(), 2, "{:?}", trace.failures);
            assert!(
                trace.failures[0].starts_with("analysis 1: request failed")
                    && trace.failures[0].contains("no answer within timeout_s = 0.1 s"),
                "{:?}",
                trace.failures
            );
            assert!(trace.fallback_change && trace.fallback_reply);
        }
    }
    assert_eq!(r.simulator_failures(), 16);
    assert_eq!(server.requests(), 32, "each call tried twice");
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(
        stdout.contains("LLM simulator: 16 malformed or failed answers"),
        "{stdout}"
    );
}
