//! The servers (tokio + axum): `serve-env` puts the dialogue environment behind HTTP JSON,
//! `serve-model` a model behind an OpenAI-compatible chat endpoint (docs/SERVE.md).

pub mod env_api;
pub mod env_server;
pub mod generator;
pub mod http_error;
pub mod listen;
pub mod log_sink;
pub mod model_server;
pub mod sessions;
pub mod shutdown;
pub mod stepper;

pub use env_server::{serve_env, EnvServerConfig, EnvServerSummary};
pub use http_error::ApiError;
pub use listen::{Guard, API_KEY_ENV};
pub use model_server::{serve_model, ModelServerConfig, ModelServerSummary};
