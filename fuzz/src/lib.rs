//! The bodies of the fuzz targets: what each one does with an input, and what must hold for it.
//! libFuzzer drives them from `fuzz_targets/*`; `tests/fuzz_regressions.rs` replays the corpora,
//! the saved regressions and the recorded evidence through the same functions under plain
//! `cargo test`, so this file uses nothing but inferlint and serde_json.
//!
//! A body panics when a property fails; the readers themselves must never panic.

use std::path::PathBuf;

use inferlint_core::bench::{self, untimed_requests, BenchResult};
use inferlint_core::bootlog::{self, Analyzer};
use inferlint_core::checks::{blocks, counters, t1, t10, t12, t4_t11, t5, t6, t8, t9};
use inferlint_core::prom::{Metrics, PromError};
use inferlint_core::series::Series;
use inferlint_core::snapshot::Snapshot;
use inferlint_core::Engine;

/// What a fuzz target does with one input.
pub type Body = fn(&[u8]);

/// The targets, by name, as `cargo fuzz` knows them.
pub const TARGETS: [(&str, Body); 5] = [
    ("prom_parse", prom_parse),
    ("snapshot_read", snapshot_read),
    ("series_read", series_read),
    ("bench_read", bench_read),
    ("bootlog_feed", bootlog_feed),
];

/// A scratch file of this process and thread, removed when dropped.
struct Scratch(PathBuf);

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// Writes `data` to a scratch file with the given extension, so that the readers' file path
/// (`load`, which sees raw bytes) is fuzzed as well as their text path.
fn scratch_file(ext: &str, data: &[u8]) -> Scratch {
    let name = format!(
        "inferlint-fuzz-{}-{:?}.{ext}",
        std::process::id(),
        std::thread::current().id()
    )
    .replace(
        |c: char| !c.is_ascii_alphanumeric() && c != '.' && c != '-',
        "",
    );
    let path = std::env::temp_dir().join(name);
    std::fs::write(&path, data).expect("write the scratch file");
    Scratch(path)
}

/// The text the file path reads the same way as the text path: valid UTF-8 without NUL bytes
/// (the file readers refuse NUL and invalid UTF-8 as binary; the text path never sees them).
fn plain_text(data: &[u8]) -> Option<&str> {
    std::str::from_utf8(data).ok().filter(|t| !t.contains('\0'))
}

/// Both readers accepted, or both refused.
fn agree<A, B, E: std::fmt::Debug>(file: &Result<A, E>, text: &Result<B, E>) {
    if file.is_ok() != text.is_ok() {
        panic!(
            "file and text readers disagree: {:?} vs {:?}",
            file.as_ref().err(),
            text.as_ref().err()
        );
    }
}

/// The Prometheus parser: samples or an error naming a line, and every lookup agrees with the
/// samples themselves.
pub fn prom_parse(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    let m = match Metrics::parse(&text) {
        Ok(m) => m,
        Err(PromError::NotASample { line, .. } | PromError::MalformedLabels { line, .. }) => {
            assert!(
                line >= 1 && line <= text.split('\n').count(),
                "line {line} out of range"
            );
            return;
        }
        Err(e) => panic!("parse gave a lookup error: {e}"),
    };
    let mut counted = 0;
    for name in m.names() {
        assert!(m.has(name));
        let all = m.series(name, &[]);
        assert!(!all.is_empty(), "{name} listed but has no series");
        counted += all.len();
        // A name with samples always has a total (possibly NaN), never "absent".
        assert!(m.total(name).is_some());
        match m.single(name) {
            Ok(v) => assert!(all.len() == 1 && v.is_some()),
            Err(_) => assert!(all.len() > 1),
        }
        let first = all[0];
        let labels: Vec<(&str, &str)> = first
            .labels
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect();
        assert!(m
            .series(name, &labels)
            .iter()
            .any(|s| std::ptr::eq(*s, first)));
        assert!(m.total_where(name, &labels).is_some());
        let _ = m.info_labels(name);
        assert!(m.names_with_prefix(name).any(|n| n == name));
    }
    assert_eq!(counted, m.samples().len());
    assert!(m.total("\u{0}no such metric").is_none());
    for s in m.samples() {
        assert!(
            s.labels.windows(2).all(|w| w[0].0 <= w[1].0),
            "labels not sorted"
        );
    }
    let _ = m.engine();
    let _ = m.created_stamps().count();
}

/// The snapshot reader (a document or bare Prometheus text) through a file and through text;
/// a snapshot that loads saves and loads back unchanged; then the checks on two snapshots.
pub fn snapshot_read(data: &[u8]) {
    let from_file = Snapshot::load(&scratch_file("snapshot.json", data).0);
    if let Some(text) = plain_text(data) {
        let from_text = Snapshot::from_text(text, "fuzz.snapshot.json");
        agree(&from_file, &from_text);
        if let (Ok(f), Ok(t)) = (&from_file, &from_text) {
            assert_eq!(f.metrics.samples().len(), t.metrics.samples().len());
            assert_eq!(f.text, t.text);
        }
    }
    let text = String::from_utf8_lossy(data);
    let Ok(snap) = Snapshot::from_text(&text, "fuzz.snapshot.json") else {
        return;
    };
    let _ = snap.has_clock();
    let _ = snap.engine();
    let saved = snap.to_json();
    let back = Snapshot::from_text(&saved, "fuzz.snapshot.json")
        .unwrap_or_else(|e| panic!("a saved snapshot does not load back: {e}"));
    assert_eq!(back.text, snap.text);
    assert_eq!(back.url, snap.url);
    assert_eq!(back.t_mono_ns, snap.t_mono_ns);
    assert_eq!(back.metrics.samples().len(), snap.metrics.samples().len());
    assert!(
        back.t_wall.to_bits() == snap.t_wall.to_bits()
            || (back.t_wall.is_nan() && !snap.t_wall.is_finite()),
        "t_wall {} came back as {}",
        snap.t_wall,
        back.t_wall
    );
    let _ = counters::span(&snap, &back);
    let _ = counters::moved_created_stamps(&snap.metrics, &back.metrics);
    for engine in Engine::ALL {
        let _ = t1::check(&snap, &back, None, None, engine).line();
        let r = t10::check(&snap, &back, None, engine);
        let _ = r.line();
    }
}

/// The series reader through a file (raw bytes, line by line), through the bytes held in memory
/// (as `inferlint series` reads a mapped file) and through text; the first two decide alike on
/// every input, all three on plain text; then the checks that read a series.
pub fn series_read(data: &[u8]) {
    let scratch = scratch_file("series.jsonl", data);
    let from_file = Series::load(&scratch.0);
    let held = Series::read_held(data, &scratch.0.display().to_string());
    agree(&from_file, &held);
    match (&from_file, &held) {
        (Ok(f), Ok(h)) => {
            // As printed, so that a NaN reading (equal to nothing) compares.
            assert_eq!(format!("{:?}", f.samples), format!("{:?}", h.samples));
            assert_eq!(f.skipped_lines, h.skipped_lines);
        }
        (Err(f), Err(h)) => assert_eq!(f.to_string(), h.to_string()),
        _ => {}
    }
    let text = String::from_utf8_lossy(data);
    if plain_text(data).is_some() {
        let from_text = Series::from_text(&text, "fuzz.series.jsonl");
        agree(&from_file, &from_text);
        if let (Ok(f), Ok(t)) = (&from_file, &from_text) {
            assert_eq!(f.samples.len(), t.samples.len());
            assert_eq!(f.skipped_lines, t.skipped_lines);
            assert_eq!(f.header.engine, t.header.engine);
        }
    }
    let Ok(series) = from_file else {
        return;
    };
    let rows = text.split('\n').filter(|l| !l.trim().is_empty()).count();
    assert!(series.samples.len() + series.skipped_lines <= rows);
    let _ = series.busy().count();
    if let Some(p) = series.peak_running() {
        assert!(series
            .samples
            .iter()
            .filter_map(|s| s.running())
            .all(|r| r.is_nan() || r <= p));
    }
    let readings = series.usage_readings();
    assert!(readings.iter().all(|u| *u != 0.0 && !u.is_nan()));
    let inference = blocks::infer_blocks(&readings);
    if let Some(n) = inference.blocks {
        assert!((1..=blocks::MAX_DENOMINATOR).contains(&n));
    }
    for s in series.busy() {
        if let (Some(u), Some(r)) = (s.kv_usage(), s.running()) {
            let _ = blocks::predicted_ceiling(u, r, None);
            let _ = blocks::predicted_ceiling(u, r, inference.blocks);
        }
    }
    for engine in Engine::ALL {
        let _ = t8::check(&series, 32, None, engine).line();
        let _ = t9::check(&series, None, None, engine).line();
        let _ = t9::check(&series, inference.trusted_blocks(), None, engine).line();
    }
}

/// The load-tool result reader (a JSON document or JSON lines) through a file and through text,
/// and the untimed-request counter.
pub fn bench_read(data: &[u8]) {
    let from_file = bench::load(&scratch_file("bench.json", data).0);
    if let Some(text) = plain_text(data) {
        let from_text = BenchResult::from_text(text, "fuzz.bench.json");
        agree(&from_file, &from_text);
        if let (Ok(f), Ok(t)) = (&from_file, &from_text) {
            assert_eq!(f.completed.map(f64::to_bits), t.completed.map(f64::to_bits));
        }
    }
    let text = String::from_utf8_lossy(data);
    if let Ok(r) = BenchResult::from_text(&text, "fuzz.bench.json") {
        assert_eq!(r.path, "fuzz.bench.json");
        let _ = r.has_counts();
    }
    let _ = untimed_requests(&text);
}

/// The boot-log analyzer fed the input in chunks cut anywhere (mid-line, mid-character), as a
/// live server's output arrives. The first byte picks the engine hint and the chunk sizes. The
/// facts must not depend on where the chunks were cut: they equal those of the whole input read
/// at once. Then the boot-log checks run on them.
pub fn bootlog_feed(data: &[u8]) {
    let Some((&control, log)) = data.split_first() else {
        return;
    };
    let hint = match control % 4 {
        0 => None,
        k => Some(Engine::ALL[usize::from(k - 1)]),
    };
    // Chunk sizes from a small generator seeded by the control byte: 1..=64 bytes, or 4 KiB.
    let mut state = u32::from(control) | 0x9e37_0000;
    let mut a = Analyzer::new(hint);
    let mut rest = log;
    while !rest.is_empty() {
        state ^= state << 13;
        state ^= state >> 17;
        state ^= state << 5;
        let n = if state % 8 == 0 {
            4096
        } else {
            1 + (state % 64) as usize
        };
        let (chunk, tail) = rest.split_at(n.min(rest.len()));
        for e in a.feed_bytes(chunk) {
            assert!(
                e.lineno >= 1 && e.lineno <= a.lines(),
                "event at line {} of {}",
                e.lineno,
                a.lines()
            );
        }
        let _ = a.last_line();
        rest = tail;
    }
    let chunked = a.finish();
    let whole = bootlog::parse_bytes(log, hint);
    // Compared as JSON: a NaN field is then equal to itself.
    assert_eq!(
        serde_json::to_value(&chunked).expect("facts serialize"),
        serde_json::to_value(&whole).expect("facts serialize"),
        "facts depend on where the input was cut"
    );
    let text = String::from_utf8_lossy(log);
    let _ = t5::check(&whole).line();
    let _ = t6::check(&whole).line();
    let _ = t12::check(&text, &whole).line();
    let pair = [("a".to_string(), &whole), ("b".to_string(), &chunked)];
    let _ = t4_t11::check_t4(&pair);
    let _ = t4_t11::check_t11(&pair);
    let _ = bootlog::result_block(&whole);
    let _ = bootlog::untested_version_note(&whole);
    if let Some(f) = &whole.failure {
        let _ = f.summary();
    }
}
