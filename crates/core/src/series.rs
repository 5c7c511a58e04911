//! Series: a recording of a server's gauges and counters over time (schema `inferlint.series/1`,
//! docs/design/formats.md#series), its reader and its writer (the recorder that samples a live
//! server is in inferlint-run).
//!
//! The reader is forgiving where a recording is merely damaged (a killed recorder leaves a
//! truncated last line; blank, garbage and malformed rows are skipped and counted) and strict
//! where the file is not a recording at all (no header: an error naming the file).

use std::path::Path;

use crate::engine::Engine;
use crate::prom::Metrics;
pub use crate::snapshot::ReadError;

mod read;
mod write;
pub use write::{python_json, SeriesWriter};

/// The schema name in a series header.
pub const SERIES_SCHEMA: &str = "inferlint.series/1";

/// The header line of a recording.
#[derive(Clone, Debug, PartialEq)]
pub struct SeriesHeader {
    /// The server's base URL.
    pub url: String,
    pub interval_s: f64,
    /// The engine the header names. Recordings made before SGLang and TensorRT-LLM support have no
    /// `engine` key: this is then None and the recording is read as vLLM's
    /// (docs/design/formats.md#series), which the callers decide, because a named engine or another
    /// input may still say otherwise.
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
    /// The engine's finished-request counter (every reason), summed over label sets: what T15
    /// compares with the client's count, so that a window bounded by two rows (a point of a
    /// load tool's own sweep) can be judged. None for llama.cpp, which counts none, and in
    /// recordings made before the field existed (docs/design/formats.md#series).
    pub finished_requests: Option<f64>,
    /// The gauges of each engine of a data-parallel server (vLLM's `engine` label), in engine
    /// order; None for a server with one engine. Boxed so that a one-engine row, which every
    /// long recording so far is, pays one pointer for it (docs/benchmarks.md, `series_check`).
    #[allow(clippy::box_collection)]
    pub engines: Option<Box<Vec<EngineGauges>>>,
}

/// One engine's gauges in one row of a data-parallel server's recording.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct EngineGauges {
    /// The `engine` label's value (`"0"`, `"1"`, …).
    pub engine: String,
    pub running: Option<f64>,
    pub waiting: Option<f64>,
    pub kv_usage: Option<f64>,
}

/// The label vLLM puts on every per-engine series (docs/tripwires.md, "Data-parallel servers").
pub const ENGINE_LABEL: &str = "engine";

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
        let mut s = SeriesSample {
            t_wall,
            t_mono_ns,
            running: metrics.total(names.running),
            waiting: metrics.total(names.waiting),
            kv_usage: names
                .kv_usage
                .and_then(|k| metrics.single(k).ok().flatten()),
            preemptions,
            generation_tokens: metrics.total(names.generation_tokens),
            prompt_tokens: metrics.total(names.prompt_tokens),
            paused: names.paused.and_then(|p| metrics.total(p)),
            finished_requests: names.finished.and_then(|f| metrics.total(f)),
            engines: None,
        };
        let ids = engine_labels(metrics, engine);
        if ids.len() > 1 {
            let per: Vec<EngineGauges> = ids
                .into_iter()
                .map(|id| {
                    let only = [(ENGINE_LABEL, id.as_str())];
                    EngineGauges {
                        running: metrics.total_where(names.running, &only),
                        waiting: metrics.total_where(names.waiting, &only),
                        kv_usage: names.kv_usage.and_then(|k| single_where(metrics, k, &only)),
                        engine: id,
                    }
                })
                .collect();
            s.set_engines(per);
        }
        s
    }

    /// Sets the per-engine gauges and the aggregate ones they imply: running and waiting are
    /// the sums over the engines, known only when every engine reports its gauge (an engine
    /// whose gauge is absent is not an engine running nothing); `kv_usage` stays what it has
    /// always been, the single usage series, so it is None: several pools have no one reading.
    pub fn set_engines(&mut self, per: Vec<EngineGauges>) {
        let sum = |f: fn(&EngineGauges) -> Option<f64>| -> Option<f64> {
            per.iter().map(f).sum::<Option<f64>>()
        };
        self.running = sum(|e| e.running);
        self.waiting = sum(|e| e.waiting);
        self.kv_usage = None;
        self.engines = Some(Box::new(per));
    }

    /// The per-engine gauges (empty for a one-engine server).
    pub fn per_engine(&self) -> &[EngineGauges] {
        self.engines.as_deref().map_or(&[], Vec::as_slice)
    }

    /// This row as engine `id` alone saw it: its own gauges, the server's counters; None when
    /// the row has no entry for that engine.
    pub fn for_engine(&self, id: &str) -> Option<SeriesSample> {
        let e = self.per_engine().iter().find(|e| e.engine == id)?;
        Some(SeriesSample {
            running: e.running,
            waiting: e.waiting,
            kv_usage: e.kv_usage,
            engines: None,
            ..self.clone_without_engines()
        })
    }

    fn clone_without_engines(&self) -> SeriesSample {
        SeriesSample {
            t_wall: self.t_wall,
            t_mono_ns: self.t_mono_ns,
            running: self.running,
            waiting: self.waiting,
            kv_usage: self.kv_usage,
            preemptions: self.preemptions,
            generation_tokens: self.generation_tokens,
            prompt_tokens: self.prompt_tokens,
            paused: self.paused,
            finished_requests: self.finished_requests,
            engines: None,
        }
    }

    /// Whether the server was working: running > 0 and the usage gauge > 0.
    pub fn is_busy(&self) -> bool {
        self.running.is_some_and(|r| r > 0.0) && self.kv_usage.is_some_and(|u| u > 0.0)
    }
}

/// The values of the `engine` label on the engine's own series (its gauges and counters), in
/// engine order (numeric where they are numbers). A one-engine vLLM labels everything
/// `engine="0"`; a data-parallel one has one value per engine, on counters even while its
/// gauges have no sample yet (docs/tripwires.md, "Data-parallel servers").
pub fn engine_labels(metrics: &Metrics, engine: Engine) -> Vec<String> {
    let names = engine.metrics();
    let mut ids: Vec<String> = Vec::new();
    let watched = [
        Some(names.running),
        Some(names.waiting),
        names.kv_usage,
        names.preemptions,
        Some(names.generation_tokens),
        Some(names.prompt_tokens),
    ];
    for name in watched.into_iter().flatten() {
        for s in metrics.series(name, &[]) {
            if let Some(id) = s.label(ENGINE_LABEL) {
                if !ids.iter().any(|i| i == id) {
                    ids.push(id.to_string());
                }
            }
        }
    }
    sort_engine_ids(&mut ids);
    ids
}

/// Engine order: numbers by value ("2" before "10"), then any other names as text.
pub fn sort_engine_ids(ids: &mut [String]) {
    ids.sort_by(|a, b| engine_order(a, b));
}

/// The order of two `engine` label values (see [`sort_engine_ids`]).
pub fn engine_order(a: &str, b: &str) -> std::cmp::Ordering {
    match (a.parse::<u64>(), b.parse::<u64>()) {
        (Ok(x), Ok(y)) => x.cmp(&y),
        (Ok(_), Err(_)) => std::cmp::Ordering::Less,
        (Err(_), Ok(_)) => std::cmp::Ordering::Greater,
        (Err(_), Err(_)) => a.cmp(b),
    }
}

/// The value of the one series of `name` carrying `labels`; None when absent or not single.
fn single_where(metrics: &Metrics, name: &str, labels: &[(&str, &str)]) -> Option<f64> {
    match metrics.series(name, labels).as_slice() {
        [one] => Some(one.value),
        _ => None,
    }
}

/// A recording read from a file (or built from samples).
#[derive(Clone, Debug)]
pub struct Series {
    pub header: SeriesHeader,
    /// The rows, in recording order. Other rows make a new series ([`Series::with_samples`]):
    /// the engine ids are found once ([`Series::engine_ids`]).
    pub samples: Vec<SeriesSample>,
    /// Rows that could not be read (garbage, truncated, malformed) and were skipped.
    pub skipped_lines: usize,
    /// The file path, for messages.
    pub source: String,
    /// The engines the samples had when the series was read or built (see
    /// [`Series::engine_ids`]).
    engines: EnginesFound,
}

/// The engine ids of a series' samples, found once: T8, T9, T14, T25 and the report's charts
/// each ask, and each pass over a day's 345,600 samples costs milliseconds (docs/benchmarks.md).
/// They are kept with the samples' address and length at that time, so a vector replaced,
/// filtered or grown since is searched again; rows rewritten in place (a row's engines edited,
/// or the vector emptied and refilled to the same length) would go unseen, which no caller does:
/// other samples make a new series ([`Series::from_samples`], [`Series::with_samples`]).
#[derive(Clone, Debug, Default)]
struct EnginesFound {
    of: (usize, usize),
    ids: Vec<String>,
}

impl EnginesFound {
    fn of(samples: &[SeriesSample], ids: Vec<String>) -> EnginesFound {
        EnginesFound {
            of: (samples.as_ptr() as usize, samples.len()),
            ids,
        }
    }

    fn search(samples: &[SeriesSample]) -> Vec<String> {
        let mut ids: Vec<String> = Vec::new();
        for s in samples {
            add_engine_ids(&mut ids, s.per_engine().iter().map(|e| e.engine.as_str()));
        }
        sort_engine_ids(&mut ids);
        ids
    }
}

/// Adds to `ids` those of `more` it does not hold yet, in the order first seen.
fn add_engine_ids<'a>(ids: &mut Vec<String>, more: impl IntoIterator<Item = &'a str>) {
    for id in more {
        if !ids.iter().any(|known| known == id) {
            ids.push(id.to_string());
        }
    }
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
        let ids = EnginesFound::search(&samples);
        Series::read(header, samples, ids, 0, "(samples)".to_string())
    }

    /// A series whose samples' engine ids are already known (`ids`, in engine order).
    pub(crate) fn read(
        header: SeriesHeader,
        samples: Vec<SeriesSample>,
        ids: Vec<String>,
        skipped_lines: usize,
        source: String,
    ) -> Series {
        Series {
            header,
            engines: EnginesFound::of(&samples, ids),
            samples,
            skipped_lines,
            source,
        }
    }

    /// This recording with other samples (a window of it, say), the rest as it is.
    pub fn with_samples(&self, samples: Vec<SeriesSample>) -> Series {
        Series {
            source: self.source.clone(),
            skipped_lines: self.skipped_lines,
            ..Series::from_samples(self.header.clone(), samples)
        }
    }

    /// The engine the header names; None for older recordings, which are read as vLLM's.
    pub fn engine(&self) -> Option<Engine> {
        self.header.engine
    }

    /// The engines of a data-parallel recording (every engine a row has gauges for), in engine
    /// order; empty for a one-engine server's recording.
    pub fn engine_ids(&self) -> Vec<String> {
        if self.engines.of == (self.samples.as_ptr() as usize, self.samples.len()) {
            // Rows rewritten in place would go unseen here: every test build checks that none
            // were, so a caller that starts doing so fails its tests rather than its verdicts.
            debug_assert_eq!(
                self.engines.ids,
                EnginesFound::search(&self.samples),
                "the samples of {} were changed in place; other rows make a new series",
                self.source
            );
            return self.engines.ids.clone();
        }
        EnginesFound::search(&self.samples)
    }

    /// The recording as engine `id` alone saw it: one row for each row that has the engine,
    /// with its own running, waiting and usage (the counters stay the server's).
    pub fn for_engine(&self, id: &str) -> Series {
        let samples = self
            .samples
            .iter()
            .filter_map(|s| s.for_engine(id))
            .collect();
        // One engine's rows carry no per-engine gauges of their own.
        Series::read(
            self.header.clone(),
            samples,
            Vec::new(),
            self.skipped_lines,
            format!("{} (engine {id})", self.source),
        )
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
        // Inserted one by one: collecting into the set would first gather every reading (a
        // day's 345,600) into a vector and sort it, where a recording has a few hundred values.
        // A reading repeated from the row before is not looked up again.
        let mut bits = std::collections::BTreeSet::new();
        let mut last = None;
        for u in self.samples.iter().filter_map(|s| s.kv_usage) {
            if u != 0.0 && !u.is_nan() {
                let b = (u + 0.0).to_bits();
                if last != Some(b) {
                    bits.insert(b);
                    last = Some(b);
                }
            }
        }
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
    fn engine_ids_are_found_again_for_samples_changed_since() {
        let text = "{\"schema\": \"inferlint.series/1\", \"interval_s\": 0.25}\n\
            {\"t_wall\": 1.0, \"running\": 1.0}\n\
            {\"t_wall\": 2.0, \"engines\": {\"10\": {\"running\": 1.0}, \"2\": {\"running\": 0.0}}}\n\
            {\"t_wall\": 3.0, \"engines\": {\"0\": {\"running\": 1.0}}}\n";
        let mut s = Series::from_text(text, "t").unwrap();
        assert_eq!(s.engine_ids(), ["0", "2", "10"]);
        s.samples.truncate(2);
        assert_eq!(s.engine_ids(), ["2", "10"]);
        let window = s.with_samples(s.samples[..1].to_vec());
        assert!(window.engine_ids().is_empty());
        assert_eq!(window.source, "t");
        assert!(s.for_engine("2").engine_ids().is_empty());
    }

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
