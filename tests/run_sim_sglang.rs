//! `inferlint run` end to end against the simulated SGLang (`sim serve --engine sglang`): the
//! run takes the engine from the serve command, reads the SGLang boot log, scrapes SGLang's
//! /metrics, and judges it as SGLang (T14 does not apply; T1 counts retractions), then stops
//! every process the server started.

mod run_support;

use std::time::Duration;

use run_support::{clean_exit_code, json_file, message_of, run_with_limit, status_of, text, World};
use serde_json::Value;

fn run(w: &World, extra: &str, load: &str) -> (i32, String, Value) {
    let serve = w.sim_serve("0.3", &format!("--engine sglang --enable-metrics {extra}"));
    let args: Vec<String> = vec!["--serve".into(), serve];
    let out = run_with_limit(
        w.run_command(&args, &w.sim_bench(load)),
        Duration::from_secs(150),
    );
    let stdout = format!("{}\n{}", text(&out.stdout), text(&out.stderr));
    let results = json_file(&w.out().join("results.json"));
    (out.status.code().unwrap_or(-1), stdout, results)
}

/// The retraction counter of a recorded snapshot, 0 where it is not exposed yet.
fn retractions(w: &World, which: &str) -> f64 {
    let snap = json_file(&w.out().join(format!("{which}.snapshot.json")));
    let m = inferlint_core::prom::Metrics::parse(snap["text"].as_str().unwrap()).unwrap();
    m.samples()
        .iter()
        .filter(|s| s.name == "sglang:num_retracted_requests_total")
        .map(|s| s.value)
        .sum()
}

#[test]
fn a_run_of_the_simulated_sglang_is_judged_as_sglang() {
    let w = World::new();
    let (code, stdout, results) = run(
        &w,
        "--max-total-tokens 20000 --tokens-per-s 100",
        // SGLang's counters carry no finish reason: T18 needs the load's own output lengths.
        "--max-concurrency 4 --num-prompts 8 --random-input-len 64 --random-output-len 40 --ignore-eos --save-detailed",
    );
    assert_eq!(code, clean_exit_code(&results), "{stdout}");
    assert!(
        stdout.contains("== engine: SGLang (from the --serve command)"),
        "{stdout}"
    );
    let run = json_file(&w.out().join("run.json"));
    assert_eq!(run["engine"], "sglang");
    assert_eq!(run["engine_version"], inferlint_sim::sglang::VERSION);
    for (t, want) in [
        ("T1", "pass"),
        ("T5", "pass"),
        ("T7", "pass"),
        ("T15", "pass"),
        ("T2", "pass"),
    ] {
        assert_eq!(
            status_of(&results, t).as_deref(),
            Some(want),
            "{t}: {stdout}"
        );
    }
    assert_eq!(
        message_of(&results, "T1").as_deref(),
        Some("no retractions")
    );
    assert_eq!(
        status_of(&results, "T14").as_deref(),
        Some("not_applicable"),
        "{stdout}"
    );
    assert!(
        message_of(&results, "T15").is_some_and(|m| m.contains("8 requests, 320 output tokens")),
        "{stdout}"
    );
    assert!(
        w.live_processes().is_empty(),
        "left behind: {:?}",
        w.live_processes()
    );
}

#[test]
fn retractions_of_the_simulated_sglang_fail_t1() {
    let w = World::new();
    // 8 requests growing to 50 + 150 tokens cannot share a pool of 800.
    let (_, stdout, results) = run(
        &w,
        "--max-total-tokens 800 --context-length 512 --tokens-per-s 200",
        "--max-concurrency 8 --num-prompts 8 --random-input-len 50 --random-output-len 150 --ignore-eos",
    );
    let n = retractions(&w, "after") - retractions(&w, "before");
    assert!(n > 0.0, "the simulated engine retracted nothing: {stdout}");
    assert_eq!(
        status_of(&results, "T1").as_deref(),
        Some("fail"),
        "{stdout}"
    );
    let msg = message_of(&results, "T1").unwrap();
    assert!(
        msg.contains(&format!("{n}")),
        "T1 says '{msg}', the counter moved by {n}"
    );
    assert!(
        w.live_processes().is_empty(),
        "left behind: {:?}",
        w.live_processes()
    );
}
