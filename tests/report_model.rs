//! The report on special inputs: a restart between the readings, a failed start, several boot
//! logs, and the run's own results merged in.

use crate::report_support;

use inferlint_core::snapshot::Snapshot;
use inferlint_core::{CheckResult, Status, Tripwire};
use inferlint_report::{BootLog, Inputs, Report};
use report_support::*;

fn log(rel: &str, label: &str) -> Option<BootLog> {
    Some(BootLog {
        label: label.into(),
        text: inferlint_core::testkit::evidence_text(rel)?,
    })
}

#[test]
fn a_restart_voids_the_counts_and_the_insights() {
    let (Some(b), Some(a)) = (
        inferlint_core::testkit::evidence("vllm-0.28/metrics/restart_before.prom"),
        inferlint_core::testkit::evidence("vllm-0.28/metrics/restart_after.prom"),
    ) else {
        return;
    };
    let r = Report::build(Inputs {
        before: Some(Snapshot::load(&b).unwrap()),
        after: Some(Snapshot::load(&a).unwrap()),
        ..Inputs::default()
    });
    let s = r.summary();
    assert!(s
        .restarted
        .as_deref()
        .unwrap()
        .starts_with("server restarted between snapshots"));
    assert_eq!(s.finished, None);
    assert_eq!(s.output_tokens, None);
    assert!(r.insights().is_empty());
    assert_eq!(r.lede().len(), 1);
    let html = r.render_page();
    assert!(html.contains("The server restarted between the before and after readings, so the counts between them mean nothing."));
    check_balanced(&html).unwrap();
}

#[test]
fn a_failed_start_says_the_server_failed() {
    let Some(l) = log("vllm-0.28/boot_fail_accelerator.log", "boot.log") else {
        return;
    };
    let r = Report::build(Inputs {
        boot_logs: vec![l],
        ..Inputs::default()
    });
    assert_eq!(r.result(Tripwire::T12).unwrap().status, Status::Fail);
    let html = r.render_page();
    assert!(html.contains("T12: the server itself failed."));
    assert!(html.len() > 10_000);
    check_balanced(&html).unwrap();
}

#[test]
fn two_boot_logs_compare_pools() {
    let (Some(hi), Some(lo)) = (
        log("vllm-0.28/boot_pool_level_hi.log", "run1/boot.log"),
        log("vllm-0.28/boot_pool_level_lo.log", "run2/boot.log"),
    ) else {
        return;
    };
    let r = Report::build(Inputs {
        boot_logs: vec![hi, lo],
        ..Inputs::default()
    });
    assert_eq!(r.result(Tripwire::T4).unwrap().status, Status::Warn);
    assert_eq!(r.result(Tripwire::T11).unwrap().status, Status::Warn);
    let html = r.render_page();
    let pools = figure(&html, "fig-pools").expect("a pool chart with two boot logs");
    assert!(pools.contains("13,575 tokens") && pools.contains("12,405 tokens"));
    assert!(
        html.contains("id=\"h-did\""),
        "the pools chart shows without a recording"
    );
}

#[test]
fn the_runs_own_results_are_merged() {
    let Some(l) = log("vllm-0.28/boot_cudagraphs.log", "boot.log") else {
        return;
    };
    let r = Report::build(Inputs {
        boot_logs: vec![l],
        extra_results: vec![
            CheckResult::pass(Tripwire::T2, "2 consecutive clear readings"),
            CheckResult::pass(
                Tripwire::T7,
                "1 + 8 concurrent requests served, server alive",
            ),
            CheckResult::fail(
                Tripwire::T2,
                "not clear after 120s: last reading 21768 MiB used, 1 server processes alive",
            ),
        ],
        ..Inputs::default()
    });
    let t2: Vec<_> = r
        .results()
        .iter()
        .filter(|x| x.tripwire == Tripwire::T2)
        .collect();
    assert_eq!(t2.len(), 1, "one T2, the last");
    assert_eq!(t2[0].status, Status::Fail);
    assert_eq!(r.result(Tripwire::T7).unwrap().status, Status::Pass);
    let html = r.render_page();
    assert!(html.contains("T2 · Orphaned engine process"));
    assert!(!html.contains("T2 and T3 (run at clean-up)"));
    assert!(html.contains("T3 (runs at clean-up)"));
}

use crate::report_support::long;

#[test]
fn a_day_long_recording_stays_small_and_exact_where_it_matters() {
    let Some(mut inputs) = inputs("vllm-0.28/live") else {
        return;
    };
    inputs.requested = Some(32);
    let base = inputs.series.take().unwrap();
    let day = long::stretch(&base, 345_600);
    let total =
        day.samples.last().unwrap().preemptions().unwrap() - day.samples[0].preemptions().unwrap();
    inputs.series = Some(day);
    let r = Report::build(inputs);
    let html = r.render_page();
    assert!(html.len() <= 2_000_000, "{} bytes", html.len());
    for id in ["fig-requests", "fig-kv"] {
        let fig = figure(&html, id).unwrap();
        assert!(fig.contains("Thinned: 345,600 readings"), "{id}");
        assert_eq!(
            triangle_sum(fig),
            total,
            "{id}: every preemption still counted"
        );
    }
    // The peak and the ceiling's lowest point survive the thinning.
    let data = |id: &str| -> serde_json::Value {
        let fig = figure(&html, id).unwrap();
        let start = fig.find("class=\"chart-data\">").unwrap() + "class=\"chart-data\">".len();
        let end = start + fig[start..].find("</script>").unwrap();
        serde_json::from_str(&fig[start..end]).unwrap()
    };
    let req = data("fig-requests");
    let extreme = |series: usize, pick: fn(f64, f64) -> f64, init: f64| {
        req["series"][series]["values"]
            .as_array()
            .unwrap()
            .iter()
            .flat_map(|v| match v {
                serde_json::Value::Array(a) => a.iter().filter_map(|x| x.as_f64()).collect(),
                v => v.as_f64().into_iter().collect::<Vec<_>>(),
            })
            .fold(init, pick)
    };
    assert_eq!(extreme(0, f64::max, 0.0), 10.0, "peak running");
    assert_eq!(extreme(2, f64::min, f64::MAX), 7.0, "lowest ceiling");
    assert!(html.contains("The full recording is run.series.jsonl in "));
    check_balanced(&html).unwrap();
}

/// Every result the recorded runs give reads back from its JSON into its check's own struct
/// (never kept as unread JSON), equal to what was written: the structs hold every shape the
/// checks write, so a saved page or results.json is read by field like a fresh result.
#[test]
fn every_recorded_result_reads_back_into_its_struct() {
    let runs = [
        "vllm-0.28/live",
        "vllm-0.28/xray",
        "vllm-0.30/capped",
        "sglang-0.5/capped",
        "sglang-0.5/live",
        "sglang-0.5/qwen3-8b",
        "sglang-0.5/qwen3-8b-own-client",
        "trtllm-1.3/qwen3-8b",
        "trtllm-1.3/no-iter-stats",
    ];
    let mut typed = 0;
    for rel in runs {
        let Some(inputs) = inputs(rel) else {
            return;
        };
        let report = build(inputs);
        for r in report.results() {
            let text = serde_json::to_string(r).unwrap();
            let back: CheckResult = serde_json::from_str(&text).unwrap();
            assert!(
                !matches!(back.evidence, inferlint_core::evidence::Evidence::Unread(_)),
                "{rel} {}: {text}",
                r.tripwire
            );
            assert_eq!(&back, r, "{rel}");
            assert_eq!(serde_json::to_string(&back).unwrap(), text, "{rel}");
            typed += 1;
        }
    }
    assert!(typed > 50, "{typed} results");
}
