//! `serve-model`: a chat model behind an OpenAI-compatible API, so that a local model can play the
//! simulated user and any OpenAI client can talk to a trained policy. `POST /v1/chat/completions`
//! (non-streaming, or SSE with `stream: true`) and `GET /v1/models`; concurrent requests are
//! batched by the generator worker, whose queue is bounded (429 with Retry-After beyond it); a
//! request whose client has hung up is dropped before it is generated. A streamed answer is sent once the reply is generated (role,
//! then the text in word-sized chunks, then the finish reason and `[DONE]`): the batched decoder
//! does not hand out tokens as it goes.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::{DefaultBodyLimit, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::sse::{Event, Sse};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use tokio::sync::{mpsc, oneshot};

use super::generator::{run_generator, BatchModel, BatchStats, GenError, GenJob};
use super::http_error::{no_such_route, parse_json, wrong_method, ApiError};
use super::listen::{serve, Guard};
use crate::error::{Error, Result};
use crate::model::{ChatMessage, Role, SamplingParams};
use crate::openai::{
    ChatChunk, ChatCompletion, ChatRequest, Choice, ChunkChoice, Delta, ModelCard, ModelList,
    Usage, WireMessage,
};

/// How `serve-model` runs.
#[derive(Clone, Debug)]
pub struct ModelServerConfig {
    pub addr: SocketAddr,
    /// The id `/v1/models` lists and completions carry.
    pub name: String,
    /// Most requests generated in one batch.
    pub max_batch: usize,
    /// Largest `max_tokens` a request may ask for; also the default.
    pub max_tokens: usize,
    /// Largest request body in bytes.
    pub max_body_bytes: usize,
    /// Seeds of requests that give none: `seed::derive(seed, request number)`.
    pub seed: u64,
    /// Most requests waiting for the generator; one more gets 429 with Retry-After.
    pub max_queue: usize,
    /// The key, connection limits and deadlines.
    pub guard: Guard,
}

/// What the server did.
#[derive(Clone, Debug, Default)]
pub struct ModelServerSummary {
    pub requests: u64,
    pub batches: u64,
    pub largest_batch: u64,
    /// Requests dropped unanswered because their client had hung up.
    pub abandoned: u64,
    /// Requests turned away with 429 because the queue was full.
    pub refused: u64,
    /// Connections still busy at the shutdown deadline.
    pub cut_connections: usize,
}

struct AppState {
    cfg: ModelServerConfig,
    jobs: mpsc::Sender<GenJob>,
    refused: AtomicU64,
    next: AtomicU64,
    stats: Arc<BatchStats>,
}

type Shared = Arc<AppState>;

/// Serves `model` until SIGINT or SIGTERM; `on_ready` gets the bound address.
pub fn serve_model<M: BatchModel + Send + 'static>(
    model: M,
    cfg: ModelServerConfig,
    on_ready: impl FnOnce(SocketAddr),
) -> Result<ModelServerSummary> {
    cfg.guard.check("serve-model", cfg.addr)?;
    model.prepare_to_serve()?;
    let (tx, rx) = mpsc::channel(cfg.max_queue.max(1));
    let stats = Arc::new(BatchStats::default());
    let worker = {
        let (stats, max_batch) = (stats.clone(), cfg.max_batch);
        std::thread::Builder::new()
            .name("serve-model-generator".into())
            .spawn(move || run_generator(&model, rx, max_batch, stats))
            .map_err(|e| Error::Other(format!("starting the generator: {e}")))?
    };
    let state = Arc::new(AppState {
        cfg: cfg.clone(),
        jobs: tx,
        refused: AtomicU64::new(0),
        next: AtomicU64::new(0),
        stats: stats.clone(),
    });
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| Error::Other(format!("starting the tokio runtime: {e}")))?;
    let stopped = runtime.block_on(async {
        let listener = tokio::net::TcpListener::bind(cfg.addr)
            .await
            .map_err(|e| Error::Other(format!("cannot listen on {}: {e}", cfg.addr)))?;
        let addr = listener
            .local_addr()
            .map_err(|e| Error::Other(format!("the listening address: {e}")))?;
        let stop = super::shutdown::shutdown_signal()?;
        on_ready(addr);
        serve(listener, router(state.clone()), &cfg.guard, stop).await
    })?;
    drop(runtime); // connections cut at the deadline are dropped with their tasks
    let refused = state.refused.load(Ordering::Relaxed);
    drop(state);
    worker
        .join()
        .map_err(|_| Error::Other("the generator panicked".into()))?;
    Ok(ModelServerSummary {
        requests: stats.requests.load(Ordering::Relaxed),
        batches: stats.batches.load(Ordering::Relaxed),
        largest_batch: stats.largest.load(Ordering::Relaxed),
        abandoned: stats.abandoned.load(Ordering::Relaxed),
        refused,
        cut_connections: stopped.cut_connections,
    })
}

fn router(state: Shared) -> Router {
    let limit = state.cfg.max_body_bytes;
    Router::new()
        .route("/v1/models", get(models))
        .route("/v1/chat/completions", post(completions))
        .route("/v1/health", get(health))
        .fallback(no_such_route)
        .method_not_allowed_fallback(wrong_method)
        .layer(DefaultBodyLimit::max(limit))
        .with_state(state)
}

fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

async fn models(State(state): State<Shared>) -> Json<ModelList> {
    Json(ModelList {
        object: "list".into(),
        data: vec![ModelCard {
            id: state.cfg.name.clone(),
            object: "model".into(),
            created: 0,
            owned_by: "empathy-gym".into(),
        }],
    })
}

async fn health(State(state): State<Shared>) -> Json<serde_json::Value> {
    let s = &state.stats;
    Json(serde_json::json!({
        "status": "ok",
        "model": state.cfg.name,
        "requests": s.requests.load(Ordering::Relaxed),
        "batches": s.batches.load(Ordering::Relaxed),
        "largest_batch": s.largest.load(Ordering::Relaxed),
        "abandoned": s.abandoned.load(Ordering::Relaxed),
        "refused": state.refused.load(Ordering::Relaxed),
        "queue_free": state.jobs.capacity(),
        "max_queue": state.cfg.max_queue,
    }))
}

/// The request's messages and sampling settings, checked.
pub fn check(
    req: &ChatRequest,
    cfg: &ModelServerConfig,
) -> std::result::Result<(Vec<ChatMessage>, SamplingParams), ApiError> {
    if req.messages.is_empty() {
        return Err(ApiError::bad_request(
            "`messages` is empty: send at least one message",
        ));
    }
    if req.n.is_some_and(|n| n != 1) {
        return Err(ApiError::bad_request(
            "only `n: 1` is served; send several requests instead (they are batched)",
        ));
    }
    let messages = req
        .messages
        .iter()
        .enumerate()
        .map(|(i, m)| {
            let role = match m.role.as_str() {
                "system" | "developer" => Role::System,
                "user" => Role::User,
                "assistant" => Role::Assistant,
                other => {
                    return Err(ApiError::bad_request(format!(
                        "messages[{i}].role `{other}` is not served: use system, user or assistant"
                    )))
                }
            };
            Ok(ChatMessage::new(role, m.content.clone()))
        })
        .collect::<std::result::Result<Vec<_>, _>>()?;
    let temperature = req.temperature.unwrap_or(1.0);
    let top_p = req.top_p.unwrap_or(1.0);
    if !(0.0..=2.0).contains(&temperature) {
        return Err(ApiError::bad_request(format!(
            "temperature {temperature} is outside [0, 2]"
        )));
    }
    if !(top_p > 0.0 && top_p <= 1.0) {
        return Err(ApiError::bad_request(format!(
            "top_p {top_p} is outside (0, 1]"
        )));
    }
    let max_tokens = req
        .max_completion_tokens
        .or(req.max_tokens)
        .unwrap_or(cfg.max_tokens);
    if max_tokens == 0 || max_tokens > cfg.max_tokens {
        return Err(ApiError::bad_request(format!(
            "max_tokens {max_tokens} is outside 1..={} (the server's --max-tokens)",
            cfg.max_tokens
        )));
    }
    let params = SamplingParams {
        temperature,
        top_p,
        max_new_tokens: max_tokens,
        greedy: temperature <= 0.0,
    };
    Ok((messages, params))
}

async fn completions(
    State(state): State<Shared>,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> std::result::Result<Response, ApiError> {
    let req: ChatRequest = parse_json(
        &headers,
        body,
        state.cfg.max_body_bytes,
        "chat completion request",
    )?;
    let (messages, params) = check(&req, &state.cfg)?;
    let number = state.next.fetch_add(1, Ordering::Relaxed);
    let seed = req
        .seed
        .unwrap_or_else(|| crate::seed::derive(state.cfg.seed, number));
    let (done, answer) = oneshot::channel();
    let job = GenJob {
        messages,
        params,
        seed,
        done,
    };
    state.jobs.try_send(job).map_err(|e| match e {
        mpsc::error::TrySendError::Full(_) => queue_full(&state),
        mpsc::error::TrySendError::Closed(_) => ApiError::internal("the generator has stopped"),
    })?;
    let (generation, prompt_tokens) = answer
        .await
        .map_err(|_| ApiError::internal("the generator stopped before answering"))?
        .map_err(|e| match e {
            GenError::BadRequest(m) => ApiError::bad_request(m),
            GenError::Failed(m) => ApiError::internal(m),
        })?;
    let id = format!("chatcmpl-{number}");
    let finish = if generation.stopped { "stop" } else { "length" };
    let model = state.cfg.name.clone();
    if req.stream {
        return Ok(stream(id, model, generation.text, finish).into_response());
    }
    let completion_tokens = generation.tokens.len();
    Ok(Json(ChatCompletion {
        id,
        object: "chat.completion".into(),
        created: now(),
        model,
        choices: vec![Choice {
            index: 0,
            message: WireMessage {
                role: "assistant".into(),
                content: generation.text,
            },
            finish_reason: Some(finish.into()),
        }],
        usage: Usage {
            prompt_tokens,
            completion_tokens,
            total_tokens: prompt_tokens + completion_tokens,
        },
    })
    .into_response())
}

/// Seconds a client turned away with 429 is asked to wait.
const RETRY_AFTER_S: u64 = 1;

fn queue_full(state: &AppState) -> ApiError {
    state.refused.fetch_add(1, Ordering::Relaxed);
    ApiError::new(
        StatusCode::TOO_MANY_REQUESTS,
        format!(
            "{} requests are already waiting for the model (the server's --max-queue); retry after {RETRY_AFTER_S} s",
            state.cfg.max_queue
        ),
    )
    .retry_after(RETRY_AFTER_S)
}

/// The SSE answer: a role chunk, the text in word-sized chunks, the finish chunk, `[DONE]`.
fn stream(id: String, model: String, text: String, finish: &str) -> impl IntoResponse {
    let created = now();
    let chunk = |delta: Delta, finish: Option<String>| ChatChunk {
        id: id.clone(),
        object: "chat.completion.chunk".into(),
        created,
        model: model.clone(),
        choices: vec![ChunkChoice {
            index: 0,
            delta,
            finish_reason: finish,
        }],
    };
    let mut chunks = vec![chunk(
        Delta {
            role: Some("assistant".into()),
            content: Some(String::new()),
        },
        None,
    )];
    chunks.extend(word_pieces(&text).into_iter().map(|w| {
        chunk(
            Delta {
                role: None,
                content: Some(w),
            },
            None,
        )
    }));
    chunks.push(chunk(Delta::default(), Some(finish.to_string())));
    let mut events: Vec<std::result::Result<Event, Infallible>> = chunks
        .iter()
        .map(|c| Ok(Event::default().data(serde_json::to_string(c).unwrap_or_default())))
        .collect();
    events.push(Ok(Event::default().data("[DONE]")));
    Sse::new(futures_util::stream::iter(events))
}

/// Splits text into pieces that each start at a word (the whitespace before a word goes with
/// it), so that concatenating them gives the text back exactly.
pub fn word_pieces(text: &str) -> Vec<String> {
    let mut pieces = Vec::new();
    let mut cur = String::new();
    let mut in_word = false;
    for c in text.chars() {
        if c.is_whitespace() && in_word {
            pieces.push(std::mem::take(&mut cur));
            in_word = false;
        }
        if !c.is_whitespace() {
            in_word = true;
        }
        cur.push(c);
    }
    if !cur.is_empty() {
        pieces.push(cur);
    }
    pieces
}

#[cfg(test)]
mod tests {
    use super::word_pieces;

    #[test]
    fn word_pieces_rebuild_the_text() {
        let t = "Hello there,  how are\nyou? ";
        let p = word_pieces(t);
        assert_eq!(p, ["Hello", " there,", "  how", " are", "\nyou?", " "]);
        assert_eq!(p.concat(), t);
        assert!(word_pieces("").is_empty());
    }
}
