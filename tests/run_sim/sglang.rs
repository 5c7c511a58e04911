//! `inferlint run` end to end against the simulated SGLang (`sim serve --engine sglang`): the
//! run takes the engine from the serve command, reads the SGLang boot log, scrapes SGLang's
//! /metrics, and judges it as SGLang (T14 does not apply; T1 counts retractions), then stops
//! every process the server started; its fault cases are [`super::faults`]'.

use std::time::Duration;

use super::turn;
use crate::run_support::{
    clean_exit_code, json_file, message_of, run_with_limit, status_of, text, World,
};
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
    let _t = turn();
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
    // The report names the engine and carries the verdicts the run printed.
    let page = std::fs::read_to_string(w.out().join("report.html")).unwrap();
    assert!(
        page.contains("SGLang") && page.contains("no retractions"),
        "the report does not name SGLang or T1's verdict"
    );
    assert!(
        w.live_processes().is_empty(),
        "left behind: {:?}",
        w.live_processes()
    );
}

#[test]
fn retractions_of_the_simulated_sglang_fail_t1() {
    let _t = turn();
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

/// `sim bench --backend sglang` is SGLang's own client to `run`: its result line is appended to
/// the `--output-file` run adds (bench.jsonl), with the recorded keys in order, and its warm-up
/// request is the one untimed request T15 expects.
#[test]
fn the_sglang_clients_result_line_is_read() {
    let _t = turn();
    let w = World::new();
    let (code, stdout, results) = run(
        &w,
        "--max-total-tokens 20000 --tokens-per-s 100",
        // `--output-details`: the output lengths T18 needs (SGLang's counters have no reasons).
        "--backend sglang --dataset-name random --max-concurrency 4 --num-prompts 8 --random-input-len 64 --random-output-len 40 --output-details",
    );
    assert_eq!(code, clean_exit_code(&results), "{stdout}");
    let run = json_file(&w.out().join("run.json"));
    let file = run["result_file"].as_str().unwrap_or_default().to_string();
    assert!(file.ends_with("bench.jsonl"), "{run}");
    let line = std::fs::read_to_string(&file).unwrap();
    assert_eq!(line.lines().count(), 1);
    assert!(
        line.contains("\"request_rate\": Infinity"),
        "Python's spelling: {line}"
    );
    let bench = inferlint_core::bench::load(std::path::Path::new(&file)).unwrap();
    let recorded =
        std::fs::read_to_string("tests/fixtures/sglang-0.5/qwen3-8b-own-client/bench.jsonl")
            .unwrap();
    let keys = |text: &str| -> Vec<String> {
        // JSON has no Infinity: Python's spelling is read as null for the key list.
        let last = text.lines().last().unwrap().replace(": Infinity", ": null");
        let v: Value = serde_json::from_str(&last).unwrap();
        v.as_object().unwrap().keys().cloned().collect()
    };
    let mut got = keys(&line);
    // The per-request lists of --output-details follow the recorded keys.
    got.truncate(got.len() - 6);
    assert_eq!(got, keys(&recorded), "the recorded keys, in order");
    assert_eq!(bench.completed, Some(8.0));
    // SGLang's client ignores EOS by default: every request ran to its length.
    assert_eq!(bench.total_output_tokens, Some(320.0));
    assert_eq!(
        status_of(&results, "T15").as_deref(),
        Some("pass"),
        "{stdout}"
    );
    assert!(
        w.live_processes().is_empty(),
        "left behind: {:?}",
        w.live_processes()
    );
}
