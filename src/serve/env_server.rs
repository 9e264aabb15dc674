//! `serve-env`: the dialogue environment over HTTP JSON (docs/SERVE.md). Create an episode and get
//! the opening message, post the policy's reply and get the user's answer with emotion, reward
//! components, terminated and truncated, fetch the episode's JSONL record (the schema `replay`
//! reads). Sessions are bounded and expire when idle; bodies are size-limited; every bad request
//! gets a 4xx with a message. Finished episodes are appended to the log as they end (flushed per
//! line), so a shutdown (SIGINT or SIGTERM, graceful) loses none; while the log cannot be written
//! the server answers 503, keeps the records, and writes them once it can (or dumps them next to
//! the log at shutdown).

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::{DefaultBodyLimit, Path, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::IntoResponse;
use axum::routing::{get, post};
use axum::{Json, Router};
use tokio::sync::{mpsc, oneshot};

use super::env_api::{
    CreateEpisode, Created, Health, ObservationBody, ProfileBody, StepRequest, Stepped,
};
use super::http_error::{no_such_route, parse_json, wrong_method, ApiError};
use super::listen::{serve, Guard};
use super::log_sink::{LogHealth, LogSink};
use super::sessions::{SessionError, SessionTable};
use super::stepper::{run_worker, Job, StepJob, Written};
use crate::environment::episode::{DialogueEnv, PolicyRef};
use crate::environment::profile::{Catalog, Difficulty, Profile, ProfileId};
use crate::environment::sim::Simulator;
use crate::error::{Error, Result};

/// How the server runs.
#[derive(Clone, Debug)]
pub struct EnvServerConfig {
    /// Where to listen (port 0: any free port; the chosen address is passed to `on_ready`).
    pub addr: SocketAddr,
    /// The append-only episode log (JSONL, one finished dialogue per line), if any.
    pub out: Option<PathBuf>,
    /// Most sessions held at once (live and finished); a create beyond it gets 429.
    pub max_sessions: usize,
    /// A session with no request for this long is dropped.
    pub ttl: Duration,
    /// Largest request body in bytes (413 beyond).
    pub max_body_bytes: usize,
    /// Seeds of episodes created without one: `seed::derive(seed, episode number)`.
    pub seed: u64,
    /// The records' `run`.
    pub run: String,
    /// Most replies appraised in one batch.
    pub max_batch: usize,
    /// The key, connection limits and deadlines.
    pub guard: Guard,
}

/// What the server did, for the summary printed at shutdown.
#[derive(Clone, Debug)]
pub struct EnvServerSummary {
    pub written: Written,
    /// Unfinished episodes dropped (expired, or held at shutdown).
    pub dropped_live: usize,
    /// Connections still busy at the shutdown deadline.
    pub cut_connections: usize,
    pub out: Option<PathBuf>,
}

struct AppState {
    catalog: Catalog,
    sim: Arc<dyn Simulator>,
    sessions: Mutex<SessionTable>,
    jobs: mpsc::UnboundedSender<Job>,
    next_number: AtomicU64,
    finished: Arc<AtomicU64>,
    expired_live: AtomicU64,
    log: Arc<LogHealth>,
    cfg: EnvServerConfig,
}

type Shared = Arc<AppState>;

impl AppState {
    fn table(&self) -> std::sync::MutexGuard<'_, SessionTable> {
        // A panic while holding the lock cannot leave the table half-changed (each method is one
        // map operation), so a poisoned lock is still usable.
        self.sessions.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// 503 while the episode log cannot be written: no new work until the records already
    /// finished are safe.
    fn log_works(&self) -> Result<(), ApiError> {
        match self.log.failure() {
            None => Ok(()),
            Some((cause, unwritten)) => Err(ApiError::new(
                StatusCode::SERVICE_UNAVAILABLE,
                format!(
                    "the episode log cannot be written ({cause}); {unwritten} finished episodes are kept in memory and written as soon as it works again. Free the disk or fix the file, then retry"
                ),
            )),
        }
    }
}

fn router(state: Shared) -> Router {
    let limit = state.cfg.max_body_bytes;
    Router::new()
        .route("/v1/health", get(health))
        .route("/v1/episodes", post(create))
        .route("/v1/episodes/{id}/step", post(step))
        .route("/v1/episodes/{id}/record", get(record))
        .route("/v1/episodes/{id}", axum::routing::delete(remove))
        .fallback(no_such_route)
        .method_not_allowed_fallback(wrong_method)
        .layer(DefaultBodyLimit::max(limit))
        .with_state(state)
}

/// Runs the server until SIGINT or SIGTERM, then shuts down gracefully: in-flight requests are
/// answered (up to the shutdown deadline), the simulator worker drains its queue, and every
/// finished episode is in the log (or, if the log failed, in the dump the summary names).
/// `on_ready` gets the bound address once the server accepts connections.
pub fn serve_env(
    catalog: Catalog,
    sim: Arc<dyn Simulator>,
    cfg: EnvServerConfig,
    on_ready: impl FnOnce(SocketAddr),
) -> Result<EnvServerSummary> {
    cfg.guard.check("serve-env", cfg.addr)?;
    let sink = LogSink::open(cfg.out.as_deref())?;
    let log = sink.health();
    let (tx, rx) = mpsc::unbounded_channel();
    let finished = Arc::new(AtomicU64::new(0));
    let worker = {
        let (sim, finished, max_batch) = (sim.clone(), finished.clone(), cfg.max_batch);
        std::thread::Builder::new()
            .name("serve-env-simulator".into())
            .spawn(move || run_worker(sim, rx, sink, max_batch, finished))
            .map_err(|e| Error::Other(format!("starting the simulator worker: {e}")))?
    };
    let state = Arc::new(AppState {
        catalog,
        sim,
        sessions: Mutex::new(SessionTable::new(cfg.max_sessions, cfg.ttl)),
        jobs: tx,
        next_number: AtomicU64::new(0),
        finished,
        expired_live: AtomicU64::new(0),
        log,
        cfg: cfg.clone(),
    });
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| Error::Other(format!("starting the tokio runtime: {e}")))?;
    let (dropped_at_end, stopped) = runtime.block_on(async {
        let listener = tokio::net::TcpListener::bind(cfg.addr)
            .await
            .map_err(|e| Error::Other(format!("cannot listen on {}: {e}", cfg.addr)))?;
        let addr = listener
            .local_addr()
            .map_err(|e| Error::Other(format!("the listening address: {e}")))?;
        let reaper = tokio::spawn(expire_loop(state.clone()));
        let stop = super::shutdown::shutdown_signal()?;
        on_ready(addr);
        let stopped = serve(listener, router(state.clone()), &cfg.guard, stop).await?;
        reaper.abort();
        let _ = reaper.await;
        Ok::<_, Error>((state.table().live(), stopped))
    })?;
    drop(runtime); // connections cut at the deadline are dropped with their tasks
    let expired = state.expired_live.load(Ordering::Relaxed) as usize;
    drop(state); // the last sender: the worker drains its queue and stops
    let written = worker
        .join()
        .map_err(|_| Error::Other("the simulator worker panicked".into()))?;
    Ok(EnvServerSummary {
        written,
        dropped_live: dropped_at_end + expired,
        cut_connections: stopped.cut_connections,
        out: cfg.out,
    })
}

async fn expire_loop(state: Shared) {
    let every = (state.cfg.ttl / 10).clamp(Duration::from_millis(100), Duration::from_secs(10));
    let mut tick = tokio::time::interval(every);
    loop {
        tick.tick().await;
        let dropped = state.table().expire(Instant::now());
        state
            .expired_live
            .fetch_add(dropped as u64, Ordering::Relaxed);
        if state.log.failure().is_some() {
            let _ = state.jobs.send(Job::Flush);
        }
    }
}

/// 200 and `ok`, or 503 and `unhealthy` with the cause while the log cannot be written.
async fn health(State(state): State<Shared>) -> (StatusCode, Json<Health>) {
    let failure = state.log.failure();
    let table = state.table();
    let info = state.sim.info();
    let status = match failure {
        None => StatusCode::OK,
        Some(_) => StatusCode::SERVICE_UNAVAILABLE,
    };
    let (error, unwritten) = failure.map_or((None, 0), |(c, n)| {
        (Some(format!("the episode log cannot be written: {c}")), n)
    });
    let body = Health {
        status: if error.is_none() { "ok" } else { "unhealthy" }.into(),
        sessions: table.len(),
        max_sessions: table.max(),
        finished: state.finished.load(Ordering::Relaxed),
        simulator: format!("{} {}", info.kind, info.version),
        error,
        unwritten,
    };
    (status, Json(body))
}

fn full(state: &AppState) -> ApiError {
    ApiError::new(
        StatusCode::TOO_MANY_REQUESTS,
        format!(
            "the server holds its maximum of {} episodes (--max-sessions); finish or DELETE some, or wait for idle ones to expire ({} s)",
            state.cfg.max_sessions,
            state.cfg.ttl.as_secs()
        ),
    )
}

/// The profile an episode request names: its `profile`, or a draw from its `split` by `seed`, at
/// its difficulty (moderate when unset; `auto` is not served).
pub fn resolve_profile(
    catalog: &Catalog,
    req: &CreateEpisode,
    seed: u64,
) -> std::result::Result<(ProfileId, Difficulty, Profile), ApiError> {
    let id = match (&req.profile, req.split) {
        (Some(p), None) => ProfileId::parse(p).map_err(ApiError::bad_request)?,
        (None, Some(split)) => {
            let ids = catalog.split(split);
            if ids.is_empty() {
                return Err(ApiError::bad_request(format!(
                    "the {} split is empty",
                    split.as_str()
                )));
            }
            ids[(crate::seed::derive(seed, 1) % ids.len() as u64) as usize].clone()
        }
        _ => {
            return Err(ApiError::bad_request(
                "give exactly one of `profile` (SCENARIO:PERSONA) or `split` (train or test)",
            ))
        }
    };
    let difficulty = req.difficulty.unwrap_or(Difficulty::Moderate);
    if difficulty == Difficulty::Auto {
        return Err(ApiError::bad_request(
            "difficulty `auto` calibrates itself between training steps of `empathy-gym train`; \
             ask for easy, moderate or hard",
        ));
    }
    let knobs = req.knobs.clone().unwrap_or_default();
    knobs
        .check_ranges(std::path::Path::new("the request"), "knobs.")
        .map_err(|e| ApiError::bad_request(e.to_string()))?;
    let profile = catalog
        .profile(&id, difficulty, &knobs)
        .map_err(|e| ApiError::bad_request(format!("profile `{id}`: {e}")))?;
    Ok((id, difficulty, profile))
}

async fn create(
    State(state): State<Shared>,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Result<(StatusCode, Json<Created>), ApiError> {
    let req: CreateEpisode =
        parse_json(&headers, body, state.cfg.max_body_bytes, "episode request")?;
    state.log_works()?;
    if !state.table().has_room() {
        return Err(full(&state));
    }
    let number = state.next_number.fetch_add(1, Ordering::Relaxed);
    let seed = req
        .seed
        .unwrap_or_else(|| crate::seed::derive(state.cfg.seed, number));
    let (id, difficulty, profile) = resolve_profile(&state.catalog, &req, seed)?;
    let (done, answer) = oneshot::channel();
    let prepare = Job::Prepare {
        profile: profile.clone(),
        done,
    };
    state
        .jobs
        .send(prepare)
        .map_err(|_| ApiError::internal("the simulator worker has stopped"))?;
    answer
        .await
        .map_err(|_| ApiError::internal("the simulator worker stopped before answering"))?
        .map_err(|e| ApiError::internal(format!("preparing profile `{id}`: {e}")))?;
    let mut env = DialogueEnv::new(
        profile,
        req.reward_mode.unwrap_or_default(),
        req.aggregate.unwrap_or_default(),
    );
    let obs = env.reset(seed);
    let max_turns = env.profile().knobs.max_turns;
    let policy = PolicyRef {
        model: req.policy.unwrap_or_else(|| "remote".into()),
        checkpoint: None,
    };
    let episode_id = state
        .table()
        .insert(number, env, policy)
        .ok_or_else(|| full(&state))?;
    Ok((
        StatusCode::CREATED,
        Json(Created {
            episode_id,
            profile: ProfileBody {
                scenario: id.scenario,
                persona: id.persona,
                difficulty,
            },
            seed,
            max_turns,
            observation: ObservationBody {
                text: obs.text,
                emotion: obs.emotion,
            },
        }),
    ))
}

fn session_error(id: &str, e: SessionError, state: &AppState) -> ApiError {
    match e {
        SessionError::Unknown => ApiError::not_found(format!(
            "no episode `{id}`: never created, or dropped after {} s without a request",
            state.cfg.ttl.as_secs()
        )),
        SessionError::Busy => ApiError::conflict(format!(
            "a step on episode `{id}` is in flight; wait for its answer before sending the next reply"
        )),
        SessionError::Finished => ApiError::conflict(format!(
            "episode `{id}` is over; fetch its record at GET /v1/episodes/{id}/record and create a new episode"
        )),
    }
}

async fn step(
    State(state): State<Shared>,
    Path(id): Path<String>,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Result<Json<Stepped>, ApiError> {
    let req: StepRequest = parse_json(&headers, body, state.cfg.max_body_bytes, "step request")?;
    state.log_works()?;
    let (env, policy, number) = state
        .table()
        .take(&id)
        .map_err(|e| session_error(&id, e, &state))?;
    let (done, answer) = oneshot::channel();
    let job = Job::Step(Box::new(StepJob {
        env,
        reply: req.reply,
        think: req.think,
        policy,
        run: state.cfg.run.clone(),
        number,
        done,
    }));
    state
        .jobs
        .send(job)
        .map_err(|_| ApiError::internal("the simulator worker has stopped"))?;
    // The environment goes back into the table in a task of its own, so that a client that
    // hangs up mid-step cannot leave its episode marked busy for ever.
    let back = {
        let (state, id) = (state.clone(), id.clone());
        tokio::spawn(async move {
            let done = answer.await.ok()?;
            let turn = done.env.turns().len() as u32 / 2;
            let components = done.env.rubric().components;
            let end = done.record.as_ref().and_then(|r| r.end);
            state.table().put_back(&id, done.env, done.record);
            Some((done.outcome, turn, components, end))
        })
    };
    let (outcome, turn, components, end) = back
        .await
        .ok()
        .flatten()
        .ok_or_else(|| ApiError::internal("the simulator worker stopped before answering"))?;
    let outcome = outcome
        .map_err(|e| ApiError::internal(format!("the simulator failed on episode `{id}`: {e}")))?;
    Ok(Json(Stepped {
        episode_id: id,
        turn,
        observation: ObservationBody {
            text: outcome.obs.text,
            emotion: outcome.obs.emotion,
        },
        reward: outcome.reward,
        reward_components: components,
        terminated: outcome.terminated,
        truncated: outcome.truncated,
        end,
        delta: outcome.delta,
        appraisal: outcome.appraisal,
    }))
}

async fn record(
    State(state): State<Shared>,
    Path(id): Path<String>,
) -> Result<impl IntoResponse, ApiError> {
    let rec = {
        let mut table = state.table();
        let s = table.get(&id).map_err(|e| session_error(&id, e, &state))?;
        match (&s.record, &s.env) {
            (Some(r), _) => r.clone(),
            (None, Some(env)) => {
                let mut r = env.record(state.sim.as_ref(), s.policy.clone());
                r.run = state.cfg.run.clone();
                r.sample = s.number;
                r.end = None;
                r.reward = None;
                r
            }
            (None, None) => return Err(session_error(&id, SessionError::Busy, &state)),
        }
    };
    let mut line = serde_json::to_string(&rec)
        .map_err(|e| ApiError::internal(format!("serializing episode `{id}`: {e}")))?;
    line.push('\n');
    Ok(([(header::CONTENT_TYPE, "application/x-ndjson")], line))
}

async fn remove(
    State(state): State<Shared>,
    Path(id): Path<String>,
) -> Result<StatusCode, ApiError> {
    if state.table().remove(&id) {
        Ok(StatusCode::NO_CONTENT)
    } else {
        Err(session_error(&id, SessionError::Unknown, &state))
    }
}

/// The lines printed at shutdown: what finished and where it was written, then (if any) what
/// the log could not take and where it went instead, and the connections cut at the deadline.
pub fn summary_line(s: &EnvServerSummary) -> String {
    let w = &s.written;
    let out = s.out.as_ref().map_or_else(
        || "no log (--out not given)".to_string(),
        |p| p.display().to_string(),
    );
    let mut line = format!(
        "serve-env: {} episodes finished ({} resolved, {} left, {} max_turns, {} unsafe), written to {out}; {} unfinished episodes dropped",
        w.episodes, w.resolved, w.left, w.max_turns, w.unsafe_end, s.dropped_live
    );
    if let Some(u) = &w.unwritten {
        let place = u.dumped_to.as_ref().map_or_else(
            || "stderr (one JSON line each)".to_string(),
            |p| p.display().to_string(),
        );
        line.push_str(&format!(
            "\nserve-env: {} of them could not be written to the log ({}); they are in {place}",
            u.count, u.cause
        ));
    }
    if s.cut_connections > 0 {
        line.push_str(&format!(
            "\nserve-env: {} connections were still busy at the shutdown deadline (--shutdown-deadline-s) and were closed",
            s.cut_connections
        ));
    }
    line
}
