//! Typed errors for the library. Every error that comes from user input names the file, the line
//! or field, and what to do; `main` prints the chain and exits with code 2 for bad input.

use std::path::PathBuf;

/// Result alias used across the library.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Everything the library can fail with.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A file could not be read or written.
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// Bad user input: a file, where in it, what is wrong and how to fix it.
    #[error("{file}: {location}: {message}")]
    Input {
        file: PathBuf,
        /// A field path (`hidden_facts[2].text`) or `line N`.
        location: String,
        message: String,
    },
    /// A model file is missing or unusable.
    #[error("{path}: {message}")]
    Model { path: PathBuf, message: String },
    /// A tensor operation failed.
    #[error(transparent)]
    Candle(#[from] candle_core::Error),
    /// Anything else, with its context.
    #[error("{0}")]
    Other(String),
}

impl Error {
    /// An input error naming `file`, `location` (field or line) and a message that says what to do.
    pub fn input(
        file: impl Into<PathBuf>,
        location: impl Into<String>,
        message: impl Into<String>,
    ) -> Self {
        Error::Input {
            file: file.into(),
            location: location.into(),
            message: message.into(),
        }
    }

    /// Wraps an I/O error with the path it concerns.
    pub fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        Error::Io {
            path: path.into(),
            source,
        }
    }

    /// True for errors caused by the user's files or flags (exit code 2).
    pub fn is_user_error(&self) -> bool {
        matches!(
            self,
            Error::Input { .. } | Error::Model { .. } | Error::Io { .. }
        )
    }
}
