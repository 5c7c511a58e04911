//! Snapshots: parsed once in Rust and kept beside the Python `Snapshot` that owns their text.

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

use crate::core::{counters, ClockReading, Metrics, ScrapeError, Scraper, Snapshot};
use crate::errors::read_error;
use crate::prom::PyMetrics;
use inferlint_core::endpoints::{MetricsPlaces, PlaceError, Reading};

/// A snapshot's parsed metrics, held for the Python `Snapshot` of the same text.
#[pyclass(frozen, module = "inferlint._native", name = "ParsedSnapshot")]
pub struct PySnapshot {
    pub inner: Snapshot,
}

#[pymethods]
impl PySnapshot {
    /// The parsed samples, for the Python `prom.Metrics` of this snapshot.
    fn metrics(&self) -> PyMetrics {
        PyMetrics {
            inner: self.inner.metrics.clone(),
        }
    }

    /// The engine the metric names come from, or None.
    fn engine(&self) -> Option<&'static str> {
        self.inner.engine().map(|e| e.key())
    }
}

/// Parses `text` read from `url` at the given clocks. Malformed text is a `ValueError` naming
/// the source and the line.
#[pyfunction]
#[pyo3(signature = (url, text, t_wall, t_mono_ns, latency_s))]
pub fn parse_snapshot(
    py: Python<'_>,
    url: String,
    text: String,
    t_wall: f64,
    t_mono_ns: Option<i64>,
    latency_s: Option<f64>,
) -> PyResult<PySnapshot> {
    let metrics = py
        .allow_threads(|| Metrics::parse(&text))
        .map_err(|e| PyValueError::new_err(format!("{url}: {e}")))?;
    Ok(PySnapshot {
        inner: Snapshot {
            source: url.clone(),
            url,
            t_wall,
            t_mono_ns,
            latency_s,
            text,
            metrics,
        },
    })
}

/// The fields of a snapshot read back as Python keeps them.
type Fields = (String, String, f64, Option<i64>, Option<f64>);

fn fields(py: Python<'_>, s: Snapshot) -> PyResult<(Fields, Py<PySnapshot>)> {
    let f = (
        s.url.clone(),
        s.text.clone(),
        s.t_wall,
        s.t_mono_ns,
        s.latency_s,
    );
    Ok((f, Py::new(py, PySnapshot { inner: s })?))
}

/// Reads a snapshot document or a bare Prometheus text file.
#[pyfunction]
pub fn load_snapshot(py: Python<'_>, path: &str) -> PyResult<(Fields, Py<PySnapshot>)> {
    let p = std::path::PathBuf::from(path);
    let s = py
        .allow_threads(|| Snapshot::load(&p))
        .map_err(read_error)?;
    fields(py, s)
}

/// Reads a snapshot from the text of a document (`source` names it in messages).
#[pyfunction]
pub fn snapshot_from_document(
    py: Python<'_>,
    text: &str,
    source: &str,
) -> PyResult<(Fields, Py<PySnapshot>)> {
    let s = Snapshot::from_text(text, source).map_err(read_error)?;
    fields(py, s)
}

/// One reading of a server's metrics over HTTP, on the library's scraper (the TensorRT-LLM
/// path `/prometheus/metrics` found and remembered as it does for `run`).
#[pyclass(frozen, module = "inferlint._native", name = "Scraper")]
pub struct PyScraper {
    scraper: Scraper,
    runtime: tokio::runtime::Runtime,
}

#[pymethods]
impl PyScraper {
    #[new]
    fn new() -> PyResult<Self> {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| PyValueError::new_err(e.to_string()))?;
        Ok(PyScraper {
            scraper: Scraper::new(),
            runtime,
        })
    }

    /// `OSError` when the server cannot be read (connection refused, timeout, HTTP error),
    /// `ValueError` when what it answered is not Prometheus text.
    #[pyo3(signature = (base_url, path, timeout))]
    fn scrape(
        &self,
        py: Python<'_>,
        base_url: &str,
        path: Option<&str>,
        timeout: f64,
    ) -> PyResult<(Fields, Py<PySnapshot>)> {
        let timeout = std::time::Duration::from_secs_f64(timeout.max(0.001));
        let r = py.allow_threads(|| {
            self.runtime
                .block_on(self.scraper.scrape(base_url, path, timeout))
        });
        match r {
            Ok(s) => fields(py, s),
            Err(e) => Err(match e {
                ScrapeError::Parse { .. } | ScrapeError::Json { .. } => {
                    PyValueError::new_err(e.to_string())
                }
                _ => pyo3::exceptions::PyOSError::new_err(e.to_string()),
            }),
        }
    }
}

/// `*_created` series whose value moved: `(name, before, after)`.
#[pyfunction]
pub fn created_changes(a: &PySnapshot, b: &PySnapshot) -> Vec<(String, f64, f64)> {
    counters::moved_created_stamps(&a.inner.metrics, &b.inner.metrics)
        .into_iter()
        .map(|m| (m.name, m.before, m.after))
        .collect()
}

/// A counter's delta, or why there is none: `(delta, restart message, restart evidence)`.
type Delta = (Option<f64>, Option<String>, Option<Py<PyAny>>);

/// A counter's delta as `(delta, None, None)`, `(None, None, None)` when a snapshot lacks it, or
/// `(None, message, evidence)` for the caller to raise `ServerRestarted`.
#[pyfunction]
#[pyo3(signature = (a, b, name, witness, labels))]
pub fn counter_delta(
    py: Python<'_>,
    a: &PySnapshot,
    b: &PySnapshot,
    name: &str,
    witness: Option<&str>,
    labels: Vec<(String, String)>,
) -> PyResult<Delta> {
    let pairs: Vec<(&str, &str)> = labels
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    let q = counters::CounterQuery::new(name)
        .with_labels(&pairs)
        .with_witness(witness);
    match counters::snapshot_delta(&a.inner, &b.inner, &q) {
        Ok(d) => Ok((Some(d), None, None)),
        // A named counter is never NotCounted (that is an engine's missing role), but the
        // match stays total.
        Err(counters::DeltaError::Absent { .. } | counters::DeltaError::NotCounted { .. }) => {
            Ok((None, None, None))
        }
        Err(counters::DeltaError::Restarted(r)) => {
            let ev = pythonize::pythonize(py, &r.evidence()).map_err(crate::errors::internal)?;
            Ok((None, Some(r.to_string()), Some(ev.unbind())))
        }
    }
}

/// Seconds between two snapshots and the uncertainty from their scrape latencies; `ValueError`
/// when they carry no clock or their clocks disagree.
#[pyfunction]
pub fn span_s(a: &PySnapshot, b: &PySnapshot) -> PyResult<(f64, f64)> {
    let s = counters::span(&a.inner, &b.inner).map_err(|e| PyValueError::new_err(e.to_string()))?;
    Ok((s.seconds, s.uncertainty_s.unwrap_or(0.0)))
}

/// Where hooked scrapes found each server's metrics, for the whole process (as 0.3.1 kept it).
static PLACES: std::sync::OnceLock<MetricsPlaces> = std::sync::OnceLock::new();

/// A scrape through the caller's hooks (0.3.1's `fetch(url, timeout)`, `wall()`,
/// `mono_ns()`): the library's places, order and memory ([`MetricsPlaces`]), each GET between
/// two readings of the caller's clocks. A hook's exception is raised as it is; an answer that
/// is JSON everywhere, or no Prometheus text, is a `ValueError` naming the URL.
#[pyfunction]
#[pyo3(signature = (base_url, path, timeout, fetch, wall, mono_ns))]
pub fn scrape_with(
    py: Python<'_>,
    base_url: &str,
    path: Option<&str>,
    timeout: f64,
    fetch: &Bound<'_, PyAny>,
    wall: &Bound<'_, PyAny>,
    mono_ns: &Bound<'_, PyAny>,
) -> PyResult<(Fields, Py<PySnapshot>)> {
    let now = || -> PyResult<ClockReading> {
        let wall: f64 = wall.call0()?.extract()?;
        let mono_ns: i64 = mono_ns.call0()?.extract()?;
        Ok(ClockReading { wall, mono_ns })
    };
    let get = |url: &str| -> PyResult<Reading> {
        let before = now()?;
        let text: String = fetch.call1((url, timeout))?.extract()?;
        let after = now()?;
        Ok(Reading {
            text,
            before,
            after,
        })
    };
    let (url, r) = PLACES
        .get_or_init(MetricsPlaces::new)
        .read(base_url, path, get)
        .map_err(|e| match e {
            PlaceError::Fetch(e) => e,
            json @ PlaceError::Json { .. } => PyValueError::new_err(json.to_string()),
        })?;
    let s = Snapshot::from_reading(&url, r.text, r.before, r.after)
        .map_err(|e| PyValueError::new_err(format!("{url}: {e}")))?;
    fields(py, s)
}
