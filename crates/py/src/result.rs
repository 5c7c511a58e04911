//! `inferlint.result.CheckResult`: the library's `CheckResult` as a typed Python object. Its
//! status, `ok`, `raise_for_status` and `TripwireFailed`'s message are the library's
//! (`Status::is_ok`, `CheckResult::raise_for_status`, `TripwireError`'s text); the evidence is a
//! dict made once by `pythonize` from the library's evidence, with 0.3.1's key names beside it
//! ([`crate::compat`]). Python's `Status` enum and `TripwireFailed` exception (python/inferlint/
//! result.py) only name what this module answers.

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::pyclass::CompareOp;
use pyo3::sync::GILOnceCell;
use pyo3::types::{PyDict, PyType};
use serde_json::{Map, Value};

use crate::core::CheckResult;
use inferlint_core::evidence::Evidence;
use inferlint_core::result::{Status, Tripwire};

/// `__reduce__`'s answer: the class and the constructor's four arguments.
type Reduced<'py> = (
    Bound<'py, PyType>,
    (String, Bound<'py, PyAny>, String, Py<PyAny>),
);

#[pyclass(frozen, module = "inferlint.result", name = "CheckResult")]
pub struct PyCheckResult {
    pub inner: CheckResult,
    evidence: Py<PyAny>,
}

/// A Python class of `inferlint.result`, looked up once (the module imports this one first).
fn result_class<'py>(
    py: Python<'py>,
    cell: &'static GILOnceCell<Py<PyType>>,
    name: &str,
) -> PyResult<Bound<'py, PyType>> {
    cell.import(py, "inferlint.result", name).cloned()
}

static STATUS: GILOnceCell<Py<PyType>> = GILOnceCell::new();
static TRIPWIRE_FAILED: GILOnceCell<Py<PyType>> = GILOnceCell::new();

fn status_arg(status: &Bound<'_, PyAny>) -> PyResult<Status> {
    // `Status.FAIL` is a str whose value is the key, so a member and "fail" read the same.
    let key: String = status.extract()?;
    Status::from_key(&key).ok_or_else(|| PyValueError::new_err(format!("{key:?} is not a Status")))
}

impl PyCheckResult {
    /// The library's result, its evidence made into Python objects after `amend` added 0.3.1's
    /// names to the JSON object.
    pub fn of(
        py: Python<'_>,
        inner: CheckResult,
        amend: impl FnOnce(&mut Map<String, Value>),
    ) -> PyResult<PyCheckResult> {
        let mut ev = inner.evidence.to_json();
        amend(&mut ev);
        let evidence = pythonize::pythonize(py, &Value::Object(ev))
            .map(Bound::unbind)
            .map_err(crate::errors::internal)?;
        Ok(PyCheckResult { inner, evidence })
    }
}

#[pymethods]
impl PyCheckResult {
    /// As 0.3.1's dataclass: `CheckResult(tripwire, status, message, evidence={})`. The evidence
    /// is kept as given; the library reads what of it is JSON for `with_timer_comparison`.
    #[new]
    #[pyo3(signature = (tripwire, status, message, evidence = None))]
    fn new(
        py: Python<'_>,
        tripwire: &str,
        status: &Bound<'_, PyAny>,
        message: String,
        evidence: Option<Bound<'_, PyAny>>,
    ) -> PyResult<PyCheckResult> {
        let code: Tripwire = tripwire
            .parse()
            .map_err(|()| PyValueError::new_err(format!("{tripwire:?} is not a tripwire code")))?;
        let evidence = match evidence {
            Some(e) if !e.is_none() => e,
            _ => PyDict::new(py).into_any(),
        };
        let json: Map<String, Value> = pythonize::depythonize(&evidence).unwrap_or_default();
        let inner = CheckResult {
            tripwire: code,
            status: status_arg(status)?,
            message,
            evidence: Evidence::read(code, json),
        };
        Ok(PyCheckResult {
            inner,
            evidence: evidence.unbind(),
        })
    }

    #[getter]
    fn tripwire(&self) -> String {
        self.inner.tripwire.code()
    }

    /// The `inferlint.result.Status` member.
    #[getter]
    fn status<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        result_class(py, &STATUS, "Status")?.call1((self.inner.status.key(),))
    }

    #[getter]
    fn message(&self) -> &str {
        &self.inner.message
    }

    #[getter]
    fn evidence(&self, py: Python<'_>) -> Py<PyAny> {
        self.evidence.clone_ref(py)
    }

    /// PASS, WARN and N/A are ok (`Status::is_ok`).
    #[getter]
    fn ok(&self) -> bool {
        self.inner.is_ok()
    }

    /// Raises `TripwireFailed` where `CheckResult::raise_for_status` errs: always on FAIL, on
    /// UNKNOWN unless `allow_unknown`, on WARN when not `allow_warn`.
    #[pyo3(signature = (*, allow_warn = true, allow_unknown = false))]
    fn raise_for_status(
        slf: &Bound<'_, Self>,
        allow_warn: bool,
        allow_unknown: bool,
    ) -> PyResult<()> {
        match slf.get().inner.raise_for_status(allow_unknown, allow_warn) {
            Ok(()) => Ok(()),
            Err(_) => {
                let exc =
                    result_class(slf.py(), &TRIPWIRE_FAILED, "TripwireFailed")?.call1((slf,))?;
                Err(PyErr::from_value(exc))
            }
        }
    }

    /// `TripwireFailed`'s message: the library's `TripwireError` text,
    /// `[T1] TRIPWIRE-FAILED: 22 preemptions during the run`.
    fn _failure_text(&self) -> String {
        inferlint_core::result::TripwireError(Box::new(self.inner.clone())).to_string()
    }

    /// `{"tripwire", "status", "message", "evidence"}`, the evidence the same dict.
    fn to_json<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let d = PyDict::new(py);
        d.set_item("tripwire", self.inner.tripwire.code())?;
        d.set_item("status", self.inner.status.key())?;
        d.set_item("message", &self.inner.message)?;
        d.set_item("evidence", self.evidence.bind(py))?;
        Ok(d)
    }

    /// Equal as 0.3.1's dataclasses were: the same type and equal fields.
    fn __richcmp__(
        &self,
        other: &Bound<'_, PyAny>,
        op: CompareOp,
        py: Python<'_>,
    ) -> PyResult<Py<PyAny>> {
        let Ok(other) = other.downcast::<PyCheckResult>() else {
            return Ok(py.NotImplemented());
        };
        let o = other.get();
        let same = self.inner.tripwire == o.inner.tripwire
            && self.inner.status == o.inner.status
            && self.inner.message == o.inner.message
            && self.evidence.bind(py).eq(o.evidence.bind(py))?;
        match op {
            CompareOp::Eq => Ok(same.into_pyobject(py)?.to_owned().into_any().unbind()),
            CompareOp::Ne => Ok((!same).into_pyobject(py)?.to_owned().into_any().unbind()),
            _ => Ok(py.NotImplemented()),
        }
    }

    fn __repr__(slf: &Bound<'_, Self>) -> PyResult<String> {
        let r = slf.get();
        let py = slf.py();
        Ok(format!(
            "CheckResult(tripwire={}, status={}, message={}, evidence={})",
            r.tripwire().into_pyobject(py)?.repr()?,
            r.status(py)?.repr()?,
            r.inner.message.as_str().into_pyobject(py)?.repr()?,
            r.evidence.bind(py).repr()?,
        ))
    }

    /// Pickles and copies as the four fields.
    fn __reduce__<'py>(slf: &Bound<'py, Self>) -> PyResult<Reduced<'py>> {
        let r = slf.get();
        let py = slf.py();
        Ok((
            slf.get_type(),
            (
                r.tripwire(),
                r.status(py)?,
                r.inner.message.clone(),
                r.evidence(py),
            ),
        ))
    }
}

/// Every status as `(key, label)`, in the report's order: `Status`' members and `LABELS`.
#[pyfunction]
pub fn status_table() -> Vec<(&'static str, &'static str)> {
    Status::ALL.iter().map(|s| (s.key(), s.label())).collect()
}

/// A run's `results.json` (what `inferlint run` wrote), read by the library's `CheckResult`.
#[pyfunction]
pub fn load_results(py: Python<'_>, path: &str) -> PyResult<Vec<PyCheckResult>> {
    let text = py
        .allow_threads(|| std::fs::read_to_string(path))
        .map_err(|e| crate::errors::io_error(path, &e))?;
    let results: Vec<CheckResult> = serde_json::from_str(&text)
        .map_err(|e| PyValueError::new_err(format!("{path}: not a run's results: {e}")))?;
    results
        .into_iter()
        .map(|r| PyCheckResult::of(py, r, |_| {}))
        .collect()
}

/// The version a live server reports, asked through `fetch(url) -> str | None` (a caller's
/// `urlopen`): the library's places, in its order, and its reading of the answer.
#[pyfunction]
pub fn server_version_with(url: &str, fetch: &Bound<'_, PyAny>) -> PyResult<Option<String>> {
    let base = url.trim_end_matches('/');
    for path in inferlint_core::endpoints::SERVER_VERSION_PATHS {
        let body: Option<String> = fetch.call1((format!("{base}{path}"),))?.extract()?;
        if let Some(v) = body
            .as_deref()
            .and_then(inferlint_core::endpoints::version_in_answer)
        {
            return Ok(Some(v));
        }
    }
    Ok(None)
}
