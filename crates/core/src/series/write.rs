//! Writing a recording: the header once, then one flushed JSON line per sample, in the form
//! Python's `json.dumps` gives (every recording made so far has it).

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::Path;

use serde_json::{Map, Value};

use super::{EngineGauges, SeriesSample, SERIES_SCHEMA};
use crate::engine::Engine;
use crate::prom::Metrics;

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
#[allow(
    clippy::expect_used,
    reason = "a JSON value serializes to memory without error, and serde_json writes UTF-8"
)]
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

/// The per-engine gauges of a data-parallel row: `{"0": {"running": …, "waiting": …,
/// "kv_usage": …}, …}`, keyed by the `engine` label in engine order (docs/tripwires.md).
fn engines_json(per: &[EngineGauges]) -> Value {
    let mut out = Map::new();
    for e in per {
        let mut g = Map::new();
        g.insert("running".into(), float(e.running));
        g.insert("waiting".into(), float(e.waiting));
        g.insert("kv_usage".into(), float(e.kv_usage));
        out.insert(e.engine.clone(), Value::Object(g));
    }
    Value::Object(out)
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
            s.t_mono_ns().map_or(Value::Null, Value::from),
        );
        m.insert("running".into(), float(s.running()));
        m.insert("waiting".into(), float(s.waiting()));
        m.insert("kv_usage".into(), float(s.kv_usage()));
        if !trt {
            m.insert("preemptions".into(), float(s.preemptions()));
        }
        m.insert("generation_tokens".into(), float(s.generation_tokens()));
        m.insert("prompt_tokens".into(), float(s.prompt_tokens()));
        if trt {
            m.insert("paused".into(), float(s.paused()));
        }
        // Written after the older keys, so an older reader's fast path still reads the row's
        // start in order; absent for an engine that counts no finished requests (llama.cpp).
        if self
            .engine
            .unwrap_or(Engine::Vllm)
            .metrics()
            .finished
            .is_some()
        {
            m.insert("finished_requests".into(), float(s.finished_requests()));
        }
        if let Some(per) = s.engines.as_deref() {
            m.insert("engines".into(), engines_json(per));
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

    /// What was written so far, leaving the writer empty: a writer into memory hands its lines
    /// over as they come (the Python recorder writes them to the user's file).
    pub fn take_output(&mut self) -> W
    where
        W: Default,
    {
        std::mem::take(&mut self.out)
    }

    /// The writer's output (for tests writing to memory).
    pub fn into_inner(self) -> W {
        self.out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::series::Series;

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
        w.write_metrics(&m, None, 1790470252.4963471, Some(5))
            .unwrap();
        let text = text_of(w);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(
            lines[0],
            r#"{"schema": "inferlint.series/1", "url": "http://h:8000", "interval_s": 0.25, "engine": "vllm"}"#
        );
        assert_eq!(
            lines[1],
            r#"{"t_wall": 1790470252.496347, "t_mono_ns": 5, "running": 10.0, "waiting": 22.0, "kv_usage": 0.5, "preemptions": null, "generation_tokens": 145.0, "prompt_tokens": null, "finished_requests": null}"#
        );
    }

    #[test]
    fn rows_carry_the_finished_request_counter_summed_over_reasons() {
        let m = Metrics::parse(
            "vllm:num_requests_running 1\n\
             vllm:request_success_total{finished_reason=\"stop\"} 7\n\
             vllm:request_success_total{finished_reason=\"length\"} 5\n",
        )
        .unwrap();
        let mut w = SeriesWriter::new(Vec::new(), "u", 0.25);
        w.write_metrics(&m, None, 2.0, Some(1)).unwrap();
        let text = text_of(w);
        assert!(
            text.lines()
                .nth(1)
                .unwrap()
                .ends_with(r#""finished_requests": 12.0}"#),
            "{text}"
        );
        let back = Series::from_text(&text, "t").unwrap();
        assert_eq!(back.samples[0].finished_requests(), Some(12.0));
        // llama.cpp counts no requests: the key is left out, not written as 0 or null.
        let m = Metrics::parse("llamacpp:requests_processing 1\n").unwrap();
        let mut w = SeriesWriter::new(Vec::new(), "u", 0.25);
        w.write_metrics(&m, Some(Engine::Llamacpp), 2.0, Some(1))
            .unwrap();
        let text = text_of(w);
        assert!(!text.contains("finished_requests"), "{text}");
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
        assert!(
            row.contains(r#""paused": 1.0, "finished_requests": null}"#),
            "{row}"
        );
        let back = Series::from_text(&text, "t").unwrap();
        assert_eq!(back.engine(), Some(Engine::Trtllm));
        assert_eq!(back.samples[0].paused(), Some(1.0));
        assert_eq!(back.samples[0].preemptions(), None);
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
        assert_eq!(
            text,
            "{\"schema\": \"inferlint.series/1\", \"url\": \"u\", \"interval_s\": 0.5}\n"
        );
        let s = Series::from_text(&text, "t").unwrap();
        assert!(s.samples.is_empty());
        assert_eq!(s.engine(), None);
    }
}
