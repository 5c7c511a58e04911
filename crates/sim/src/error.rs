//! What stops a simulated server or load client before its work is done: a flag, a variable or
//! an answer it cannot run with (the user's), or the machine refusing a socket, a fork or a file.
//! The binary prints it and exits 1, as the engines' own commands do.

/// Why a simulated process could not run.
#[derive(Debug, thiserror::Error)]
pub enum SimError {
    /// A flag, an environment variable or a server's answer the simulator cannot run with.
    #[error("{0}")]
    Usage(String),
    /// A file, a socket or a pipe.
    #[error(transparent)]
    Io(#[from] std::io::Error),
    /// A system call (fork, signals, descriptors).
    #[error(transparent)]
    Sys(#[from] nix::errno::Errno),
    /// A request of the simulated client.
    #[error(transparent)]
    Http(#[from] reqwest::Error),
    /// JSON the simulator writes or reads.
    #[error(transparent)]
    Json(#[from] serde_json::Error),
    /// A request's task of the simulated client panicked or was cancelled.
    #[error(transparent)]
    Task(#[from] tokio::task::JoinError),
}

/// The configuration readers say what is wrong in a sentence.
impl From<String> for SimError {
    fn from(message: String) -> SimError {
        SimError::Usage(message)
    }
}

/// A simulated process's result.
pub type SimResult<T> = Result<T, SimError>;
