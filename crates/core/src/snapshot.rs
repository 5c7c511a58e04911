//! Snapshots: one reading of a server's Prometheus text with the clocks around it (schema
//! `inferlint.snapshot/1`, docs/design/formats.md#snapshot), or a bare `.prom` file (no clock).

use std::path::Path;
use std::time::Duration;

use serde_json::{Map, Value};

use crate::prom::{Metrics, PromError};

mod files;

pub use crate::clock::ClockReading;
pub use files::ReadError;
pub(crate) use files::{parse_python_json, read_text, repr, write_atomically};

/// The schema name of a snapshot document.
pub const SNAPSHOT_SCHEMA: &str = "inferlint.snapshot/1";

/// The scrape timeout (docs/design/formats.md#snapshot).
pub const SCRAPE_TIMEOUT: Duration = Duration::from_secs(10);

/// One reading of a server's metrics.
#[derive(Clone, Debug)]
pub struct Snapshot {
    /// The URL actually read (`file:NAME` for a bare `.prom` file).
    pub url: String,
    /// Unix seconds at the midpoint of the scrape; NaN when unknown.
    pub t_wall: f64,
    /// Monotonic nanoseconds at the midpoint of the scrape.
    pub t_mono_ns: Option<i64>,
    /// How long the GET took (half of it is the clocks' uncertainty).
    pub latency_s: Option<f64>,
    /// The raw exposition text, unparsed.
    pub text: String,
    pub metrics: Metrics,
    /// The file path or URL, for messages.
    pub source: String,
}

impl Snapshot {
    /// Loads a snapshot document, or a bare Prometheus text file (any file not starting with `{`).
    pub fn load(path: &Path) -> Result<Snapshot, ReadError> {
        let text = read_text(path)?;
        let name = path.file_name().map_or_else(
            || path.display().to_string(),
            |n| n.to_string_lossy().into_owned(),
        );
        Snapshot::parse_document(&text, &path.display().to_string(), &name)
    }

    /// Reads a snapshot from text (a document or bare Prometheus text); `source` names it in
    /// messages and, for bare text, in the url (`file:SOURCE`).
    pub fn from_text(text: &str, source: &str) -> Result<Snapshot, ReadError> {
        if text.trim().is_empty() {
            return Err(ReadError::Empty {
                path: source.to_string(),
            });
        }
        let name = Path::new(source)
            .file_name()
            .map_or_else(|| source.to_string(), |n| n.to_string_lossy().into_owned());
        Snapshot::parse_document(text, source, &name)
    }

    fn parse_document(text: &str, source: &str, name: &str) -> Result<Snapshot, ReadError> {
        if !text.trim_start().starts_with('{') {
            let metrics = Metrics::parse(text).map_err(|e| ReadError::Prom {
                path: source.to_string(),
                source: e,
            })?;
            return Ok(Snapshot {
                url: format!("file:{name}"),
                t_wall: f64::NAN,
                t_mono_ns: None,
                latency_s: None,
                text: text.to_string(),
                metrics,
                source: source.to_string(),
            });
        }
        let doc: Value = parse_python_json(text).map_err(|e| ReadError::json(source, &e, 0))?;
        let Value::Object(obj) = doc else {
            unreachable!("a JSON text starting with '{{' is an object")
        };
        let schema = obj.get("schema");
        if schema.and_then(Value::as_str) != Some(SNAPSHOT_SCHEMA) {
            return Err(ReadError::format(
                source,
                format!(
                    "not an {SNAPSHOT_SCHEMA} document (schema={})",
                    repr(schema)
                ),
            ));
        }
        let bad = |key: &str, want: &str| {
            ReadError::format(
                source,
                format!("{SNAPSHOT_SCHEMA}: \"{key}\" is not {want}"),
            )
        };
        let url = match obj.get("url") {
            Some(Value::String(s)) => s.clone(),
            None | Some(Value::Null) => String::new(),
            Some(_) => return Err(bad("url", "a string")),
        };
        let t_wall = match obj.get("t_wall") {
            None | Some(Value::Null) => f64::NAN,
            Some(Value::String(s)) if s == "NaN" => f64::NAN,
            Some(Value::Number(n)) => n.as_f64().unwrap_or(f64::NAN),
            Some(_) => return Err(bad("t_wall", "a number")),
        };
        let t_mono_ns = match obj.get("t_mono_ns") {
            None | Some(Value::Null) => None,
            Some(Value::Number(n)) => match n.as_i64() {
                Some(i) => Some(i),
                None => match n.as_f64() {
                    Some(f) if f.is_finite() && f.abs() < 9.0e18 => Some(f as i64),
                    _ => return Err(bad("t_mono_ns", "an integer")),
                },
            },
            Some(_) => return Err(bad("t_mono_ns", "an integer")),
        };
        let latency_s = match obj.get("latency_s") {
            None | Some(Value::Null) => None,
            Some(Value::Number(n)) => n.as_f64(),
            Some(_) => return Err(bad("latency_s", "a number")),
        };
        let Some(Value::String(body)) = obj.get("text") else {
            return Err(bad("text", "the Prometheus text (a string)"));
        };
        let metrics = Metrics::parse(body).map_err(|e| ReadError::Prom {
            path: format!("{source} (its \"text\")"),
            source: e,
        })?;
        Ok(Snapshot {
            url,
            t_wall,
            t_mono_ns,
            latency_s,
            text: body.clone(),
            metrics,
            source: source.to_string(),
        })
    }

    /// A snapshot of text read between two clock readings: the clocks are their midpoint and the
    /// latency their monotonic distance.
    pub fn from_reading(
        url: &str,
        text: String,
        before: ClockReading,
        after: ClockReading,
    ) -> Result<Snapshot, PromError> {
        let metrics = Metrics::parse(&text)?;
        let mono = before.mono_ns + (after.mono_ns - before.mono_ns) / 2;
        Ok(Snapshot {
            url: url.to_string(),
            t_wall: f64::midpoint(before.wall, after.wall),
            t_mono_ns: Some(mono),
            latency_s: Some((after.mono_ns - before.mono_ns) as f64 / 1e9),
            text,
            metrics,
            source: url.to_string(),
        })
    }

    /// The snapshot document: indent 1, keys in schema order, trailing newline.
    pub fn to_json(&self) -> String {
        let mut m = Map::new();
        m.insert("schema".into(), SNAPSHOT_SCHEMA.into());
        m.insert("url".into(), self.url.clone().into());
        m.insert("t_wall".into(), finite_or_null(self.t_wall));
        m.insert(
            "t_mono_ns".into(),
            self.t_mono_ns.map_or(Value::Null, Value::from),
        );
        m.insert(
            "latency_s".into(),
            self.latency_s.map_or(Value::Null, finite_or_null),
        );
        m.insert("text".into(), self.text.clone().into());
        let mut s = crate::output::to_json_string(&Value::Object(m));
        s.push('\n');
        s
    }

    /// Writes the document to `path` (parent folders created). The file is written under a
    /// temporary name and renamed, so a failed write never leaves half a snapshot.
    pub fn save(&self, path: &Path) -> Result<(), ReadError> {
        write_atomically(path, self.to_json().as_bytes())
    }

    /// Whether the snapshot says when it was taken (a bare `.prom` file does not). Some recorded
    /// snapshots have a wall clock but no monotonic one (`t_mono_ns` null): spans then come from
    /// the wall clock.
    pub fn has_clock(&self) -> bool {
        self.t_wall.is_finite()
    }

    /// The engine the metric names say (None when they name none).
    pub fn engine(&self) -> Option<crate::Engine> {
        self.metrics.engine()
    }
}

fn finite_or_null(x: f64) -> Value {
    if x.is_finite() {
        Value::from(x)
    } else {
        Value::Null
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn midpoint_clocks_and_latency() {
        let s = Snapshot::from_reading(
            "http://x/metrics",
            "vllm:a 1\n".into(),
            ClockReading {
                wall: 100.0,
                mono_ns: 1_000_000_000,
            },
            ClockReading {
                wall: 100.4,
                mono_ns: 1_400_000_000,
            },
        )
        .unwrap();
        assert!((s.t_wall - 100.2).abs() < 1e-9);
        assert_eq!(s.t_mono_ns, Some(1_200_000_000));
        assert!((s.latency_s.unwrap() - 0.4).abs() < 1e-12);
        assert!(s.has_clock());
    }

    #[test]
    fn document_round_trip() {
        let s = Snapshot::from_reading(
            "http://x/metrics",
            "# HELP a x\nvllm:a{k=\"q\\\"\"} 1.5\n".into(),
            ClockReading {
                wall: 1790470252.0746152,
                mono_ns: 208487639164,
            },
            ClockReading {
                wall: 1790470252.0746152,
                mono_ns: 208487639164,
            },
        )
        .unwrap();
        let json = s.to_json();
        assert!(json.starts_with("{\n \"schema\": \"inferlint.snapshot/1\",\n \"url\""));
        assert!(json.ends_with("}\n"));
        let back = Snapshot::from_text(&json, "x.snapshot.json").unwrap();
        assert_eq!(back.url, s.url);
        assert_eq!(back.t_wall, s.t_wall);
        assert_eq!(back.t_mono_ns, s.t_mono_ns);
        assert_eq!(back.text, s.text);
        assert_eq!(back.metrics.total("vllm:a"), Some(1.5));
    }

    #[test]
    fn bare_text_has_no_clock() {
        let s = Snapshot::from_text("vllm:a 1\n", "dir/x.prom").unwrap();
        assert_eq!(s.url, "file:x.prom");
        assert!(s.t_wall.is_nan());
        assert!(!s.has_clock());
    }

    #[test]
    fn another_schema_is_refused() {
        let e = Snapshot::from_text("{\"schema\": \"inferlint.series/1\"}", "f.json").unwrap_err();
        assert_eq!(
            e.to_string(),
            "f.json: not an inferlint.snapshot/1 document (schema='inferlint.series/1')"
        );
        let e = Snapshot::from_text("{\"completed\": 3}", "b.json").unwrap_err();
        assert!(e.to_string().ends_with("(schema=None)"), "{e}");
    }
}
