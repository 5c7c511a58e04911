//! The HTML report from Python: the library's `Report::build` on the files and readings the
//! caller gives, drawn by its page templates.

use pyo3::prelude::*;

use crate::checks::{out, result_from_py, Checked};
use crate::core::report::{BootLog, Inputs, Report};
use crate::errors::io_error;
use crate::facts::engine_arg;
use crate::series::PySeries;
use crate::snapshot::PySnapshot;

#[pyclass(frozen, module = "inferlint._native", name = "Report")]
pub struct PyReport {
    inner: Report,
}

#[pymethods]
impl PyReport {
    fn title(&self) -> String {
        self.inner.title()
    }

    fn engine(&self) -> &'static str {
        self.inner.engine().key()
    }

    fn results(&self) -> PyResult<Vec<Checked>> {
        self.inner.results().iter().cloned().map(out).collect()
    }

    /// `(label, facts JSON)` of each boot log.
    fn boots(&self) -> PyResult<Vec<(String, String)>> {
        self.inner
            .facts()
            .iter()
            .map(|(l, f)| {
                Ok((
                    l.clone(),
                    serde_json::to_string(f).map_err(crate::errors::internal)?,
                ))
            })
            .collect()
    }

    fn summary(&self) -> PyResult<String> {
        serde_json::to_string(self.inner.summary()).map_err(crate::errors::internal)
    }

    fn usable_blocks(&self) -> Option<u64> {
        self.inner.usable_blocks()
    }

    /// The standalone page, or a fragment to embed (starts with `<title>`).
    fn render(&self, py: Python<'_>, standalone: bool) -> String {
        py.allow_threads(|| {
            if standalone {
                self.inner.render_page()
            } else {
                self.inner.render_fragment()
            }
        })
    }
}

/// Builds the report from boot log files (read with the GIL released), snapshots, a recording,
/// a result file and the live run's own results (`extra`, as `CheckResult.to_json()` dicts).
#[pyfunction]
#[pyo3(signature = (boot_logs, before, after, series, requested, title, sources, extra, server_version, engine, bench, generated))]
#[allow(clippy::too_many_arguments)]
pub fn build_report(
    py: Python<'_>,
    boot_logs: Vec<String>,
    before: Option<&PySnapshot>,
    after: Option<&PySnapshot>,
    series: Option<&PySeries>,
    requested: Option<u64>,
    title: Option<String>,
    sources: Vec<String>,
    extra: Vec<Bound<'_, PyAny>>,
    server_version: Option<String>,
    engine: Option<&str>,
    bench: Option<&Bound<'_, PyAny>>,
    generated: Option<String>,
) -> PyResult<PyReport> {
    let engine = engine_arg(engine)?;
    let paths: Vec<std::path::PathBuf> = boot_logs.iter().map(Into::into).collect();
    let labels = crate::core::bootlog::log_labels(&paths);
    let texts = py.allow_threads(|| {
        paths
            .iter()
            .map(|p| {
                std::fs::read(p)
                    .map(|b| String::from_utf8_lossy(&b).into_owned())
                    .map_err(|e| (p.display().to_string(), e))
            })
            .collect::<Result<Vec<String>, _>>()
    });
    let texts = texts.map_err(|(p, e)| io_error(&p, &e))?;
    let extra_results = extra
        .iter()
        .map(result_from_py)
        .collect::<PyResult<Vec<_>>>()?;
    let inputs = Inputs {
        boot_logs: labels
            .into_iter()
            .zip(texts)
            .map(|(label, text)| BootLog { label, text })
            .collect(),
        before: before.map(|s| s.inner.clone()),
        after: after.map(|s| s.inner.clone()),
        series: series.map(|s| s.inner.clone()),
        bench: bench.map(crate::checks::bench_of).transpose()?,
        requested,
        title,
        sources,
        extra_results,
        server_version,
        engine,
        generated_at: generated,
        ..Default::default()
    };
    let inner = py.allow_threads(|| Report::build(inputs));
    Ok(PyReport { inner })
}

/// "What limited this run" of a page the library wrote: `(title, text)` of each, from the data
/// embedded in the page (`report --from-html` reads the same).
#[pyfunction]
pub fn report_insights(py: Python<'_>, path: &str) -> PyResult<Vec<(String, String)>> {
    let html = py
        .allow_threads(|| std::fs::read_to_string(path))
        .map_err(|e| io_error(path, &e))?;
    let data = crate::core::report::embed::read_back(&html, path)
        .map_err(|e| pyo3::exceptions::PyValueError::new_err(e.to_string()))?;
    Ok(data
        .insights
        .into_iter()
        .map(|i| (i.title, i.text))
        .collect())
}
