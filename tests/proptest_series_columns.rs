//! The series reader against a plain one: random valid recordings are read both by
//! `Series::load`, `Series::read_held` and `Series::from_text` (the flat-row parser, the chunks,
//! the second thread) and by serde_json a line at a time, and must give the same columns, bit
//! for bit.
//!
//! The rows vary in what the fast path has to get right: numbers as Rust and Python print them
//! (shortest form, exponents, 17-digit fractions, integers up to i64's edge), nulls, missing and
//! reordered keys, compact or spaced separators, `\r\n` line ends. Files past 4 MiB are read on
//! two threads (docs/design/formats.md#series), so one test builds a few of those, with damaged
//! and blank lines among the rows.

use inferlint_core::series::Series;
use proptest::prelude::*;
use rand::{Rng, SeedableRng};
use serde_json::Value;

use crate::proptest_support;

const HEADER: &str =
    "{\"schema\": \"inferlint.series/1\", \"url\": \"http://127.0.0.1:8000\", \"interval_s\": 0.25, \"engine\": \"vllm\"}";

/// The gauges after t_wall and t_mono_ns, in the recorder's order.
const GAUGES: [&str; 8] = [
    "running",
    "waiting",
    "kv_usage",
    "preemptions",
    "generation_tokens",
    "prompt_tokens",
    "paused",
    "finished_requests",
];

/// A recording's columns: t_wall's bits, t_mono_ns, and each gauge's bits (None when absent).
#[derive(Debug, PartialEq, Default)]
struct Columns {
    t_wall: Vec<u64>,
    t_mono_ns: Vec<Option<i64>>,
    gauges: [Vec<Option<u64>>; 8],
}

/// The columns as the reader gives them.
fn columns_of(series: &Series) -> Columns {
    let mut c = Columns::default();
    for s in &series.samples {
        c.t_wall.push(s.t_wall.to_bits());
        c.t_mono_ns.push(s.t_mono_ns());
        let gauges = [
            s.running(),
            s.waiting(),
            s.kv_usage(),
            s.preemptions(),
            s.generation_tokens(),
            s.prompt_tokens(),
            s.paused(),
            s.finished_requests(),
        ];
        for (col, v) in c.gauges.iter_mut().zip(gauges) {
            col.push(v.map(f64::to_bits));
        }
    }
    c
}

/// The columns a plain reader makes of valid rows: each line through serde_json, the header
/// and blank or unreadable lines left out.
fn plain_columns(text: &str) -> Columns {
    let mut c = Columns::default();
    for line in text.lines() {
        let Ok(Value::Object(row)) = serde_json::from_str::<Value>(line) else {
            continue;
        };
        if row.contains_key("schema") {
            continue;
        }
        let Some(t) = row.get("t_wall").and_then(Value::as_f64) else {
            continue;
        };
        c.t_wall.push(t.to_bits());
        c.t_mono_ns.push(match row.get("t_mono_ns") {
            Some(Value::Number(n)) => n.as_i64().or_else(|| n.as_f64().map(|f| f as i64)),
            _ => None,
        });
        for (col, key) in c.gauges.iter_mut().zip(GAUGES) {
            col.push(row.get(key).and_then(Value::as_f64).map(f64::to_bits));
        }
    }
    c
}

/// A number as the recorder, Python or a person might write it.
fn number(rng: &mut impl Rng) -> String {
    let x: f64 = match rng.random_range(0..4) {
        0 => f64::from(rng.random_range(0..100_000u32)),
        1 => rng.random::<f64>(),
        2 => rng.random_range(-1e12..1e12),
        _ => f64::from_bits(rng.random::<u64>()),
    };
    let x = if x.is_finite() { x } else { 0.5 };
    match rng.random_range(0..6) {
        0 => format!("{x:?}"),
        1 => format!("{x:e}"),
        2 => format!("{:.*}", rng.random_range(0..18), x.clamp(-1e15, 1e15)),
        3 => format!("{}", rng.random::<i64>()),
        4 => format!("{}", rng.random_range(0..1_000u32)),
        _ => format!("{x}"),
    }
}

/// A timestamp as the recorder writes it, or some other number.
fn t_wall(rng: &mut impl Rng) -> String {
    if rng.random_bool(0.8) {
        format!("{:.6}", rng.random_range(1.7e9..1.8e9))
    } else {
        number(rng)
    }
}

/// A monotonic clock reading: an integer mostly, at the edges of i64 sometimes, or a float.
fn t_mono(rng: &mut impl Rng) -> String {
    match rng.random_range(0..5) {
        0 => format!("{}", i64::MAX - rng.random_range(0..1000)),
        1 => format!("{}", -rng.random_range(0..1_000_000_000_000i64)),
        2 => number(rng),
        _ => format!("{}", rng.random_range(0..i64::MAX / 1000)),
    }
}

/// A valid sample row.
fn row(rng: &mut impl Rng) -> String {
    let mut pairs = vec![("t_wall".to_string(), t_wall(rng))];
    if rng.random_bool(0.9) {
        pairs.push(("t_mono_ns".into(), t_mono(rng)));
    }
    for key in GAUGES {
        if rng.random_bool(0.85) {
            let v = if rng.random_bool(0.15) {
                "null".to_string()
            } else {
                number(rng)
            };
            pairs.push((key.to_string(), v));
        }
    }
    if rng.random_bool(0.1) {
        let n = pairs.len();
        pairs.swap(0, rng.random_range(0..n));
    }
    let (colon, comma) = if rng.random_bool(0.8) {
        (": ", ", ")
    } else {
        (":", ",")
    };
    let body: Vec<String> = pairs
        .iter()
        .map(|(k, v)| format!("\"{k}\"{colon}{v}"))
        .collect();
    let end = if rng.random_bool(0.05) { "\r" } else { "" };
    format!("{{{}}}{end}", body.join(comma))
}

/// A recording of `rows` random rows, with a blank or damaged line now and then when `damaged`.
fn recording(seed: u64, rows: usize, damaged: bool) -> String {
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    let mut text = format!("{HEADER}\n");
    for _ in 0..rows {
        if damaged && rng.random_bool(0.002) {
            text.push_str(
                ["", "garbage", "{\"t_wall\": 1.5, \"runn", "[1]"][rng.random_range(0..4)],
            );
            text.push('\n');
        }
        text.push_str(&row(&mut rng));
        text.push('\n');
    }
    text
}

fn load(text: &str) -> Series {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("r.series.jsonl");
    std::fs::write(&path, text).unwrap();
    Series::load(&path).unwrap()
}

proptest! {
    #![proptest_config(proptest_support::config(64, "tests/proptest-regressions/proptest_series_columns.txt"))]

    /// Small recordings, from text and from a file: the fast reader's columns are serde_json's.
    #[test]
    fn fast_and_plain_readers_give_the_same_columns(seed in any::<u64>(), rows in 0usize..300) {
        let text = recording(seed, rows, false);
        let want = plain_columns(&text);
        prop_assert_eq!(want.t_wall.len(), rows);
        let from_text = Series::from_text(&text, "r.series.jsonl").unwrap();
        prop_assert_eq!(&columns_of(&from_text), &want);
        prop_assert_eq!(from_text.skipped_lines, 0);
        prop_assert_eq!(&columns_of(&load(&text)), &want);
        let held = Series::read_held(text.as_bytes(), "r.series.jsonl").unwrap();
        prop_assert_eq!(&columns_of(&held), &want);
    }
}

/// Recordings past the size read on two threads, with damaged lines among the rows: the same
/// columns and the same count of skipped lines as from text, whatever falls on a chunk's edge.
#[test]
fn large_recordings_read_on_two_threads_give_the_same_columns() {
    for seed in 0..3 {
        let text = recording(seed, 40_000 + 3_000 * seed as usize, true);
        assert!(text.len() > 5 << 20, "{} bytes", text.len());
        let from_file = load(&text);
        let from_text = Series::from_text(&text, "r.series.jsonl").unwrap();
        // Where the caller holds the bytes (`inferlint series` maps the file).
        let held = Series::read_held(text.as_bytes(), "r.series.jsonl").unwrap();
        let want = plain_columns(&text);
        assert_eq!(columns_of(&from_file), want);
        assert_eq!(columns_of(&from_text), want);
        assert_eq!(columns_of(&held), want);
        assert_eq!(from_file.skipped_lines, from_text.skipped_lines);
        assert_eq!(held.skipped_lines, from_text.skipped_lines);
        assert!(from_file.skipped_lines > 0);
    }
}

/// A large file whose header is bad, or missing, fails as a small one does, naming the line.
#[test]
fn a_large_recordings_header_errors_name_the_line() {
    let rows = recording(7, 40_000, false);
    let body = rows.split_once('\n').unwrap().1;
    let bad = format!("\n{body}{{\"schema\": \"inferlint.snapshot/1\"}}\n");
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bad.series.jsonl");
    std::fs::write(&path, &bad).unwrap();
    let e = Series::load(&path).unwrap_err().to_string();
    let held = Series::read_held(bad.as_bytes(), &path.display().to_string());
    assert_eq!(e, held.unwrap_err().to_string());
    let line = bad.lines().count();
    assert!(
        e.contains(&format!("line {line}: not an inferlint.series/1 recording")),
        "{e}"
    );
    assert_eq!(
        e,
        Series::from_text(&bad, &path.display().to_string())
            .unwrap_err()
            .to_string()
    );
    std::fs::write(&path, body).unwrap();
    let e = Series::load(&path).unwrap_err().to_string();
    assert!(
        e.contains("header line (40000 rows look like samples"),
        "{e}"
    );
}
