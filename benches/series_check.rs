//! `inferlint series REC --snapshot SNAP --requested 32` on a 24-hour recording at 0.25 s
//! (345,600 samples). Target: ≤ 0.5 s wall and ≤ 64 MiB peak RSS.
//!
//! The recording is generated from the recorded vLLM 0.28 live run: its samples repeated with
//! the clocks shifted forward and the counters carried on, written to a temporary file. The
//! release binary runs as a child, so the numbers are the command's own: wall time around the
//! child, peak RSS from the kernel's accounting of waited-for children.
//!
//! `cargo bench --bench series_check`

use std::fmt::Write as _;
use std::io::Write as _;
use std::time::Instant;

use inferlint_core::series::Series;

const SAMPLES: usize = 345_600;
const INTERVAL_S: f64 = 0.25;
const RUNS: usize = 5;
const WALL_TARGET_S: f64 = 0.5;
const RSS_TARGET_MIB: f64 = 64.0;

mod support;

fn main() {
    support::measurer_role();
    let Some(rec) = inferlint_core::testkit::evidence("vllm-0.28/live/run.series.jsonl") else {
        return;
    };
    let snap = inferlint_core::testkit::evidence("vllm-0.28/live/after.snapshot.json")
        .expect("the live run's snapshot");
    let recorded = Series::load(&rec).expect("the recorded series reads");
    let dir = tempfile::tempdir().expect("a temporary folder");
    let path = dir.path().join("day.series.jsonl");
    let bytes = write_day(&recorded, &path);
    println!(
        "series_check: {SAMPLES} samples ({:.1} MB) generated from {} recorded ones",
        bytes as f64 / 1e6,
        recorded.samples.len()
    );

    let exe = env!("CARGO_BIN_EXE_inferlint");
    let mut walls = Vec::new();
    let mut rss_mib: f64 = 0.0;
    let args: Vec<std::ffi::OsString> = vec![
        "series".into(),
        path.clone().into(),
        "--snapshot".into(),
        snap.clone().into(),
        "--requested".into(),
        "32".into(),
        "--engine".into(),
        "vllm".into(),
    ];
    for _ in 0..RUNS {
        let start = Instant::now();
        let (out, peak) = support::run_measured(exe, &args);
        walls.push(start.elapsed().as_secs_f64());
        rss_mib = rss_mib.max(peak);
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert_eq!(
            out.status.code(),
            Some(1),
            "{stdout}{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(
            stdout.starts_with("[T14] PASS  gauge denominator is 42"),
            "{stdout}"
        );
    }
    walls.sort_by(f64::total_cmp);
    println!(
        "series_check: wall min {:.3} s, median {:.3} s, max {:.3} s over {RUNS} runs (target ≤ {WALL_TARGET_S} s)",
        walls[0],
        walls[RUNS / 2],
        walls[RUNS - 1]
    );
    println!("series_check: peak RSS {rss_mib:.1} MiB (target ≤ {RSS_TARGET_MIB} MiB)");
    breakdown(&path, &snap);
    let verdict = |ok: bool| if ok { "met" } else { "MISSED" };
    println!(
        "series_check: wall target {}, RSS target {}",
        verdict(walls[RUNS / 2] <= WALL_TARGET_S),
        verdict(rss_mib <= RSS_TARGET_MIB)
    );
}

/// Where the command's time goes, measured in this process: reading the recording, then the
/// checks on it.
fn breakdown(path: &std::path::Path, snap: &std::path::Path) {
    use inferlint_core::checks::{t14, t8, t9};
    use inferlint_core::Engine;
    let start = Instant::now();
    let series = Series::load(path).expect("the generated recording reads");
    let load_s = start.elapsed().as_secs_f64();
    let mb_s = std::fs::metadata(path).map_or(0.0, |m| m.len() as f64 / load_s / 1e6);
    let snapshot = inferlint_core::snapshot::Snapshot::load(snap).expect("the snapshot reads");
    let start = Instant::now();
    let r14 = t14::check(&series, &snapshot, Engine::Vllm);
    let t14_s = start.elapsed().as_secs_f64();
    let start = Instant::now();
    let r9 = t9::check(&series, t14::usable_blocks(&r14), None, Engine::Vllm);
    let t9_s = start.elapsed().as_secs_f64();
    let start = Instant::now();
    let r8 = t8::check(&series, 32, None, Engine::Vllm);
    let t8_s = start.elapsed().as_secs_f64();
    assert_eq!(
        (r14.status, r9.status, r8.status),
        (
            inferlint_core::Status::Pass,
            inferlint_core::Status::Warn,
            inferlint_core::Status::Fail
        )
    );
    println!(
        "series_check: in process: Series::load {load_s:.3} s ({mb_s:.0} MB/s), T14 {t14_s:.3} s, T9 {t9_s:.3} s, T8 {t8_s:.3} s"
    );
}

/// Writes the header and `SAMPLES` rows: the recorded rows in a loop, clocks shifted by the
/// interval, counters continued across loops so they never go down. Returns the bytes written.
fn write_day(recorded: &Series, path: &std::path::Path) -> usize {
    let rows = &recorded.samples;
    assert!(!rows.is_empty());
    let first = &rows[0];
    let last = &rows[rows.len() - 1];
    let gain = |f: fn(&inferlint_core::series::SeriesSample) -> Option<f64>| {
        f(last).unwrap_or(0.0) - f(first).unwrap_or(0.0)
    };
    let gains = [
        gain(|s| s.preemptions()),
        gain(|s| s.generation_tokens()),
        gain(|s| s.prompt_tokens()),
    ];
    let t0 = first.t_wall;
    let m0 = first.t_mono_ns().unwrap_or(0);
    let mut text = String::with_capacity(SAMPLES * 200);
    text.push_str(
        "{\"schema\": \"inferlint.series/1\", \"url\": \"http://127.0.0.1:8000\", \"interval_s\": 0.25, \"engine\": \"vllm\"}\n",
    );
    let num = |x: Option<f64>| x.map_or("null".to_string(), |v| format!("{v:?}"));
    for i in 0..SAMPLES {
        let s = &rows[i % rows.len()];
        let lap = (i / rows.len()) as f64;
        let counter = |v: Option<f64>, k: usize| num(v.map(|v| v + lap * gains[k]));
        let _ = writeln!(
            text,
            "{{\"t_wall\": {:.6}, \"t_mono_ns\": {}, \"running\": {}, \"waiting\": {}, \"kv_usage\": {}, \"preemptions\": {}, \"generation_tokens\": {}, \"prompt_tokens\": {}}}",
            t0 + i as f64 * INTERVAL_S,
            m0 + i as i64 * 250_000_000,
            num(s.running()),
            num(s.waiting()),
            num(s.kv_usage()),
            counter(s.preemptions(), 0),
            counter(s.generation_tokens(), 1),
            counter(s.prompt_tokens(), 2),
        );
    }
    let mut f = std::fs::File::create(path).expect("the temporary file");
    f.write_all(text.as_bytes()).expect("written");
    text.len()
}
