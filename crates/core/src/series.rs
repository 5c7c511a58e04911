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

mod found;
mod read;
mod sample;
mod write;
pub use found::{BusyReadings, Peaks};
use found::{Found, RowFacts};
pub use sample::{EngineGauges, Readings, SeriesSample};
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

/// The label vLLM puts on every per-engine series (docs/tripwires.md, "Data-parallel servers").
pub const ENGINE_LABEL: &str = "engine";

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
    found: Found,
}

/// A recording's bytes that the caller holds in memory, a mapped file say, for
/// [`Series::read_held`]: read where they lie rather than copied into buffers first.
pub trait Held: Sync {
    /// The recording's bytes.
    fn bytes(&self) -> &[u8];

    /// Told as the reading passes: no byte before `offset` is read again, so whatever holds
    /// them may be let go of (a mapped file's pages, say).
    fn read_before(&self, offset: usize) {
        let _ = offset;
    }
}

impl Held for [u8] {
    fn bytes(&self) -> &[u8] {
        self
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

    /// Reads a recording whose bytes the caller holds in memory (a mapped file), as
    /// [`Series::load`] reads a file; `source` names it in messages.
    pub fn read_held<H: Held + ?Sized>(held: &H, source: &str) -> Result<Series, ReadError> {
        read::read_held(held, source)
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
        let ids = Found::search(&samples);
        Series::read(header, samples, ids, None, 0, "(samples)".to_string())
    }

    /// A series whose samples' engine ids are already known (`ids`, in engine order), and what
    /// the checks ask of every row where a reader gathered it (`rows`).
    fn read(
        header: SeriesHeader,
        samples: Vec<SeriesSample>,
        ids: Vec<String>,
        rows: Option<RowFacts>,
        skipped_lines: usize,
        source: String,
    ) -> Series {
        Series {
            header,
            found: Found::of(&samples, ids, rows),
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
        if self.found.is_of(&self.samples) {
            // Rows rewritten in place would go unseen here: every test build checks that none
            // were, so a caller that starts doing so fails its tests rather than its verdicts.
            debug_assert_eq!(
                self.found.ids,
                Found::search(&self.samples),
                "the samples of {} were changed in place; other rows make a new series",
                self.source
            );
            return self.found.ids.clone();
        }
        Found::search(&self.samples)
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
            None,
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
        self.peaks().running
    }

    /// The most requests the rows saw running, and running or waiting (NaN readings left out).
    pub fn peaks(&self) -> Peaks {
        self.row_facts(|f| f.peaks)
    }

    /// The distinct non-null, non-zero usage readings, ascending (what block inference needs,
    /// without a copy of every reading of a long recording).
    pub fn distinct_usage_readings(&self) -> Vec<f64> {
        self.row_facts(|f| f.usage.clone())
    }

    /// The readings of the busy rows ([`Series::busy`]), each distinct pair once with its count
    /// of rows, in the order of the first row of each.
    pub fn busy_readings(&self) -> Vec<BusyReadings> {
        self.row_facts(|f| f.busy.clone())
    }

    /// `answer` of what the reader gathered, or of a pass over the rows (kept for the next
    /// question, unless the rows changed since the series was made).
    fn row_facts<T>(&self, answer: impl Fn(&RowFacts) -> T) -> T {
        if !self.found.is_of(&self.samples) {
            return answer(&RowFacts::of(&self.samples));
        }
        let facts = self.found.rows.get_or_init(|| RowFacts::of(&self.samples));
        // As for the engine ids: every test build checks that the rows were not rewritten in
        // place since.
        debug_assert_eq!(
            facts,
            &RowFacts::of(&self.samples),
            "the samples of {} were changed in place; other rows make a new series",
            self.source
        );
        answer(facts)
    }

    /// The non-null, non-zero usage readings, in recording order.
    pub fn usage_readings(&self) -> Vec<f64> {
        self.samples
            .iter()
            .filter_map(|s| s.kv_usage())
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
        assert_eq!(s.preemptions(), Some(0.0));
        let without = Metrics::parse("sglang:num_running_reqs 1\n").unwrap();
        let s = SeriesSample::from_metrics(&without, Engine::Sglang, 1.0, None);
        assert_eq!(s.preemptions(), None);
        let counted =
            Metrics::parse("sglang:num_retracted_reqs 0\nsglang:num_retracted_requests_total 3\n")
                .unwrap();
        let s = SeriesSample::from_metrics(&counted, Engine::Sglang, 1.0, None);
        assert_eq!(s.preemptions(), Some(3.0));
    }
}
