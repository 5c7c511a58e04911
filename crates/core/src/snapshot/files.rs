//! Reading and writing evidence files: the error every reader returns (naming the file), text
//! that refuses empty and binary files, JSON as Python writes it, and writes that never leave
//! half a file.

use std::path::Path;

use serde_json::Value;

use crate::prom::PromError;

/// Why an evidence file (snapshot, series, result file) could not be read. Every message starts
/// with the file it is about.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    #[error("{path}: {source}")]
    Io {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error("{path}: the file is empty")]
    Empty { path: String },
    #[error("{path}: not a text file (binary data at byte {offset})")]
    Binary { path: String, offset: usize },
    #[error("{path}: line {line}, column {column}: not valid JSON ({message})")]
    Json {
        path: String,
        line: usize,
        column: usize,
        message: String,
    },
    #[error("{path}: {message}")]
    Format { path: String, message: String },
    #[error("{path}: {source}")]
    Prom {
        path: String,
        #[source]
        source: PromError,
    },
}

impl ReadError {
    /// The file (or source) the error is about.
    pub fn path(&self) -> &str {
        match self {
            ReadError::Io { path, .. }
            | ReadError::Empty { path }
            | ReadError::Binary { path, .. }
            | ReadError::Json { path, .. }
            | ReadError::Format { path, .. }
            | ReadError::Prom { path, .. } => path,
        }
    }

    pub(crate) fn json(path: &str, e: &serde_json::Error, line_offset: usize) -> ReadError {
        let message = e.to_string();
        // serde_json appends " at line L column C"; the position is given separately.
        let message = match message.rfind(" at line ") {
            Some(p) => message[..p].to_string(),
            None => message,
        };
        ReadError::Json {
            path: path.to_string(),
            line: e.line() + line_offset,
            column: e.column(),
            message,
        }
    }

    pub(crate) fn format(path: &str, message: impl Into<String>) -> ReadError {
        ReadError::Format {
            path: path.to_string(),
            message: message.into(),
        }
    }
}

/// Reads an evidence file as UTF-8 text, refusing empty and binary files with the path named.
pub(crate) fn read_text(path: &Path) -> Result<String, ReadError> {
    let shown = path.display().to_string();
    let bytes = std::fs::read(path).map_err(|source| ReadError::Io {
        path: shown.clone(),
        source,
    })?;
    text_of(bytes, &shown)
}

fn text_of(bytes: Vec<u8>, shown: &str) -> Result<String, ReadError> {
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Err(ReadError::Empty {
            path: shown.to_string(),
        });
    }
    if let Some(offset) = bytes.iter().position(|&b| b == 0) {
        return Err(ReadError::Binary {
            path: shown.to_string(),
            offset,
        });
    }
    String::from_utf8(bytes).map_err(|e| ReadError::Binary {
        path: shown.to_string(),
        offset: e.utf8_error().valid_up_to(),
    })
}

/// Parses JSON as Python's `json` module writes it: `NaN`, `Infinity` and `-Infinity` are
/// accepted (SGLang's result lines hold `"request_rate": Infinity`) and read as null, which
/// every reader treats as "no number". Line numbers in errors are those of the original text.
pub(crate) fn parse_python_json(text: &str) -> Result<Value, serde_json::Error> {
    match serde_json::from_str(text) {
        Ok(v) => Ok(v),
        Err(e) => match without_python_constants(text) {
            Some(clean) => serde_json::from_str(&clean),
            None => Err(e),
        },
    }
}

/// `text` with `NaN`, `Infinity`, `-Infinity` outside strings replaced by `null`; None when it
/// has none.
fn without_python_constants(text: &str) -> Option<String> {
    let b = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let (mut i, mut run, mut in_string, mut found) = (0, 0, false, false);
    while i < b.len() {
        let c = b[i];
        if in_string {
            match c {
                b'\\' => i += 1,
                b'"' => in_string = false,
                _ => {}
            }
            i += 1;
            continue;
        }
        if c == b'"' {
            in_string = true;
            i += 1;
            continue;
        }
        let token = ["-Infinity", "Infinity", "NaN"]
            .into_iter()
            .find(|t| b[i..].starts_with(t.as_bytes()));
        if let Some(t) = token {
            out.push_str(&text[run..i]);
            out.push_str("null");
            i += t.len();
            run = i;
            found = true;
            continue;
        }
        i += 1;
    }
    if !found {
        return None;
    }
    out.push_str(&text[run..]);
    Some(out)
}

/// Python's `repr` of a JSON value, for messages about a foreign document.
pub(crate) fn repr(v: Option<&Value>) -> String {
    match v {
        None | Some(Value::Null) => "None".to_string(),
        Some(Value::String(s)) => format!("'{s}'"),
        Some(other) => other.to_string(),
    }
}

pub(crate) fn write_atomically(path: &Path, bytes: &[u8]) -> Result<(), ReadError> {
    crate::files::write_atomic(path, bytes).map_err(|source| ReadError::Io {
        path: path.display().to_string(),
        source,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn python_json_constants_outside_strings_only() {
        let v = parse_python_json(
            r#"{"a": NaN, "b": -Infinity, "c": "NaN \" Infinity", "d": [Infinity]}"#,
        )
        .unwrap();
        assert_eq!(v["a"], Value::Null);
        assert_eq!(v["b"], Value::Null);
        assert_eq!(v["c"], "NaN \" Infinity");
        assert_eq!(v["d"][0], Value::Null);
        assert!(parse_python_json("{\"a\": Nope}").is_err());
    }
}
