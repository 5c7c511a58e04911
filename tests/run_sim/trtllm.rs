//! `inferlint run` end to end against the simulated TensorRT-LLM (`sim serve --engine trtllm`):
//! the run takes the engine from the serve command, reads the TensorRT-LLM boot log, scrapes
//! /prometheus/metrics, judges it as TensorRT-LLM (T14 does not apply; its gauges lag, or are
//! missing without iteration stats), and stops every process the server started (the launcher,
//! `prte` and the MPI ranks) on a clean end, while same-user bystanders of other engines live
//! on; Ctrl-C, SIGKILL of inferlint and an orphaned rank are [`super::faults`]' cases.
//!
//! They take turns with tests/run_sim.rs's (its lock) to keep their timings steady.

use std::time::Duration;

use super::faults::{assert_bystanders_live, assert_nothing_left, bystanders, command};
use super::turn;
use crate::run_support::{
    clean_exit_code, json_file, message_of, run_with_limit, status_of, text, World,
};
use serde_json::Value;

/// The `--serve` command of a simulated TensorRT-LLM with this `--config` YAML body.
pub(super) fn serve(w: &World, yaml: &str, extra: &str) -> String {
    let path = w.dir.path().join("perf.yaml");
    std::fs::write(&path, yaml).unwrap();
    w.sim_serve(
        "0.3",
        &format!(
            "--engine trtllm --config {} --max_batch_size 8 {extra}",
            path.display()
        ),
    )
}

pub(super) const ITERATION_STATS: &str =
    "return_perf_metrics: true\nenable_iter_perf_stats: true\n";

fn run(w: &World, serve: &str, args: &[&str], load: &str) -> (i32, String, Value) {
    let out = run_with_limit(command(w, serve, args, load), Duration::from_secs(150));
    let stdout = format!("{}\n{}", text(&out.stdout), text(&out.stderr));
    let results = json_file(&w.out().join("results.json"));
    (out.status.code().unwrap_or(-1), stdout, results)
}

/// T8 on gauges that move only when a request completes: PASS when a completion showed the
/// concurrency asked for, else UNKNOWN saying the gauge lags (never FAIL, never "missing").
fn assert_t8_reads_lagging_gauges(results: &Value) {
    let msg = message_of(results, "T8").unwrap_or_default();
    match status_of(results, "T8").as_deref() {
        Some("pass") => assert!(msg.starts_with("reached "), "{msg}"),
        Some("unknown") => assert!(
            msg.contains("updates the gauge only when a request completes"),
            "{msg}"
        ),
        other => panic!("T8 {other:?}: {msg}"),
    }
}

/// The exit status of a run whose checks all decide but for T8 on lagging gauges: 2 ("can't
/// tell") when T8 could not, else the clean run's.
fn exit_code_with_lag(results: &Value) -> i32 {
    assert_t8_reads_lagging_gauges(results);
    if status_of(results, "T8").as_deref() == Some("unknown") {
        2
    } else {
        clean_exit_code(results)
    }
}

const LOAD: &str =
    "--max-concurrency 4 --num-prompts 8 --random-input-len 64 --random-output-len 40 --ignore-eos";

#[test]
fn a_run_of_the_simulated_trtllm_is_judged_as_trtllm() {
    let _t = turn();
    let w = World::new();
    let others = bystanders();
    let serve = serve(&w, ITERATION_STATS, "--tokens-per-s 100");
    let (code, stdout, results) = run(&w, &serve, &[], LOAD);
    assert_eq!(code, exit_code_with_lag(&results), "{stdout}");
    assert!(
        stdout.contains("== engine: TensorRT-LLM (from the --serve command)"),
        "{stdout}"
    );
    let run = json_file(&w.out().join("run.json"));
    assert_eq!(run["engine"], "trtllm");
    assert_eq!(run["engine_version"], inferlint_sim::trtllm::VERSION);
    for (t, want) in [("T1", "pass"), ("T2", "pass"), ("T15", "pass")] {
        assert_eq!(
            status_of(&results, t).as_deref(),
            Some(want),
            "{t}: {stdout}"
        );
    }
    assert!(
        message_of(&results, "T1").is_some_and(|m| m.contains("no pause in the server log")),
        "{results}"
    );
    assert_eq!(
        status_of(&results, "T14").as_deref(),
        Some("not_applicable"),
        "{stdout}"
    );
    // The gauges exist and lag (they move only at completions, as recorded): T9 judges them,
    // and T8 passes when a completion caught the peak, else cannot tell and says why.
    assert_eq!(
        status_of(&results, "T9").as_deref(),
        Some("pass"),
        "{stdout}"
    );
    assert_t8_reads_lagging_gauges(&results);
    // The report names the engine and carries the verdicts the run printed.
    let page = std::fs::read_to_string(w.out().join("report.html")).unwrap();
    assert!(
        page.contains("TensorRT-LLM") && page.contains("no pause in the server log"),
        "the report does not name TensorRT-LLM or T1's verdict"
    );
    let snap = json_file(&w.out().join("after.snapshot.json"));
    assert!(snap["url"]
        .as_str()
        .unwrap()
        .ends_with("/prometheus/metrics"));
    assert_nothing_left(&w);
    assert_bystanders_live(others);
}

#[test]
fn without_iteration_stats_t8_and_t9_cannot_tell() {
    let _t = turn();
    let w = World::new();
    let serve = serve(&w, "return_perf_metrics: true\n", "--tokens-per-s 100");
    let (_, stdout, results) = run(&w, &serve, &[], LOAD);
    for t in ["T8", "T9"] {
        assert_eq!(
            status_of(&results, t).as_deref(),
            Some("unknown"),
            "{t}: {stdout}"
        );
        assert!(
            message_of(&results, t).is_some_and(|m| m.contains("'enable_iter_perf_stats: true'")),
            "{t}: {results}"
        );
    }
    assert_eq!(
        status_of(&results, "T15").as_deref(),
        Some("pass"),
        "{stdout}"
    );
    assert_nothing_left(&w);
}

/// `sim bench --backend trtllm` is TensorRT-LLM's own client to `run`: rewritten to save its
/// result JSON in the run folder, read back with its recorded keys, its initial test run
/// counted as the one untimed request T15 expects.
#[test]
fn its_own_clients_result_is_read() {
    let _t = turn();
    let w = World::new();
    let serve = serve(&w, ITERATION_STATS, "--tokens-per-s 100");
    let (code, stdout, results) = run(&w, &serve, &[], &format!("--backend trtllm {LOAD}"));
    assert_eq!(code, exit_code_with_lag(&results), "{stdout}");
    let run = json_file(&w.out().join("run.json"));
    let file = run["result_file"].as_str().unwrap_or_default().to_string();
    assert!(file.ends_with("bench.json"), "{run}");
    let bench = json_file(std::path::Path::new(&file));
    let recorded = json_file(std::path::Path::new(
        "tests/fixtures/trtllm-1.3/no-iter-stats/bench.json",
    ));
    let keys = |v: &Value| v.as_object().unwrap().keys().cloned().collect::<Vec<_>>();
    assert_eq!(keys(&bench), keys(&recorded), "the recorded keys, in order");
    assert_eq!(bench["completed"], 8);
    assert_eq!(bench["total_output_tokens"], 320);
    assert_eq!(
        status_of(&results, "T15").as_deref(),
        Some("pass"),
        "{stdout}"
    );
    let t15 = results
        .as_array()
        .and_then(|a| a.iter().rev().find(|r| r["tripwire"] == "T15"))
        .cloned()
        .unwrap_or_default();
    assert_eq!(t15["evidence"]["expected_extra_requests"], 1, "{t15}");
    assert_nothing_left(&w);
}

/// A pool too small for the load: the simulated scheduler pauses requests and logs each, as
/// TensorRT-LLM does at INFO; T1 counts them from the server log.
#[test]
fn pauses_in_the_server_log_fail_t1() {
    let _t = turn();
    let w = World::new();
    // 8 requests growing to 50 + 150 tokens cannot share 25 blocks of 32 tokens.
    let serve = serve(
        &w,
        ITERATION_STATS,
        "--num-gpu-blocks-override 25 --max_seq_len 512 --tokens-per-s 200",
    );
    let (_, stdout, results) = run(
        &w,
        &serve,
        &[],
        "--max-concurrency 8 --num-prompts 8 --random-input-len 50 --random-output-len 150 --ignore-eos",
    );
    let boot = std::fs::read_to_string(w.out().join("boot.log")).unwrap();
    let paused = boot
        .lines()
        .filter(|l| {
            l.contains("] [TRT-LLM] [I] MaxUtilizationScheduler: request ID ")
                && l.ends_with(" -> pause")
        })
        .count();
    assert!(
        paused > 0,
        "the simulated scheduler paused nothing: {stdout}"
    );
    assert_eq!(
        status_of(&results, "T1").as_deref(),
        Some("fail"),
        "{stdout}"
    );
    let msg = message_of(&results, "T1").unwrap();
    assert!(
        msg.contains(&paused.to_string()),
        "T1 says '{msg}', the log has {paused}"
    );
    assert_nothing_left(&w);
}
