//! The verdict commands' output on the recorded evidence, under snapshot: `series`,
//! `preemption`, `rate`, `check-log` and `report`, their verdict lines and their `--json`, with the
//! exit status and anything printed to stderr. Exact lines are also pinned in tests/cli_checks.rs
//! and tests/bootlog_cli.rs; these snapshots hold every line, so any change shows in review.

use crate::snapshots_support;

use snapshots_support::cli;

// ---------------------------------------------------------------- series

#[test]
fn series_on_the_live_run() {
    let [s, snapshot] = fixtures_or_skip!([
        "vllm-0.28/live/run.series.jsonl",
        "vllm-0.28/live/after.snapshot.json"
    ]);
    let args = ["series", &s, "--snapshot", &snapshot, "--requested", "32"];
    snap!("series_live", cli(&args));
    let args = [&args[..], &["--json"]].concat();
    snap!("series_live_json", cli(&args));
}

#[test]
fn series_on_the_ladder_without_a_snapshot() {
    let [s] = fixtures_or_skip!(["vllm-0.28/series/ladder.series.jsonl"]);
    snap!(
        "series_ladder_no_snapshot",
        cli(&["series", &s, "--requested", "5"])
    );
}

#[test]
fn series_on_sglang_and_tensorrt_llm() {
    let [s] = fixtures_or_skip!(["sglang-0.5/qwen3-8b/run.series.jsonl"]);
    snap!("series_sglang", cli(&["series", &s, "--requested", "32"]));
    let [s, snapshot] = fixtures_or_skip!([
        "trtllm-1.3/qwen3-8b/run.series.jsonl",
        "trtllm-1.3/qwen3-8b/after.snapshot.json"
    ]);
    let args = ["series", &s, "--snapshot", &snapshot, "--requested", "32"];
    snap!("series_trtllm", cli(&args));
    let args = [&args[..], &["--json"]].concat();
    snap!("series_trtllm_json", cli(&args));
}

// ---------------------------------------------------------------- preemption, rate

#[test]
fn preemption_on_vllm_sglang_and_tensorrt_llm() {
    let [b, a] = fixtures_or_skip!([
        "vllm-0.28/metrics/preempted_before.prom",
        "vllm-0.28/metrics/preempted_after.prom"
    ]);
    snap!("preemption_vllm", cli(&["preemption", &b, &a]));
    snap!(
        "preemption_vllm_json",
        cli(&["preemption", &b, &a, "--json"])
    );
    let [b, a] = fixtures_or_skip!([
        "sglang-0.5/qwen3-8b/before.snapshot.json",
        "sglang-0.5/qwen3-8b/after.snapshot.json"
    ]);
    snap!("preemption_sglang", cli(&["preemption", &b, &a]));
    let [b, a, log] = fixtures_or_skip!([
        "trtllm-1.3/qwen3-8b/before.snapshot.json",
        "trtllm-1.3/qwen3-8b/after.snapshot.json",
        "trtllm-1.3/qwen3-8b/boot.log"
    ]);
    snap!("preemption_trtllm_no_log", cli(&["preemption", &b, &a]));
    snap!(
        "preemption_trtllm",
        cli(&["preemption", &b, &a, "--boot-log", &log, "--json"])
    );
}

#[test]
fn rate_on_the_xray_run_and_on_bare_prometheus_text() {
    let [b, a] = fixtures_or_skip!([
        "vllm-0.28/xray/before.snapshot.json",
        "vllm-0.28/xray/after.snapshot.json"
    ]);
    snap!("rate_xray", cli(&["rate", &b, &a]));
    snap!("rate_xray_json", cli(&["rate", &b, &a, "--json"]));
    let [b, a] = fixtures_or_skip!([
        "vllm-0.28/metrics/preempted_before.prom",
        "vllm-0.28/metrics/preempted_after.prom"
    ]);
    snap!("rate_prom", cli(&["rate", &b, &a]));
}

// ---------------------------------------------------------------- check-log

#[test]
fn check_log_on_failed_warned_and_two_starts() {
    let [spec, fp8, hi, lo] = fixtures_or_skip!([
        "vllm-0.28/boot_spec_backend_override.log",
        "vllm-0.28/boot_fp8_triton.log",
        "vllm-0.28/boot_pool_level_hi.log",
        "vllm-0.28/boot_pool_level_lo.log"
    ]);
    snap!("check_log_spec_override", cli(&["check-log", &spec]));
    snap!("check_log_fp8", cli(&["check-log", &fp8]));
    snap!("check_log_fp8_json", cli(&["check-log", "--json", &fp8]));
    snap!("check_log_two_starts", cli(&["check-log", &hi, &lo]));
}

#[test]
fn check_log_on_failed_starts_of_each_engine() {
    let [v, s, t] = fixtures_or_skip!([
        "vllm-0.30/boot_fail_ptx_version.log",
        "sglang-0.5/boot_fail_mem_advice.log",
        "trtllm-1.3/boot_fail_no_cuda_home.log"
    ]);
    snap!("check_log_fail_vllm", cli(&["check-log", &v]));
    snap!("check_log_fail_sglang", cli(&["check-log", &s]));
    snap!("check_log_fail_trtllm", cli(&["check-log", "--json", &t]));
}

// ---------------------------------------------------------------- report

#[test]
fn report_of_run_folders() {
    let [live, sglang, trtllm] = fixtures_or_skip!([
        "vllm-0.28/live",
        "sglang-0.5/qwen3-8b",
        "trtllm-1.3/qwen3-8b"
    ]);
    let tmp = tempfile::tempdir().unwrap();
    let page = tmp.path().join("report.html").display().to_string();
    // The live run's page and lines: tests/snapshots_report.rs.
    for (name, run) in [("report_sglang", &sglang), ("report_trtllm", &trtllm)] {
        let args = ["report", run.as_str(), "-o", &page];
        snap!(name, cli(&args), tmp = tmp.path());
    }
    let args = ["report", &live, "-o", &page, "--requested", "32", "--json"];
    snap!("report_live_json", cli(&args), tmp = tmp.path());
}
