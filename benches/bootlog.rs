//! Speed of the boot-log analyzer.
//!
//! 1. `check-log`'s work on an 8.8 MB log: the recorded SGLang log `sglang-0.5/capped/boot.log`
//!    repeated 20 times (made here, in memory and in a temp file), read into facts and checked
//!    (T12/T7, T5, T6 and the unparsed/unreadable results). Target ≥ 100 MB/s. Median of 7
//!    rounds, by wall clock and by the thread's CPU time.
//! 2. The live analyzer's cost per line: each `feed_line` timed alone over real logs of the three
//!    engines; median, 90th and 99th percentile. Target: median ≤ 2 µs.
//!
//! `cargo bench --bench bootlog`

use std::hint::black_box;
use std::time::Instant;

use inferlint_core::bootlog::{self, Analyzer, BootFacts};
use inferlint_core::checks::{t12, t5, t6};
use inferlint_core::CheckResult;

const TARGET_MB_S: f64 = 100.0;
const TARGET_LINE_US: f64 = 2.0;

fn thread_cpu_secs() -> f64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes one timespec through a valid pointer.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    ts.tv_sec as f64 + ts.tv_nsec as f64 / 1e9
}

/// What `check-log` computes for one log once its facts are read.
fn checks(f: &BootFacts) -> Vec<CheckResult> {
    let mut r = vec![t12::from_facts(f), t5::check(f), t6::check(f)];
    r.extend(t12::unparsed(f));
    r.extend(t12::unreadable(f));
    r
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    sorted[((sorted.len() - 1) as f64 * p).round() as usize]
}

/// Median MB/s of 7 rounds (wall, CPU) of `work` over `bytes` bytes.
fn rounds(bytes: usize, mut work: impl FnMut()) -> (f64, f64) {
    work(); // warm-up: regexes and automata are built on first use
    let (mut wall, mut cpu) = (Vec::new(), Vec::new());
    for _ in 0..7 {
        let t = Instant::now();
        let c = thread_cpu_secs();
        work();
        cpu.push(bytes as f64 / 1e6 / (thread_cpu_secs() - c));
        wall.push(bytes as f64 / 1e6 / t.elapsed().as_secs_f64());
    }
    (median(&mut wall), median(&mut cpu))
}

fn main() {
    let Some(one) = inferlint_core::testkit::evidence_text("sglang-0.5/capped/boot.log") else {
        eprintln!("no recorded evidence: nothing to measure");
        return;
    };
    let big = one.repeat(20);
    println!(
        "check-log work on sglang-0.5/capped/boot.log x 20: {:.1} MB, {} lines",
        big.len() as f64 / 1e6,
        big.lines().count()
    );

    let (wall, cpu) = rounds(big.len(), || {
        let f = bootlog::parse_text(black_box(&big), None);
        black_box(checks(&f));
    });
    println!("  in memory:  {wall:7.1} MB/s wall, {cpu:7.1} MB/s CPU (median of 7)");

    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("boot.log");
    std::fs::write(&path, &big).expect("write temp log");
    let (fwall, fcpu) = rounds(big.len(), || {
        let f = bootlog::parse_file(black_box(&path), None).expect("readable");
        black_box(checks(&f));
    });
    println!("  from file:  {fwall:7.1} MB/s wall, {fcpu:7.1} MB/s CPU (median of 7)");
    let verdict = if fcpu >= TARGET_MB_S {
        "meets"
    } else {
        "MISSES"
    };
    println!("  target >= {TARGET_MB_S} MB/s: {verdict}");

    println!("live analyzer, each feed_line timed alone:");
    let mut all = Vec::new();
    for rel in [
        "sglang-0.5/capped/boot.log",
        "vllm-0.28/live/boot.log",
        "vllm-0.28/boot_spec_backend_override.log",
        "trtllm-1.3/qwen3-8b/boot.log",
    ] {
        let Some(text) = inferlint_core::testkit::evidence_text(rel) else {
            continue;
        };
        let lines: Vec<&str> = text.lines().collect();
        // Warm-up pass, then the timed pass on a fresh analyzer.
        let mut warm = Analyzer::new(None);
        for l in &lines {
            black_box(warm.feed_line(l));
        }
        let mut a = Analyzer::new(None);
        let mut times = Vec::with_capacity(lines.len());
        for l in &lines {
            let t = Instant::now();
            black_box(a.feed_line(black_box(l)));
            times.push(t.elapsed().as_secs_f64() * 1e6);
        }
        black_box(a.finish());
        times.sort_by(f64::total_cmp);
        println!(
            "  {rel:45} {:6} lines: median {:.2} µs, p90 {:.2} µs, p99 {:.2} µs",
            lines.len(),
            percentile(&times, 0.5),
            percentile(&times, 0.9),
            percentile(&times, 0.99)
        );
        all.extend(times);
    }
    if !all.is_empty() {
        all.sort_by(f64::total_cmp);
        let med = percentile(&all, 0.5);
        let verdict = if med <= TARGET_LINE_US {
            "meets"
        } else {
            "MISSES"
        };
        println!(
            "  all {} lines: median {med:.2} µs (target <= {TARGET_LINE_US} µs: {verdict})",
            all.len()
        );
    }
}
