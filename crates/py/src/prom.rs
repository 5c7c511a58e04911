//! `prom.Metrics`' lookups: the Python class keeps 0.3.1's signatures and its `Sample`
//! dataclass objects, and every selection and sum is core's `Metrics`; selections come back as
//! positions, so Python returns the very `Sample` objects it holds (docs/python.md).

use std::collections::HashMap;

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

use crate::core::Metrics;
use inferlint_core::prom::Sample;

/// A sample as it crosses to Python: `(name, labels, value)`.
type Row = (String, Vec<(String, String)>, f64);

/// A parsed exposition, behind the Python `prom.Metrics`.
#[pyclass(frozen, module = "inferlint._native", name = "PromMetrics")]
pub struct PyMetrics {
    pub inner: Metrics,
}

/// The keyword labels of a Python call as core's `(key, value)` pairs.
fn pairs(labels: &HashMap<String, String>) -> Vec<(&str, &str)> {
    labels
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect()
}

#[pymethods]
impl PyMetrics {
    /// The samples `prom.Metrics(samples)` was given, as rows.
    #[staticmethod]
    fn from_rows(rows: Vec<Row>) -> PyMetrics {
        let samples = rows.into_iter().map(|(name, labels, value)| Sample {
            name,
            labels,
            value,
        });
        PyMetrics {
            inner: Metrics::from_samples(samples),
        }
    }

    /// Parses Prometheus text; `ValueError` naming the line when a sample is malformed.
    #[staticmethod]
    fn parse(py: Python<'_>, text: &str) -> PyResult<PyMetrics> {
        let inner = py
            .allow_threads(|| Metrics::parse(text))
            .map_err(|e| PyValueError::new_err(e.to_string()))?;
        Ok(PyMetrics { inner })
    }

    fn __len__(&self) -> usize {
        self.inner.len()
    }

    fn rows(&self) -> Vec<Row> {
        let s = self.inner.samples().iter();
        s.map(|s| (s.name.clone(), s.labels.clone(), s.value))
            .collect()
    }

    fn names(&self) -> Vec<String> {
        self.inner.names().map(str::to_string).collect()
    }

    fn has(&self, name: &str) -> bool {
        self.inner.has(name)
    }

    /// The positions of the samples of `name` that carry every given label.
    fn select(&self, name: &str, labels: HashMap<String, String>) -> Vec<usize> {
        self.inner.positions(name, &pairs(&labels)).collect()
    }

    /// The exact sum over the matching samples; None when none matches (never 0).
    fn total(&self, name: &str, labels: HashMap<String, String>) -> Option<f64> {
        self.inner.total_where(name, &pairs(&labels))
    }

    /// The positions of the samples whose name starts with `prefix`, in text order.
    fn with_prefix(&self, prefix: &str) -> Vec<usize> {
        let s = self.inner.samples().iter().enumerate();
        s.filter(|(_, s)| s.name.starts_with(prefix))
            .map(|(i, _)| i)
            .collect()
    }
}
