//! Series: a recording of a server's gauges and counters over time (schema `inferlint.series/1`,
//! spec §6.2), its reader, its writer, and the recorder that samples a live server.
//!
//! The reader is forgiving where a recording is merely damaged (a killed recorder leaves a
//! truncated last line; blank, garbage and malformed rows are skipped and counted) and strict
//! where the file is not a recording at all (no header: an error naming the file).

use std::path::Path;

use crate::engine::Engine;
use crate::prom::Metrics;
pub use crate::snapshot::ReadError;

mod read;
mod record;
mod write;
pub use record::{record, record_observed, RecordError, RecordEvent, RecordOptions, RecordSummary};
pub use write::{python_json, SeriesWriter};

/// The schema name in a series header.
pub const SERIES_SCHEMA: &str = "inferlint.series/1";

/// The header line of a recording.
#[derive(Clone, Debug, PartialEq)]
pub struct SeriesHeader {
    /// The server's base URL.
    pub url: String,
    pub interval_s: f64,
    /// The engine the header names. Recordings made before SGLang and TensorRT-LLM support have
    /// no `engine` key: this is then None and the recording is read as vLLM's (spec §6.2), which
    /// the callers decide, because a named engine or another input may still say otherwise.
    pub engine: Option<Engine>,
}

/// One row of a recording. Every field is None when the series was absent from that scrape.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SeriesSample {
    pub t_wall: f64,
    pub t_mono_ns: Option<i64>,
    pub running: Option<f64>,
    pub waiting: Option<f64>,
    pub kv_usage: Option<f64>,
    /// The eviction counter (vLLM preemptions, SGLang retractions); None for TensorRT-LLM.
    pub preemptions: Option<f64>,
    pub generation_tokens: Option<f64>,
    pub prompt_tokens: Option<f64>,
    /// TensorRT-LLM's paused-requests gauge.
    pub paused: Option<f64>,
}

impl SeriesSample {
    /// The row for one scrape of an `engine` server: counters summed over label sets, the usage
    /// gauge as its single series, absent series as None. SGLang's retraction counter only
    /// appears after the first retraction: while its witness gauge is present it counts as 0.
    pub fn from_metrics(
        metrics: &Metrics,
        engine: Engine,
        t_wall: f64,
        t_mono_ns: Option<i64>,
    ) -> SeriesSample {
        let names = engine.metrics();
        let preemptions = names.preemptions.and_then(|counter| {
            metrics.total(counter).or_else(|| {
                names
                    .preemption_witness
                    .filter(|w| metrics.has(w))
                    .map(|_| 0.0)
            })
        });
        SeriesSample {
            t_wall,
            t_mono_ns,
            running: metrics.total(names.running),
            waiting: metrics.total(names.waiting),
            kv_usage: metrics.single(names.kv_usage).ok().flatten(),
            preemptions,
            generation_tokens: metrics.total(names.generation_tokens),
            prompt_tokens: metrics.total(names.prompt_tokens),
            paused: names.paused.and_then(|p| metrics.total(p)),
        }
    }

    /// Whether the server was working: running > 0 and the usage gauge > 0.
    pub fn is_busy(&self) -> bool {
        self.running.is_some_and(|r| r > 0.0) && self.kv_usage.is_some_and(|u| u > 0.0)
    }
}

/// A recording read from a file (or built from samples).
#[derive(Clone, Debug)]
pub struct Series {
    pub header: SeriesHeader,
    pub samples: Vec<SeriesSample>,
    /// Rows that could not be read (garbage, truncated, malformed) and were skipped.
    pub skipped_lines: usize,
    /// The file path, for messages.
    pub source: String,
}

impl Series {
    /// Reads a recording, line by line (a day at 0.25 s is 65 MB of text; only the samples are
    /// kept). Damaged rows are skipped and counted; a file with no header row is an error naming
    /// the file.
    pub fn load(path: &Path) -> Result<Series, ReadError> {
        read::load(path)
    }

    /// Reads a recording from its text; `source` names it in messages.
    pub fn from_text(text: &str, source: &str) -> Result<Series, ReadError> {
        let mut reader = read::Reader::new(source);
        for line in text.split('\n') {
            reader.feed(line.as_bytes())?;
        }
        reader.finish()
    }

    /// A series from samples (synthetic data for tests).
    pub fn from_samples(header: SeriesHeader, samples: Vec<SeriesSample>) -> Series {
        Series {
            header,
            samples,
            skipped_lines: 0,
            source: "(samples)".to_string(),
        }
    }

    /// The engine the header names; None for older recordings, which are read as vLLM's.
    pub fn engine(&self) -> Option<Engine> {
        self.header.engine
    }

    /// The samples where the server was working (running > 0 and usage > 0).
    pub fn busy(&self) -> impl Iterator<Item = &SeriesSample> {
        self.samples.iter().filter(|s| s.is_busy())
    }

    /// The largest non-null running value.
    pub fn peak_running(&self) -> Option<f64> {
        self.samples
            .iter()
            .filter_map(|s| s.running)
            .filter(|r| !r.is_nan())
            .fold(None, |m: Option<f64>, r| Some(m.map_or(r, |m| m.max(r))))
    }

    /// The distinct non-null, non-zero usage readings, ascending (what block inference needs,
    /// without a copy of every reading of a long recording).
    pub fn distinct_usage_readings(&self) -> Vec<f64> {
        let bits: std::collections::BTreeSet<u64> = self
            .samples
            .iter()
            .filter_map(|s| s.kv_usage)
            .filter(|&u| u != 0.0 && !u.is_nan())
            .map(|u| (u + 0.0).to_bits())
            .collect();
        let mut values: Vec<f64> = bits.into_iter().map(f64::from_bits).collect();
        values.sort_by(f64::total_cmp);
        values
    }

    /// The non-null, non-zero usage readings, in recording order.
    pub fn usage_readings(&self) -> Vec<f64> {
        self.samples
            .iter()
            .filter_map(|s| s.kv_usage)
            .filter(|&u| u != 0.0 && !u.is_nan())
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sglang_witness_gauge_means_zero_retractions() {
        let with_witness =
            Metrics::parse("sglang:num_running_reqs 1\nsglang:num_retracted_reqs 0\n").unwrap();
        let s = SeriesSample::from_metrics(&with_witness, Engine::Sglang, 1.0, None);
        assert_eq!(s.preemptions, Some(0.0));
        let without = Metrics::parse("sglang:num_running_reqs 1\n").unwrap();
        let s = SeriesSample::from_metrics(&without, Engine::Sglang, 1.0, None);
        assert_eq!(s.preemptions, None);
        let counted =
            Metrics::parse("sglang:num_retracted_reqs 0\nsglang:num_retracted_requests_total 3\n")
                .unwrap();
        let s = SeriesSample::from_metrics(&counted, Engine::Sglang, 1.0, None);
        assert_eq!(s.preemptions, Some(3.0));
    }
}
