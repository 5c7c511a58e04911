//! Reading a recording line by line: damaged rows (a killed recorder's truncated last line,
//! garbage, wrong types) are skipped and counted; a file with no header is not a recording.
//!
//! Rows of the recorder's own form are read by a small flat-row parser (a day of samples at
//! 0.25 s is 345,600 lines, read in well under a second); anything unusual (the header,
//! Python's `NaN`, strings, repeated keys) takes the general path through a JSON value, which
//! decides. A test checks that both paths agree wherever the fast one answers.

use std::fs::File;
use std::io::Read;
use std::path::Path;

use serde_json::{Map, Value};

use super::{EngineGauges, Series, SeriesHeader, SeriesSample, SERIES_SCHEMA};
use crate::engine::Engine;
use crate::snapshot::{parse_python_json, repr, ReadError};

/// Reads the recording at `path`, in large chunks split at `\n` with memchr (a day's recording
/// is 345,600 lines: per-line reads cost a fifth of the reading).
pub(super) fn load(path: &Path) -> Result<Series, ReadError> {
    let shown = path.display().to_string();
    let io = |source| ReadError::Io {
        path: shown.clone(),
        source,
    };
    let mut file = File::open(path).map_err(io)?;
    let mut reader = Reader::new(&shown);
    reader.size_hint = file.metadata().ok().map(|m| m.len());
    let mut buf = vec![0u8; 1 << 18];
    // The start of a line that continues in the next chunk.
    let mut carry = Vec::new();
    loop {
        let n = match file.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(io(e)),
        };
        let chunk = &buf[..n];
        let mut start = 0;
        for end in memchr::memchr_iter(b'\n', chunk) {
            let line = &chunk[start..=end];
            if carry.is_empty() {
                reader.feed(line)?;
            } else {
                carry.extend_from_slice(line);
                reader.feed(&carry)?;
                carry.clear();
            }
            start = end + 1;
        }
        carry.extend_from_slice(&chunk[start..]);
    }
    if !carry.is_empty() {
        reader.feed(&carry)?;
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
    /// The file's size, to size the sample vector once.
    size_hint: Option<u64>,
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
            size_hint: None,
        }
    }

    /// Reads one line (with or without its newline).
    pub(super) fn feed(&mut self, raw: &[u8]) -> Result<(), ReadError> {
        self.lineno += 1;
        let at = self.offset;
        self.offset += raw.len() + usize::from(!raw.ends_with(b"\n"));
        let text = match simdutf8::basic::from_utf8(raw).or_else(|_| std::str::from_utf8(raw)) {
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
        if let Some(p) = memchr::memchr(0, line.as_bytes()) {
            self.binary_at.get_or_insert(at + p);
        }
        if let Some(sample) = flat_row(line) {
            self.push(sample, line.len());
            return Ok(());
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
            Some(s) => self.push(s, line.len()),
            None => self.skipped_lines += 1,
        }
        Ok(())
    }

    /// Keeps a sample. At the first one, room is made for as many as the file seems to hold, so
    /// a long recording is not copied while its vector grows (the unused rest is never touched,
    /// so it costs no memory).
    fn push(&mut self, sample: SeriesSample, line_len: usize) {
        if self.samples.is_empty() {
            if let Some(size) = self.size_hint {
                let guess = size as usize / (line_len + 1).max(64) * 5 / 4 + 16;
                self.samples.reserve(guess.min(1 << 26));
            }
        }
        self.samples.push(sample);
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

/// A row of the recorder's own form, `{"key": number|null, ...}` with known keys only, read
/// without building a JSON value; None sends the line to the general path (header, strings,
/// booleans, Python's `NaN`, unknown or repeated keys, anything unusual), which decides.
fn flat_row(line: &str) -> Option<SeriesSample> {
    let b = line.as_bytes();
    let mut i = 0;
    let skip_ws = |i: &mut usize| {
        while *i < b.len() && matches!(b[*i], b' ' | b'\t' | b'\r' | b'\n') {
            *i += 1;
        }
    };
    if b.first() != Some(&b'{') {
        return None;
    }
    i += 1;
    let mut s = SeriesSample::default();
    let mut seen = 0u16;
    let mut has_wall = false;
    skip_ws(&mut i);
    if b.get(i) == Some(&b'}') {
        return None;
    }
    loop {
        skip_ws(&mut i);
        if b.get(i) != Some(&b'"') {
            return None;
        }
        let key_start = i + 1;
        let key_len = b[key_start..]
            .iter()
            .position(|&c| c == b'"' || c == b'\\')?;
        if b[key_start + key_len] != b'"' {
            return None;
        }
        let key = &line[key_start..key_start + key_len];
        i = key_start + key_len + 1;
        skip_ws(&mut i);
        if b.get(i) != Some(&b':') {
            return None;
        }
        i += 1;
        skip_ws(&mut i);
        let v_start = i;
        while i < b.len() && !matches!(b[i], b',' | b'}' | b' ' | b'\t' | b'\r' | b'\n') {
            i += 1;
        }
        let raw = &line[v_start..i];
        let slot = match key {
            "t_wall" => 0,
            "t_mono_ns" => 1,
            "running" => 2,
            "waiting" => 3,
            "kv_usage" => 4,
            "preemptions" => 5,
            "generation_tokens" => 6,
            "prompt_tokens" => 7,
            "paused" => 8,
            _ => return None,
        };
        if seen & (1 << slot) != 0 {
            return None;
        }
        seen |= 1 << slot;
        if raw == "null" {
            if slot == 0 {
                return None;
            }
        } else {
            let value = json_number(raw)?;
            match slot {
                0 => {
                    s.t_wall = value;
                    has_wall = true;
                }
                1 => {
                    s.t_mono_ns = Some(match raw.parse::<i64>() {
                        Ok(n) => n,
                        Err(_) => value as i64,
                    })
                }
                _ => {
                    let v = Some(value);
                    match slot {
                        2 => s.running = v,
                        3 => s.waiting = v,
                        4 => s.kv_usage = v,
                        5 => s.preemptions = v,
                        6 => s.generation_tokens = v,
                        7 => s.prompt_tokens = v,
                        _ => s.paused = v,
                    }
                }
            }
        }
        skip_ws(&mut i);
        match b.get(i) {
            Some(b',') => i += 1,
            Some(b'}') => {
                i += 1;
                skip_ws(&mut i);
                return (i == b.len() && has_wall).then_some(s);
            }
            _ => return None,
        }
    }
}

/// Powers of ten that an f64 holds exactly.
const EXACT_POWERS_OF_TEN: [f64; 23] = [
    1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16,
    1e17, 1e18, 1e19, 1e20, 1e21, 1e22,
];

/// The value of a JSON number, or None when `raw` is not one or overflows. The recorder's
/// numbers (`1790470252.238873`, `144.0`) take Clinger's fast path: at most 15 digits make an
/// integer below 2^53, and its division by an exact power of ten is correctly rounded, so it
/// equals what the full parser gives; anything else goes to the full parser.
fn json_number(raw: &str) -> Option<f64> {
    let b = raw.as_bytes();
    let (negative, digits) = match b.split_first() {
        Some((b'-', rest)) => (true, rest),
        _ => (false, b),
    };
    let mut mantissa = 0u64;
    let mut count = 0;
    let mut point = None;
    for (i, &c) in digits.iter().enumerate() {
        match c {
            b'0'..=b'9' => {
                mantissa = mantissa * 10 + u64::from(c - b'0');
                count += 1;
                if count > 15 {
                    return general_number(raw);
                }
            }
            b'.' if point.is_none() => point = Some(i),
            _ => return general_number(raw),
        }
    }
    let whole = point.unwrap_or(digits.len());
    let fraction = digits.len() - whole - usize::from(point.is_some());
    // JSON: a whole part of one 0 or no leading 0, and digits after a point.
    if whole == 0 || (digits[0] == b'0' && whole > 1) || (point.is_some() && fraction == 0) {
        return None;
    }
    let value = mantissa as f64 / EXACT_POWERS_OF_TEN[fraction];
    Some(if negative { -value } else { value })
}

fn general_number(raw: &str) -> Option<f64> {
    if is_json_number(raw) {
        finite(raw)
    } else {
        None
    }
}

/// A number JSON can hold (serde_json refuses one that overflows to infinity).
fn finite(raw: &str) -> Option<f64> {
    raw.parse::<f64>().ok().filter(|v| v.is_finite())
}

/// JSON's number grammar: `-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?`.
fn is_json_number(s: &str) -> bool {
    let b = s.as_bytes();
    let mut i = usize::from(b.first() == Some(&b'-'));
    let digits = |i: &mut usize| {
        let start = *i;
        while *i < b.len() && b[*i].is_ascii_digit() {
            *i += 1;
        }
        *i - start
    };
    match b.get(i) {
        Some(b'0') => i += 1,
        Some(c) if c.is_ascii_digit() => {
            digits(&mut i);
        }
        _ => return false,
    }
    if b.get(i) == Some(&b'.') {
        i += 1;
        if digits(&mut i) == 0 {
            return false;
        }
    }
    if matches!(b.get(i), Some(b'e' | b'E')) {
        i += 1;
        if matches!(b.get(i), Some(b'+' | b'-')) {
            i += 1;
        }
        if digits(&mut i) == 0 {
            return false;
        }
    }
    i == b.len()
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
    let mut s = SeriesSample {
        t_wall,
        t_mono_ns,
        running: num("running").ok()?,
        waiting: num("waiting").ok()?,
        kv_usage: num("kv_usage").ok()?,
        preemptions: num("preemptions").ok()?,
        generation_tokens: num("generation_tokens").ok()?,
        prompt_tokens: num("prompt_tokens").ok()?,
        paused: num("paused").ok()?,
        engines: None,
    };
    match obj.get("engines") {
        None | Some(Value::Null) => {}
        Some(Value::Object(per)) => s.engines = Some(Box::new(read_engines(per)?)),
        Some(_) => return None,
    }
    Some(s)
}

/// The per-engine gauges of a data-parallel row (`{"0": {"running": …}, …}`); None when an
/// entry is not an object of numbers and nulls, which makes the row malformed. The file's
/// aggregate `running`/`waiting` are kept as written: they are what older readers use.
fn read_engines(per: &Map<String, Value>) -> Option<Vec<EngineGauges>> {
    let mut out = Vec::with_capacity(per.len());
    for (id, v) in per {
        let Value::Object(g) = v else {
            return None;
        };
        let num = |key: &str| -> Result<Option<f64>, ()> {
            match g.get(key) {
                None | Some(Value::Null) => Ok(None),
                Some(Value::Number(n)) => Ok(n.as_f64()),
                Some(_) => Err(()),
            }
        };
        out.push(EngineGauges {
            engine: id.clone(),
            running: num("running").ok()?,
            waiting: num("waiting").ok()?,
            kv_usage: num("kv_usage").ok()?,
        });
    }
    out.sort_by(|a, b| super::engine_order(&a.engine, &b.engine));
    Some(out)
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
    fn the_fast_number_path_gives_the_full_parsers_value() {
        use rand::{Rng, SeedableRng};
        let full = |raw: &str| general_number(raw).map(f64::to_bits);
        let mut rng = rand::rngs::StdRng::seed_from_u64(11);
        let mut cases: Vec<String> = [
            "0",
            "-0",
            "0.0",
            "-0.0",
            "144.0",
            "1790470252.238873",
            "0.9523809523809523",
            "01",
            "1.",
            ".5",
            "-",
            "",
            "1e3",
            "00.5",
            "123456789012345",
            "1234567890123456",
            "999999999999999.9",
            "0.000000000000001",
            "1.5.5",
            "+1",
            "1_0",
            "9007199254740993",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        for _ in 0..50_000 {
            let x: f64 = match rng.random_range(0..3) {
                0 => f64::from(rng.random_range(0..1_000_000u32)),
                1 => rng.random_range(-1e10..1e10),
                _ => rng.random::<f64>(),
            };
            let places = rng.random_range(0..18);
            cases.push(format!("{x:.places$}"));
            cases.push(format!("{x}"));
        }
        for raw in &cases {
            assert_eq!(json_number(raw).map(f64::to_bits), full(raw), "{raw:?}");
        }
    }

    #[test]
    fn a_file_read_in_chunks_gives_the_rows_of_its_text() {
        let mut text = String::from(
            "{\"schema\": \"inferlint.series/1\", \"url\": \"u\", \"interval_s\": 0.25}\n",
        );
        for i in 0..20_000 {
            text.push_str(&format!(
                "{{\"t_wall\": {}.25, \"running\": {}.0, \"kv_usage\": 0.{i}}}\n",
                1_000 + i,
                i % 7
            ));
        }
        text.push_str("{\"t_wall\": 9.0, \"run");
        assert!(
            text.len() > 3 * (1 << 18),
            "lines cross the reader's chunks"
        );
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("s.series.jsonl");
        std::fs::write(&p, &text).unwrap();
        let a = Series::from_text(&text, "t").unwrap();
        let b = Series::load(&p).unwrap();
        assert_eq!(a.samples.len(), 20_000);
        assert_eq!(a.samples, b.samples);
        assert_eq!((a.skipped_lines, b.skipped_lines), (1, 1));
    }

    #[test]
    fn fast_and_general_paths_agree() {
        let general = |line: &str| match parse_python_json(line) {
            Ok(Value::Object(obj)) if !obj.contains_key("schema") => read_row(&obj),
            _ => None,
        };
        let mut lines: Vec<String> = [
            r#"{"t_wall": 1790470252.238873, "t_mono_ns": 208651898175, "running": 0.0, "waiting": 0.0, "kv_usage": 0.0, "preemptions": 0.0, "generation_tokens": 144.0, "prompt_tokens": 63.0}"#,
            r#"{"t_wall": 1.5, "t_mono_ns": null, "running": 10, "kv_usage": 0.9523809523809523}"#,
            r#"{"t_wall":2,"t_mono_ns":1e3,"paused":-0.0,"waiting":1E-7}"#,
            r#"  { "t_wall" : 3.0 , "running" : null }  "#,
            r#"{"t_wall": 3.0, "running": 01}"#,
            r#"{"t_wall": 3.0, "running": +1}"#,
            r#"{"t_wall": 3.0, "running": .5}"#,
            r#"{"t_wall": 3.0, "running": 1.}"#,
            r#"{"t_wall": 3.0, "running": 1e}"#,
            r#"{"t_wall": null, "running": 1}"#,
            r#"{"running": 1}"#,
            r#"{}"#,
            r#"{"t_wall": 3.0,}"#,
            r#"{"t_wall": 3.0} x"#,
            r#"{"t_wall": 3.0, "t_mono_ns": 99999999999999999999}"#,
            r#"{"t_wall": 3.0, "t_mono_ns": 1.5}"#,
            r#"{"t_wall": 3.0, "running": 1e400}"#,
            r#"{"t_wall": 3.0, "t_wall": 4.0}"#,
            r#"{"t_wall": 3.0, "note": 4.0}"#,
            r#"{"t_wall": 3.0, "running": true}"#,
            r#"{"t_wall": 3.0, "running": "1"}"#,
            r#"{"t_wall": 3.0, "running": NaN}"#,
            r#"{"t_w\u0061ll": 3.0}"#,
            r#"{"t_wall": 3.0"#,
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        if let Some(text) = crate::testkit::evidence_text("sglang-0.5/capped/run.series.jsonl") {
            lines.extend(text.lines().map(str::to_string));
        }
        let mut fast_answers = 0;
        for line in &lines {
            if let Some(fast) = flat_row(line.trim()) {
                fast_answers += 1;
                assert_eq!(Some(fast), general(line), "{line}");
            }
        }
        assert!(fast_answers > 5);
    }

    #[test]
    fn binary_without_header_is_named_binary() {
        let mut reader = Reader::new("b");
        reader.feed(&[0x7f, b'E', b'L', b'F', 0, 0xff]).unwrap();
        let e = reader.finish().unwrap_err();
        assert!(e.to_string().starts_with("b: not a text file"), "{e}");
    }
}
