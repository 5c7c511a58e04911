//! `inferlint --version`: the cost of starting the binary at all, which every wrapper script and
//! Slurm prologue that asks for the version pays. Target: ≤ 5 ms wall (median).
//!
//! The release binary runs as a child 200 times after 10 warm-up runs; the wall time is measured
//! around each child, so it includes fork, exec, the dynamic loader and the runtime's start-up.
//! `true` is timed the same way as the floor the machine itself sets.
//!
//! `cargo bench --bench startup`

use std::process::{Command, Stdio};
use std::time::Instant;

const WARMUP: usize = 10;
const RUNS: usize = 200;
const TARGET_MS: f64 = 5.0;

/// Wall times in milliseconds of `RUNS` runs of the command, sorted.
fn time_runs(program: &str, args: &[&str]) -> Vec<f64> {
    let run = || {
        let start = Instant::now();
        let status = Command::new(program)
            .args(args)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .expect("the program runs");
        assert!(status.success(), "{program} {args:?}: {status}");
        start.elapsed().as_secs_f64() * 1e3
    };
    for _ in 0..WARMUP {
        run();
    }
    let mut ms: Vec<f64> = (0..RUNS).map(|_| run()).collect();
    ms.sort_by(f64::total_cmp);
    ms
}

fn quantile(sorted: &[f64], q: f64) -> f64 {
    sorted[((sorted.len() - 1) as f64 * q).round() as usize]
}

fn main() {
    let exe = env!("CARGO_BIN_EXE_inferlint");
    let out = Command::new(exe).arg("--version").output().unwrap();
    let version = String::from_utf8_lossy(&out.stdout);
    assert!(version.starts_with("inferlint "), "{version}");
    let floor = time_runs("true", &[]);
    let ours = time_runs(exe, &["--version"]);
    let median = quantile(&ours, 0.5);
    println!(
        "startup: `inferlint --version` median {median:.2} ms, p90 {:.2} ms, min {:.2} ms over {RUNS} runs \
         (`true`: median {:.2} ms); target ≤ {TARGET_MS} ms: {}",
        quantile(&ours, 0.9),
        ours[0],
        quantile(&floor, 0.5),
        if median <= TARGET_MS { "met" } else { "NOT MET" }
    );
}
