//! The signal both servers stop on: SIGINT (Ctrl-C) or SIGTERM, then a graceful shutdown.

use std::future::Future;

use crate::error::Result;

/// Installs the SIGINT and SIGTERM handlers now and returns a future that resolves on either.
///
/// The handlers are registered before the future is first polled: axum polls its shutdown
/// future on a spawned task, so a lazily registering future could miss a signal sent right after
/// the server says it listens (the default action would then kill the process mid-write). Call
/// this inside the runtime, before announcing the address.
pub fn shutdown_signal() -> Result<impl Future<Output = ()>> {
    #[cfg(unix)]
    {
        use crate::error::Error;
        use tokio::signal::unix::{signal, SignalKind};
        let handler = |kind: SignalKind, name: &str| {
            signal(kind).map_err(|e| Error::Other(format!("installing the {name} handler: {e}")))
        };
        let mut int = handler(SignalKind::interrupt(), "SIGINT")?;
        let mut term = handler(SignalKind::terminate(), "SIGTERM")?;
        Ok(async move {
            tokio::select! {
                _ = int.recv() => {}
                _ = term.recv() => {}
            }
        })
    }
    #[cfg(not(unix))]
    Ok(async {
        let _ = tokio::signal::ctrl_c().await;
    })
}
