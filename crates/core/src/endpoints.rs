//! Where a live server answers what inferlint asks it, with the transport left to the caller:
//! its version ([`SERVER_VERSION_PATHS`], [`version_in_answer`]) and its Prometheus text
//! ([`MetricsPlaces`]: `/metrics`, else TensorRT-LLM's `/prometheus/metrics`, found once per
//! server and remembered). The program's HTTP client (the http crate) and a Python caller's own
//! hooks (crates/py, docs/python.md) ask the same places in the same order through these.

use std::collections::HashMap;
use std::future::Future;
use std::sync::{Mutex, PoisonError};

use serde_json::Value;

use crate::clock::ClockReading;

/// Where a live server reports its version, in the order asked: vLLM and TensorRT-LLM answer
/// `/version`, SGLang `/get_server_info` (docs/design/engines.md).
pub const SERVER_VERSION_PATHS: [&str; 2] = ["/version", "/get_server_info"];

/// The version in one of those answers: the JSON object's `version` string, else None.
pub fn version_in_answer(body: &str) -> Option<String> {
    let v: Value = serde_json::from_str(body).ok()?;
    v.get("version")?.as_str().map(str::to_string)
}

/// Where a server's Prometheus text is asked for first.
pub const METRICS_PATH: &str = "/metrics";

/// Where else servers put it when [`METRICS_PATH`] answers JSON: TensorRT-LLM answers `/metrics`
/// with its iteration statistics and serves Prometheus text at `/prometheus/metrics`
/// (docs/design/engines.md).
pub const OTHER_METRICS_PATHS: [&str; 1] = ["/prometheus/metrics"];

/// An answer that is JSON, not Prometheus text.
pub fn is_json_answer(text: &str) -> bool {
    let head = text.trim_start();
    head.starts_with('{') || head.starts_with('[')
}

/// One GET of a metrics URL by the caller's transport: the body between two clock readings.
#[derive(Clone, Debug, PartialEq)]
pub struct Reading {
    pub text: String,
    pub before: ClockReading,
    pub after: ClockReading,
}

/// Why [`MetricsPlaces::read`] found no Prometheus text.
#[derive(Debug, thiserror::Error)]
pub enum PlaceError<E: std::error::Error + 'static> {
    /// The caller's transport failed on the URL it was asked for.
    #[error(transparent)]
    Fetch(#[from] E),
    /// Every place answered JSON.
    #[error("{url} returned JSON, not Prometheus text (TensorRT-LLM serves its metrics at /prometheus/metrics)")]
    Json { url: String },
}

/// Where each server (by base URL) serves its Prometheus text, found once and remembered until
/// it fails; the GETs are the caller's (`get(url)`), so any transport (the program's HTTP
/// client, a Python hook) asks the same places in the same order.
#[derive(Debug, Default)]
pub struct MetricsPlaces {
    found: Mutex<HashMap<String, String>>,
}

impl MetricsPlaces {
    pub fn new() -> MetricsPlaces {
        MetricsPlaces::default()
    }

    /// The metrics of the server at `base_url` as `(url, reading)`, each GET done by the
    /// caller's blocking `get(url)` (a Python hook). [`MetricsPlaces::read_async`] says which
    /// places are read.
    pub fn read<E, F>(
        &self,
        base_url: &str,
        path: Option<&str>,
        mut get: F,
    ) -> Result<(String, Reading), PlaceError<E>>
    where
        E: std::error::Error + 'static,
        F: FnMut(&str) -> Result<Reading, E>,
    {
        let fut = self.read_async(base_url, path, |url| std::future::ready(get(url)));
        let mut fut = std::pin::pin!(fut);
        let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
        // Every GET is a ready future, so the whole read completes in one poll.
        match fut.as_mut().poll(&mut cx) {
            std::task::Poll::Ready(r) => r,
            std::task::Poll::Pending => unreachable!("a read of ready GETs never waits"),
        }
    }

    /// The metrics of the server at `base_url` as `(url, reading)`, each GET done by the
    /// caller's `get(url)` (the program's HTTP client). With `path`, only that is read.
    /// Without, a remembered place is read first (and forgotten when it fails), then
    /// [`METRICS_PATH`], then, when that answered JSON, [`OTHER_METRICS_PATHS`] in order, the
    /// first that answers Prometheus text being remembered for this base URL.
    pub async fn read_async<E, F, Fut>(
        &self,
        base_url: &str,
        path: Option<&str>,
        mut get: F,
    ) -> Result<(String, Reading), PlaceError<E>>
    where
        E: std::error::Error + 'static,
        F: FnMut(&str) -> Fut,
        Fut: Future<Output = Result<Reading, E>>,
    {
        let base = base_url.trim_end_matches('/');
        if let Some(path) = path {
            return one(&mut get, format!("{base}{path}")).await;
        }
        let remembered = self.lock().get(base).cloned();
        if let Some(path) = remembered {
            match one(&mut get, format!("{base}{path}")).await {
                Ok(found) => return Ok(found),
                Err(_) => {
                    self.lock().remove(base);
                }
            }
        }
        match one(&mut get, format!("{base}{METRICS_PATH}")).await {
            Err(PlaceError::Json { url }) => {
                for path in OTHER_METRICS_PATHS {
                    match one(&mut get, format!("{base}{path}")).await {
                        Ok(found) => {
                            self.lock().insert(base.to_string(), path.to_string());
                            return Ok(found);
                        }
                        Err(PlaceError::Json { .. }) => {}
                        Err(e) => return Err(e),
                    }
                }
                Err(PlaceError::Json { url })
            }
            other => other,
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, String>> {
        self.found.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// One GET of `url`: its reading, or JSON where Prometheus text was asked for.
async fn one<E, F, Fut>(get: &mut F, url: String) -> Result<(String, Reading), PlaceError<E>>
where
    E: std::error::Error + 'static,
    F: FnMut(&str) -> Fut,
    Fut: Future<Output = Result<Reading, E>>,
{
    let r = get(&url).await?;
    if is_json_answer(&r.text) {
        return Err(PlaceError::Json { url });
    }
    Ok((url, r))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn version_answers() {
        assert_eq!(
            version_in_answer(r#"{"version": "0.30.0"}"#).as_deref(),
            Some("0.30.0")
        );
        assert_eq!(version_in_answer(r#"{"version": 3}"#), None);
        assert_eq!(version_in_answer("not json"), None);
    }

    #[derive(Debug, thiserror::Error)]
    #[error("no page at {0}")]
    struct NoPage(String);

    fn pages<'a>(
        calls: &'a mut Vec<String>,
        pages: &'a [(&str, &str)],
    ) -> impl FnMut(&str) -> Result<Reading, NoPage> + 'a {
        move |url: &str| {
            calls.push(url.to_string());
            let text = pages
                .iter()
                .find(|(u, _)| *u == url)
                .map(|(_, t)| t.to_string());
            text.map(|text| Reading {
                text,
                before: ClockReading::at(1.0),
                after: ClockReading::at(1.5),
            })
            .ok_or_else(|| NoPage(url.to_string()))
        }
    }

    #[test]
    fn a_json_metrics_page_sends_to_the_other_place_and_it_is_remembered() {
        let places = MetricsPlaces::new();
        let trt = [
            ("http://y:1/metrics", r#"{"iter": 1}"#),
            ("http://y:1/prometheus/metrics", "trtllm_x 1\n"),
        ];
        let mut calls = Vec::new();
        let (url, _) = places
            .read("http://y:1", None, pages(&mut calls, &trt))
            .unwrap();
        assert_eq!(url, "http://y:1/prometheus/metrics");
        places
            .read("http://y:1/", None, pages(&mut calls, &trt))
            .unwrap();
        assert_eq!(
            calls,
            [
                "http://y:1/metrics",
                "http://y:1/prometheus/metrics",
                "http://y:1/prometheus/metrics"
            ]
        );
        // Another server now answers there: the remembered place fails and is forgotten.
        let vllm = [("http://y:1/metrics", "vllm:x 2\n")];
        let mut calls = Vec::new();
        let (url, _) = places
            .read("http://y:1", None, pages(&mut calls, &vllm))
            .unwrap();
        assert_eq!(url, "http://y:1/metrics");
        assert_eq!(
            calls,
            ["http://y:1/prometheus/metrics", "http://y:1/metrics"]
        );
        // Only JSON anywhere is an error naming /metrics; a transport's error is its own.
        let json = [
            ("http://j:1/metrics", "[]"),
            ("http://j:1/prometheus/metrics", "{}"),
        ];
        let mut calls = Vec::new();
        let e = places
            .read("http://j:1", None, pages(&mut calls, &json))
            .unwrap_err();
        assert!(
            matches!(e, PlaceError::Json { ref url } if url == "http://j:1/metrics"),
            "{e}"
        );
        let mut calls = Vec::new();
        let e = places
            .read("http://n:1", Some("/m"), pages(&mut calls, &[]))
            .unwrap_err();
        assert_eq!(e.to_string(), "no page at http://n:1/m");
    }
}
