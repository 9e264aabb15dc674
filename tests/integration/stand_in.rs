//! An OpenAI-compatible stand-in for the LLM user's server, in this process: answers in the LLM
//! user's format (or prose that ignores it), can refuse the first requests with 503 or 429 and
//! delay every answer, and counts the requests it saw and the most it held at once.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::{Json, Router};
use empathy_gym::openai::{ChatCompletion, ChatRequest, Choice, Usage, WireMessage};

/// What the stand-in's answers look like.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Answers {
    /// In the format: the analysis prompt gets `Change: +10` with two reasons, the reply prompt
    /// `Reply: Okay. I'm at N now.` quoting the emotion it was given.
    WellFormed,
    /// As `WellFormed`, except that the first turn's analysis is malformed when first asked and
    /// right when re-asked (deterministic by content, so `replay verify` re-runs it).
    FirstAnalysisMalformed,
    /// Prose that ignores the format, for every prompt.
    IgnoreFormat,
}

/// How the stand-in behaves.
#[derive(Clone, Debug)]
pub struct StandIn {
    pub answers: Answers,
    /// Statuses answered, in order, to the first requests (e.g. `[503, 429]`), before answering.
    pub errors_first: Vec<u16>,
    /// How long every request is held before it is answered.
    pub delay: Duration,
}

impl StandIn {
    /// A prompt stand-in with `answers`, no errors, no delay.
    pub fn new(answers: Answers) -> Self {
        StandIn {
            answers,
            errors_first: Vec::new(),
            delay: Duration::ZERO,
        }
    }

    /// Serves on 127.0.0.1 (a free port) from a thread of its own, for the rest of the test.
    pub fn start(self) -> StandInServer {
        let stats = Arc::new(Stats::default());
        let shared = (Arc::new(self), stats.clone());
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            rt.block_on(async move {
                let app = Router::new().route(
                    "/v1/chat/completions",
                    post(move |Json(req): Json<ChatRequest>| {
                        let (cfg, stats) = shared.clone();
                        async move { cfg.answer(&stats, req).await }
                    }),
                );
                let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
                tx.send(listener.local_addr().unwrap()).unwrap();
                axum::serve(listener, app).await.unwrap();
            });
        });
        let addr = rx.recv().unwrap();
        StandInServer {
            url: format!("http://{addr}"),
            stats,
        }
    }

    async fn answer(&self, stats: &Stats, req: ChatRequest) -> Response {
        let n = stats.requests.fetch_add(1, Ordering::SeqCst);
        let _held = InFlight::enter(stats);
        tokio::time::sleep(self.delay).await;
        if let Some(&code) = self.errors_first.get(n as usize) {
            let status = StatusCode::from_u16(code).unwrap();
            return (status, "the stand-in is busy").into_response();
        }
        let text = self.text(&req);
        Json(ChatCompletion {
            id: format!("c{n}"),
            object: "chat.completion".into(),
            created: 0,
            model: req.model,
            choices: vec![Choice {
                index: 0,
                message: WireMessage {
                    role: "assistant".into(),
                    content: text,
                },
                finish_reason: Some("stop".into()),
            }],
            usage: Usage::default(),
        })
        .into_response()
    }

    fn text(&self, req: &ChatRequest) -> String {
        if self.answers == Answers::IgnoreFormat {
            return "I'm so sorry to hear that. I'm so sorry to hear that.".to_string();
        }
        let system = &req.messages[0].content;
        let last = &req.messages.last().unwrap().content;
        if system.contains("Change:") {
            let first_turn = !last.contains("Supporter:");
            if self.answers == Answers::FirstAnalysisMalformed
                && first_turn
                && req.messages.len() == 2
            {
                "I feel a bit better.".to_string()
            } else {
                "Change: +10\nReasons: you named it; you stayed with me".to_string()
            }
        } else {
            let emotion = last
                .split("Your emotion is now ")
                .nth(1)
                .and_then(|s| s.split(' ').next())
                .unwrap_or("?");
            format!("Reply: Okay. I'm at {emotion} now.")
        }
    }
}

#[derive(Default)]
struct Stats {
    requests: AtomicU64,
    in_flight: AtomicU64,
    peak: AtomicU64,
}

/// Counts a request in flight until it is answered or its client goes away (the handler is
/// dropped then).
struct InFlight<'a>(&'a Stats);

impl<'a> InFlight<'a> {
    fn enter(stats: &'a Stats) -> Self {
        let now = stats.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
        stats.peak.fetch_max(now, Ordering::SeqCst);
        InFlight(stats)
    }
}

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        self.0.in_flight.fetch_sub(1, Ordering::SeqCst);
    }
}

/// A running stand-in.
pub struct StandInServer {
    /// `http://127.0.0.1:PORT`.
    pub url: String,
    stats: Arc<Stats>,
}

impl StandInServer {
    /// Requests received, every attempt counted (refused ones too).
    pub fn requests(&self) -> u64 {
        self.stats.requests.load(Ordering::SeqCst)
    }

    /// The most requests held at once.
    pub fn peak_in_flight(&self) -> u64 {
        self.stats.peak.load(Ordering::SeqCst)
    }
}

/// Writes the LLM user's settings for a server at `url` into `dir/llm.yaml` (model `tiny`, 12
/// tokens an answer) plus the `extra` YAML lines (other keys: retries, timeouts, concurrency),
/// and returns its path.
pub fn llm_settings(dir: &std::path::Path, url: &str, extra: &str) -> String {
    let p = dir.join("llm.yaml");
    std::fs::write(
        &p,
        format!("base_url: {url}\nmodel: tiny\nmax_tokens: 12\n{extra}"),
    )
    .unwrap();
    p.display().to_string()
}
