//! Reading a recording line by line: damaged rows (a killed recorder's truncated last line,
//! garbage, wrong types) are skipped and counted; a file with no header is not a recording.
//!
//! Rows are parsed straight into a typed row (a day of samples at 0.25 s is 345,600 lines);
//! anything unusual (the header, Python's `NaN`, duplicate keys) takes the slower path through
//! a JSON value, which decides the same way.

use std::fs::File;
use std::io::{BufRead, BufReader};
use std::path::Path;

use serde::Deserialize;
use serde_json::{Map, Value};

use super::{Series, SeriesHeader, SeriesSample, SERIES_SCHEMA};
use crate::engine::Engine;
use crate::snapshot::{parse_python_json, repr, ReadError};

/// Reads the recording at `path`.
pub(super) fn load(path: &Path) -> Result<Series, ReadError> {
    let shown = path.display().to_string();
    let io = |source| ReadError::Io {
        path: shown.clone(),
        source,
    };
    let mut input = BufReader::with_capacity(1 << 16, File::open(path).map_err(io)?);
    let mut reader = Reader::new(&shown);
    let mut line = Vec::with_capacity(256);
    loop {
        line.clear();
        if input.read_until(b'\n', &mut line).map_err(io)? == 0 {
            break;
        }
        reader.feed(&line)?;
    }
    reader.finish()
}

/// The state of a recording being read.
pub(super) struct Reader {
    source: String,
    header: Option<SeriesHeader>,
    samples: Vec<SeriesSample>,
    skipped_lines: usize,
    /// Non-blank lines seen.
    rows: usize,
    lineno: usize,
    offset: usize,
    /// Where the first byte that is not text was (NUL or invalid UTF-8).
    binary_at: Option<usize>,
}

/// A sample row as the recorder writes it. `schema` only tells a header apart.
#[derive(Deserialize)]
struct Row {
    schema: Option<serde::de::IgnoredAny>,
    t_wall: Option<f64>,
    t_mono_ns: Option<serde_json::Number>,
    running: Option<f64>,
    waiting: Option<f64>,
    kv_usage: Option<f64>,
    preemptions: Option<f64>,
    generation_tokens: Option<f64>,
    prompt_tokens: Option<f64>,
    paused: Option<f64>,
}

fn nanoseconds(n: &serde_json::Number) -> Option<i64> {
    n.as_i64().or_else(|| n.as_f64().map(|f| f as i64))
}

impl Reader {
    pub(super) fn new(source: &str) -> Reader {
        Reader {
            source: source.to_string(),
            header: None,
            samples: Vec::new(),
            skipped_lines: 0,
            rows: 0,
            lineno: 0,
            offset: 0,
            binary_at: None,
        }
    }

    /// Reads one line (with or without its newline).
    pub(super) fn feed(&mut self, raw: &[u8]) -> Result<(), ReadError> {
        self.lineno += 1;
        let at = self.offset;
        self.offset += raw.len() + usize::from(!raw.ends_with(b"\n"));
        let text = match std::str::from_utf8(raw) {
            Ok(t) => t,
            Err(e) => {
                self.binary_at.get_or_insert(at + e.valid_up_to());
                self.rows += 1;
                self.skipped_lines += 1;
                return Ok(());
            }
        };
        let line = text.trim();
        if line.is_empty() {
            return Ok(());
        }
        self.rows += 1;
        if let Some(p) = line.find('\0') {
            self.binary_at.get_or_insert(at + p);
        }
        if let Ok(row) = serde_json::from_str::<Row>(line) {
            if row.schema.is_none() {
                match row_sample(row) {
                    Some(s) => self.samples.push(s),
                    None => self.skipped_lines += 1,
                }
                return Ok(());
            }
        }
        let Ok(Value::Object(obj)) = parse_python_json(line) else {
            self.skipped_lines += 1;
            return Ok(());
        };
        if let Some(schema) = obj.get("schema") {
            if self.header.is_none() {
                self.header = Some(read_header(&obj, schema, &self.source, self.lineno)?);
            }
            return Ok(());
        }
        match read_row(&obj) {
            Some(s) => self.samples.push(s),
            None => self.skipped_lines += 1,
        }
        Ok(())
    }

    pub(super) fn finish(self) -> Result<Series, ReadError> {
        let source = self.source;
        if self.rows == 0 {
            return Err(ReadError::Empty { path: source });
        }
        let Some(header) = self.header else {
            if let Some(offset) = self.binary_at {
                return Err(ReadError::Binary {
                    path: source,
                    offset,
                });
            }
            let why = if self.samples.is_empty() {
                format!(
                    "no {SERIES_SCHEMA} header and no readable row in {} lines",
                    self.rows
                )
            } else {
                format!(
                    "no {SERIES_SCHEMA} header line ({} rows look like samples, but the header that says where they came from is missing)",
                    self.samples.len()
                )
            };
            return Err(ReadError::format(
                &source,
                format!("not an {SERIES_SCHEMA} recording: {why}"),
            ));
        };
        let mut samples = self.samples;
        samples.shrink_to_fit();
        Ok(Series {
            header,
            samples,
            skipped_lines: self.skipped_lines,
            source,
        })
    }
}

fn row_sample(r: Row) -> Option<SeriesSample> {
    let t_mono_ns = match &r.t_mono_ns {
        None => None,
        Some(n) => Some(nanoseconds(n)?),
    };
    Some(SeriesSample {
        t_wall: r.t_wall?,
        t_mono_ns,
        running: r.running,
        waiting: r.waiting,
        kv_usage: r.kv_usage,
        preemptions: r.preemptions,
        generation_tokens: r.generation_tokens,
        prompt_tokens: r.prompt_tokens,
        paused: r.paused,
    })
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
        Some(Value::Number(n)) => Some(nanoseconds(n)?),
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

#[cfg(test)]
mod tests {
    use super::*;

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
        assert!(e
            .to_string()
            .starts_with("x.series.jsonl: not an inferlint.series/1 recording"));
        let e =
            Series::from_text("{\"schema\": \"inferlint.snapshot/1\"}\n", "y.json").unwrap_err();
        assert!(
            e.to_string().contains("schema='inferlint.snapshot/1'"),
            "{e}"
        );
    }

    #[test]
    fn python_constants_and_duplicate_keys_take_the_slow_path_alike() {
        let text = "{\"schema\": \"inferlint.series/1\", \"interval_s\": 0.5}\n\
            {\"t_wall\": 1.0, \"running\": NaN, \"kv_usage\": 0.5}\n\
            {\"t_wall\": 2.0, \"running\": 1.0, \"running\": 3.0}\n";
        let s = Series::from_text(text, "t").unwrap();
        assert_eq!(s.skipped_lines, 0);
        assert_eq!(s.samples[0].running, None);
        assert_eq!(s.samples[0].kv_usage, Some(0.5));
        assert_eq!(s.samples[1].running, Some(3.0));
        assert_eq!(s.header.url, "");
    }

    #[test]
    fn text_and_file_readers_agree() {
        let text = "{\"schema\": \"inferlint.series/1\", \"url\": \"u\", \"interval_s\": 0.25, \"engine\": \"sglang\"}\n\
            {\"t_wall\": 1.5, \"t_mono_ns\": 7, \"running\": 2.0}\n\
            {\"t_wall\": 2.5, \"t_mo";
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("s.series.jsonl");
        std::fs::write(&p, text).unwrap();
        let a = Series::from_text(text, "t").unwrap();
        let b = Series::load(&p).unwrap();
        assert_eq!(a.samples, b.samples);
        assert_eq!(a.header, b.header);
        assert_eq!((a.skipped_lines, b.skipped_lines), (1, 1));
        assert_eq!(b.source, p.display().to_string());
    }

    #[test]
    fn binary_without_header_is_named_binary() {
        let mut reader = Reader::new("b");
        reader.feed(&[0x7f, b'E', b'L', b'F', 0, 0xff]).unwrap();
        let e = reader.finish().unwrap_err();
        assert!(e.to_string().starts_with("b: not a text file"), "{e}");
    }
}
