//! The report of the recorded vLLM 0.28 live run (docs/design/evidence.md#vllm-028-live): its
//! results, summary, insights, the page's pinned strings and charts, and the CLI.

use crate::report_support;

use std::process::Command;

use inferlint_core::prom::Metrics;
use inferlint_core::{Status, Tripwire};
use inferlint_report::Report;
use report_support::*;

const RUN: &str = "vllm-0.28/live";

fn live() -> Option<Report> {
    let mut inputs = inputs(RUN)?;
    inputs.requested = Some(32);
    Some(build(inputs))
}

#[test]
fn results_and_summary_are_the_pinned_ones() {
    let Some(r) = live() else { return };
    let got: Vec<(Tripwire, Status)> = r.results().iter().map(|x| (x.tripwire, x.status)).collect();
    use Status::*;
    use Tripwire::*;
    assert_eq!(
        got,
        vec![
            (T12, Pass),
            (T5, Warn),
            (T6, Pass),
            (T1, Fail),
            (T10, Pass),
            (T14, Pass),
            (T9, Warn),
            (T8, Fail),
            (T16, Pass),
            (T25, Pass)
        ]
    );
    assert_eq!(r.usable_blocks(), Some(42));
    let s = r.summary();
    assert_eq!(s.finished, Some(32.0));
    assert_eq!(s.finished_by_reason["length"], 32.0);
    assert_eq!(s.finished_by_reason["error"], 0.0);
    assert_eq!(s.errors, Some(0.0));
    assert_eq!(s.output_tokens, Some(32000.0));
    assert_eq!(s.prompt_tokens, Some(2819.0));
    assert_eq!(s.preemptions, Some(22.0));
    assert_eq!(s.peak_running, Some(10.0));
    assert_eq!(s.interval_s, Some(0.25));
    assert!((s.span_s.unwrap() - 93.72).abs() < 0.01);
    assert!((s.mean_queue_s.unwrap() - 936.91 / 32.0).abs() < 0.01);
    assert_eq!(s.boot_s, Some(124.0));
    assert_eq!(s.readings, 365);
    assert_eq!(r.title(), "vLLM 0.28.0 run");
}

#[test]
fn insights_without_a_result_file() {
    let Some(r) = live() else { return };
    let ins = r.insights();
    assert_eq!(ins.len(), 3, "{ins:?}");
    assert_eq!(ins[0].key, "concurrency");
    assert_eq!(
        ins[0].text,
        "The load kept 32 requests open, but the server ran at most 10 at once. It also preempted 22 running requests."
    );
    assert_eq!(ins[1].key, "waiting");
    assert_eq!(
        ins[1].text,
        "A request waited 29.3 s on average before the server started it."
    );
    assert_eq!(ins[2].key, "pace");
    assert!(
        ins[2].text.ends_with("while the server was busy, its recording shows 8.0 running on average and 343 output tokens/s."),
        "{}",
        ins[2].text
    );
    // Hybrid attention/Mamba model (784-token blocks): no cache sentence.
    assert!(r.cache_need().is_none());
    let busy = r.busy_averages().unwrap();
    assert!((busy.running - 8.03).abs() < 0.01);
}

#[test]
fn the_page_carries_the_pinned_strings() {
    let Some(r) = live() else { return };
    let html = r.render_page();
    for s in [
        "The load tool kept 32 requests open for 1 min 34 s.",
        "finished 32 requests with no errors and generated 32,000 tokens",
        "never worked on more than 10 at once",
        "32,000 (1,000 per request)",
        "2,819 (88 per request)",
        "32: 32 reached their token limit, no errors",
        "10 of 27. Not here: T2 and T3 (run at clean-up), T4 and T11 (need two or more boot logs), T7 (needs a live server), T13 (a rule for test scripts), T15 (needs the load tool&#39;s result file), T17 (needs the load tool&#39;s result file or before and after readings), T18 (needs the load&#39;s command)",
        "The server worked; the failed tripwires are about the measurement.",
        "How many requests ran at once, and for how long",
        "but the server never ran more than 10.",
        "2 failed",
        "2 warnings",
        "0 can&#39;t tell",
        "6 passed",
        "The gauge moves in steps of 1/42: one block is held back (T14).",
        "29.6 s, 29.3 s of it waiting in the queue",
        "2 min 4 s, before the test (from the boot log)",
        "the server read every 0.25 s, 365 readings",
    ] {
        let s = s.replace("&#39;", "'");
        assert!(html.contains(&s), "missing: {s}");
    }
    // Tiles: 10 of 32, 22 preemptions, 341.4 tokens/s, 42 usable blocks.
    let tiles = &html[html.find("class=\"tiles\"").unwrap()..];
    let tiles = &tiles[..tiles.find("class=\"facts\"").unwrap()];
    for s in [">10 <small>of 32</small>", ">22<", ">341.4<", ">42<"] {
        assert!(tiles.contains(s), "tile {s} missing in {tiles}");
    }
    // Preemption triangles: each chart that has them counts all 22.
    for id in ["fig-requests", "fig-kv"] {
        let fig = figure(&html, id).unwrap();
        assert_eq!(triangle_sum(fig), 22.0, "{id}");
    }
    assert!(figure(&html, "fig-tput").is_some());
    assert!(figure(&html, "fig-levels").is_some());
    assert!(
        figure(&html, "fig-cache").is_none(),
        "no cache chart for a hybrid model"
    );
    // Sections in the order of docs/design/report.md#page-order, "what limited this run" first.
    let order: Vec<usize> = [
        "h-limits",
        "h-happened",
        "h-results",
        "h-did",
        "h-server",
        "h-guide",
    ]
    .iter()
    .map(|id| {
        html.find(&format!("id=\"{id}\""))
            .unwrap_or_else(|| panic!("{id}"))
    })
    .collect();
    assert!(order.windows(2).all(|w| w[0] < w[1]), "{order:?}");
    check_balanced(&html).unwrap();
    assert_offline(&html);
    let size = html.len();
    assert!(size > 50_000 && size < 400_000, "{size}");
}

#[test]
fn an_error_counter_moving_from_0_to_3_is_reported() {
    let Some(mut inputs) = inputs(RUN) else {
        return;
    };
    inputs.requested = Some(32);
    let after = inputs.after.as_mut().unwrap();
    let line = "vllm:request_success_total{engine=\"0\",finished_reason=\"error\",model_name=\"qwen38\"} 0.0";
    assert!(after.text.contains(line));
    after.text = after.text.replace(line, &line.replace("} 0.0", "} 3.0"));
    after.metrics = Metrics::parse(&after.text).unwrap();
    let r = build(inputs);
    assert_eq!(r.summary().errors, Some(3.0));
    let html = r.render_page();
    assert!(html.contains("(3 of them with an error)"));
    assert!(!html.contains("with no errors"));
    assert!(html.contains("3 failed with an error"));
}

#[test]
fn the_page_reads_back_its_own_data() {
    let Some(r) = live() else { return };
    let html = r.render_page();
    let back = inferlint_report::embed::read_back(&html, "report.html").unwrap();
    assert_eq!(back.results, r.results());
    assert_eq!(&back.summary, r.summary());
    assert_eq!(back.insights, r.insights());
    assert_eq!(back.usable_blocks, Some(42));
    assert_eq!(back.title, "vLLM 0.28.0 run");
}

#[test]
fn the_fragment_has_no_document_wrapper() {
    let Some(r) = live() else { return };
    let f = r.render_fragment();
    assert!(
        f.starts_with("<title>vLLM 0.28.0 run</title>"),
        "{}",
        &f[..80]
    );
    for s in ["<!DOCTYPE", "<html", "<body", "rel=\"icon\""] {
        assert!(!f.contains(s), "{s}");
    }
    check_balanced(&f).unwrap();
}

#[test]
fn cli_writes_the_report_and_exits_0_despite_failures() {
    let Some((_tmp, run)) = copy_run(RUN) else {
        return;
    };
    let out = Command::new(bin())
        .args(["report", run.to_str().unwrap(), "--requested", "32"])
        .output()
        .unwrap();
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("[ T1] TRIPWIRE-FAILED  22 preemptions during the run\n"));
    assert!(stdout.contains(
        "[ T8] TRIPWIRE-FAILED  requested 32 concurrent, server never ran more than 10\n"
    ));
    assert!(stdout.contains("What limited this run:\n  - The server ran fewer requests at once than the load sent. The load kept 32"));
    let report = run.join("report.html");
    let last = stdout.lines().last().unwrap();
    assert_eq!(
        last,
        format!(
            "10 checks (6 pass, 2 warn, 2 tripwire-failed) -> {}",
            report.display()
        )
    );
    let html = std::fs::read_to_string(&report).unwrap();
    assert!(html.len() > 50_000);
    assert!(html.contains("<dt>Made from</dt><dd>boot.log, before.snapshot.json, after.snapshot.json, run.series.jsonl</dd>"));
    // --json prints only the results array.
    let out = Command::new(bin())
        .args([
            "report",
            run.to_str().unwrap(),
            "--requested",
            "32",
            "--json",
            "-o",
        ])
        .arg(run.join("again.html"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v.as_array().unwrap().len(), 10);
    assert_eq!(v[3]["tripwire"], "T1");
    assert_eq!(v[3]["status"], "fail");
}
