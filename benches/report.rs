//! Report benchmarks (`cargo bench --bench report`): the page of the recorded vLLM 0.28 live run,
//! and of a 24-hour recording at 0.25 s (345,600 readings made from the live one with its clocks
//! shifted), through the library and through `inferlint report` on a run folder.
//!
//! Targets: live ≤ 30 ms; 24 hours ≤ 1 s wall and ≤ 128 MiB peak RSS, page ≤ 2 MB.

use std::time::{Duration, Instant};

use inferlint_core::series::SeriesWriter;
use inferlint_report::{Inputs, Report};

#[path = "../tests/report_support/long.rs"]
mod long;
mod support;

const DAY: usize = 345_600;

fn live_inputs() -> Option<Inputs> {
    let dir = inferlint_core::testkit::evidence("vllm-0.28/live")?;
    let files = inferlint_report::discover::RunFiles {
        folder: Some(dir),
        ..Default::default()
    }
    .discover()
    .expect("run files");
    let mut inputs = files.load(None).expect("readable run files");
    inputs.requested = Some(32);
    Some(inputs)
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

/// Peak resident set of this process so far, in MiB (VmHWM).
fn peak_rss_mib() -> f64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
        .map(|kb| kb / 1024.0)
        .unwrap_or(f64::NAN)
}

fn verdict(ok: bool) -> &'static str {
    if ok {
        "ok"
    } else {
        "OVER TARGET"
    }
}

fn main() {
    support::measurer_role();
    let Some(live) = live_inputs() else {
        eprintln!("no recorded evidence: nothing to measure");
        return;
    };
    println!(
        "machine: {} cores, {}",
        std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(0),
        std::fs::read_to_string("/proc/cpuinfo")
            .ok()
            .and_then(
                |c| c.lines().find(|l| l.starts_with("model name")).map(|l| l
                    .split(':')
                    .nth(1)
                    .unwrap_or("")
                    .trim()
                    .to_string())
            )
            .unwrap_or_else(|| "unknown CPU".into())
    );

    // 1. The recorded live run: build + render, in memory.
    let mut times = Vec::new();
    let mut size = 0;
    for _ in 0..25 {
        let inputs = live.clone();
        let t = Instant::now();
        let page = Report::build(inputs).render_page();
        times.push(t.elapsed());
        size = page.len();
    }
    let m = median(times);
    println!(
        "live 0.28 run (365 readings): build + render median {:.1} ms, page {} bytes  [{}: target 30 ms]",
        m.as_secs_f64() * 1e3,
        size,
        verdict(m <= Duration::from_millis(30))
    );

    // 2. A day at 0.25 s, in memory.
    let mut day = live.clone();
    let base = day.series.take().expect("the live run has a recording");
    day.series = Some(long::stretch(&base, DAY));
    let mut times = Vec::new();
    let mut size = 0;
    for _ in 0..5 {
        let inputs = day.clone();
        let t = Instant::now();
        let page = Report::build(inputs).render_page();
        times.push(t.elapsed());
        size = page.len();
    }
    let m = median(times);
    println!(
        "24-hour recording ({DAY} readings), library: build + render median {:.0} ms, page {} bytes, process peak RSS {:.0} MiB  [{}: targets 1 s, 2 MB]",
        m.as_secs_f64() * 1e3,
        size,
        peak_rss_mib(),
        verdict(m <= Duration::from_secs(1) && size <= 2_000_000)
    );

    // 3. A day at 0.25 s, end to end: `inferlint report RUN` reading the files from disk.
    let tmp = std::env::temp_dir().join(format!("inferlint-bench-{}", std::process::id()));
    std::fs::create_dir_all(&tmp).unwrap();
    let src = inferlint_core::testkit::evidence("vllm-0.28/live").unwrap();
    for f in ["boot.log", "before.snapshot.json", "after.snapshot.json"] {
        std::fs::copy(src.join(f), tmp.join(f)).unwrap();
    }
    let series = day.series.as_ref().unwrap();
    let mut w = SeriesWriter::create(
        &tmp.join("run.series.jsonl"),
        &series.header.url,
        series.header.interval_s,
    )
    .unwrap();
    w.write_header(series.header.engine).unwrap();
    for s in &series.samples {
        w.write_sample(s).unwrap();
    }
    w.finish().unwrap();
    let series_bytes = std::fs::metadata(tmp.join("run.series.jsonl"))
        .unwrap()
        .len();
    let bin = env!("CARGO_BIN_EXE_inferlint");
    let mut times = Vec::new();
    let mut rss: f64 = 0.0;
    for _ in 0..3 {
        let t = Instant::now();
        let args: Vec<std::ffi::OsString> = vec![
            "report".into(),
            tmp.clone().into(),
            "--requested".into(),
            "32".into(),
        ];
        let (out, peak) = support::run_measured(bin, &args);
        times.push(t.elapsed());
        rss = rss.max(peak);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let m = median(times);
    let page = std::fs::metadata(tmp.join("report.html")).unwrap().len();
    println!(
        "24-hour recording, `inferlint report RUN` ({series_bytes} byte series file): wall median {:.0} ms, peak RSS {:.0} MiB, page {page} bytes  [{}: targets 1 s, 128 MiB, 2 MB]",
        m.as_secs_f64() * 1e3,
        rss,
        verdict(m <= Duration::from_secs(1) && rss <= 128.0 && page <= 2_000_000)
    );
    let _ = std::fs::remove_dir_all(&tmp);
}
