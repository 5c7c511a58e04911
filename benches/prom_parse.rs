//! Parsing speed of the Prometheus reader on a recorded vLLM /metrics text
//! (`vllm-0.28/live/raw_metrics.prom`, ≈ 50 KB). Target: ≥ 100 MB/s.
//!
//! `cargo bench --bench prom_parse` prints MB/s for one scrape parsed many times and for the
//! text repeated 20 times (1 MB, every name seen 20 times), best of 5 rounds, by wall clock and
//! by the thread's CPU time (the two differ when the machine is busy with other work; the
//! target is judged on CPU time, which other processes cannot inflate).

use std::hint::black_box;
use std::time::{Duration, Instant};

use inferlint_core::prom::Metrics;

const TARGET_MB_S: f64 = 100.0;

fn thread_cpu_secs() -> f64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes one timespec through a valid pointer.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    ts.tv_sec as f64 + ts.tv_nsec as f64 / 1e9
}

/// Parses `text` for about `budget`; returns the best MB/s of 5 rounds by wall clock and by CPU
/// time, and the number of samples.
fn measure(text: &str, budget: Duration) -> (f64, f64, usize) {
    // Calibrate the iteration count to the budget.
    let t = Instant::now();
    let m = Metrics::parse(text).expect("the recorded text parses");
    let samples = m.len();
    let once = t.elapsed().max(Duration::from_micros(1));
    let iters = ((budget.as_secs_f64() / 5.0) / once.as_secs_f64())
        .ceil()
        .max(1.0) as u32;
    let (mut best_wall, mut best_cpu) = (0.0f64, 0.0f64);
    let mb = text.len() as f64 * f64::from(iters) / 1e6;
    for _ in 0..5 {
        let t = Instant::now();
        let c = thread_cpu_secs();
        for _ in 0..iters {
            black_box(Metrics::parse(black_box(text)).unwrap());
        }
        let cpu = thread_cpu_secs() - c;
        best_wall = best_wall.max(mb / t.elapsed().as_secs_f64());
        best_cpu = best_cpu.max(mb / cpu.max(1e-9));
    }
    (best_wall, best_cpu, samples)
}

fn main() {
    let Some(text) = inferlint_core::testkit::evidence_text("vllm-0.28/live/raw_metrics.prom")
    else {
        eprintln!("prom_parse: no recorded evidence; nothing measured");
        return;
    };
    let budget = Duration::from_secs(3);
    let (one_wall, one, samples) = measure(&text, budget);
    println!(
        "prom_parse: one scrape ({} bytes, {samples} samples): {one:.0} MB/s CPU time, {one_wall:.0} MB/s wall",
        text.len()
    );
    let repeated = text.repeat(20);
    let (many_wall, many, samples) = measure(&repeated, budget);
    println!(
        "prom_parse: repeated x20 ({} bytes, {samples} samples): {many:.0} MB/s CPU time, {many_wall:.0} MB/s wall",
        repeated.len()
    );
    if let Ok(load) = std::fs::read_to_string("/proc/loadavg") {
        println!(
            "prom_parse: load average {} on {} CPUs",
            load.split_whitespace().next().unwrap_or("?"),
            std::thread::available_parallelism().map_or(0, |n| n.get())
        );
    }
    let worst = one.min(many);
    println!(
        "prom_parse: {} (target >= {TARGET_MB_S:.0} MB/s)",
        if worst >= TARGET_MB_S {
            "meets target"
        } else {
            "BELOW TARGET"
        }
    );
}
