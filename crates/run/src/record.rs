//! The recorder: samples a live server's metrics at a fixed rate into a series file.
//!
//! Sample k is taken at start + k·interval on the monotonic clock, so a slow scrape delays one
//! sample but never shifts the ones after it (samples whose time passed during a slow scrape are
//! skipped, not bunched up).

use std::future::Future;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;

use inferlint_core::engine::Engine;
use inferlint_core::series::{SeriesSample, SeriesWriter};
use inferlint_core::snapshot::{Snapshot, SCRAPE_TIMEOUT};
use inferlint_http::scrape::{ScrapeError, Scraper};

/// How to record.
#[derive(Clone)]
pub struct RecordOptions {
    /// The time between samples (`watch` default 0.5 s, `xray` 0.25 s).
    pub interval: Duration,
    /// Stop after this long (None: only the stop signal ends the recording).
    pub duration: Option<Duration>,
    /// The metrics path; None finds it (TensorRT-LLM serves `/prometheus/metrics`).
    pub metrics_path: Option<String>,
    /// The timeout of each scrape.
    pub timeout: Duration,
    /// The engine named by the user, or known from elsewhere: used when the metric names say
    /// none, and checked against them with `require_engine_metrics`.
    pub engine: Option<Engine>,
    /// Refuse (before writing anything) when the first successful scrape shows no metrics of a
    /// known engine, or shows another engine than `engine`.
    pub require_engine_metrics: bool,
    /// The scraper to use (tests give one with fake clocks); None uses a new one.
    pub scraper: Option<Arc<Scraper>>,
}

impl Default for RecordOptions {
    fn default() -> Self {
        RecordOptions {
            interval: Duration::from_millis(500),
            duration: None,
            metrics_path: None,
            timeout: SCRAPE_TIMEOUT,
            engine: None,
            require_engine_metrics: false,
            scraper: None,
        }
    }
}

/// What a finished recording holds.
#[derive(Clone, Debug, PartialEq)]
pub struct RecordSummary {
    pub path: PathBuf,
    pub samples: usize,
    pub failed_scrapes: usize,
    /// The engine the header names.
    pub engine: Option<Engine>,
}

/// Why a recording could not be made.
#[derive(Debug, thiserror::Error)]
pub enum RecordError {
    #[error("{path}: {source}")]
    Io {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error("{url} serves no metrics of vLLM, SGLang or TensorRT-LLM")]
    NoEngineMetrics { url: String },
    #[error("{url} serves {actual}'s metrics, not {named}'s")]
    WrongEngine {
        url: String,
        named: Engine,
        actual: Engine,
    },
}

/// One thing that happened during a recording, for a caller that shows progress.
#[derive(Debug)]
pub enum RecordEvent<'a> {
    /// A reading: its row of the series, and the scrape it was made of.
    Sample(&'a SeriesSample, &'a Snapshot),
    ScrapeFailed(&'a ScrapeError),
}

/// Records `base_url` into `out` until `stop` completes or the duration has passed, and returns
/// what was written. Each failed scrape leaves a gap (no line) and is passed to `on_error`.
pub async fn record(
    base_url: &str,
    out: &Path,
    opts: RecordOptions,
    stop: impl Future<Output = ()>,
    mut on_error: impl FnMut(&ScrapeError),
) -> Result<RecordSummary, RecordError> {
    record_observed(base_url, out, opts, stop, |ev| {
        if let RecordEvent::ScrapeFailed(e) = ev {
            on_error(e);
        }
    })
    .await
}

/// As [`record`], reporting every sample as well as every failed scrape.
pub async fn record_observed(
    base_url: &str,
    out: &Path,
    opts: RecordOptions,
    stop: impl Future<Output = ()>,
    mut on_event: impl FnMut(RecordEvent<'_>),
) -> Result<RecordSummary, RecordError> {
    let scraper = opts
        .scraper
        .clone()
        .unwrap_or_else(|| Arc::new(Scraper::new()));
    let interval = opts.interval.max(Duration::from_millis(1));
    let io = |source| RecordError::Io {
        path: out.display().to_string(),
        source,
    };
    let base = base_url.trim_end_matches('/');
    let mut writer: Option<SeriesWriter> = None;
    let mut failed = 0;
    let start = Instant::now();
    let mut k: u32 = 0;
    tokio::pin!(stop);
    loop {
        let offset = interval * k;
        if opts.duration.is_some_and(|d| offset >= d) {
            break;
        }
        tokio::select! {
            _ = &mut stop => break,
            _ = tokio::time::sleep_until(start + offset) => {}
        }
        let scrape = scraper.scrape(base, opts.metrics_path.as_deref(), opts.timeout);
        let result = tokio::select! {
            _ = &mut stop => break,
            r = scrape => r,
        };
        match result {
            Ok(snap) => {
                let w = match &mut writer {
                    Some(w) => w,
                    None => {
                        let engine = first_engine(&snap, &opts, base)?;
                        let mut w =
                            SeriesWriter::create(out, base, interval.as_secs_f64()).map_err(io)?;
                        w.write_header(engine).map_err(io)?;
                        writer.insert(w)
                    }
                };
                let engine = w.engine().unwrap_or(Engine::Vllm);
                let sample =
                    SeriesSample::from_metrics(&snap.metrics, engine, snap.t_wall, snap.t_mono_ns);
                w.write_sample(&sample).map_err(io)?;
                on_event(RecordEvent::Sample(&sample, &snap));
            }
            Err(ScrapeError::Status { url, status: 404 })
                if writer.is_none() && opts.require_engine_metrics =>
            {
                // Nothing served at the metrics path: SGLang without --enable-metrics.
                return Err(RecordError::NoEngineMetrics { url });
            }
            Err(e) => {
                failed += 1;
                on_event(RecordEvent::ScrapeFailed(&e));
            }
        }
        // The next sample whose time has not passed yet.
        let elapsed = start.elapsed();
        k += 1;
        while interval * k < elapsed {
            k += 1;
        }
    }
    let (samples, engine) = match writer {
        Some(w) => {
            let engine = w.engine();
            (w.finish().map_err(io)?, engine)
        }
        None => {
            let w = SeriesWriter::create(out, base, interval.as_secs_f64()).map_err(io)?;
            (w.finish().map_err(io)?, None)
        }
    };
    Ok(RecordSummary {
        path: out.to_path_buf(),
        samples,
        failed_scrapes: failed,
        engine,
    })
}

/// The engine of the recording, decided once from the first successful scrape.
fn first_engine(
    snap: &Snapshot,
    opts: &RecordOptions,
    base: &str,
) -> Result<Option<Engine>, RecordError> {
    let detected = snap.metrics.engine();
    if opts.require_engine_metrics {
        let Some(actual) = detected else {
            return Err(RecordError::NoEngineMetrics {
                url: snap.url.clone(),
            });
        };
        if let Some(named) = opts.engine.filter(|&n| n != actual) {
            return Err(RecordError::WrongEngine {
                url: base.to_string(),
                named,
                actual,
            });
        }
    }
    Ok(detected.or(opts.engine))
}
