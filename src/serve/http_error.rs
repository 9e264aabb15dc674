//! Every bad request gets a 4xx status and a JSON body `{"error": "..."}` that says what was wrong
//! and how to fix it; handlers never panic on input.

use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde::de::DeserializeOwned;

/// An HTTP error with a message for the client.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ApiError {
    pub status: StatusCode,
    pub message: String,
}

impl ApiError {
    /// An error with `status` and `message`.
    pub fn new(status: StatusCode, message: impl Into<String>) -> Self {
        ApiError {
            status,
            message: message.into(),
        }
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
        (self.status, Json(body)).into_response()
    }
}

/// Parses a JSON request body strictly, turning every failure into a 4xx with a message: an
/// oversized body is 413 (naming the limit), malformed JSON or a wrong field is 400 (serde's
/// message names the field, line and column).
pub fn parse_json<T: DeserializeOwned>(
    body: Result<Bytes, BytesRejection>,
    limit: usize,
    what: &str,
) -> Result<T, ApiError> {
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
