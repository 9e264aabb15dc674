//! Both servers under faults and hostile clients: an episode log that cannot be written (503,
//! records kept, written when it works again or dumped at shutdown), the API key and the refusal
//! to listen beyond loopback without one, slow clients cut off by the header and request
//! timeouts, a connection limit they cannot exhaust, the shutdown deadline, and serve-model's
//! bounded queue (429 with Retry-After).

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::time::{Duration, Instant};

use empathy_gym::environment::episode::read_episodes;
use serde_json::{json, Value};

use super::common::{eg, temp_dir};
use super::servers::{http, request, Server};

fn post(url: &str, path: &str, body: Value) -> (u16, Value) {
    let (s, b) = http(
        "POST",
        &format!("{url}{path}"),
        Some(body.to_string().into_bytes()),
    );
    (
        s,
        serde_json::from_str(&b).unwrap_or_else(|e| panic!("not JSON ({e}): {b}")),
    )
}

fn health(url: &str) -> (u16, Value) {
    let (s, b) = http("GET", &format!("{url}/v1/health"), None);
    (s, serde_json::from_str(&b).expect("health is JSON"))
}

fn create(url: &str, seed: u64) -> String {
    let (s, v) = post(url, "/v1/episodes", json!({"split": "test", "seed": seed}));
    assert_eq!(s, 201, "{v}");
    v["episode_id"].as_str().unwrap().to_string()
}

/// Steps `id` until its dialogue ends (the replies alternate so no line repeats).
fn play_to_the_end(url: &str, id: &str) {
    let replies = [
        "I'm sorry. How are you holding up?",
        "That sounds really hard. What happened next?",
    ];
    for turn in 0..40 {
        let (s, v) = post(
            url,
            &format!("/v1/episodes/{id}/step"),
            json!({ "reply": replies[turn % 2] }),
        );
        assert_eq!(s, 200, "step {turn}: {v}");
        if v["terminated"] == true || v["truncated"] == true {
            return;
        }
    }
    panic!("episode {id} did not end in 40 turns");
}

fn link_to(link: &Path, target: &Path) {
    let _ = std::fs::remove_file(link);
    std::os::unix::fs::symlink(target, link).expect("symlink");
}

#[test]
fn serve_env_keeps_the_records_a_failing_log_cannot_take_and_writes_them_when_it_works() {
    let dir = temp_dir();
    let (log, real) = (dir.path().join("ep.jsonl"), dir.path().join("real.jsonl"));
    link_to(&log, Path::new("/dev/full")); // every write: "No space left on device"
                                           // The log is retried on the expiry tick (a tenth of the ttl): 30 s retries every 3 s, and
                                           // leaves a loaded machine ample time between the requests of one episode.
    let server = Server::start(&["serve-env", "--out", log.to_str().unwrap(), "--ttl-s", "30"]);
    let url = server.url.clone();
    let (first, second) = (create(&url, 1), create(&url, 2));
    play_to_the_end(&url, &first);

    let (s, h) = health(&url);
    assert_eq!(s, 503, "{h}");
    assert_eq!(h["status"], "unhealthy");
    assert!(
        h["error"].as_str().unwrap().contains("No space left"),
        "{h}"
    );
    assert_eq!(h["unwritten"], 1);
    let (s, v) = post(&url, "/v1/episodes", json!({"split": "test"}));
    assert_eq!(s, 503, "no new episodes while records wait: {v}");
    assert!(
        v["error"].as_str().unwrap().contains("kept in memory"),
        "{v}"
    );
    let (s, v) = post(
        &url,
        &format!("/v1/episodes/{second}/step"),
        json!({"reply": "Tell me more."}),
    );
    assert_eq!(s, 503, "no steps either: {v}");
    let (s, b) = http("GET", &format!("{url}/v1/episodes/{first}/record"), None);
    assert_eq!(s, 200, "the finished record can still be fetched: {b}");

    // The disk is back: the retry reopens the log and writes the kept record, once.
    std::fs::write(&real, b"").unwrap();
    link_to(&log, &real);
    let start = Instant::now();
    while health(&url).0 != 200 {
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "still unhealthy: {:?}",
            health(&url)
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    play_to_the_end(&url, &second);
    let stopped = server.stop();
    assert!(stopped.ok, "{}{}", stopped.rest, stopped.stderr);
    assert!(
        stopped.rest.contains("2 episodes finished"),
        "{}",
        stopped.rest
    );
    assert!(
        !stopped.rest.contains("could not be written"),
        "{}",
        stopped.rest
    );
    let logged = read_episodes(&real).unwrap();
    assert!(
        logged.errors.is_empty(),
        "{} bad lines",
        logged.errors.len()
    );
    let mut samples: Vec<u64> = logged.records.iter().map(|(_, r)| r.sample).collect();
    samples.sort_unstable();
    assert_eq!(
        samples,
        [0, 1],
        "each finished episode once, in order of creation"
    );
}

#[test]
fn serve_env_dumps_what_the_log_never_took_beside_it_at_shutdown() {
    let dir = temp_dir();
    let log = dir.path().join("ep.jsonl");
    link_to(&log, Path::new("/dev/full"));
    let server = Server::start(&["serve-env", "--out", log.to_str().unwrap()]);
    let url = server.url.clone();
    let ids = [create(&url, 1), create(&url, 2)];
    play_to_the_end(&url, &ids[0]);
    assert_eq!(health(&url).0, 503);
    let stopped = server.stop();
    assert!(!stopped.ok, "a failed log is a failed run");
    let dump = dir.path().join("ep.jsonl.unwritten.jsonl");
    assert!(
        stopped.rest.contains("1 of them could not be written")
            && stopped.rest.contains(dump.to_str().unwrap()),
        "{}",
        stopped.rest
    );
    assert!(stopped.stderr.contains("--out") || stopped.stderr.contains("episode log failed"));
    let dumped = read_episodes(&dump).unwrap();
    assert!(dumped.errors.is_empty());
    assert_eq!(dumped.records.len(), 1);
    assert!(dumped.records[0].1.end.is_some(), "a complete record");
}

#[test]
fn both_servers_refuse_to_listen_beyond_loopback_without_a_key() {
    for args in [
        &["serve-env", "--host", "0.0.0.0", "--port", "0"][..],
        // The check comes before the model loads: no model is needed to be refused.
        &[
            "serve-model",
            "--host",
            "::",
            "--port",
            "0",
            "--model",
            "no-such-model",
        ][..],
    ] {
        let o = eg(args);
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(!o.status.success(), "{args:?} started");
        assert!(
            err.contains("refusing to listen") && err.contains("--api-key"),
            "{args:?}: {err}"
        );
    }
    let o = eg(&["serve-env", "--api-key", " ", "--port", "0"]);
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("API key is empty"));
}

#[test]
fn with_a_key_every_endpoint_but_health_needs_the_bearer_token() {
    // The key from the environment, and a bind beyond loopback that the key allows.
    let server = Server::start_with_env(
        &["serve-env", "--host", "0.0.0.0"],
        &[("EMPATHY_GYM_API_KEY", "s3cret-key")],
    );
    let url = server.url.replace("0.0.0.0", "127.0.0.1");
    let body = || Some(("application/json", br#"{"split": "test"}"#.to_vec()));
    let create =
        |headers: &[(&str, &str)]| request("POST", &format!("{url}/v1/episodes"), body(), headers);
    for headers in [
        &[][..],
        &[("authorization", "Bearer wrong-key!")][..],
        &[("authorization", "s3cret-key")][..],
    ] {
        let r = create(headers);
        assert_eq!(r.status, 401, "{headers:?}: {}", r.body);
        assert_eq!(r.headers["www-authenticate"], "Bearer");
        assert!(r.body.contains("Authorization: Bearer"), "{}", r.body);
    }
    let r = create(&[("authorization", "Bearer s3cret-key")]);
    assert_eq!(r.status, 201, "{}", r.body);
    let id: Value = serde_json::from_str(&r.body).unwrap();
    let record = format!(
        "{url}/v1/episodes/{}/record",
        id["episode_id"].as_str().unwrap()
    );
    assert_eq!(request("GET", &record, None, &[]).status, 401);
    assert_eq!(health(&url).0, 200, "the health check is open");
    drop(server);

    let server = Server::tiny_model(&["--api-key", "other-key"]);
    let models = format!("{}/v1/models", server.url);
    assert_eq!(request("GET", &models, None, &[]).status, 401);
    let ok = request(
        "GET",
        &models,
        None,
        &[("authorization", "Bearer other-key")],
    );
    assert_eq!(ok.status, 200, "{}", ok.body);
}

/// Opens a raw connection to `url` (`http://HOST:PORT`).
fn connect(url: &str) -> TcpStream {
    let s = TcpStream::connect(url.trim_start_matches("http://")).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    s
}

/// Reads until the server closes the connection; what it sent.
fn read_to_close(s: &mut TcpStream) -> String {
    let mut got = Vec::new();
    let _ = s.read_to_end(&mut got);
    String::from_utf8_lossy(&got).into_owned()
}

#[test]
fn slow_clients_are_cut_off_and_cannot_hold_every_connection() {
    let server = Server::start(&[
        "serve-env",
        "--header-timeout-s",
        "1",
        "--request-timeout-s",
        "2",
        "--max-connections",
        "2",
    ]);
    let url = server.url.clone();

    // Headers sent halfway: the connection is closed once the header timeout passes.
    let mut half = connect(&url);
    half.write_all(b"GET /v1/health HTTP/1.1\r\nHost: x\r\n")
        .unwrap();
    let start = Instant::now();
    let got = read_to_close(&mut half);
    let took = start.elapsed();
    assert!(!got.contains("200 OK"), "answered a half request: {got}");
    assert!(
        took >= Duration::from_millis(500) && took < Duration::from_secs(10),
        "closed after {took:?}"
    );

    // Two silent clients take both slots; a real request waits for the timeout to free one.
    let silent: Vec<TcpStream> = (0..2).map(|_| connect(&url)).collect();
    std::thread::sleep(Duration::from_millis(200));
    let start = Instant::now();
    assert_eq!(health(&url).0, 200);
    let waited = start.elapsed();
    assert!(
        waited >= Duration::from_millis(300),
        "the third connection was served at once ({waited:?}): no limit"
    );
    drop(silent);

    // Headers in time, the body never: 503 when the request timeout passes.
    let mut stuck = connect(&url);
    stuck
        .write_all(
            b"POST /v1/episodes HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"split\"",
        )
        .unwrap();
    let start = Instant::now();
    let got = read_to_close(&mut stuck);
    assert!(
        got.starts_with("HTTP/1.1 503") && got.contains("--request-timeout-s"),
        "{got}"
    );
    assert!(start.elapsed() < Duration::from_secs(15));
}

#[test]
fn the_shutdown_deadline_closes_connections_still_busy() {
    let server = Server::start(&[
        "serve-env",
        "--request-timeout-s",
        "120",
        "--shutdown-deadline-s",
        "1",
    ]);
    let mut stuck = connect(&server.url);
    stuck
        .write_all(
            b"POST /v1/episodes HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{",
        )
        .unwrap();
    std::thread::sleep(Duration::from_millis(300));
    let start = Instant::now();
    let stopped = server.stop();
    assert!(
        start.elapsed() < Duration::from_secs(20),
        "waited {:?} for a request that would never finish",
        start.elapsed()
    );
    assert!(stopped.ok, "{}{}", stopped.rest, stopped.stderr);
    assert!(
        stopped.rest.contains("1 connections were still busy"),
        "{}",
        stopped.rest
    );
}

#[test]
fn serve_model_turns_a_flood_away_with_429_and_retry_after() {
    let server =
        Server::tiny_model(&["--max-tokens", "64", "--max-batch", "1", "--max-queue", "1"]);
    let url = format!("{}/v1/chat/completions", server.url);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let answers: Vec<(u16, Option<String>, String)> = rt.block_on(async {
        let client = reqwest::Client::new();
        let calls = (0..120).map(|i| {
            let body = json!({
                "model": "tiny",
                "messages": [{"role": "user", "content": format!("request {i}")}],
                "max_tokens": 64,
                "seed": i,
            });
            let req = client.post(&url).json(&body).send();
            async move {
                let r = req.await.expect("send");
                let retry = r
                    .headers()
                    .get("retry-after")
                    .map(|v| v.to_str().unwrap().to_string());
                (r.status().as_u16(), retry, r.text().await.unwrap())
            }
        });
        futures_util::future::join_all(calls).await
    });
    let refused: Vec<_> = answers.iter().filter(|a| a.0 == 429).collect();
    assert!(
        !refused.is_empty(),
        "a queue of 1 took 120 requests at once"
    );
    for (_, retry, body) in &refused {
        assert_eq!(retry.as_deref(), Some("1"));
        assert!(body.contains("--max-queue"), "{body}");
    }
    assert!(
        answers.iter().all(|a| a.0 == 200 || a.0 == 429),
        "{:?}",
        answers.iter().map(|a| a.0).collect::<Vec<_>>()
    );
    let (_, h) = health(&server.url);
    assert_eq!(h["refused"], refused.len());
    assert_eq!(h["requests"], 120 - refused.len());
}
