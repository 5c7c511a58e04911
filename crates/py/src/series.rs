//! Recordings: read and held in Rust. Python sees their rows only when it asks for them, so a
//! day's recording checked from Python never becomes 345,600 Python objects.

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

use crate::core::{Engine, Series, SeriesHeader, SeriesSample};
use crate::errors::read_error;

#[pyclass(frozen, module = "inferlint._native", name = "Recording")]
pub struct PySeries {
    pub inner: Series,
}

/// One row as 0.3.1's `series.Sample` fields, in their order.
pub type Row = (
    f64,
    Option<i64>,
    Option<f64>,
    Option<f64>,
    Option<f64>,
    Option<f64>,
    Option<f64>,
    Option<f64>,
    Option<f64>,
);

fn row(s: &SeriesSample) -> Row {
    (
        s.t_wall,
        s.t_mono_ns,
        s.running,
        s.waiting,
        s.kv_usage,
        s.preemptions,
        s.generation_tokens,
        s.prompt_tokens,
        s.paused,
    )
}

#[pymethods]
impl PySeries {
    fn __len__(&self) -> usize {
        self.inner.samples.len()
    }

    /// Rows `start..stop` (all of them by default).
    #[pyo3(signature = (start=0, stop=None))]
    fn rows(&self, start: usize, stop: Option<usize>) -> Vec<Row> {
        let n = self.inner.samples.len();
        let stop = stop.unwrap_or(n).min(n);
        self.inner.samples[start.min(stop)..stop]
            .iter()
            .map(row)
            .collect()
    }

    #[getter]
    fn skipped_lines(&self) -> usize {
        self.inner.skipped_lines
    }

    #[getter]
    fn url(&self) -> &str {
        &self.inner.header.url
    }

    #[getter]
    fn interval_s(&self) -> f64 {
        self.inner.header.interval_s
    }

    #[getter]
    fn engine(&self) -> Option<&'static str> {
        self.inner.header.engine.map(Engine::key)
    }

    fn peak_running(&self) -> Option<f64> {
        self.inner.peak_running()
    }

    /// Non-zero usage readings in order (0.3.1's `kv_usages`).
    fn kv_usages(&self) -> Vec<f64> {
        self.inner
            .samples
            .iter()
            .filter_map(|s| s.kv_usage.filter(|u| *u != 0.0))
            .collect()
    }
}

/// Reads a recording; damaged rows are skipped and counted. The file is read with the GIL
/// released.
#[pyfunction]
pub fn load_series(py: Python<'_>, path: &str) -> PyResult<PySeries> {
    let p = std::path::PathBuf::from(path);
    let inner = py.allow_threads(|| Series::load(&p)).map_err(read_error)?;
    Ok(PySeries { inner })
}

/// A recording built from Python's rows and header fields.
#[pyfunction]
#[pyo3(signature = (rows, url, interval_s, engine, skipped_lines=0))]
pub fn series_from_rows(
    rows: Vec<Row>,
    url: String,
    interval_s: f64,
    engine: Option<&str>,
    skipped_lines: usize,
) -> PyResult<PySeries> {
    let engine = match engine {
        None => None,
        Some(k) => Some(
            Engine::parse(k)
                .ok_or_else(|| PyValueError::new_err(format!("not an engine: {k:?}")))?,
        ),
    };
    let samples = rows
        .into_iter()
        .map(|r| SeriesSample {
            t_wall: r.0,
            t_mono_ns: r.1,
            running: r.2,
            waiting: r.3,
            kv_usage: r.4,
            preemptions: r.5,
            generation_tokens: r.6,
            prompt_tokens: r.7,
            paused: r.8,
            engines: None,
        })
        .collect();
    let mut inner = Series::from_samples(
        SeriesHeader {
            url,
            interval_s,
            engine,
        },
        samples,
    );
    inner.skipped_lines = skipped_lines;
    Ok(PySeries { inner })
}
