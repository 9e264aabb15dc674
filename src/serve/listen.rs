//! How both servers take connections: loopback unless a key is set, a bearer key checked on every
//! endpoint but the health check, a limit on open connections, a deadline for a client to send its
//! request headers and one for the whole request, and a deadline for the graceful shutdown
//! (docs/SERVE.md, "Security model" and "Limits").

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::extract::Request;
use axum::http::{header, HeaderValue, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::Router;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use hyper_util::service::TowerToHyperService;
use tokio::net::TcpListener;
use tokio::sync::Semaphore;

use super::http_error::ApiError;
use crate::error::{Error, Result};

/// The environment variable both servers read their key from when `--api-key` is not given.
pub const API_KEY_ENV: &str = "EMPATHY_GYM_API_KEY";

/// The path answered without a key (for load balancers and `curl` checks; it tells no secrets).
const OPEN_PATH: &str = "/v1/health";

/// Connection limits and the key.
#[derive(Clone, Debug)]
pub struct Guard {
    /// Requests other than the health check must carry `Authorization: Bearer KEY`.
    pub api_key: Option<String>,
    /// A client must send a request's headers within this long of connecting (or of its last
    /// answer, on a kept-alive connection), or the connection is closed.
    pub header_timeout: Duration,
    /// A request not answered within this long gets 503.
    pub request_timeout: Duration,
    /// Most connections open at once; further clients wait in the kernel's backlog.
    pub max_connections: usize,
    /// After SIGINT/SIGTERM, requests in flight get this long to finish before their connections
    /// are closed.
    pub shutdown_deadline: Duration,
}

impl Default for Guard {
    fn default() -> Self {
        Guard {
            api_key: None,
            header_timeout: Duration::from_secs(10),
            request_timeout: Duration::from_secs(300),
            max_connections: 512,
            shutdown_deadline: Duration::from_secs(30),
        }
    }
}

impl Guard {
    /// Refuses to listen beyond loopback without a key, and refuses an empty key.
    pub fn check(&self, server: &str, addr: SocketAddr) -> Result<()> {
        match self.api_key.as_deref() {
            Some(k) if k.trim().is_empty() => Err(Error::Other(format!(
                "{server}: the API key is empty; give a long random one with --api-key or {API_KEY_ENV}"
            ))),
            None if !addr.ip().is_loopback() => Err(Error::Other(format!(
                "{server}: refusing to listen on {addr} without an API key: anyone who can reach \
                 that address could use the server. Give --api-key KEY (or set {API_KEY_ENV}) and \
                 send `Authorization: Bearer KEY`, or listen on 127.0.0.1"
            ))),
            _ => Ok(()),
        }
    }

    /// `app` behind the key check and the request timeout.
    fn wrap(&self, app: Router) -> Router {
        let timeout = self.request_timeout;
        let app = app.layer(axum::middleware::from_fn(
            move |req: Request, next: Next| async move {
                match tokio::time::timeout(timeout, next.run(req)).await {
                    Ok(r) => r,
                    Err(_) => ApiError::new(
                        StatusCode::SERVICE_UNAVAILABLE,
                        format!(
                            "the request was not answered within {} s (the server's --request-timeout-s); try again, or with less work",
                            timeout.as_secs()
                        ),
                    )
                    .into_response(),
                }
            },
        ));
        match self.api_key.clone() {
            None => app,
            Some(key) => {
                let key = Arc::new(key);
                app.layer(axum::middleware::from_fn(
                    move |req: Request, next: Next| {
                        let key = key.clone();
                        async move {
                            if req.uri().path() == OPEN_PATH || bearer_matches(&req, &key) {
                                next.run(req).await
                            } else {
                                unauthorized()
                            }
                        }
                    },
                ))
            }
        }
    }
}

/// True when the request carries `Authorization: Bearer KEY` with this key (compared in time that
/// does not depend on where the first difference is).
fn bearer_matches(req: &Request, key: &str) -> bool {
    let Some(given) = req
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
    else {
        return false;
    };
    let (a, b) = (given.trim().as_bytes(), key.as_bytes());
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

fn unauthorized() -> Response {
    let mut r = ApiError::new(
        StatusCode::UNAUTHORIZED,
        "this server needs its API key: send the header `Authorization: Bearer KEY` with the key it was started with (--api-key or EMPATHY_GYM_API_KEY)",
    )
    .into_response();
    r.headers_mut()
        .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
    r
}

/// How a server stopped.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Stopped {
    /// Connections still busy at the shutdown deadline, closed without their answer.
    pub cut_connections: usize,
}

/// Serves `app` on `listener` under `guard` until `stop` resolves, then stops accepting, lets
/// requests in flight finish for up to the shutdown deadline, and closes what is left.
pub async fn serve(
    listener: TcpListener,
    app: Router,
    guard: &Guard,
    stop: impl Future<Output = ()>,
) -> Result<Stopped> {
    let app = guard.wrap(app);
    let slots = Arc::new(Semaphore::new(guard.max_connections.max(1)));
    let graceful = GracefulShutdown::new();
    let mut http = hyper::server::conn::http1::Builder::new();
    http.timer(TokioTimer::new())
        .header_read_timeout(Some(guard.header_timeout));
    tokio::pin!(stop);
    loop {
        let slot = tokio::select! {
            _ = &mut stop => break,
            s = slots.clone().acquire_owned() => s.map_err(|e| Error::Other(e.to_string()))?,
        };
        let (stream, _) = tokio::select! {
            _ = &mut stop => break,
            c = listener.accept() => match c {
                Ok(c) => c,
                // A connection reset before it was accepted, or out of file descriptors: the
                // listener itself is fine, so go on (after a pause, in case it is the latter).
                Err(_) => {
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
        };
        let conn =
            http.serve_connection(TokioIo::new(stream), TowerToHyperService::new(app.clone()));
        let conn = graceful.watch(conn);
        tokio::spawn(async move {
            let _ = conn.await;
            drop(slot);
        });
    }
    drop(listener);
    let cut = match tokio::time::timeout(guard.shutdown_deadline, graceful.shutdown()).await {
        Ok(()) => 0,
        Err(_) => guard.max_connections.max(1) - slots.available_permits(),
    };
    Ok(Stopped {
        cut_connections: cut,
    })
}
