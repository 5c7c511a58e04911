//! `inferlint run` end to end: the real binary supervising `inferlint sim serve` (a simulated
//! vLLM with its own engine process and simulated GPU; SGLang in [`sglang`], TensorRT-LLM in
//! [`trtllm`], their fault cases in [`faults`]) while `inferlint sim bench` loads it.
//!
//! These tests take turns (one lock) to keep their timings steady; a run signals only what it
//! started, so they no longer need to for safety (tests/run_neighbours.rs runs them side by
//! side).

use crate::run_support;

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use run_support::{
    bin, clean_exit_code, json_file, message_of, names, run_with_limit, status_of, text, World,
};

const LIMIT: Duration = Duration::from_secs(150);

/// One supervised run at a time (two cores), in this binary and beside it.
fn turn() -> crate::serial::Turn {
    crate::serial::turn("runs")
}

impl World {
    fn serve(&self, extra: &str) -> String {
        self.sim_serve("0.5", extra)
    }
    fn run(&self, serve: &str, args: &[&str], load: &[String]) -> (i32, String, String) {
        let out = run_with_limit(self.command(serve, args, load), LIMIT);
        (
            out.status.code().unwrap_or(-1),
            text(&out.stdout),
            text(&out.stderr),
        )
    }
}

fn report_cli(dir: &Path) -> (i32, String, String) {
    let mut cmd = Command::new(bin());
    cmd.arg("report").arg(dir).env_remove("INFERLINT_ENGINE");
    let out = run_with_limit(cmd, Duration::from_secs(60));
    (
        out.status.code().unwrap_or(-1),
        text(&out.stdout),
        text(&out.stderr),
    )
}

fn assert_folder_complete(out: &Path) {
    let n = names(out);
    for f in [
        "boot.log",
        "before.snapshot.json",
        "after.snapshot.json",
        "run.series.jsonl",
        "load.log",
        "results.json",
        "report.html",
        "run.json",
    ] {
        assert!(n.contains(&f.to_string()), "{f} missing from {n:?}");
    }
}

/// A run that stays inside the cache: exit 0, every file, and results.json and the JUnit file
/// tell the same story.
#[test]
fn healthy_run() {
    let _t = turn();
    let w = World::new();
    let junit = w.dir.path().join("ci/junit.xml");
    // 97 usable blocks of 16 tokens (a prime, so every reading reduces to /97); 3 requests of
    // at most 8 blocks each never fill it.
    let serve = w.serve(
        "--num-gpu-blocks-override 98 --block-size 16 --max-model-len 1024 --tokens-per-s 100",
    );
    let load = w.sim_bench(
        "--max-concurrency 3 --num-prompts 15 --random-input-len 40 --random-output-len 80 --random-range-ratio 0.5 --ignore-eos",
    );
    let (code, stdout, stderr) = w.run(&serve, &["--junit", junit.to_str().unwrap()], &load);
    let out = w.out();
    let expected = clean_exit_code(&json_file(&out.join("results.json")));
    assert_eq!(code, expected, "{stdout}\n{stderr}");
    assert_folder_complete(&out);
    let results = w.results();
    for t in [
        "T2", "T12", "T5", "T6", "T7", "T1", "T10", "T14", "T9", "T8", "T15",
    ] {
        assert!(status_of(&results, t).is_some(), "{t} missing: {results}");
    }
    assert_eq!(status_of(&results, "T1").as_deref(), Some("pass"));
    assert_eq!(status_of(&results, "T14").as_deref(), Some("pass"));
    assert_eq!(status_of(&results, "T15").as_deref(), Some("pass"));
    assert_eq!(
        message_of(&results, "T8").as_deref(),
        Some("reached 3 running (requested 3)")
    );
    // The printed verdicts are the recorded ones.
    let recorded: Vec<inferlint_core::CheckResult> =
        serde_json::from_value(results.clone()).unwrap();
    for r in &recorded {
        assert!(stdout.contains(&r.line()), "not printed: {}", r.line());
    }
    assert!(stdout.contains("report: "), "{stdout}");
    // JUnit: one case per tripwire, statuses as results.json has them (last one wins).
    let xml = std::fs::read_to_string(&junit).unwrap();
    let mut ids: Vec<String> = run_support::statuses(&results)
        .into_iter()
        .map(|(t, _)| t)
        .collect();
    ids.sort();
    ids.dedup();
    assert_eq!(xml.matches("<testcase ").count(), ids.len(), "{xml}");
    let failures = xml.matches("<failure ").count();
    let errors = xml.matches("<error ").count();
    assert_eq!((failures, errors), (0, 0), "{xml}");
    assert!(xml.contains("name=\"T15 client-server-mismatch\""), "{xml}");
    // run.json says what ran and how it ended.
    let run = json_file(&out.join("run.json"));
    assert_eq!(run["state"], "finished");
    assert_eq!(run["exit_code"], 0);
    assert_eq!(run["exit_reason"], "completed");
    assert_eq!(run["engine"], "vllm");
    assert!(run["serve_command"]
        .as_str()
        .unwrap()
        .contains("sim serve m"));
    // Nothing is left.
    assert!(w.live_processes().is_empty(), "{:?}", w.live_processes());
    // A non-terminal run prints no control codes.
    assert!(
        !stdout.bytes().any(|b| b == 0x1b || b == b'\r'),
        "control codes in the output"
    );
}

/// Under `--strict` a WARN fails the run: the process exits 1 and run.json records the same 1
/// (it once recorded the code a run without `--strict` would have had).
#[test]
fn strict_run_records_the_code_it_exits_with() {
    let _t = turn();
    let w = World::new();
    // The hybrid allocator's log line makes T5 warn; the load stays inside the cache.
    let serve = w.serve(
        "--hybrid --num-gpu-blocks-override 98 --block-size 16 --max-model-len 1024 --tokens-per-s 100",
    );
    let load = w.sim_bench(
        "--max-concurrency 3 --num-prompts 6 --random-input-len 40 --random-output-len 40 --ignore-eos",
    );
    let (code, stdout, stderr) = w.run(&serve, &["--strict"], &load);
    let results = w.results();
    let statuses = run_support::statuses(&results);
    assert!(
        statuses.iter().any(|(_, s)| s == "warn") && !statuses.iter().any(|(_, s)| s == "fail"),
        "this test needs a WARN and no FAIL: {statuses:?}\n{stdout}\n{stderr}"
    );
    assert_eq!(code, 1, "{stdout}\n{stderr}");
    let run = json_file(&w.out().join("run.json"));
    assert_eq!(run["exit_code"], code, "{run}");
    assert!(w.live_processes().is_empty(), "{:?}", w.live_processes());
}

/// The story the tool exists for: 784-token blocks, 42 usable, 32 requested.
#[test]
fn preempting_run() {
    let _t = turn();
    let w = World::new();
    let log = w.dir.path().join("preemptions.log");
    let serve =
        w.serve("--hybrid --num-gpu-blocks-override 43 --max-model-len 8192 --tokens-per-s 1000");
    let load = w.sim_bench(
        "--max-concurrency 32 --num-prompts 40 --random-input-len 2400 --random-output-len 2000 --ignore-eos",
    );
    let mut cmd = w.command(&serve, &[], &load);
    cmd.env("INFERLINT_SIM_PREEMPTION_LOG", &log);
    let out = run_with_limit(cmd, LIMIT);
    let stdout = text(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(1),
        "{stdout}\n{}",
        text(&out.stderr)
    );
    let results = w.results();
    // T1 fails with the simulator's own count of the preemptions it performed.
    let performed = std::fs::read_to_string(&log)
        .unwrap_or_default()
        .lines()
        .filter(|l| !l.trim().is_empty())
        .count();
    assert!(performed > 0, "the simulator preempted nothing: {stdout}");
    assert_eq!(status_of(&results, "T1").as_deref(), Some("fail"));
    assert_eq!(
        message_of(&results, "T1").unwrap(),
        format!("{performed} preemptions during the run")
    );
    assert_eq!(status_of(&results, "T8").as_deref(), Some("fail"));
    assert!(message_of(&results, "T8")
        .unwrap()
        .starts_with("requested 32 concurrent, server never ran more than "));
    assert_eq!(status_of(&results, "T9").as_deref(), Some("warn"));
    assert_eq!(
        message_of(&results, "T14").as_deref(),
        Some("gauge denominator is 42 = num_gpu_blocks (43) - 1 null block")
    );
    assert_eq!(status_of(&results, "T5").as_deref(), Some("warn"));
    // The alerts came while the load ran, with their time into it.
    assert!(
        stdout.contains("into the load: ") && stdout.contains("preemption"),
        "{stdout}"
    );
}

/// Admission control rejects what does not fit in the queue: T8 names it, T15 counts the
/// rejections as failed requests and agrees.
#[test]
fn capped_run_with_admission_rejections() {
    let _t = turn();
    let w = World::new();
    let serve = w.serve("--max-num-queued-reqs 16 --max-num-seqs 16 --tokens-per-s 50");
    let load = w.sim_bench(
        "--max-concurrency 32 --num-prompts 32 --random-input-len 32 --random-output-len 80 --ignore-eos",
    );
    let (code, stdout, stderr) = w.run(&serve, &[], &load);
    assert_eq!(code, 1, "{stdout}\n{stderr}");
    let results = w.results();
    let t8 = message_of(&results, "T8").unwrap();
    assert!(
        t8.contains("admission control (--max-num-queued-reqs 16) kept at most 16 in flight"),
        "{t8}"
    );
    assert_eq!(
        status_of(&results, "T15").as_deref(),
        Some("pass"),
        "{results}"
    );
    let bench = json_file(&w.out().join("bench.json"));
    assert!(bench["failed"].as_f64().unwrap() > 0.0, "{bench}");
}

/// A server whose log shows a start-up failure: the run stops at once, says why, and still
/// writes the report.
#[test]
fn boot_failure_stops_within_a_second() {
    let _t = turn();
    let Some(fixture) = inferlint_core::testkit::evidence("vllm-0.28/boot_fail_accelerator.log")
    else {
        return;
    };
    let w = World::new();
    // The failure lines arrive at once; the process would then live on for 30 s.
    let serve = format!(
        "sh -c 'cat {}; sleep 30'",
        shlex::try_quote(fixture.to_str().unwrap()).unwrap()
    );
    let mut cmd = w.command(&serve, &["--no-gpu-check"], &w.sim_bench("--num-prompts 1"));
    cmd.stdout(Stdio::piped())
        .stderr(Stdio::null())
        .stdin(Stdio::null());
    let mut child = cmd.spawn().unwrap();
    let reader = BufReader::new(child.stdout.take().unwrap());
    let mut started = None;
    let mut stopped = None;
    let mut lines = Vec::new();
    for line in reader.lines() {
        let line = line.unwrap();
        if line.starts_with("== start the server") {
            started = Some(Instant::now());
        }
        if line.starts_with("== stop the server") {
            stopped = Some(Instant::now());
        }
        lines.push(line);
    }
    let code = child.wait().unwrap().code();
    let all = lines.join("\n");
    assert_eq!(code, Some(1), "{all}");
    let took = stopped.unwrap() - started.unwrap();
    assert!(
        took < Duration::from_secs(1),
        "stopped after {took:?}\n{all}"
    );
    assert!(
        all.contains(
            "[T12] TRIPWIRE-FAILED  accelerator_error during boot: CUDA error: device not ready"
        ),
        "{all}"
    );
    assert!(
        all.contains(
            "problem: the server failed before it was ready: accelerator_error during boot"
        ),
        "{all}"
    );
    assert_eq!(all.matches("== stop the server").count(), 1);
    assert!(w.out().join("report.html").exists());
    assert!(w.live_processes().is_empty());
}

/// The fake server of docs/design/evidence.md#the-one-shot-run-against-a-mock-server: prints the
/// failure and exits 1.
#[test]
fn server_that_exits_during_boot() {
    let _t = turn();
    let Some(fixture) = inferlint_core::testkit::evidence("vllm-0.28/boot_fail_accelerator.log")
    else {
        return;
    };
    let w = World::new();
    let serve = format!(
        "sh -c 'cat {}; exit 1'",
        shlex::try_quote(fixture.to_str().unwrap()).unwrap()
    );
    let (code, stdout, _) = w.run(&serve, &["--no-gpu-check"], &w.sim_bench("--num-prompts 1"));
    assert_eq!(code, 1, "{stdout}");
    assert!(
        stdout.contains("problem: the server exited with code 1 before it was ready"),
        "{stdout}"
    );
    assert!(stdout.contains("[T12] TRIPWIRE-FAILED  accelerator_error during boot"));
    assert_eq!(stdout.matches("== stop the server").count(), 1);
    assert!(w.out().join("report.html").exists());
    assert_eq!(status_of(&w.results(), "T12").as_deref(), Some("fail"));
}

/// Ready, then dead on the first real request: the probe catches it (T7).
#[test]
fn server_dying_on_its_first_request() {
    let _t = turn();
    let w = World::new();
    let serve = w.serve("--die-on-first-request");
    let (code, stdout, _) = w.run(&serve, &[], &w.sim_bench("--num-prompts 2"));
    assert_eq!(code, 1, "{stdout}");
    let results = w.results();
    assert_eq!(
        status_of(&results, "T7").as_deref(),
        Some("fail"),
        "{results}"
    );
    // The probe's T7 was printed as it was decided; the run's one T7 (core's merge, the worse
    // or the later of equals) is the death's: the engine's end, as docs/supervision.md says.
    assert!(
        stdout.contains("[ T7] TRIPWIRE-FAILED  first request failed: "),
        "{stdout}"
    );
    let t7: Vec<&str> = results
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["tripwire"] == "T7")
        .map(|r| r["message"].as_str().unwrap())
        .collect();
    assert_eq!(t7.len(), 1, "one T7 per run: {t7:?}");
    // The engine's death (or, had it been too short-lived to be watched, its server's).
    assert!(t7[0].contains(" (pid "), "{t7:?}\n{stdout}");
    assert!(w.live_processes().is_empty());
}

/// An engine that escapes the server's process group, ignores SIGTERM and outlives its API
/// server: the teardown finds it outside the group and kills it; the card reads clear after.
#[test]
fn orphan_engine_is_found_and_killed() {
    let _t = turn();
    let w = World::new();
    let serve = w.serve("--orphan-engine --escape setsid --engine-ignores-sigterm");
    let (code, stdout, stderr) = w.run(
        &serve,
        &["--stop-grace", "2"],
        &w.sim_bench("--num-prompts 4 --max-concurrency 2 --random-output-len 8"),
    );
    assert!(
        stdout.contains("outside the server's process group"),
        "{stdout}\n{stderr}"
    );
    assert!(stdout.contains("VLLM::EngineCore"), "{stdout}");
    let results = w.results();
    assert_eq!(
        status_of(&results, "T2").as_deref(),
        Some("pass"),
        "{results}"
    );
    assert!(w.live_processes().is_empty(), "{:?}", w.live_processes());
    let _ = code;
}

fn start_and_wait_for_load(
    w: &World,
    serve: &str,
    args: &[&str],
) -> (std::process::Child, Vec<String>) {
    let load = w.sim_bench(
        "--max-concurrency 4 --num-prompts 400 --random-input-len 32 --random-output-len 400 --ignore-eos",
    );
    let mut cmd = w.command(serve, args, &load);
    cmd.stdout(Stdio::piped())
        .stderr(Stdio::null())
        .stdin(Stdio::null());
    let mut child = cmd.spawn().unwrap();
    let mut reader = BufReader::new(child.stdout.take().unwrap());
    let mut lines = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let mut l = String::new();
        if reader.read_line(&mut l).unwrap() == 0 || Instant::now() > deadline {
            break;
        }
        let load_started = l.starts_with("== load:");
        lines.push(l.trim_end().to_string());
        if load_started {
            break;
        }
    }
    std::thread::spawn(move || {
        // Keep draining so the run never blocks on a full pipe.
        let mut sink = String::new();
        while reader.read_line(&mut sink).unwrap_or(0) > 0 {
            sink.clear();
        }
    });
    // Let the load and the recording get going.
    std::thread::sleep(Duration::from_millis(1500));
    (child, lines)
}

/// Ctrl-C once: the load stops, the run still snapshots, checks, reports and tears down.
#[test]
fn ctrl_c_mid_load() {
    let _t = turn();
    let w = World::new();
    let serve = w.serve("--tokens-per-s 100");
    let (mut child, lines) = start_and_wait_for_load(&w, &serve, &[]);
    assert!(lines.iter().any(|l| l.starts_with("== load:")), "{lines:?}");
    unsafe {
        libc::kill(child.id() as i32, libc::SIGINT);
    }
    let t0 = Instant::now();
    let status = child.wait().unwrap();
    assert!(
        t0.elapsed() < Duration::from_secs(30),
        "took {:?}",
        t0.elapsed()
    );
    assert_eq!(status.code(), Some(130));
    assert_folder_complete(&w.out());
    let run = json_file(&w.out().join("run.json"));
    assert_eq!(run["exit_reason"], "interrupted");
    assert_eq!(run["exit_code"], 130);
    assert!(w.live_processes().is_empty(), "{:?}", w.live_processes());
}

/// SIGTERM (Slurm's scancel) behaves like the first Ctrl-C and ends well inside Slurm's 30 s
/// KillWait, even with a server that takes its time to stop.
#[test]
fn sigterm_mid_load_finishes_within_slurms_kill_wait() {
    let _t = turn();
    let w = World::new();
    let serve = w.serve("--tokens-per-s 100 --engine-ignores-sigterm");
    let (mut child, _) = start_and_wait_for_load(&w, &serve, &[]);
    let t0 = Instant::now();
    unsafe {
        libc::kill(child.id() as i32, libc::SIGTERM);
    }
    let status = child.wait().unwrap();
    assert!(
        t0.elapsed() < Duration::from_secs(30),
        "took {:?}",
        t0.elapsed()
    );
    assert_eq!(status.code(), Some(130));
    assert_folder_complete(&w.out());
    assert!(w.live_processes().is_empty(), "{:?}", w.live_processes());
}

/// SIGKILL of inferlint: the shepherds tear everything down, and the folder still reads.
#[test]
fn sigkill_mid_load_leaves_nothing() {
    let _t = turn();
    let w = World::new();
    let serve = w.serve("--tokens-per-s 100");
    let (mut child, _) = start_and_wait_for_load(&w, &serve, &["--stop-grace", "5"]);
    assert!(!w.live_processes().is_empty());
    unsafe {
        libc::kill(child.id() as i32, libc::SIGKILL);
    }
    let _ = child.wait();
    let deadline = Instant::now() + Duration::from_secs(15);
    while !w.live_processes().is_empty() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(100));
    }
    assert!(w.live_processes().is_empty(), "{:?}", w.live_processes());
    let out = w.out();
    for f in [
        "boot.log",
        "before.snapshot.json",
        "run.series.jsonl",
        "load.log",
        "run.json",
    ] {
        assert!(out.join(f).exists(), "{f} missing: {:?}", names(&out));
    }
    let run = json_file(&out.join("run.json"));
    assert_eq!(run["state"], "running");
    let (code, stdout, stderr) = report_cli(&out);
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    assert!(out.join("report.html").exists());
}

/// The API key given to the server (and to the load through OPENAI_API_KEY) is in no file.
#[test]
fn api_key_reaches_no_file() {
    let _t = turn();
    let w = World::new();
    let secret = "sk-inferlint-test-7f3a9c";
    let serve = w.serve(&format!("--api-key {secret}"));
    let mut cmd = w.command(
        &serve,
        &[],
        &w.sim_bench("--num-prompts 4 --max-concurrency 2"),
    );
    cmd.env("OPENAI_API_KEY", secret);
    let out = run_with_limit(cmd, LIMIT);
    let stdout = text(&out.stdout);
    assert!(!stdout.contains(secret), "{stdout}");
    assert!(!text(&out.stderr).contains(secret));
    let results = w.results();
    assert_eq!(
        status_of(&results, "T7").as_deref(),
        Some("pass"),
        "{results}"
    );
    assert_eq!(
        status_of(&results, "T15").as_deref(),
        Some("pass"),
        "{results}"
    );
    for name in names(&w.out()) {
        let bytes = std::fs::read(w.out().join(&name)).unwrap();
        assert!(
            !String::from_utf8_lossy(&bytes).contains(secret),
            "the secret is in {name}"
        );
    }
    let run = json_file(&w.out().join("run.json"));
    assert!(run["serve_command"]
        .as_str()
        .unwrap()
        .contains("--api-key ***"));
}

#[path = "run_sim/exit_paths.rs"]
mod exit_paths;
/// Ctrl-C, SIGKILL of inferlint and an orphaned worker on the simulated SGLang and TensorRT-LLM.
#[path = "run_sim/faults.rs"]
mod faults;
/// The simulated SGLang under `run`.
#[path = "run_sim/sglang.rs"]
mod sglang;
/// The simulated TensorRT-LLM under `run`.
#[path = "run_sim/trtllm.rs"]
mod trtllm;
