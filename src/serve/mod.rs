//! The servers (tokio + axum): `serve-env` puts the dialogue environment behind HTTP JSON,
//! `serve-model` a model behind an OpenAI-compatible chat endpoint.

pub mod env_api;
pub mod env_server;
pub mod http_error;
pub mod sessions;
pub mod stepper;

pub use env_server::{serve_env, EnvServerConfig, EnvServerSummary};
pub use http_error::ApiError;
