//! The options both servers share: the API key, connection limits and deadlines
//! (docs/SERVE.md, "Security model" and "Limits").

use std::time::Duration;

use clap::Args;
use empathy_gym::serve::Guard;

#[derive(Debug, Args)]
pub struct GuardArgs {
    /// Require `Authorization: Bearer KEY` on every endpoint but /v1/health. Needed to listen on
    /// anything but loopback.
    #[arg(long, env = "EMPATHY_GYM_API_KEY", hide_env_values = true)]
    pub api_key: Option<String>,
    /// Seconds a client has to send a request's headers (slow clients are disconnected).
    #[arg(long, default_value_t = 10)]
    pub header_timeout_s: u64,
    /// Seconds before a request still unanswered gets 503.
    #[arg(long, default_value_t = 300)]
    pub request_timeout_s: u64,
    /// Most connections open at once; more clients wait until one closes.
    #[arg(long, default_value_t = 512)]
    pub max_connections: usize,
    /// Seconds requests in flight get to finish after SIGINT or SIGTERM.
    #[arg(long, default_value_t = 30)]
    pub shutdown_deadline_s: u64,
}

impl GuardArgs {
    pub fn guard(&self) -> Guard {
        Guard {
            api_key: self.api_key.clone(),
            header_timeout: Duration::from_secs(self.header_timeout_s.max(1)),
            request_timeout: Duration::from_secs(self.request_timeout_s.max(1)),
            max_connections: self.max_connections.max(1),
            shutdown_deadline: Duration::from_secs(self.shutdown_deadline_s),
        }
    }
}
