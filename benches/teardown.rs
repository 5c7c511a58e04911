//! The supervisor crate's two speed promises, measured through the product's own shepherd
//! (`inferlint shepherd`) with `cargo bench --bench teardown`:
//!
//! 1. **Teardown of a cooperative tree** (leader → worker → helper, each exiting within 50 ms of
//!    SIGTERM), from the stop request until the tree is verified empty: target ≤ 200 ms. Both
//!    backends when the cgroup one is available (root), else the process group.
//! 2. **An output flood of 100 MB/s** from the server, drained without the server ever blocking
//!    on a full pipe: the server writes with `O_NONBLOCK` and counts every `EAGAIN` (a write
//!    that would have blocked) and the time it spent waiting for room.
//!
//! The fake servers are this same program re-executed with `INFERLINT_BENCH_ROLE` set.

use std::io::Write;
use std::os::fd::AsRawFd;
use std::time::{Duration, Instant};

use inferlint_supervisor::{
    CgroupMode, Graces, ShepherdProgram, SpawnOptions, StopMode, Supervised,
};

const ROLE_ENV: &str = "INFERLINT_BENCH_ROLE";

fn main() {
    match std::env::var(ROLE_ENV).as_deref() {
        Ok("leader") => return tree_process(Some("worker")),
        Ok("worker") => return tree_process(Some("helper")),
        Ok("helper") => return tree_process(None),
        Ok("flood") => return flood(),
        _ => {}
    }
    println!(
        "machine: {} cores, kernel {}",
        std::thread::available_parallelism().map_or(0, |n| n.get()),
        std::fs::read_to_string("/proc/sys/kernel/osrelease")
            .unwrap_or_default()
            .trim()
    );
    let cgroups = cgroup_usable();
    for mode in [CgroupMode::Require, CgroupMode::Off] {
        if mode == CgroupMode::Require && !cgroups {
            println!("cooperative teardown, cgroup backend: skipped (no writable cgroup2 here)");
            continue;
        }
        teardown_bench(mode);
    }
    flood_bench();
}

fn cgroup_usable() -> bool {
    inferlint_supervisor::cgroup::Cgroup::create(&format!("inferlint-bench-{}", std::process::id()))
        .map(|c| c.remove().is_ok())
        .unwrap_or(false)
}

fn spawn(role: &str, mode: CgroupMode) -> Supervised {
    let mut o = SpawnOptions::new(
        ShepherdProgram {
            program: env!("CARGO_BIN_EXE_inferlint").into(),
            args: vec!["shepherd".into()],
        },
        vec![std::env::current_exe().unwrap().into_os_string()],
        inferlint_host::names::names(),
    );
    o.env = vec![(ROLE_ENV.into(), role.into())];
    o.cgroup = mode;
    o.graces = Graces::default();
    Supervised::spawn(o).expect("spawn")
}

/// A cooperative tree process: starts its child (if any), prints `ready` when the whole tree
/// runs, and on SIGTERM stops its child, waits for it, and exits.
fn tree_process(child_role: Option<&str>) {
    let mut signals = signal_hook::iterator::Signals::new([signal_hook::consts::SIGTERM]).unwrap();
    let mut child = child_role.map(|r| {
        std::process::Command::new(std::env::current_exe().unwrap())
            .env(ROLE_ENV, r)
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap()
    });
    if let Some(c) = &mut child {
        // Wait for the child's own `ready` so the leader's means "the whole tree runs".
        let mut line = String::new();
        let mut r = std::io::BufReader::new(c.stdout.take().unwrap());
        let _ = std::io::BufRead::read_line(&mut r, &mut line);
    }
    println!("ready");
    let _ = std::io::stdout().flush();
    // Block until SIGTERM.
    let _ = signals.forever().next();
    if let Some(c) = &mut child {
        let _ = inferlint_supervisor::sys::kill(c.id() as i32, nix::sys::signal::Signal::SIGTERM);
        let _ = c.wait();
    }
    std::process::exit(0);
}

fn wait_ready(s: &mut Supervised) -> inferlint_supervisor::LineReceiver {
    let mut lines = s.take_lines().unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        match lines.try_recv() {
            Some(l) if l.text == "ready" => return lines,
            Some(_) => {}
            None => {
                assert!(Instant::now() < deadline, "the tree never got ready");
                std::thread::sleep(Duration::from_millis(1));
            }
        }
    }
}

fn stats(mut v: Vec<f64>) -> String {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    let pct = |p: f64| v[((p / 100.0) * (v.len() - 1) as f64).round() as usize];
    format!(
        "min {:.1} ms, median {:.1} ms, p95 {:.1} ms, max {:.1} ms",
        v[0],
        pct(50.0),
        pct(95.0),
        v[v.len() - 1]
    )
}

fn teardown_bench(mode: CgroupMode) {
    const RUNS: usize = 30;
    let mut wall = Vec::new();
    let mut shepherd_side = Vec::new();
    for _ in 0..RUNS {
        let mut s = spawn("leader", mode);
        let _lines = wait_ready(&mut s);
        let t0 = Instant::now();
        let report = s.teardown(StopMode::Graceful);
        wall.push(t0.elapsed().as_secs_f64() * 1000.0);
        shepherd_side.push(report.elapsed_ms as f64);
        assert!(report.is_clean(), "{report:?}");
        assert_eq!(report.pipes_at_eof, Some(true));
    }
    let name = match mode {
        CgroupMode::Off => "process group",
        _ => "cgroup",
    };
    let median = {
        let mut w = wall.clone();
        w.sort_by(|a, b| a.partial_cmp(b).unwrap());
        w[w.len() / 2]
    };
    println!(
        "cooperative teardown ({name}, {RUNS} runs), stop request → verified empty and pipes at EOF: {}; \
         the shepherd's own teardown: {}  [target ≤ 200 ms: {}]",
        stats(wall),
        stats(shepherd_side),
        if median <= 200.0 { "met" } else { "MISSED" }
    );
}

/// The flooding server: writes 100-byte lines at `FLOOD_MBPS` for `FLOOD_SECS` with
/// `O_NONBLOCK`, then prints how often a write would have blocked.
fn flood() {
    let mbps: f64 = std::env::var("FLOOD_MBPS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(100.0);
    let secs: f64 = std::env::var("FLOOD_SECS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(3.0);
    let out = std::io::stdout();
    let fd = out.as_raw_fd();
    inferlint_supervisor::sys::set_nonblocking(&out, true).unwrap();
    let line = {
        let mut l = vec![b'x'; 99];
        l.push(b'\n');
        l
    };
    let chunk: Vec<u8> = line.iter().copied().cycle().take(64 * 1024).collect();
    let rate = mbps * 1e6;
    let total = (rate * secs) as usize;
    let t0 = Instant::now();
    let (mut written, mut eagain, mut blocked) = (0usize, 0u64, Duration::ZERO);
    while written < total {
        // Pace to the target rate.
        let due = Duration::from_secs_f64(written as f64 / rate);
        if let Some(wait) = due.checked_sub(t0.elapsed()) {
            std::thread::sleep(wait);
        }
        let n = chunk.len().min(total - written);
        let mut buf = &chunk[..n];
        while !buf.is_empty() {
            // SAFETY: buf is valid for its length.
            let r = unsafe { libc::write(fd, buf.as_ptr().cast(), buf.len()) };
            if r >= 0 {
                buf = &buf[r as usize..];
                continue;
            }
            let e = std::io::Error::last_os_error();
            if e.raw_os_error() == Some(libc::EAGAIN) {
                eagain += 1;
                let w = Instant::now();
                let mut p = libc::pollfd {
                    fd,
                    events: libc::POLLOUT,
                    revents: 0,
                };
                // SAFETY: one valid pollfd.
                unsafe { libc::poll(&mut p, 1, 1000) };
                blocked += w.elapsed();
            } else if e.raw_os_error() != Some(libc::EINTR) {
                std::process::exit(1);
            }
        }
        written += n;
    }
    let took = t0.elapsed().as_secs_f64();
    let _ = inferlint_supervisor::sys::set_nonblocking(&out, false);
    eprintln!(
        "flood-result bytes={written} secs={took:.3} eagain={eagain} blocked_ms={:.1}",
        blocked.as_secs_f64() * 1000.0
    );
}

fn flood_bench() {
    for (label, consume) in [
        ("a consumer reading every line", true),
        ("no line consumer", false),
    ] {
        let dir = std::env::temp_dir().join(format!("inferlint-flood-{}", std::process::id()));
        let raw = dir.with_extension("log");
        let mut o = SpawnOptions::new(
            ShepherdProgram {
                program: env!("CARGO_BIN_EXE_inferlint").into(),
                args: vec!["shepherd".into()],
            },
            vec![std::env::current_exe().unwrap().into_os_string()],
            inferlint_host::names::names(),
        );
        o.env = vec![(ROLE_ENV.into(), "flood".into())];
        o.cgroup = CgroupMode::Off;
        o.raw_output = Some(raw.clone());
        let mut s = Supervised::spawn(o).expect("spawn");
        let mut lines = s.take_lines().unwrap();
        let t0 = Instant::now();
        let mut consumed = 0u64;
        if consume {
            loop {
                match lines.try_recv() {
                    Some(_) => consumed += 1,
                    None if s.exit_status().is_some() => break,
                    None => std::thread::sleep(Duration::from_micros(200)),
                }
            }
        } else {
            // Take nothing: the channel fills and lines are dropped, never the server's writes.
            while s.exit_status().is_none() {
                std::thread::sleep(Duration::from_millis(1));
            }
        }
        let report = s.teardown(StopMode::Graceful);
        let raw_bytes = std::fs::metadata(&raw).map(|m| m.len()).unwrap_or(0);
        let result = std::fs::read_to_string(&raw)
            .unwrap_or_default()
            .lines()
            // Streams interleave in the raw log at read granularity: search, do not anchor.
            .find_map(|l| l.find("flood-result ").map(|i| l[i + 13..].to_string()));
        let _ = std::fs::remove_file(&raw);
        println!(
            "output flood at 100 MB/s, {label}: server {}; supervisor read {:.1} MB in {:.2} s, \
             raw log {:.1} MB, lines consumed {consumed}, dropped {}; teardown clean: {}",
            result.unwrap_or_else(|| "(no result line)".into()),
            s.output_bytes() as f64 / 1e6,
            t0.elapsed().as_secs_f64(),
            raw_bytes as f64 / 1e6,
            s.dropped_lines(),
            report.is_clean()
        );
    }
}
