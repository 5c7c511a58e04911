//! The report on SGLang and TensorRT-LLM runs (docs/design/evidence.md#sglang-05,
//! docs/design/evidence.md#tensorrt-llm-13): titles, the N/A row, the engine's own words, the
//! charts each engine can support, and the insights.

use crate::report_support;

use std::process::Command;

use inferlint_core::{Engine, Status, Tripwire};
use report_support::*;

#[test]
fn sglang_capped() {
    let Some(mut inputs) = inputs("sglang-0.5/capped") else {
        return;
    };
    inputs.server_version = Some("0.5.20".into());
    let r = build(inputs);
    assert_eq!(r.engine(), Engine::Sglang);
    assert_eq!(r.title(), "SGLang 0.5.20 run");
    assert_eq!(
        r.result(Tripwire::T14).unwrap().status,
        Status::NotApplicable
    );
    assert_eq!(r.summary().finished, Some(32.0));
    assert_eq!(r.summary().errors, None, "SGLang gives no finish reasons");
    assert!(r.summary().finished_by_reason.is_empty());
    let html = r.render_page();
    for s in [
        "T14 (does not apply to SGLang)",
        "<dt>SGLang</dt><dd>0.5.20</dd>",
        "On SGLang: called a retraction",
        "No output-tokens-per-second chart: SGLang",
    ] {
        assert!(html.contains(s), "missing: {s}");
    }
    assert!(!html.contains("On TensorRT-LLM"));
    assert!(!html.contains("TensorRT-LLM updates these readings only when a request completes"));
    assert!(figure(&html, "fig-tput").is_none());
    let ins = r.insights();
    assert!(
        ins.iter().all(|i| i.key != "cache"),
        "hybrid model: no cache sentence"
    );
    assert!(ins[0].text.contains(
        "ran at most 1 at once: SGLang lowered its limit to 1 running because of the mamba"
    ));
    assert_eq!(ins[1].title, "Requests waited long to start");
    assert!(ins[1].text.contains("285.2 s"));
    assert!(ins[2]
        .text
        .contains("the server's recording shows 1.0 running on average"));
    check_balanced(&html).unwrap();
    assert_offline(&html);
}

#[test]
fn sglang_qwen3_8b() {
    let Some(inputs) = inputs("sglang-0.5/qwen3-8b") else {
        return;
    };
    let r = build(inputs);
    let ins = r.insights();
    assert_eq!(ins.len(), 3);
    assert_eq!(ins[0].title, "The KV cache was too small for the load");
    assert!(
        ins[0]
            .text
            .ends_with("To make room, it ran at most 29 at once and queued the rest."),
        "{}",
        ins[0].text
    );
    assert_eq!(ins[1].title, "Some requests waited much longer to start");
    assert!(ins[1]
        .text
        .contains("within 641 ms, but the slowest (p99) waited 22.1 s: they were queued"));
    assert_eq!(ins[2].title, "On average 17 of 32 requests ran at once");
    assert_eq!(
        ins[2].text,
        "The load kept 32 requests open; the server's recording shows 16.8 running on average while it was busy. The load tool measured 799 output tokens/s over the whole run."
    );
    let need = r.cache_need().unwrap();
    assert_eq!(
        (need.pool_tokens, need.need_tokens, need.fit),
        (32_096, 34_816, 29)
    );
    let html = r.render_page();
    assert!(html.find("id=\"h-limits\"").unwrap() < html.find("id=\"h-happened\"").unwrap());
    assert_eq!(html.matches("<li class=\"limit limit\">").count(), 3);
    assert!(figure(&html, "fig-cache")
        .unwrap()
        .contains("29 of them fit."));
    assert!(figure(&html, "fig-memory").is_some());
    // T15 is core's, decided with the window's other checks: 10 passes (T15, T16, T17, T24 and
    // T25 among them).
    assert!(html.contains("10 passed; 1 does not apply to SGLang</summary>"));
    check_balanced(&html).unwrap();
}

#[test]
fn sglang_qwen3_8b_cli() {
    let Some((_tmp, run)) = copy_run("sglang-0.5/qwen3-8b") else {
        return;
    };
    let out = Command::new(bin())
        .args(["report"])
        .arg(&run)
        .output()
        .unwrap();
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("[T15] PASS  client and server agree: 32 requests"));
    assert!(stdout.contains("requested 32 concurrent"));
    assert!(stdout.contains("What limited this run:\n  - The KV cache was too small for the load."));
    assert!(stdout
        .trim_end()
        .ends_with(&format!("-> {}", run.join("report.html").display())));
    let html = std::fs::read_to_string(run.join("report.html")).unwrap();
    assert!(html.contains(
        "<dt>Made from</dt><dd>boot.log, before.snapshot.json, after.snapshot.json, run.series.jsonl, bench.json</dd>"
    ));
}

#[test]
fn trtllm_qwen3_8b() {
    let Some(inputs) = inputs("trtllm-1.3/qwen3-8b") else {
        return;
    };
    let r = build(inputs);
    assert_eq!(r.engine(), Engine::Trtllm);
    assert_eq!(r.title(), "TensorRT-LLM 1.3.0rc29 run");
    assert_eq!(
        r.result(Tripwire::T14).unwrap().status,
        Status::NotApplicable
    );
    assert_eq!(r.summary().finished_by_reason.len(), 1);
    assert_eq!(r.summary().finished_by_reason["length"], 32.0);
    let html = r.render_page();
    assert!(html.contains("T14 (does not apply to TensorRT-LLM)"));
    assert!(html.contains("On TensorRT-LLM: a request is paused for recompute"));
    assert!(!html.contains("On SGLang"));
    assert_eq!(
        html.matches("TensorRT-LLM updates these readings only when a request completes")
            .count(),
        2,
        "the lag note under both time charts"
    );
    assert!(figure(&html, "fig-tput").is_none());
    assert!(html.contains("No output-tokens-per-second chart: TensorRT-LLM"));
    let ins = r.insights();
    assert_eq!(ins[0].title, "The KV cache held the whole load");
    assert!(ins[0].text.contains("holds 37,760 tokens") && ins[0].text.contains("92% of it"));
    assert!(ins.iter().any(|i| i.key == "pace"
        && i.text
            .contains("TensorRT-LLM updates its running gauge only when a request completes")));
    check_balanced(&html).unwrap();
    assert_offline(&html);
}

#[test]
fn vllm_xray_run_with_a_result_file() {
    let Some(inputs) = inputs("vllm-0.28/xray") else {
        return;
    };
    // T15 is core's, decided once with the window's other checks.
    let r = build(inputs);
    assert_eq!(r.result(Tripwire::T15).unwrap().status, Status::Pass);
    let ins = r.insights();
    assert_eq!(
        ins[0].text,
        "The load kept 32 requests open, but the server ran at most 10 at once. It also preempted 21 running requests."
    );
    assert_eq!(
        ins[1].text,
        "Half the requests waited more than 28.9 s for their first token, the slowest (p99) 73.4 s, most of it in the queue."
    );
    assert!(ins[2].text.starts_with("The load kept 32 requests open; the server's recording shows 8.0 running on average while it was busy."));
    let html = r.render_page();
    // With a result file the tokens/s tile compares the server's count with the load tool's.
    assert!(html.contains("the load tool measured 336.3 over its 95.2 s"));
    assert!(html.contains("Time to first token, median"));
}

/// The real data-parallel scrapes (`vllm-0.32-cpu/dp2`, two engines of 6 blocks each): the
/// server has no single usage gauge, so the usage chart draws each engine's, and its caption
/// says the engines have a cache each. Before, the chart was empty on every DP run.
#[test]
fn a_data_parallel_run_draws_each_engines_cache() {
    use inferlint_core::series::{Series, SeriesWriter};
    use inferlint_core::snapshot::Snapshot;
    let names = ["idle", "load1", "load2", "load3", "after"];
    let texts: Option<Vec<String>> = names
        .iter()
        .map(|n| inferlint_core::testkit::evidence_text(&format!("vllm-0.32-cpu/dp2/{n}.prom")))
        .collect();
    let Some(texts) = texts else { return };
    let snap = |t: &str| Snapshot::from_text(t, "dp2.prom").unwrap();
    let mut w = SeriesWriter::new(Vec::new(), "http://127.0.0.1:8011", 0.25);
    for (i, t) in texts.iter().enumerate() {
        w.write_metrics(
            &snap(t).metrics,
            None,
            1000.0 + i as f64 * 0.25,
            Some(i as i64 * 250_000_000),
        )
        .unwrap();
    }
    let text = String::from_utf8(w.into_inner()).unwrap();
    let series = Series::from_text(&text, "dp2.series.jsonl").unwrap();
    let inputs = inferlint_report::Inputs {
        before: Some(snap(&texts[0])),
        after: Some(snap(&texts[4])),
        series: Some(series),
        requested: Some(8),
        generated_at: Some("2026-12-03 07:00 UTC".into()),
        ..Default::default()
    };
    let html = build(inputs).render_page();
    let kv = figure(&html, "fig-kv").expect("the usage chart is drawn");
    assert!(kv.contains("Engine 0") && kv.contains("Engine 1"), "{kv}");
    assert!(
        kv.contains("the 2 data-parallel engines have a cache each"),
        "{kv}"
    );
    // Each engine's line carries its own readings (0.8 of each pool under load).
    assert!(kv.contains("80%") || kv.contains("80.0"), "{kv}");
    check_balanced(&html).unwrap();
    assert_offline(&html);
}
