//! `serve-env` end to end over loopback: 200 concurrent episodes driven from another process (none
//! lost, every record complete, `replay verify` passes on the log), every kind of bad request
//! answered with a 4xx and a message, idle expiry, and the Python examples run with plain python3.

use std::process::Command;

use empathy_gym::environment::episode::read_episodes;

use super::common::*;
use super::servers::{http, http_typed, Server};

fn error_message(status: u16, body: &str, want: u16, what: &str) -> String {
    assert_eq!(status, want, "{what}: got {status} {body}");
    let v: serde_json::Value =
        serde_json::from_str(body).unwrap_or_else(|e| panic!("{what}: not JSON ({e}): {body}"));
    let msg = v["error"].as_str().unwrap_or_default().to_string();
    assert!(msg.len() > 20, "{what}: no useful message: {body}");
    msg
}

fn python(args: &[&str]) -> std::process::Output {
    Command::new("python3")
        .args(args)
        .current_dir(root())
        .output()
        .expect("python3 runs")
}

fn show(o: &std::process::Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

#[test]
#[ignore = "slow (20 s or more): scripts/test-full.sh runs it"]
fn serve_env_200_concurrent_episodes_none_lost_and_the_log_verifies() {
    let dir = temp_dir();
    let log = dir.path().join("episodes.jsonl");
    let server = Server::start(&["serve-env", "--out", log.to_str().unwrap(), "--seed", "3"]);
    let o = python(&[
        "scripts/serve-env-load.py",
        "--url",
        &server.url,
        "--episodes",
        "200",
        "--concurrency",
        "200",
        // The scripts as they are: after the first round every reply is in the embedding cache,
        // which keeps this test (and the replay verify after it) short on 2 cores.
        "--fixed-replies",
    ]);
    assert!(o.status.success(), "load run failed: {}", show(&o));
    let numbers: serde_json::Value =
        serde_json::from_str(String::from_utf8_lossy(&o.stdout).trim()).expect("numbers line");
    assert_eq!(numbers["lost"], 0);
    assert_eq!(numbers["episodes"], 200);
    let stopped = server.stop();
    let rest = stopped.rest;
    assert!(stopped.ok, "the server did not shut down cleanly: {rest}");
    assert!(
        rest.contains("200 episodes finished") && rest.contains("0 unfinished"),
        "{rest}"
    );
    let records = read_episodes(&log).unwrap();
    assert!(records.errors.is_empty());
    assert_eq!(
        records.records.len(),
        200,
        "every finished episode is in the log"
    );
    let mut samples: Vec<u64> = records.records.iter().map(|(_, r)| r.sample).collect();
    samples.sort_unstable();
    samples.dedup();
    assert_eq!(samples.len(), 200, "200 distinct episodes");
    for (_, r) in &records.records {
        assert!(r.end.is_some() && r.reward.is_some(), "incomplete record");
        assert_eq!(r.policy.model, "load-test");
    }
    let v = eg(&["replay", "verify", log.to_str().unwrap()]);
    let out = String::from_utf8_lossy(&v.stdout);
    assert!(
        v.status.success(),
        "{out}{}",
        String::from_utf8_lossy(&v.stderr)
    );
    assert!(out.contains("200 identical, 0 differ"), "{out}");
}

#[test]
fn serve_env_bad_requests_get_4xx_with_a_message() {
    let server = Server::start(&[
        "serve-env",
        "--max-sessions",
        "3",
        "--max-body-bytes",
        "2048",
    ]);
    let u = |p: &str| format!("{}{p}", server.url);
    let (s, b) = http("POST", &u("/v1/episodes"), Some(b"{\"profile\": ".to_vec()));
    assert!(error_message(s, &b, 400, "malformed JSON").contains("not a valid episode request"));
    // JSON not declared as JSON (what a web page can send cross-site without a preflight).
    for kind in ["text/plain", "application/x-www-form-urlencoded", ""] {
        let body = Some((kind, br#"{"split": "test"}"#.to_vec()));
        let (s, b) = http_typed("POST", &u("/v1/episodes"), body);
        assert!(
            error_message(s, &b, 415, "a body not sent as JSON")
                .contains("Content-Type: application/json"),
            "{kind}: {b}"
        );
    }
    let (s, b) = http(
        "POST",
        &u("/v1/episodes"),
        Some(br#"{"profile": "no-such-scenario:maya"}"#.to_vec()),
    );
    assert!(error_message(s, &b, 400, "unknown profile").contains("unknown scenario"));
    let (s, b) = http(
        "POST",
        &u("/v1/episodes"),
        Some(br#"{"profile": "x"}"#.to_vec()),
    );
    assert!(error_message(s, &b, 400, "not a profile").contains("SCENARIO:PERSONA"));
    let (s, b) = http(
        "POST",
        &u("/v1/episodes"),
        Some(br#"{"split": "test", "difficulty": "brutal"}"#.to_vec()),
    );
    assert!(error_message(s, &b, 400, "bad difficulty").contains("brutal"));
    let (s, b) = http(
        "POST",
        &u("/v1/episodes"),
        Some(br#"{"split": "test", "colour": 1}"#.to_vec()),
    );
    assert!(error_message(s, &b, 400, "unknown field").contains("colour"));
    let (s, b) = http("POST", &u("/v1/episodes"), Some(b"{}".to_vec()));
    error_message(s, &b, 400, "neither profile nor split");
    for (knobs, names) in [
        (r#"{"max_turns": 0}"#, "knobs.max_turns"),
        (r#"{"hint_rate": 2}"#, "knobs.hint_rate"),
        (r#"{"patience": 3}"#, "patience"),
    ] {
        let body = format!(r#"{{"split": "test", "knobs": {knobs}}}"#);
        let (s, b) = http("POST", &u("/v1/episodes"), Some(body.into_bytes()));
        assert!(
            error_message(s, &b, 400, "bad knobs").contains(names),
            "{b}"
        );
    }
    let big = format!(
        "{{\"split\": \"test\", \"policy\": \"{}\"}}",
        "x".repeat(4096)
    );
    let (s, b) = http("POST", &u("/v1/episodes"), Some(big.into_bytes()));
    assert!(error_message(s, &b, 413, "oversized body").contains("2048 bytes"));

    // A dialogue to its end, then one reply too many.
    let (s, b) = http(
        "POST",
        &u("/v1/episodes"),
        Some(br#"{"split": "test", "seed": 1, "difficulty": "hard"}"#.to_vec()),
    );
    assert_eq!(s, 201, "{b}");
    let id = serde_json::from_str::<serde_json::Value>(&b).unwrap()["episode_id"]
        .as_str()
        .unwrap()
        .to_string();
    // Unguessable: 128 random bits, not a count from 0.
    assert!(
        id.len() == 35 && id.starts_with("ep-") && id != "ep-0",
        "{id}"
    );
    let step = u(&format!("/v1/episodes/{id}/step"));
    let mut over = false;
    for _ in 0..20 {
        let (s, b) = http(
            "POST",
            &step,
            Some(br#"{"reply": "Just get over it, honestly."}"#.to_vec()),
        );
        assert_eq!(s, 200, "{b}");
        let v: serde_json::Value = serde_json::from_str(&b).unwrap();
        if v["terminated"].as_bool().unwrap() || v["truncated"].as_bool().unwrap() {
            over = true;
            assert!(v["end"].is_string());
            break;
        }
    }
    assert!(over, "the dialogue never ended");
    let (s, b) = http(
        "POST",
        &step,
        Some(br#"{"reply": "Are you still there?"}"#.to_vec()),
    );
    assert!(error_message(s, &b, 409, "reply to a finished episode").contains("is over"));
    let (s, b) = http("POST", &step, Some(br#"{"text": "wrong field"}"#.to_vec()));
    error_message(s, &b, 400, "step without reply");
    let (s, b) = http("GET", &u(&format!("/v1/episodes/{id}/record")), None);
    assert_eq!(s, 200);
    let rec: empathy_gym::environment::episode::EpisodeRecord =
        serde_json::from_str(&b).expect("a record");
    assert!(rec.end.is_some());

    // A knob override: a one-reply episode ends at its first step, with its reward.
    let (s, b) = http(
        "POST",
        &u("/v1/episodes"),
        Some(br#"{"split": "test", "seed": 1, "knobs": {"max_turns": 1}}"#.to_vec()),
    );
    assert_eq!(s, 201, "{b}");
    let created: serde_json::Value = serde_json::from_str(&b).unwrap();
    assert_eq!(created["max_turns"], 1, "{b}");
    let one = created["episode_id"].as_str().unwrap();
    let (s, b) = http(
        "POST",
        &u(&format!("/v1/episodes/{one}/step")),
        Some(br#"{"reply": "That sounds heavy. What happened?"}"#.to_vec()),
    );
    assert_eq!(s, 200, "{b}");
    let v: serde_json::Value = serde_json::from_str(&b).unwrap();
    assert!(v["truncated"].as_bool().unwrap(), "{b}");
    let emotion = v["observation"]["emotion"].as_f64().unwrap();
    assert!(
        (v["reward"].as_f64().unwrap() - emotion / 100.0).abs() < 1e-6,
        "{b}"
    );
    let (s, b) = http("DELETE", &u(&format!("/v1/episodes/{one}")), None);
    assert_eq!(s, 204, "{b}");
    let (s, b) = http(
        "POST",
        &u("/v1/episodes/ep-999/step"),
        Some(br#"{"reply": "hi"}"#.to_vec()),
    );
    assert!(error_message(s, &b, 404, "unknown episode").contains("ep-999"));
    let (s, b) = http("GET", &u("/v1/nothing"), None);
    error_message(s, &b, 404, "unknown path");
    let (s, b) = http("GET", &u("/v1/episodes"), None);
    error_message(s, &b, 405, "wrong method");

    // The session bound: three held (one finished), two more fit, then 429.
    for _ in 0..2 {
        let (s, b) = http(
            "POST",
            &u("/v1/episodes"),
            Some(br#"{"split": "train"}"#.to_vec()),
        );
        assert_eq!(s, 201, "{b}");
    }
    let (s, b) = http(
        "POST",
        &u("/v1/episodes"),
        Some(br#"{"split": "train"}"#.to_vec()),
    );
    assert!(error_message(s, &b, 429, "too many sessions").contains("--max-sessions"));
    let (s, _) = http("DELETE", &u(&format!("/v1/episodes/{id}")), None);
    assert_eq!(s, 204);
    let (s, b) = http(
        "POST",
        &u("/v1/episodes"),
        Some(br#"{"split": "train"}"#.to_vec()),
    );
    assert_eq!(s, 201, "a deleted episode frees its place: {b}");
    assert!(server.stop().ok);
}

#[test]
fn serve_env_readies_a_split_before_listening_when_asked() {
    let catalog = empathy_gym::environment::profile::Catalog::load(&root()).unwrap();
    let n = catalog
        .split(empathy_gym::environment::profile::Split::Test)
        .len();
    let server = Server::start(&["serve-env", "--prepare", "test"]);
    let (s, b) = http(
        "POST",
        &format!("{}/v1/episodes", server.url),
        Some(br#"{"split": "test", "seed": 3}"#.to_vec()),
    );
    assert_eq!(s, 201, "{b}");
    let stopped = server.stop();
    assert!(stopped.ok, "{}", stopped.stderr);
    let line = format!("simulator: preparing {n} profiles");
    assert!(stopped.stderr.contains(&line), "{}", stopped.stderr);
}

#[test]
fn serve_env_drops_idle_episodes_after_the_ttl() {
    let server = Server::start(&["serve-env", "--ttl-s", "1"]);
    let (s, b) = http(
        "POST",
        &format!("{}/v1/episodes", server.url),
        Some(br#"{"split": "test"}"#.to_vec()),
    );
    assert_eq!(s, 201, "{b}");
    let id = serde_json::from_str::<serde_json::Value>(&b).unwrap()["episode_id"]
        .as_str()
        .unwrap()
        .to_string();
    std::thread::sleep(std::time::Duration::from_millis(2500));
    let (s, b) = http(
        "POST",
        &format!("{}/v1/episodes/{id}/step", server.url),
        Some(br#"{"reply": "hello"}"#.to_vec()),
    );
    assert!(error_message(s, &b, 404, "expired episode").contains("without a request"));
    let stopped = server.stop();
    assert!(stopped.ok, "{}", stopped.stderr);
    assert!(
        stopped.rest.contains("1 unfinished episodes dropped"),
        "{}",
        stopped.rest
    );
}

#[test]
fn python_examples_run_against_serve_env_with_plain_python3() {
    let dir = temp_dir();
    let served = dir.path().join("served.jsonl");
    let server = Server::start(&["serve-env", "--out", served.to_str().unwrap()]);
    let o = python(&[
        "examples/python/trl_reward.py",
        "--url",
        &server.url,
        "--rows",
        "3",
    ]);
    assert!(o.status.success(), "{}", show(&o));
    let out = String::from_utf8_lossy(&o.stdout);
    assert_eq!(
        out.lines()
            .filter(|l| l.starts_with("| ") && !l.starts_with("| profile"))
            .count(),
        3,
        "{out}"
    );
    assert!(out.contains("mean reward: listener"), "{out}");
    // Each scored reply is a one-reply episode that ends at its step, so the server logged all
    // six (two candidates on three rows), and they verify.
    let v = eg(&["replay", "verify", served.to_str().unwrap()]);
    let text = String::from_utf8_lossy(&v.stdout);
    assert!(v.status.success() && text.contains("6 identical"), "{text}");
    let log = dir.path().join("loop.jsonl");
    let o = python(&[
        "examples/python/multiturn_loop.py",
        "--url",
        &server.url,
        "--episodes",
        "3",
        "--out",
        log.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", show(&o));
    assert!(String::from_utf8_lossy(&o.stdout).contains("3 episodes, mean reward"));
    // The records the loop fetched are the schema replay reads, and they verify.
    let v = eg(&["replay", "verify", log.to_str().unwrap()]);
    let text = String::from_utf8_lossy(&v.stdout);
    assert!(v.status.success() && text.contains("3 identical"), "{text}");
    server.stop();
}
