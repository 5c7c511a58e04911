//! Series: a recording of a server's gauges and counters over time (schema `inferlint.series/1`,
//! spec §6.2), its reader, its writer, and the recorder that samples a live server.
//!
//! The reader is forgiving where a recording is merely damaged (a killed recorder leaves a
//! truncated last line; blank, garbage and malformed rows are skipped and counted) and strict
//! where the file is not a recording at all (no header: an error naming the file).

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::Path;

use serde_json::{Map, Value};

use crate::engine::Engine;
use crate::prom::Metrics;
pub use crate::snapshot::ReadError;
use crate::snapshot::{read_text, repr};

mod record;
pub use record::{record, record_observed, RecordError, RecordEvent, RecordOptions, RecordSummary};

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
    /// Reads a recording. Damaged rows are skipped and counted; a file with no header row is an
    /// error naming the file.
    pub fn load(path: &Path) -> Result<Series, ReadError> {
        let text = read_text(path)?;
        Series::from_text(&text, &path.display().to_string())
    }

    /// Reads a recording from its text; `source` names it in messages.
    pub fn from_text(text: &str, source: &str) -> Result<Series, ReadError> {
        let mut header: Option<SeriesHeader> = None;
        let mut samples = Vec::new();
        let mut skipped_lines = 0;
        let mut rows = 0;
        for (i, line) in text.split('\n').enumerate() {
            let line = line.trim();
            if line.is_empty() {
                continue;
            }
            rows += 1;
            let Ok(Value::Object(obj)) = serde_json::from_str::<Value>(line) else {
                skipped_lines += 1;
                continue;
            };
            if let Some(schema) = obj.get("schema") {
                if header.is_none() {
                    header = Some(read_header(&obj, schema, source, i + 1)?);
                }
                continue;
            }
            match read_row(&obj) {
                Some(s) => samples.push(s),
                None => skipped_lines += 1,
            }
        }
        let Some(header) = header else {
            let why = if samples.is_empty() {
                format!("no {SERIES_SCHEMA} header and no readable row in {rows} lines")
            } else {
                format!(
                    "no {SERIES_SCHEMA} header line ({} rows look like samples, but the header that says where they came from is missing)",
                    samples.len()
                )
            };
            return Err(ReadError::format(
                source,
                format!("not an {SERIES_SCHEMA} recording: {why}"),
            ));
        };
        Ok(Series {
            header,
            samples,
            skipped_lines,
            source: source.to_string(),
        })
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

    /// The non-null, non-zero usage readings, in recording order.
    pub fn usage_readings(&self) -> Vec<f64> {
        self.samples
            .iter()
            .filter_map(|s| s.kv_usage)
            .filter(|&u| u != 0.0 && !u.is_nan())
            .collect()
    }
}

fn read_header(
    obj: &Map<String, Value>,
    schema: &Value,
    source: &str,
    line: usize,
) -> Result<SeriesHeader, ReadError> {
    let bad = |what: String| ReadError::format(source, format!("line {line}: {what}"));
    if schema.as_str() != Some(SERIES_SCHEMA) {
        return Err(bad(format!(
            "not an {SERIES_SCHEMA} recording (schema={})",
            repr(Some(schema))
        )));
    }
    let url = match obj.get("url") {
        Some(Value::String(s)) => s.clone(),
        None | Some(Value::Null) => String::new(),
        Some(_) => return Err(bad("the header's \"url\" is not a string".into())),
    };
    let interval_s = match obj.get("interval_s") {
        Some(Value::Number(n)) => n.as_f64().unwrap_or(f64::NAN),
        _ => {
            return Err(bad(
                "the header has no \"interval_s\" (the seconds between samples)".into(),
            ))
        }
    };
    let engine = match obj.get("engine") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => Some(Engine::parse(s).ok_or_else(|| {
            bad(format!(
                "the header names engine '{s}' (known: vllm, sglang, trtllm)"
            ))
        })?),
        Some(_) => return Err(bad("the header's \"engine\" is not a string".into())),
    };
    Ok(SeriesHeader {
        url,
        interval_s,
        engine,
    })
}

/// A sample row, or None when it is malformed (no numeric `t_wall`, or a value of the wrong type).
fn read_row(obj: &Map<String, Value>) -> Option<SeriesSample> {
    let t_wall = obj.get("t_wall")?.as_f64()?;
    let t_mono_ns = match obj.get("t_mono_ns") {
        None | Some(Value::Null) => None,
        Some(Value::Number(n)) => Some(n.as_i64().or_else(|| n.as_f64().map(|f| f as i64))?),
        Some(_) => return None,
    };
    let num = |key: &str| -> Result<Option<f64>, ()> {
        match obj.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::Number(n)) => Ok(n.as_f64()),
            Some(_) => Err(()),
        }
    };
    Some(SeriesSample {
        t_wall,
        t_mono_ns,
        running: num("running").ok()?,
        waiting: num("waiting").ok()?,
        kv_usage: num("kv_usage").ok()?,
        preemptions: num("preemptions").ok()?,
        generation_tokens: num("generation_tokens").ok()?,
        prompt_tokens: num("prompt_tokens").ok()?,
        paused: num("paused").ok()?,
    })
}

/// Python's `round(x, 6)` for the wall clock (to the microsecond).
fn round6(x: f64) -> f64 {
    let r = (x * 1e6).round_ties_even() / 1e6;
    if r.is_finite() {
        r
    } else {
        x
    }
}

fn float(x: Option<f64>) -> Value {
    // NaN and infinities have no JSON form: they are written as null like an absent series.
    x.filter(|v| v.is_finite()).map_or(Value::Null, Value::from)
}

/// One JSON line as Python's `json.dumps` writes it (`", "` and `": "` separators), the form of
/// every recording made so far.
pub fn python_json(v: &Value) -> String {
    struct PySeparators;
    impl serde_json::ser::Formatter for PySeparators {
        fn begin_array_value<W: ?Sized + Write>(
            &mut self,
            w: &mut W,
            first: bool,
        ) -> std::io::Result<()> {
            if first {
                Ok(())
            } else {
                w.write_all(b", ")
            }
        }
        fn begin_object_key<W: ?Sized + Write>(
            &mut self,
            w: &mut W,
            first: bool,
        ) -> std::io::Result<()> {
            if first {
                Ok(())
            } else {
                w.write_all(b", ")
            }
        }
        fn begin_object_value<W: ?Sized + Write>(&mut self, w: &mut W) -> std::io::Result<()> {
            w.write_all(b": ")
        }
    }
    let mut buf = Vec::with_capacity(256);
    let mut ser = serde_json::Serializer::with_formatter(&mut buf, PySeparators);
    serde::Serialize::serialize(v, &mut ser).expect("serializing to memory cannot fail");
    String::from_utf8(buf).expect("serde_json writes UTF-8")
}

/// Writes a recording: the header once (when the engine is known, or at the end), then one
/// flushed line per sample, so a killed recorder loses at most the line being written.
pub struct SeriesWriter<W: Write = BufWriter<File>> {
    out: W,
    url: String,
    interval_s: f64,
    engine: Option<Engine>,
    header_written: bool,
    samples: usize,
}

impl SeriesWriter<BufWriter<File>> {
    /// Creates (or truncates) `path`, creating its parent folders.
    pub fn create(path: &Path, url: &str, interval_s: f64) -> std::io::Result<Self> {
        if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
            std::fs::create_dir_all(parent)?;
        }
        Ok(SeriesWriter::new(
            BufWriter::new(File::create(path)?),
            url,
            interval_s,
        ))
    }
}

impl<W: Write> SeriesWriter<W> {
    pub fn new(out: W, url: &str, interval_s: f64) -> Self {
        SeriesWriter {
            out,
            url: url.to_string(),
            interval_s,
            engine: None,
            header_written: false,
            samples: 0,
        }
    }

    /// Writes the header naming `engine` (once; later calls do nothing).
    pub fn write_header(&mut self, engine: Option<Engine>) -> std::io::Result<()> {
        if self.header_written {
            return Ok(());
        }
        self.engine = engine;
        let mut m = Map::new();
        m.insert("schema".into(), SERIES_SCHEMA.into());
        m.insert("url".into(), self.url.clone().into());
        m.insert("interval_s".into(), Value::from(self.interval_s));
        if let Some(e) = engine {
            m.insert("engine".into(), e.key().into());
        }
        writeln!(self.out, "{}", python_json(&Value::Object(m)))?;
        self.out.flush()?;
        self.header_written = true;
        Ok(())
    }

    /// Writes the row of one successful scrape. The first call decides the engine from the
    /// metric names (`hint` when they name none) and writes the header.
    pub fn write_metrics(
        &mut self,
        metrics: &Metrics,
        hint: Option<Engine>,
        t_wall: f64,
        t_mono_ns: Option<i64>,
    ) -> std::io::Result<()> {
        if !self.header_written {
            self.write_header(metrics.engine().or(hint))?;
        }
        let engine = self.engine.unwrap_or(Engine::Vllm);
        let sample = SeriesSample::from_metrics(metrics, engine, t_wall, t_mono_ns);
        self.write_sample(&sample)
    }

    /// Writes one row and flushes it. TensorRT-LLM rows carry `paused` and no `preemptions`.
    pub fn write_sample(&mut self, s: &SeriesSample) -> std::io::Result<()> {
        if !self.header_written {
            self.write_header(self.engine)?;
        }
        let trt = self.engine == Some(Engine::Trtllm);
        let mut m = Map::new();
        m.insert("t_wall".into(), float(Some(round6(s.t_wall))));
        m.insert(
            "t_mono_ns".into(),
            s.t_mono_ns.map_or(Value::Null, Value::from),
        );
        m.insert("running".into(), float(s.running));
        m.insert("waiting".into(), float(s.waiting));
        m.insert("kv_usage".into(), float(s.kv_usage));
        if !trt {
            m.insert("preemptions".into(), float(s.preemptions));
        }
        m.insert("generation_tokens".into(), float(s.generation_tokens));
        m.insert("prompt_tokens".into(), float(s.prompt_tokens));
        if trt {
            m.insert("paused".into(), float(s.paused));
        }
        writeln!(self.out, "{}", python_json(&Value::Object(m)))?;
        self.out.flush()?;
        self.samples += 1;
        Ok(())
    }

    /// The engine of the header (once written).
    pub fn engine(&self) -> Option<Engine> {
        self.engine
    }

    pub fn samples_written(&self) -> usize {
        self.samples
    }

    /// Writes the header if no scrape ever succeeded (without engine), flushes, and returns the
    /// number of samples written.
    pub fn finish(mut self) -> std::io::Result<usize> {
        if !self.header_written {
            self.write_header(None)?;
        }
        self.out.flush()?;
        Ok(self.samples)
    }

    /// The writer's output (for tests writing to memory).
    pub fn into_inner(self) -> W {
        self.out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text_of(w: SeriesWriter<Vec<u8>>) -> String {
        String::from_utf8(w.into_inner()).unwrap()
    }

    #[test]
    fn writer_rows_follow_the_schema() {
        let m = Metrics::parse(
            "vllm:num_requests_running 10\nvllm:num_requests_waiting 22\n\
             vllm:kv_cache_usage_perc 0.5\nvllm:generation_tokens_total{a=\"1\"} 100\n\
             vllm:generation_tokens_total{a=\"2\"} 45\n",
        )
        .unwrap();
        let mut w = SeriesWriter::new(Vec::new(), "http://h:8000", 0.25);
        w.write_metrics(&m, None, 1790470252.4963471, Some(5)).unwrap();
        let text = text_of(w);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(
            lines[0],
            r#"{"schema": "inferlint.series/1", "url": "http://h:8000", "interval_s": 0.25, "engine": "vllm"}"#
        );
        assert_eq!(
            lines[1],
            r#"{"t_wall": 1790470252.496347, "t_mono_ns": 5, "running": 10.0, "waiting": 22.0, "kv_usage": 0.5, "preemptions": null, "generation_tokens": 145.0, "prompt_tokens": null}"#
        );
    }

    #[test]
    fn sglang_witness_gauge_means_zero_retractions() {
        let with_witness = Metrics::parse("sglang:num_running_reqs 1\nsglang:num_retracted_reqs 0\n").unwrap();
        let s = SeriesSample::from_metrics(&with_witness, Engine::Sglang, 1.0, None);
        assert_eq!(s.preemptions, Some(0.0));
        let without = Metrics::parse("sglang:num_running_reqs 1\n").unwrap();
        let s = SeriesSample::from_metrics(&without, Engine::Sglang, 1.0, None);
        assert_eq!(s.preemptions, None);
        let counted = Metrics::parse(
            "sglang:num_retracted_reqs 0\nsglang:num_retracted_requests_total 3\n",
        )
        .unwrap();
        let s = SeriesSample::from_metrics(&counted, Engine::Sglang, 1.0, None);
        assert_eq!(s.preemptions, Some(3.0));
    }

    #[test]
    fn trt_rows_have_paused_and_no_preemptions() {
        let m = Metrics::parse("trtllm_num_requests_running 3\ntrtllm_num_paused_requests 1\n")
            .unwrap();
        let mut w = SeriesWriter::new(Vec::new(), "u", 0.5);
        w.write_metrics(&m, None, 2.0, Some(1)).unwrap();
        let text = text_of(w);
        let row = text.lines().nth(1).unwrap();
        assert!(!row.contains("preemptions"));
        assert!(row.ends_with(r#""paused": 1.0}"#), "{row}");
        let back = Series::from_text(&text, "t").unwrap();
        assert_eq!(back.engine(), Some(Engine::Trtllm));
        assert_eq!(back.samples[0].paused, Some(1.0));
        assert_eq!(back.samples[0].preemptions, None);
    }

    #[test]
    fn header_is_written_at_the_end_when_no_scrape_succeeded() {
        let w = SeriesWriter::new(Vec::new(), "u", 0.5);
        let text = String::from_utf8({
            let mut w = w;
            w.write_header(None).unwrap();
            w.into_inner()
        })
        .unwrap();
        assert_eq!(text, "{\"schema\": \"inferlint.series/1\", \"url\": \"u\", \"interval_s\": 0.5}\n");
        let s = Series::from_text(&text, "t").unwrap();
        assert!(s.samples.is_empty());
        assert_eq!(s.engine(), None);
    }

    #[test]
    fn damaged_rows_are_counted_not_fatal() {
        let text = "{\"schema\": \"inferlint.series/1\", \"url\": \"u\", \"interval_s\": 0.25}\n\
            {\"t_wall\": 1.0, \"running\": 2.0, \"kv_usage\": 0.5}\n\
            garbage\n\
            [1, 2]\n\
            {\"t_wall\": \"x\"}\n\
            {\"t_wall\": 2.0, \"running\": true}\n\
            \n\
            {\"t_wall\": 3.0, \"running\": 4.0, \"kv_usage\": 0.0}\n\
            {\"t_wall\": 4.0, \"runn";
        let s = Series::from_text(text, "t").unwrap();
        assert_eq!(s.samples.len(), 2);
        assert_eq!(s.skipped_lines, 5);
        assert_eq!(s.peak_running(), Some(4.0));
        assert_eq!(s.busy().count(), 1);
        assert_eq!(s.usage_readings(), vec![0.5]);
    }

    #[test]
    fn headerless_text_is_an_error_naming_the_file() {
        let e = Series::from_text("{\"t_wall\": 1.0}\n", "x.series.jsonl").unwrap_err();
        assert!(e.to_string().starts_with("x.series.jsonl: not an inferlint.series/1 recording"));
        let e = Series::from_text("{\"schema\": \"inferlint.snapshot/1\"}\n", "y.json").unwrap_err();
        assert!(e.to_string().contains("schema='inferlint.snapshot/1'"), "{e}");
    }
}
