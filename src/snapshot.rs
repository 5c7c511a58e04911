//! Snapshots: one reading of a server's Prometheus text with the clocks around it (schema
//! `inferlint.snapshot/1`, spec §6.1), or a bare `.prom` file (no clock).

use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use serde_json::{Map, Value};

use crate::prom::{Metrics, PromError};

/// The schema name of a snapshot document.
pub const SNAPSHOT_SCHEMA: &str = "inferlint.snapshot/1";

/// The scrape timeout of spec §6.1.
pub const SCRAPE_TIMEOUT: Duration = Duration::from_secs(10);

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

pub(crate) fn text_of(bytes: Vec<u8>, shown: &str) -> Result<String, ReadError> {
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

/// A pair of clock readings: Unix seconds and monotonic nanoseconds.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ClockReading {
    pub wall: f64,
    pub mono_ns: i64,
}

/// The clocks a scrape reads; replaced in tests.
pub trait Clock: Send + Sync {
    fn now(&self) -> ClockReading;
}

/// The system clocks: `SystemTime` and `CLOCK_MONOTONIC`.
#[derive(Clone, Copy, Debug, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> ClockReading {
        ClockReading {
            wall: wall_now(),
            mono_ns: monotonic_ns(),
        }
    }
}

/// Unix time in seconds.
pub fn wall_now() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}

/// `clock_gettime(CLOCK_MONOTONIC)` in nanoseconds: comparable across processes on one machine,
/// unlike `Instant`.
pub fn monotonic_ns() -> i64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes one timespec through a valid pointer; CLOCK_MONOTONIC always
    // exists on Linux, so the call cannot fail.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec * 1_000_000_000 + ts.tv_nsec
}

/// Why a live scrape failed.
#[derive(Debug, thiserror::Error)]
pub enum ScrapeError {
    /// No answer: cannot connect, timed out, or the connection broke. (The cause is in the
    /// message, not chained, so `{:#}` does not repeat it.)
    #[error("{url}: {}", describe_http(.error))]
    Http { url: String, error: reqwest::Error },
    #[error("{url} answered HTTP {status}")]
    Status { url: String, status: u16 },
    #[error("{url} returned JSON, not Prometheus text (TensorRT-LLM serves its metrics at /prometheus/metrics)")]
    Json { url: String },
    #[error("{url}: {source}")]
    Parse {
        url: String,
        #[source]
        source: PromError,
    },
}

/// What went wrong with a request, in a few words: reqwest's own message repeats the URL and
/// wraps the cause that matters (e.g. `Connection refused`) in several layers.
fn describe_http(e: &reqwest::Error) -> String {
    let mut root: &dyn std::error::Error = e;
    while let Some(next) = root.source() {
        root = next;
    }
    let cause = root.to_string();
    if e.is_timeout() {
        "no answer in time (timed out)".to_string()
    } else if e.is_connect() {
        format!("cannot connect ({cause})")
    } else if e.is_body() || e.is_decode() {
        format!("the answer broke off ({cause})")
    } else {
        format!("request failed ({cause})")
    }
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
            t_wall: (before.wall + after.wall) / 2.0,
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

    /// Scrapes `base_url` (TensorRT-LLM's `/prometheus/metrics` found as in §6.1, and
    /// remembered per base URL for the life of the process).
    pub async fn scrape(
        base_url: &str,
        metrics_path: Option<&str>,
        timeout: Duration,
    ) -> Result<Snapshot, ScrapeError> {
        static SHARED: OnceLock<Scraper> = OnceLock::new();
        let scraper = SHARED.get_or_init(Scraper::new);
        scraper.scrape(base_url, metrics_path, timeout).await
    }
}

fn finite_or_null(x: f64) -> Value {
    if x.is_finite() {
        Value::from(x)
    } else {
        Value::Null
    }
}

/// Writes `bytes` to `path` through a temporary file in the same folder, creating parents.
pub(crate) fn write_atomically(path: &Path, bytes: &[u8]) -> Result<(), ReadError> {
    let shown = path.display().to_string();
    let io = |source| ReadError::Io {
        path: shown.clone(),
        source,
    };
    if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent).map_err(io)?;
    }
    let file_name = path
        .file_name()
        .map_or_else(|| "out".into(), |n| n.to_string_lossy().into_owned());
    let tmp = path.with_file_name(format!(".{file_name}.{}.tmp", std::process::id()));
    std::fs::write(&tmp, bytes).map_err(io)?;
    std::fs::rename(&tmp, path).map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        io(e)
    })
}

/// Splits a URL the user gave into the server's base URL and a metrics path, when the URL
/// already ends with one (`http://h:8000/metrics`).
pub fn split_metrics_url(url: &str) -> (String, Option<String>) {
    let url = url.trim_end_matches('/');
    for path in ["/prometheus/metrics", "/metrics"] {
        if let Some(base) = url.strip_suffix(path) {
            if base.contains("://") && base.len() > base.find("://").unwrap() + 3 {
                return (base.to_string(), Some(path.to_string()));
            }
        }
    }
    (url.to_string(), None)
}

/// Scrapes servers over HTTP with injectable clocks, remembering where each base URL serves its
/// Prometheus text.
pub struct Scraper {
    client: reqwest::Client,
    clock: Arc<dyn Clock>,
    paths: Mutex<HashMap<String, String>>,
}

impl Default for Scraper {
    fn default() -> Self {
        Scraper::new()
    }
}

impl Scraper {
    pub fn new() -> Scraper {
        Scraper::with_clock(Arc::new(SystemClock))
    }

    pub fn with_clock(clock: Arc<dyn Clock>) -> Scraper {
        let client = reqwest::Client::builder()
            .connect_timeout(SCRAPE_TIMEOUT)
            .build()
            .expect("the HTTP client builds with default settings");
        Scraper {
            client,
            clock,
            paths: Mutex::new(HashMap::new()),
        }
    }

    /// Reads the metrics of the server at `base_url`. Without `metrics_path`, `/metrics` is
    /// read, and when it answers JSON (TensorRT-LLM) `/prometheus/metrics`, which is then
    /// remembered for this base URL until it fails.
    pub async fn scrape(
        &self,
        base_url: &str,
        metrics_path: Option<&str>,
        timeout: Duration,
    ) -> Result<Snapshot, ScrapeError> {
        let base = base_url.trim_end_matches('/');
        if let Some(path) = metrics_path {
            return self.get(&format!("{base}{path}"), timeout).await;
        }
        let remembered = self.paths.lock().unwrap().get(base).cloned();
        if let Some(path) = remembered {
            match self.get(&format!("{base}{path}"), timeout).await {
                Ok(s) => return Ok(s),
                Err(_) => {
                    self.paths.lock().unwrap().remove(base);
                }
            }
        }
        match self.get(&format!("{base}/metrics"), timeout).await {
            Err(ScrapeError::Json { url }) => {
                let path = "/prometheus/metrics";
                match self.get(&format!("{base}{path}"), timeout).await {
                    Ok(s) => {
                        self.paths
                            .lock()
                            .unwrap()
                            .insert(base.to_string(), path.to_string());
                        Ok(s)
                    }
                    Err(ScrapeError::Json { .. }) => Err(ScrapeError::Json { url }),
                    Err(e) => Err(e),
                }
            }
            other => other,
        }
    }

    /// One GET of Prometheus text, between two clock readings.
    async fn get(&self, url: &str, timeout: Duration) -> Result<Snapshot, ScrapeError> {
        let http = |error| ScrapeError::Http {
            url: url.to_string(),
            error,
        };
        let before = self.clock.now();
        let resp = self
            .client
            .get(url)
            .timeout(timeout)
            .send()
            .await
            .map_err(http)?;
        let status = resp.status();
        let body = resp.text().await.map_err(http)?;
        let after = self.clock.now();
        if !status.is_success() {
            return Err(ScrapeError::Status {
                url: url.to_string(),
                status: status.as_u16(),
            });
        }
        let head = body.trim_start();
        if head.starts_with('{') || head.starts_with('[') {
            return Err(ScrapeError::Json {
                url: url.to_string(),
            });
        }
        Snapshot::from_reading(url, body, before, after).map_err(|source| ScrapeError::Parse {
            url: url.to_string(),
            source,
        })
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

    #[test]
    fn split_metrics_urls() {
        assert_eq!(
            split_metrics_url("http://h:8000/metrics"),
            ("http://h:8000".to_string(), Some("/metrics".to_string()))
        );
        assert_eq!(
            split_metrics_url("http://h:8000/prometheus/metrics/"),
            (
                "http://h:8000".to_string(),
                Some("/prometheus/metrics".to_string())
            )
        );
        assert_eq!(
            split_metrics_url("http://h:8000/"),
            ("http://h:8000".to_string(), None)
        );
    }
}
