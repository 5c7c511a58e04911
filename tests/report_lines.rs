//! `report RUN/` on the recorded runs: the verdict lines come in the original 0.3.1's order
//! (boot-log checks, then T15, then the run checks: scripts read these lines in order), and the
//! "What limited this run" sentences keep their subject. The expected orders are what
//! `inferlint==0.3.1 report` printed on the same folders.

use crate::report_support;

use std::path::Path;
use std::process::Command;

use report_support::copy_run;

fn report(dir: &Path, json: bool) -> (i32, String, String) {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_inferlint"));
    cmd.arg("report").arg(dir);
    if json {
        cmd.arg("--json");
    }
    let out = cmd.output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// The tripwire of each verdict line, in order.
fn order(stdout: &str) -> Vec<String> {
    stdout
        .lines()
        .filter(|l| l.starts_with('[') && l.get(4..5) == Some("]"))
        .map(|l| l[1..4].trim().to_string())
        .collect()
}

const WITH_RESULT_FILE: &[&str] = &[
    "T12", "T5", "T6", "T15", "T1", "T10", "T14", "T9", "T8", "T16", "T17", "T24", "T25",
];
/// TensorRT-LLM's logs name no captured CUDA graph: no T25.
const WITHOUT_GRAPHS: &[&str] = &[
    "T12", "T5", "T6", "T15", "T1", "T10", "T14", "T9", "T8", "T16", "T17", "T24",
];

#[test]
fn verdict_lines_come_in_the_original_order() {
    let cases: &[(&str, &[&str])] = &[
        ("vllm-0.28/xray", WITH_RESULT_FILE),
        ("sglang-0.5/live", WITH_RESULT_FILE),
        ("sglang-0.5/capped", WITH_RESULT_FILE),
        ("sglang-0.5/qwen3-8b-own-client", WITH_RESULT_FILE),
        ("trtllm-1.3/qwen3-8b", WITHOUT_GRAPHS),
        ("trtllm-1.3/no-iter-stats", WITHOUT_GRAPHS),
        // No result file: no T15.
        (
            "vllm-0.28/live",
            &["T12", "T5", "T6", "T1", "T10", "T14", "T9", "T16", "T25"],
        ),
    ];
    for (rel, want) in cases {
        let Some((_tmp, dir)) = copy_run(rel) else {
            return;
        };
        let (code, stdout, err) = report(&dir, false);
        assert!(code == 0 || code == 1, "{rel}: exit {code}\n{stdout}{err}");
        assert_eq!(order(&stdout), *want, "{rel}:\n{stdout}");
        // --json lists the results in the same order.
        std::fs::remove_file(dir.join("report.html")).unwrap();
        let (_, json, err) = report(&dir, true);
        let results: serde_json::Value =
            serde_json::from_str(&json).unwrap_or_else(|e| panic!("{rel}: {e}: {json}{err}"));
        let ids: Vec<&str> = results
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["tripwire"].as_str().unwrap())
            .collect();
        assert_eq!(ids, *want, "{rel} --json");
    }
}

/// A T15 that could not be checked (the after snapshot is gone from a run folder) keeps T15's
/// place too.
#[test]
fn a_t15_that_cannot_tell_keeps_its_place() {
    let Some((_tmp, dir)) = copy_run("vllm-0.28/xray") else {
        return;
    };
    std::fs::write(
        dir.join("run.json"),
        r#"{"schema": "inferlint.run/1", "state": "running"}"#,
    )
    .unwrap();
    std::fs::write(dir.join("load.log"), "").unwrap();
    std::fs::remove_file(dir.join("after.snapshot.json")).unwrap();
    let (code, stdout, err) = report(&dir, false);
    assert_eq!(code, 0, "{stdout}{err}");
    assert_eq!(order(&stdout), WITH_RESULT_FILE, "{stdout}");
    let t15 = stdout.lines().find(|l| l.starts_with("[T15]")).unwrap();
    assert!(t15.starts_with("[T15] ????  "), "{t15}");
}

/// SGLang's own-client run retracted 3 requests with a cache too small for the load: the
/// sentence reads "it retracted", as the original's does.
#[test]
fn the_cache_sentence_says_who_made_room() {
    let Some((_tmp, dir)) = copy_run("sglang-0.5/qwen3-8b-own-client") else {
        return;
    };
    let (_, stdout, err) = report(&dir, false);
    assert!(
        stdout.contains(
            "  - The KV cache was too small for the load. The cache holds 32,096 tokens; 32 \
             requests of about 1,064 tokens need 34,048 to run to the end together, so 30 fit at \
             full length. To make room, it retracted 3 running requests.\n"
        ),
        "{stdout}{err}"
    );
}

/// TensorRT-LLM's recorded run, its log changed to a pool of 20,000 tokens and 13 pauses (the
/// server logs each one at INFO): "it paused 13 running requests". The same log unchanged holds
/// the whole load: no such sentence.
#[test]
fn a_tensorrt_llm_run_that_paused_says_it_paused() {
    let Some((_tmp, dir)) = copy_run("trtllm-1.3/qwen3-8b") else {
        return;
    };
    let (_, stdout, _) = report(&dir, false);
    assert!(
        stdout.contains("The KV cache held the whole load."),
        "{stdout}"
    );
    assert!(!stdout.contains("To make room"), "{stdout}");

    let log = std::fs::read_to_string(dir.join("boot.log")).unwrap();
    let pool_line = "Allocated 5.19 GiB for max tokens in paged KV cache (37760).";
    assert!(log.contains(pool_line));
    let mut lines: Vec<String> = log
        .replace(
            pool_line,
            "Allocated 5.19 GiB for max tokens in paged KV cache (20000).",
        )
        .lines()
        .map(str::to_string)
        .collect();
    let at = lines
        .iter()
        .position(|l| l.contains("Thread await_response_thread stopped."))
        .expect("the shutdown lines");
    for id in 0..13 {
        lines.insert(
            at,
            format!(
                "[10/01/2026-01:44:10] [TRT-LLM] [I] MaxUtilizationScheduler: request ID {} -> pause",
                100 + id
            ),
        );
    }
    std::fs::write(dir.join("boot.log"), lines.join("\n") + "\n").unwrap();
    std::fs::remove_file(dir.join("report.html")).unwrap();
    let (_, stdout, err) = report(&dir, false);
    assert!(
        stdout.contains("[ T1] TRIPWIRE-FAILED  13 requests paused for recompute"),
        "{stdout}{err}"
    );
    assert!(
        stdout.contains("so 18 fit at full length. To make room, it paused 13 running requests.\n"),
        "{stdout}{err}"
    );
}
