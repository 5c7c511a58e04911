//! Rust errors as the Python exceptions 0.3.1 raised for the same input: a missing file is the
//! `OSError` subclass Python itself raises (with the file name), bad content a `ValueError`
//! whose message starts with the file and, where the reader knows it, the line.

use pyo3::exceptions::{
    PyFileNotFoundError, PyIsADirectoryError, PyOSError, PyPermissionError, PyValueError,
};
use pyo3::PyErr;

use crate::core::ReadError;

/// An I/O error about `path`, as `open(path)` would raise it.
pub fn io_error(path: &str, e: &std::io::Error) -> PyErr {
    let errno = e.raw_os_error().unwrap_or(0);
    let text = std::io::Error::from_raw_os_error(errno).to_string();
    // Rust's text is "No such file or directory (os error 2)"; Python's has no suffix.
    let text = match text.rfind(" (os error") {
        Some(p) if errno != 0 => text[..p].to_string(),
        _ => e.to_string(),
    };
    let args = (errno, text, path.to_string());
    match e.kind() {
        std::io::ErrorKind::NotFound => PyFileNotFoundError::new_err(args),
        std::io::ErrorKind::PermissionDenied => PyPermissionError::new_err(args),
        std::io::ErrorKind::IsADirectory => PyIsADirectoryError::new_err(args),
        _ => PyOSError::new_err(args),
    }
}

/// A reader's error: I/O as `OSError`, anything about the content as `ValueError`.
pub fn read_error(e: ReadError) -> PyErr {
    match &e {
        ReadError::Io { path, source } => io_error(path, source),
        _ => PyValueError::new_err(e.to_string()),
    }
}

/// A JSON document this crate wrote itself could not be read back: a bug here, not bad input.
pub fn internal(e: impl std::fmt::Display) -> PyErr {
    PyValueError::new_err(format!("inferlint: {e}"))
}
