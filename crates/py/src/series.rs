//! Recordings: read and held in Rust. Python sees their rows only when it asks for them, so a
//! day's recording checked from Python never becomes 345,600 Python objects.

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

use crate::core::{Engine, Readings, Series, SeriesHeader, SeriesSample};
use crate::errors::read_error;
use crate::prom::PyMetrics;
use crate::snapshot::PySnapshot;
use inferlint_core::series::SeriesWriter;

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
        s.t_mono_ns(),
        s.running(),
        s.waiting(),
        s.kv_usage(),
        s.preemptions(),
        s.generation_tokens(),
        s.prompt_tokens(),
        s.paused(),
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
            .filter_map(|s| s.kv_usage().filter(|u| *u != 0.0))
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
        .map(|r| {
            SeriesSample::from(Readings {
                t_wall: r.0,
                t_mono_ns: r.1,
                running: r.2,
                waiting: r.3,
                kv_usage: r.4,
                preemptions: r.5,
                generation_tokens: r.6,
                prompt_tokens: r.7,
                paused: r.8,
                ..Readings::default()
            })
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

/// The recorder's rows as `watch` and `run` write them (core's `SeriesWriter`), for Python's
/// `series.watch`: the header once, naming the engine of the first scrape, then one row per
/// scrape with its per-engine gauges and its engine's own fields.
#[pyclass(module = "inferlint._native", name = "SeriesRecorder")]
pub struct PyRecorder {
    writer: SeriesWriter<Vec<u8>>,
}

impl PyRecorder {
    fn drain(&mut self) -> PyResult<String> {
        String::from_utf8(self.writer.take_output())
            .map_err(|e| PyValueError::new_err(format!("the recorder wrote bad text: {e}")))
    }
}

#[pymethods]
impl PyRecorder {
    #[new]
    fn new(url: &str, interval_s: f64) -> Self {
        PyRecorder {
            writer: SeriesWriter::new(Vec::new(), url, interval_s),
        }
    }

    /// The lines one scrape adds: the header first (once), then its row. `engine` decides the
    /// series where the metric names name no engine.
    #[pyo3(signature = (snapshot, engine=None))]
    fn add(&mut self, snapshot: &PySnapshot, engine: Option<&str>) -> PyResult<String> {
        let hint = engine_arg(engine)?;
        let s = &snapshot.inner;
        self.writer
            .write_metrics(&s.metrics, hint, s.t_wall, s.t_mono_ns)
            .map_err(|e| PyValueError::new_err(e.to_string()))?;
        self.drain()
    }

    /// The header, when no scrape succeeded (the file still says what it is), else nothing.
    fn finish(&mut self) -> PyResult<String> {
        self.writer
            .write_header(None)
            .map_err(|e| PyValueError::new_err(e.to_string()))?;
        self.drain()
    }

    /// The engine the header named, once written.
    #[getter]
    fn engine(&self) -> Option<&'static str> {
        self.writer.engine().map(|e| e.key())
    }
}

/// One row of `samples` (`(name, labels, value)`) as the recorder writes it, as JSON: the
/// series of `engine` (by default the one the names come from).
#[pyfunction]
#[pyo3(signature = (metrics, t_wall, t_mono_ns, engine=None))]
pub fn sample_row(
    metrics: &PyMetrics,
    t_wall: f64,
    t_mono_ns: Option<i64>,
    engine: Option<&str>,
) -> PyResult<String> {
    let metrics = &metrics.inner;
    let engine = engine_arg(engine)?
        .or_else(|| metrics.engine())
        .unwrap_or(Engine::Vllm);
    let mut w = SeriesWriter::new(Vec::new(), "", 0.0);
    w.write_header(Some(engine))
        .map_err(|e| PyValueError::new_err(e.to_string()))?;
    w.take_output();
    w.write_sample(&SeriesSample::from_metrics(
        metrics, engine, t_wall, t_mono_ns,
    ))
    .map_err(|e| PyValueError::new_err(e.to_string()))?;
    String::from_utf8(w.into_inner())
        .map_err(|e| PyValueError::new_err(format!("the recorder wrote bad text: {e}")))
}

fn engine_arg(engine: Option<&str>) -> PyResult<Option<Engine>> {
    engine
        .map(|k| {
            Engine::parse(k).ok_or_else(|| PyValueError::new_err(format!("not an engine: {k:?}")))
        })
        .transpose()
}
