//! Every bad request gets a 4xx status and a JSON body `{"error": "..."}` that says what was wrong
//! and how to fix it; handlers never panic on input.

use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde::de::DeserializeOwned;

/// An HTTP error with a message for the client.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ApiError {
    pub status: StatusCode,
    pub message: String,
    /// Seconds for a `Retry-After` header (a 429 or 503 the client should retry).
    pub retry_after: Option<u64>,
}

impl ApiError {
    /// An error with `status` and `message`.
    pub fn new(status: StatusCode, message: impl Into<String>) -> Self {
        ApiError {
            status,
            message: message.into(),
            retry_after: None,
        }
    }

    /// The same error with `Retry-After: SECONDS`.
    pub fn retry_after(mut self, seconds: u64) -> Self {
        self.retry_after = Some(seconds);
        self
    }

    /// 400: the request is malformed or names something that does not exist in the catalog.
    pub fn bad_request(message: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, message)
    }

    /// 404: no such resource.
    pub fn not_found(message: impl Into<String>) -> Self {
        Self::new(StatusCode::NOT_FOUND, message)
    }

    /// 409: the resource is in a state that does not allow this (a finished episode, a step in
    /// flight).
    pub fn conflict(message: impl Into<String>) -> Self {
        Self::new(StatusCode::CONFLICT, message)
    }

    /// 500: the server failed (the message says where).
    pub fn internal(message: impl Into<String>) -> Self {
        Self::new(StatusCode::INTERNAL_SERVER_ERROR, message)
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let body = serde_json::json!({ "error": self.message });
        let mut r = (self.status, Json(body)).into_response();
        if let Some(s) = self.retry_after {
            r.headers_mut().insert(header::RETRY_AFTER, s.into());
        }
        r
    }
}

/// Parses a JSON request body strictly, turning every failure into a 4xx with a message: a body
/// not declared JSON is 415, an oversized body is 413 (naming the limit), malformed JSON or a
/// wrong field is 400 (serde's message names the field, line and column).
///
/// The content type is required because a web page may send `text/plain` (or no type) across
/// sites without asking first (a CORS "simple request"); `application/json` needs the browser's
/// preflight, which these servers never grant, so no page open in a browser can drive them.
pub fn parse_json<T: DeserializeOwned>(
    headers: &HeaderMap,
    body: Result<Bytes, BytesRejection>,
    limit: usize,
    what: &str,
) -> Result<T, ApiError> {
    let declared = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .map(|v| {
            v.split(';')
                .next()
                .unwrap_or("")
                .trim()
                .to_ascii_lowercase()
        });
    let json = declared.as_deref().is_some_and(|t| {
        t == "application/json" || (t.starts_with("application/") && t.ends_with("+json"))
    });
    if !json {
        return Err(ApiError::new(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            format!(
                "the {what} was sent as {}; send it as JSON with the header Content-Type: application/json",
                declared.map_or("no content type".to_string(), |t| format!("`{t}`"))
            ),
        ));
    }
    let bytes = body.map_err(|rejection| {
        let status = rejection.status();
        if status == StatusCode::PAYLOAD_TOO_LARGE {
            ApiError::new(
                status,
                format!("the request body is larger than {limit} bytes (the server's --max-body-bytes); send a shorter {what}"),
            )
        } else {
            ApiError::new(status, format!("could not read the request body: {}", rejection.body_text()))
        }
    })?;
    serde_json::from_slice(&bytes).map_err(|e| {
        ApiError::bad_request(format!(
            "the body is not a valid {what} ({e}); see docs/SERVE.md for the fields"
        ))
    })
}

/// 404 for paths the server does not have.
pub async fn no_such_route(uri: axum::http::Uri) -> ApiError {
    ApiError::not_found(format!(
        "no such endpoint `{}`; see docs/SERVE.md for the endpoints",
        uri.path()
    ))
}

/// 405 for a known path with the wrong method.
pub async fn wrong_method(method: axum::http::Method, uri: axum::http::Uri) -> ApiError {
    ApiError::new(
        StatusCode::METHOD_NOT_ALLOWED,
        format!(
            "`{method} {}` is not served; see docs/SERVE.md for the methods of each endpoint",
            uri.path()
        ),
    )
}
