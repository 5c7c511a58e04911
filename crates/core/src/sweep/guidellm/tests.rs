//! On the real GuideLLM 0.8.1 `--profile sweep` recorded against the simulated vLLM
//! (tests/fixtures/guidellm-0.8/README.md, `sweep-sim/`).

use std::path::{Path, PathBuf};

use serde_json::Value;

use super::*;
use crate::result::Status;
use crate::testkit::evidence;

const DIR: &str = "guidellm-0.8/sweep-sim";

fn recording() -> Option<(PathBuf, Series)> {
    let report = evidence(&format!("{DIR}/benchmarks.json"))?;
    let series = Series::load(&evidence(&format!("{DIR}/run.series.jsonl"))?).unwrap();
    Some((report, series))
}

/// The report with one number of benchmark `k` changed, in a file of its own.
fn mutated(report: &Path, k: usize, pointer: &str, value: f64, dir: &Path) -> PathBuf {
    let mut doc: Value = serde_json::from_slice(&std::fs::read(report).unwrap()).unwrap();
    *doc["benchmarks"][k].pointer_mut(pointer).unwrap() = value.into();
    let p = dir.join("benchmarks.json");
    std::fs::write(&p, serde_json::to_vec(&doc).unwrap()).unwrap();
    p
}

fn statuses(series: &Series, report: &Path) -> Vec<Status> {
    let points = guidellm_points(report).unwrap();
    t15_per_point(series, &points, Engine::Vllm)
        .iter()
        .map(|r| r.status)
        .collect()
}

#[test]
fn each_point_is_its_own_benchmark_with_its_own_span() {
    let Some((report, _)) = recording() else {
        return;
    };
    let points = guidellm_points(&report).unwrap();
    let labels: Vec<&str> = points.iter().map(|p| p.label.as_str()).collect();
    assert_eq!(labels, ["synchronous", "throughput", "constant@18.17"]);
    assert_eq!(points[0].streams, Some(1.0));
    assert!(points[2].rate.is_some_and(|r| (r - 18.17).abs() < 0.01));
    for (k, p) in points.iter().enumerate() {
        assert!(p.start < p.end);
        assert_eq!(p.result.completed, Some(8.0), "point {k}");
        assert_eq!(p.result.total_output_tokens, Some(128.0), "point {k}");
        if let Some(next) = points.get(k + 1) {
            assert!(
                p.end < next.start,
                "GuideLLM runs its points one after another"
            );
        }
    }
}

#[test]
fn every_point_is_judged_against_its_own_window() {
    let Some((report, series)) = recording() else {
        return;
    };
    let points = guidellm_points(&report).unwrap();
    let results = t15_per_point(&series, &points, Engine::Vllm);
    assert_eq!(results.len(), 3);
    for (k, r) in results.iter().enumerate() {
        assert_eq!(r.status, Status::Pass, "point {k}: {}", r.message);
        assert!(r.message.contains("8 requests"), "point {k}: {}", r.message);
        let (first, last) = bounds(&series, &points, k).unwrap();
        assert!(first.t_wall <= points[k].start && last.t_wall >= points[k].end);
        assert_eq!(
            last.finished_requests().unwrap() - first.finished_requests().unwrap(),
            8.0
        );
    }
}

#[test]
fn one_number_changed_flips_that_point_only() {
    let Some((report, series)) = recording() else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    // The second point's client says 7 requests; the server finished 8 in its window.
    let p = mutated(
        &report,
        1,
        "/metrics/request_totals/successful",
        7.0,
        tmp.path(),
    );
    let got = statuses(&series, &p);
    assert_eq!(got, [Status::Pass, Status::Fail, Status::Pass]);
    let points = guidellm_points(&p).unwrap();
    let r = &t15_per_point(&series, &points, Engine::Vllm)[1];
    // The extra request is the client's own point's, not "other traffic" from its neighbours.
    assert!(r.message.contains("1 more request"), "{}", r.message);

    // The third point said to end after the recording stopped: no row bounds it.
    let last = series.samples.last().unwrap().t_wall;
    let p = mutated(&report, 2, "/end_time", last + 1.0, tmp.path());
    let points = guidellm_points(&p).unwrap();
    let results = t15_per_point(&series, &points, Engine::Vllm);
    let got: Vec<Status> = results.iter().map(|r| r.status).collect();
    assert_eq!(got, [Status::Pass, Status::Pass, Status::Unknown]);
    assert!(
        results[2].message.contains("cannot bound"),
        "{}",
        results[2].message
    );
}

#[test]
fn a_recording_without_the_counter_is_cant_tell_never_zero() {
    let Some((report, mut series)) = recording() else {
        return;
    };
    for s in &mut series.samples {
        s.set_finished_requests(None);
    }
    let points = guidellm_points(&report).unwrap();
    for r in t15_per_point(&series, &points, Engine::Vllm) {
        assert_eq!(r.status, Status::Unknown, "{}", r.message);
        assert!(
            r.message.contains("finished-request counter"),
            "{}",
            r.message
        );
    }
}

#[test]
fn the_whole_run_adds_up_to_the_points() {
    // The three windows together account for every request the server finished in the run.
    let Some((report, series)) = recording() else {
        return;
    };
    let points = guidellm_points(&report).unwrap();
    let whole = crate::bench::foreign::load_guidellm(&report).unwrap();
    let sum: f64 = points.iter().filter_map(|p| p.result.completed).sum();
    assert_eq!(whole.completed, Some(sum));
    let first = series.samples.first().unwrap().finished_requests().unwrap();
    let last = series.samples.last().unwrap().finished_requests().unwrap();
    assert_eq!(last - first, sum);
}

#[test]
fn the_run_wrote_one_verdict_set_per_point_as_a_tools_own_sweep() {
    // `inferlint run`'s sweep.json for the recording: the points as GuideLLM named them, each
    // with its own T15 on its own 8 requests, none blaming "other traffic".
    let Some(p) = evidence(&format!("{DIR}/sweep.json")) else {
        return;
    };
    let doc: Value = serde_json::from_slice(&std::fs::read(p).unwrap()).unwrap();
    assert_eq!(doc["option"], "(load tool)");
    let points = doc["points"].as_array().unwrap();
    let labels: Vec<&str> = points.iter().filter_map(|p| p["label"].as_str()).collect();
    assert_eq!(labels, ["synchronous", "throughput", "constant@18.17"]);
    for p in points {
        let t15: Vec<&Value> = p["results"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|r| r["tripwire"] == "T15")
            .collect();
        assert_eq!(t15.len(), 1, "{p}");
        let message = t15[0]["message"].as_str().unwrap();
        assert!(message.contains("8 requests"), "{message}");
        assert!(!message.contains("other traffic"), "{message}");
    }
}
