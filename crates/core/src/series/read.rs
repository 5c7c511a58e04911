//! Reading a recording line by line: damaged rows (a killed recorder's truncated last line,
//! garbage, wrong types) are skipped and counted; a file with no header is not a recording.
//!
//! Rows of the recorder's own form are read by a flat-row parser ([`flat`]); anything unusual
//! (the header, Python's `NaN`, strings, repeated keys) takes the general path through a JSON
//! value, which decides. A test checks that both paths agree wherever the fast one answers. A
//! file is read in chunks split at line ends ([`chunk`]), on two threads when it is large
//! ([`chunks`]); a chunk's lines are counted in a [`Tally`], and the tallies are merged in the
//! file's order.

use serde_json::{Map, Value};

use super::found::RowsSeen;
use super::{EngineGauges, Readings, Series, SeriesHeader, SeriesSample, SERIES_SCHEMA};
use crate::engine::Engine;
use crate::snapshot::{parse_python_json, repr, ReadError};

mod chunk;
mod chunks;
mod flat;

pub(super) use chunks::{load, read_held};

/// A recording read from text, line by line (the file reader reads chunks into [`Tally`]s).
pub(super) struct Reader {
    source: String,
    tally: Tally,
    samples: Vec<SeriesSample>,
    /// The byte offset of the next line.
    offset: usize,
}

impl Reader {
    pub(super) fn new(source: &str) -> Reader {
        Reader {
            source: source.to_string(),
            tally: Tally::default(),
            samples: Vec::new(),
            offset: 0,
        }
    }

    /// Reads one line (with or without its newline). The header is judged at the end, so this
    /// does not fail; the result says so to callers that stop at the first error.
    pub(super) fn feed(&mut self, raw: &[u8]) -> Result<(), ReadError> {
        let at = self.offset;
        self.offset += raw.len() + usize::from(!raw.ends_with(b"\n"));
        self.tally.line(raw, at, &mut self.samples);
        Ok(())
    }

    pub(super) fn finish(self) -> Result<Series, ReadError> {
        finish(self.source, self.tally, self.samples)
    }
}

/// What the lines of a stretch of a recording held, besides their samples.
#[derive(Default)]
pub(super) struct Tally {
    /// Lines seen, blank ones too.
    lines: usize,
    /// Non-blank lines seen.
    rows: usize,
    skipped_lines: usize,
    /// Where the first byte that is not text was (NUL or invalid UTF-8), in the file.
    binary_at: Option<usize>,
    /// The first row with a `schema` key: its line number in the stretch, and the row. Only
    /// the file's first is the header, so it is judged once the stretches are merged.
    header: Option<(usize, Map<String, Value>)>,
    /// The file's size, to size the sample vector once at the first sample.
    size_hint: Option<u64>,
    /// The engines the stretch's rows have gauges for, in the order first seen (only rows of
    /// the general path can have any).
    engine_ids: Vec<String>,
    /// What the checks ask of every row, answered while the rows are at hand rather than in
    /// passes of their own.
    seen: RowsSeen,
}

impl Tally {
    /// Reads one line that starts at byte `at` of the file, with or without its newline;
    /// a sample goes to `samples`.
    pub(super) fn line(&mut self, raw: &[u8], at: usize, samples: &mut Vec<SeriesSample>) {
        let flat = |s: &mut SeriesSample| flat::read_flat_row(raw, s).then_some(raw.len());
        if raw.first() == Some(&b'{') && self.read_in_place(samples, flat).is_some() {
            return;
        }
        self.lines += 1;
        self.general_line(raw, at, samples);
    }

    /// Reads the flat row at the start of `b` (a stretch of the file from a line's start), when
    /// it is one that ends at its newline: the line's length, newline included. None leaves the
    /// line to [`Tally::line`].
    pub(super) fn flat_line(&mut self, b: &[u8], samples: &mut Vec<SeriesSample>) -> Option<usize> {
        if b.first() != Some(&b'{') {
            return None;
        }
        self.read_in_place(samples, |s| flat::read_flat_line(b, s))
    }

    /// Reads a flat row with `read` into a sample pushed first (a row filled where it lies is not
    /// copied); the line's length that `read` gives, or None, the sample taken back.
    #[inline(always)]
    fn read_in_place(
        &mut self,
        samples: &mut Vec<SeriesSample>,
        read: impl FnOnce(&mut SeriesSample) -> Option<usize>,
    ) -> Option<usize> {
        samples.push(SeriesSample::default());
        let s = samples.last_mut()?;
        let Some(len) = read(s) else {
            samples.pop();
            return None;
        };
        self.seen.see(s);
        self.lines += 1;
        self.rows += 1;
        // Sized by a sample's line, not the header's (which also starts with `{`).
        self.reserve_once(samples, len);
        Some(len)
    }

    /// A line that is not a flat row as written: it may be one after trimming, or the header,
    /// or something the general JSON path must judge.
    fn general_line(&mut self, raw: &[u8], at: usize, samples: &mut Vec<SeriesSample>) {
        let text = match simdutf8::basic::from_utf8(raw).or_else(|_| std::str::from_utf8(raw)) {
            Ok(t) => t,
            Err(e) => {
                self.binary_at.get_or_insert(at + e.valid_up_to());
                self.rows += 1;
                self.skipped_lines += 1;
                return;
            }
        };
        let line = text.trim();
        if line.is_empty() {
            return;
        }
        self.rows += 1;
        // The offset is counted from the trimmed line, as readers before this one named it.
        if let Some(p) = memchr::memchr(0, line.as_bytes()) {
            self.binary_at.get_or_insert(at + p);
        }
        if let Some(sample) = flat::flat_row(line.as_bytes()) {
            self.push(samples, sample, line.len());
            return;
        }
        let Ok(Value::Object(obj)) = parse_python_json(line) else {
            self.skipped_lines += 1;
            return;
        };
        if obj.contains_key("schema") {
            if self.header.is_none() {
                self.header = Some((self.lines, obj));
            }
            return;
        }
        match read_row(&obj) {
            Some(s) => {
                let ids = s.per_engine().iter().map(|e| e.engine.as_str());
                super::add_engine_ids(&mut self.engine_ids, ids);
                self.push(samples, s, line.len());
            }
            None => self.skipped_lines += 1,
        }
    }

    /// Keeps a sample. At the first one, room is made for as many as the file seems to hold, so
    /// a long recording is not copied while its vector grows (the unused rest is never touched,
    /// so it costs no memory).
    fn push(&mut self, samples: &mut Vec<SeriesSample>, sample: SeriesSample, line_len: usize) {
        self.seen.see(&sample);
        self.reserve_once(samples, line_len);
        samples.push(sample);
    }

    /// Makes room as [`Tally::push`] says, at the first sample (before or just after its push).
    fn reserve_once(&mut self, samples: &mut Vec<SeriesSample>, line_len: usize) {
        if samples.len() <= 1 {
            if let Some(size) = self.size_hint.take() {
                reserve_for_file(samples, size, 1, (line_len + 1).max(64));
            }
        }
    }

    /// Adds the tally of the stretch that follows this one.
    pub(super) fn merge(&mut self, later: Tally) {
        if self.header.is_none() {
            self.header = later.header.map(|(line, obj)| (self.lines + line, obj));
        }
        self.binary_at = self.binary_at.or(later.binary_at);
        super::add_engine_ids(
            &mut self.engine_ids,
            later.engine_ids.iter().map(String::as_str),
        );
        self.seen.merge(later.seen);
        self.lines += later.lines;
        self.rows += later.rows;
        self.skipped_lines += later.skipped_lines;
    }

    /// The header, judged: None when no row had a `schema` key, an error naming the line when
    /// the first one is not this format's header.
    pub(super) fn header(&self, source: &str) -> Result<Option<SeriesHeader>, ReadError> {
        let Some((line, obj)) = &self.header else {
            return Ok(None);
        };
        let schema = obj.get("schema").unwrap_or(&Value::Null);
        read_header(obj, schema, source, *line).map(Some)
    }
}

/// Makes room in `samples` for the rows of a file of `size` bytes that holds about `rows` rows
/// in each `bytes`, and a quarter more: the unused rest is never touched, so it costs no memory,
/// and a long recording is not copied while its vector grows.
pub(super) fn reserve_for_file(
    samples: &mut Vec<SeriesSample>,
    size: u64,
    rows: usize,
    bytes: usize,
) {
    let guess = size as usize / bytes.max(1) * rows * 5 / 4 + 16;
    samples.reserve(guess.min(1 << 26));
}

/// The recording the lines of a whole file (its merged tally and samples) make.
pub(super) fn finish(
    source: String,
    tally: Tally,
    mut samples: Vec<SeriesSample>,
) -> Result<Series, ReadError> {
    let header = tally.header(&source)?;
    if tally.rows == 0 {
        return Err(ReadError::Empty { path: source });
    }
    let Some(header) = header else {
        if let Some(offset) = tally.binary_at {
            return Err(ReadError::Binary {
                path: source,
                offset,
            });
        }
        let why = if samples.is_empty() {
            format!(
                "no {SERIES_SCHEMA} header and no readable row in {} lines",
                tally.rows
            )
        } else {
            format!(
                "no {SERIES_SCHEMA} header line ({} rows look like samples, but the header that says where they came from is missing)",
                samples.len()
            )
        };
        return Err(ReadError::format(
            &source,
            format!("not an {SERIES_SCHEMA} recording: {why}"),
        ));
    };
    samples.shrink_to_fit();
    let mut ids = tally.engine_ids;
    super::sort_engine_ids(&mut ids);
    Ok(Series::read(
        header,
        samples,
        ids,
        Some(tally.seen.done()),
        tally.skipped_lines,
        source,
    ))
}

fn nanoseconds(n: &serde_json::Number) -> Option<i64> {
    n.as_i64().or_else(|| n.as_f64().map(|f| f as i64))
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
                "the header names engine '{s}' (known: vllm, sglang, trtllm, llamacpp)"
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
    let mut s = SeriesSample::from(Readings {
        t_wall,
        t_mono_ns,
        running: num("running").ok()?,
        waiting: num("waiting").ok()?,
        kv_usage: num("kv_usage").ok()?,
        preemptions: num("preemptions").ok()?,
        generation_tokens: num("generation_tokens").ok()?,
        prompt_tokens: num("prompt_tokens").ok()?,
        paused: num("paused").ok()?,
        finished_requests: num("finished_requests").ok()?,
    });
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
        assert_eq!(s.samples[0].running(), None);
        assert_eq!(s.samples[0].kv_usage(), Some(0.5));
        assert_eq!(s.samples[1].running(), Some(3.0));
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
        use flat::{general_number, scalar_at, Scalar};
        use rand::{Rng, SeedableRng};
        let full = |raw: &str| general_number(raw).map(f64::to_bits);
        let json_number = |raw: &str| match scalar_at(raw.as_bytes(), 0) {
            Some((Scalar::Number { value, .. }, end)) if end == raw.len() => Some(value),
            _ => None,
        };
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
            r#"{"t_wall": 1.5, "running": 1.0, "prompt_tokens": 63.0, "finished_requests": 12.0}"#,
            r#"{"t_wall": 1.5, "finished_requests": null, "paused": 2.0}"#,
            r#"{"t_wall": 1.5, "finished_requests": 1.0, "finished_requests": 2.0}"#,
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
            if let Some(fast) = flat::flat_row(line.trim().as_bytes()) {
                fast_answers += 1;
                assert_eq!(Some(fast), general(line), "{line}");
            }
        }
        assert!(fast_answers > 5);
    }

    #[test]
    fn a_file_without_a_size_is_read_as_a_stream() {
        // procfs reports a size of 0 and has lines: they are read, not taken for an empty file.
        let e = Series::load(std::path::Path::new("/proc/self/status")).unwrap_err();
        assert!(e.to_string().contains("no readable row in"), "{e}");
    }

    #[test]
    fn binary_without_header_is_named_binary() {
        let mut reader = Reader::new("b");
        reader.feed(&[0x7f, b'E', b'L', b'F', 0, 0xff]).unwrap();
        let e = reader.finish().unwrap_err();
        assert!(e.to_string().starts_with("b: not a text file"), "{e}");
    }
}
