//! `inferlint.sweep`: a sweep folder's `sweep.json` (docs/design/formats.md#sweepjson) read by
//! core's `Sweep`, as typed objects. Whether a point holds, and why not, is core's
//! `Sweep::why_not`: the words of the last column of the table `inferlint run --sweep` prints.
//! A point's verdicts are the typed `CheckResult` of [`crate::result`].

use std::path::{Path, PathBuf};

use pyo3::prelude::*;
use pyo3::sync::GILOnceCell;
use pyo3::types::PyType;

use crate::core::ReadError;
use crate::errors::{internal, read_error};
use crate::result::PyCheckResult;
use inferlint_core::sweep::{
    Figures, Finding, FindingKind, Point, PromptsKey, Reset, Sweep, SCHEMA,
};

/// A core value as the Python objects of its JSON (`to_json()`, as `CheckResult.to_json`).
macro_rules! json_of {
    ($py:expr, $v:expr) => {
        pythonize::pythonize($py, $v).map_err(internal)
    };
}

/// The key a core enum writes in `sweep.json` (`inherited_cache`, `reset-cache`).
fn key_of(v: serde_json::Result<serde_json::Value>) -> PyResult<String> {
    match v.map_err(internal)? {
        serde_json::Value::String(s) => Ok(s),
        other => Err(internal(format!("{other} is not a key"))),
    }
}

fn kind_key(k: FindingKind) -> PyResult<String> {
    key_of(serde_json::to_value(k))
}

#[pyclass(frozen, module = "inferlint.sweep", name = "Figures")]
pub struct PyFigures {
    inner: Figures,
}

#[pymethods]
impl PyFigures {
    #[getter]
    fn requests_per_s(&self) -> Option<f64> {
        self.inner.requests_per_s
    }
    #[getter]
    fn output_tokens_per_s(&self) -> Option<f64> {
        self.inner.output_tokens_per_s
    }
    #[getter]
    fn ttft_p50_ms(&self) -> Option<f64> {
        self.inner.ttft_p50_ms
    }
    #[getter]
    fn ttft_p99_ms(&self) -> Option<f64> {
        self.inner.ttft_p99_ms
    }
    #[getter]
    fn tpot_p50_ms(&self) -> Option<f64> {
        self.inner.tpot_p50_ms
    }
    /// The most requests the server ran at once (T8's reading).
    #[getter]
    fn peak_running(&self) -> Option<f64> {
        self.inner.peak_running
    }
    /// The share of prompt tokens served from the prefix cache (T16's reading).
    #[getter]
    fn cache_hit_rate(&self) -> Option<f64> {
        self.inner.cache_hit_rate
    }
    /// The figures as `sweep.json` writes them, a dict (a row for a data frame).
    fn to_json<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        json_of!(py, &self.inner)
    }
    fn __repr__(&self) -> String {
        let f = &self.inner;
        // `{:?}` writes a float as Python does (`2.0`, `0.9375`).
        let n = |x: Option<f64>| x.map_or("None".to_string(), |v| format!("{v:?}"));
        format!(
            "Figures(requests_per_s={}, output_tokens_per_s={}, ttft_p50_ms={}, ttft_p99_ms={}, tpot_p50_ms={}, peak_running={}, cache_hit_rate={})",
            n(f.requests_per_s),
            n(f.output_tokens_per_s),
            n(f.ttft_p50_ms),
            n(f.ttft_p99_ms),
            n(f.tpot_p50_ms),
            n(f.peak_running),
            n(f.cache_hit_rate),
        )
    }
}

/// What a point's prompts were (core's `PromptsKey`).
#[pyclass(frozen, module = "inferlint.sweep", name = "Prompts")]
pub struct PyPrompts {
    inner: PromptsKey,
}

#[pymethods]
impl PyPrompts {
    #[getter]
    fn dataset(&self) -> Option<&str> {
        self.inner.dataset.as_deref()
    }
    #[getter]
    fn seed(&self) -> Option<u64> {
        self.inner.seed
    }
    /// Whether the prompts were meant to be fresh (a random or synthetic dataset).
    #[getter]
    fn fresh(&self) -> bool {
        self.inner.fresh
    }
    fn __repr__(&self) -> String {
        format!(
            "Prompts(dataset={}, seed={}, fresh={})",
            self.inner
                .dataset
                .as_ref()
                .map_or("None".to_string(), |d| format!("{d:?}")),
            self.inner
                .seed
                .map_or("None".to_string(), |s| s.to_string()),
            if self.inner.fresh { "True" } else { "False" },
        )
    }
}

/// The cache reset before a point, and what the server answered.
#[pyclass(frozen, module = "inferlint.sweep", name = "Reset")]
pub struct PyReset {
    inner: Reset,
}

#[pymethods]
impl PyReset {
    /// `done`, `refused` or `unavailable`, as `sweep.json` writes it.
    #[getter]
    fn outcome(&self) -> PyResult<String> {
        // Core's serde tag, so the word is the file's whatever core names it.
        let doc = serde_json::to_value(&self.inner).map_err(internal)?;
        key_of(Ok(doc.get("outcome").cloned().unwrap_or_default()))
    }
    /// What the server answered, for a reset that did not take.
    #[getter]
    fn detail(&self) -> Option<&str> {
        match &self.inner {
            Reset::Done => None,
            Reset::Refused(d) | Reset::Unavailable(d) => Some(d),
        }
    }
    /// The server said the cache was reset.
    #[getter]
    fn done(&self) -> bool {
        self.inner == Reset::Done
    }
    fn __repr__(&self) -> String {
        let outcome = self.outcome().unwrap_or_default();
        match self.detail() {
            Some(d) => format!("Reset(outcome={outcome:?}, detail={d:?})"),
            None => format!("Reset(outcome={outcome:?})"),
        }
    }
}

static FINDING_KIND: GILOnceCell<Py<PyType>> = GILOnceCell::new();

/// Every kind of finding across the points, as `sweep.json` writes it: `inferlint.sweep.
/// FindingKind`'s members (held to them by python/tests/test_sweep.py).
#[pyfunction]
pub fn finding_kinds() -> PyResult<Vec<String>> {
    use FindingKind::*;
    // The match has no wildcard: a kind core adds fails the build here until it is listed.
    let all = [
        InheritedCache,
        Knee,
        PastKnee,
        ResetFailed,
        Spread,
        ServerChanged,
    ];
    for k in all {
        match k {
            InheritedCache | Knee | PastKnee | ResetFailed | Spread | ServerChanged => {}
        }
    }
    all.into_iter().map(kind_key).collect()
}

/// One finding across the points, about one point.
#[pyclass(frozen, module = "inferlint.sweep", name = "Finding")]
pub struct PyFinding {
    inner: Finding,
}

#[pymethods]
impl PyFinding {
    /// The `inferlint.sweep.FindingKind` member.
    #[getter]
    fn kind<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        FINDING_KIND
            .import(py, "inferlint.sweep", "FindingKind")?
            .call1((kind_key(self.inner.kind)?,))
    }
    /// The point it is about (1-based).
    #[getter]
    fn point(&self) -> usize {
        self.inner.point
    }
    /// The earlier point it names, where it names one.
    #[getter]
    fn names(&self) -> Option<usize> {
        self.inner.names
    }
    /// A few words, as the table says them (`cache of point 1`).
    #[getter]
    fn short(&self) -> &str {
        &self.inner.short
    }
    /// The sentence the terminal and the report print.
    #[getter]
    fn message(&self) -> &str {
        &self.inner.message
    }
    fn to_json<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        json_of!(py, &self.inner)
    }
    fn __repr__(&self) -> PyResult<String> {
        Ok(format!(
            "Finding(kind={:?}, point={}, names={}, short={:?})",
            kind_key(self.inner.kind)?,
            self.inner.point,
            self.inner
                .names
                .map_or("None".to_string(), |n| n.to_string()),
            self.inner.short,
        ))
    }
}

/// One point of a sweep: what it asked, its figures, its verdicts and whether it holds.
#[pyclass(frozen, module = "inferlint.sweep", name = "Point")]
pub struct PyPoint {
    inner: Point,
    path: PathBuf,
    figures: Py<PyFigures>,
    prompts: Py<PyPrompts>,
    reset: Option<Py<PyReset>>,
    results: Vec<Py<PyCheckResult>>,
    why_not: Vec<String>,
}

#[pymethods]
impl PyPoint {
    /// 1-based, in the order run.
    #[getter]
    fn index(&self) -> usize {
        self.inner.index
    }
    /// `--max-concurrency 16`.
    #[getter]
    fn label(&self) -> &str {
        &self.inner.label
    }
    #[getter]
    fn value(&self) -> &str {
        &self.inner.value
    }
    /// Which run of its value it is (`--repeat`), 1-based; None when each value ran once.
    #[getter]
    fn repeat(&self) -> Option<u32> {
        self.inner.repeat
    }
    /// Its folder as `sweep.json` names it, relative to the sweep's (`points/01-max-concurrency-2`).
    #[getter]
    fn folder(&self) -> &str {
        &self.inner.folder
    }
    /// Its folder on disk: the sweep's folder joined with `folder`.
    #[getter]
    fn path(&self) -> PathBuf {
        self.path.clone()
    }
    #[getter]
    fn asked_concurrency(&self) -> Option<u64> {
        self.inner.asked_concurrency
    }
    #[getter]
    fn asked_rate(&self) -> Option<f64> {
        self.inner.asked_rate
    }
    #[getter]
    fn prompts(&self, py: Python<'_>) -> Py<PyPrompts> {
        self.prompts.clone_ref(py)
    }
    /// The cache reset before it: None where none was asked, and for the first point.
    #[getter]
    fn reset(&self, py: Python<'_>) -> Option<Py<PyReset>> {
        self.reset.as_ref().map(|r| r.clone_ref(py))
    }
    #[getter]
    fn figures(&self, py: Python<'_>) -> Py<PyFigures> {
        self.figures.clone_ref(py)
    }
    /// Its window's verdicts, as the point's `results.json`.
    #[getter]
    fn results(&self, py: Python<'_>) -> Vec<Py<PyCheckResult>> {
        self.results.iter().map(|r| r.clone_ref(py)).collect()
    }
    /// The load command's exit status.
    #[getter]
    fn load_exit(&self) -> Option<i32> {
        self.inner.load_exit
    }
    /// Cut short by Ctrl-C.
    #[getter]
    fn interrupted(&self) -> bool {
        self.inner.interrupted
    }
    /// Its own verdicts hold and no finding across the points names it (the table's `yes`).
    #[getter]
    fn holds(&self) -> bool {
        self.why_not.is_empty()
    }
    /// Why it does not hold, in the table's words (`T8 failed`, `cache of point 1`); empty when
    /// it holds.
    #[getter]
    fn why_not(&self) -> Vec<String> {
        self.why_not.clone()
    }
    /// The verdict of one tripwire (`"T8"`), if the point has one.
    fn result(&self, py: Python<'_>, tripwire: &str) -> Option<Py<PyCheckResult>> {
        self.results
            .iter()
            .find(|r| r.get().inner.tripwire.code() == tripwire)
            .map(|r| r.clone_ref(py))
    }
    fn to_json<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        json_of!(py, &self.inner)
    }
    fn __repr__(&self) -> String {
        format!(
            "Point(index={}, label={:?}, holds={})",
            self.inner.index,
            self.inner.label,
            if self.why_not.is_empty() {
                "True"
            } else {
                "False"
            },
        )
    }
}

/// A sweep folder's `sweep.json`: the option swept, its points, the findings across them.
#[pyclass(frozen, module = "inferlint.sweep", name = "Sweep")]
pub struct PySweep {
    inner: Sweep,
    path: PathBuf,
    points: Vec<Py<PyPoint>>,
    findings: Vec<Py<PyFinding>>,
}

#[pymethods]
impl PySweep {
    /// The option swept, without its dashes (`max-concurrency`).
    #[getter]
    fn option(&self) -> &str {
        &self.inner.option
    }
    /// What was done between the points: `reset-cache` or `nothing`.
    #[getter]
    fn between(&self) -> PyResult<String> {
        key_of(serde_json::to_value(self.inner.between))
    }
    /// The folder read.
    #[getter]
    fn path(&self) -> PathBuf {
        self.path.clone()
    }
    #[getter]
    fn points(&self, py: Python<'_>) -> Vec<Py<PyPoint>> {
        self.points.iter().map(|p| p.clone_ref(py)).collect()
    }
    /// Across the points, in point order.
    #[getter]
    fn findings(&self, py: Python<'_>) -> Vec<Py<PyFinding>> {
        self.findings.iter().map(|f| f.clone_ref(py)).collect()
    }
    /// The knee's point index (the first point past which the points measure the server's
    /// ceiling or the client), or None.
    #[getter]
    fn knee(&self) -> Option<usize> {
        self.inner.knee
    }
    /// Point `index` (1-based).
    fn point(&self, py: Python<'_>, index: usize) -> PyResult<Py<PyPoint>> {
        self.points
            .iter()
            .find(|p| p.get().inner.index == index)
            .map(|p| p.clone_ref(py))
            .ok_or_else(|| {
                pyo3::exceptions::PyIndexError::new_err(format!("the sweep has no point {index}"))
            })
    }
    /// The table `inferlint run --sweep` prints, line by line (core's `sweep::table`).
    fn table(&self) -> Vec<String> {
        inferlint_core::sweep::table(&self.inner)
    }
    /// `sweep.json` as Python objects.
    fn to_json<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        json_of!(py, &self.inner)
    }
    fn __len__(&self) -> usize {
        self.points.len()
    }
    fn __repr__(&self) -> String {
        format!(
            "Sweep(option={:?}, points={}, knee={})",
            self.inner.option,
            self.points.len(),
            self.inner
                .knee
                .map_or("None".to_string(), |k| k.to_string()),
        )
    }
}

/// A JSON error as the package's other readers give it: the file, the line and the column.
/// (core's own helper for it is private to core; the variants are not.)
fn json_error(path: &str, e: &serde_json::Error) -> ReadError {
    let message = e.to_string();
    // serde_json appends " at line L column C"; ReadError::Json prints the position itself.
    let message = match message.rfind(" at line ") {
        Some(p) => message[..p].to_string(),
        None => message,
    };
    if e.classify() == serde_json::error::Category::Data {
        // Valid JSON whose fields are not core's: the place and what was expected.
        return ReadError::Format {
            path: path.to_string(),
            message: format!(
                "line {}, column {}: not a sweep.json of this version ({message})",
                e.line(),
                e.column()
            ),
        };
    }
    ReadError::Json {
        path: path.to_string(),
        line: e.line(),
        column: e.column(),
        message,
    }
}

/// `sweep.json` of `file`: I/O errors, a file that is not JSON, one of another schema and one
/// whose fields are not core's, each naming the file.
fn parse(file: &Path) -> Result<Sweep, ReadError> {
    let shown = file.display().to_string();
    let format = |message: String| ReadError::Format {
        path: shown.clone(),
        message,
    };
    let bytes = std::fs::read(file).map_err(|source| ReadError::Io {
        path: shown.clone(),
        source,
    })?;
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Err(ReadError::Empty { path: shown });
    }
    let text = String::from_utf8(bytes).map_err(|e| {
        format(format!(
            "not UTF-8 text (at byte {})",
            e.utf8_error().valid_up_to()
        ))
    })?;
    let doc: serde_json::Value = serde_json::from_str(&text).map_err(|e| json_error(&shown, &e))?;
    // The schema first, so that another file (a results.json, a newer sweep) is named as such
    // rather than by the first field it lacks.
    match doc.get("schema").and_then(serde_json::Value::as_str) {
        Some(SCHEMA) => {}
        Some(other) => {
            return Err(format(format!(
                "schema {other:?} is not {SCHEMA:?}, the one this version reads"
            )))
        }
        None => return Err(format(format!("not a sweep.json (no schema {SCHEMA:?})"))),
    }
    serde_json::from_str(&text).map_err(|e| json_error(&shown, &e))
}

/// Reads a sweep folder's `sweep.json` (or the file itself, given a path ending `.json`) into
/// typed objects; the points' holds and why not are core's `Sweep::why_not`.
#[pyfunction]
pub fn read_sweep(py: Python<'_>, folder: PathBuf) -> PyResult<PySweep> {
    let (dir, file) = if folder.extension().is_some_and(|e| e == "json") {
        let dir = folder.parent().map(Path::to_path_buf).unwrap_or_default();
        (dir, folder)
    } else {
        (folder.clone(), folder.join("sweep.json"))
    };
    let inner = py.allow_threads(|| parse(&file)).map_err(read_error)?;
    let points = inner
        .points
        .iter()
        .map(|p| {
            let results = p
                .results
                .iter()
                .map(|r| Py::new(py, PyCheckResult::of(py, r.clone(), |_| {})?))
                .collect::<PyResult<Vec<_>>>()?;
            let point = PyPoint {
                path: dir.join(&p.folder),
                figures: Py::new(
                    py,
                    PyFigures {
                        inner: p.figures.clone(),
                    },
                )?,
                prompts: Py::new(
                    py,
                    PyPrompts {
                        inner: p.prompts.clone(),
                    },
                )?,
                reset: p
                    .reset
                    .clone()
                    .map(|inner| Py::new(py, PyReset { inner }))
                    .transpose()?,
                results,
                why_not: inner.why_not(p.index),
                inner: p.clone(),
            };
            Py::new(py, point)
        })
        .collect::<PyResult<Vec<_>>>()?;
    let findings = inner
        .findings
        .iter()
        .map(|f| Py::new(py, PyFinding { inner: f.clone() }))
        .collect::<PyResult<Vec<_>>>()?;
    Ok(PySweep {
        inner,
        path: dir,
        points,
        findings,
    })
}
