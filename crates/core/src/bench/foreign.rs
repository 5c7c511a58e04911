//! Result files of load tools that are not an engine's own client, read into the same
//! [`BenchResult`] T15 compares with the server: NVIDIA AIPerf's `profile_export_aiperf.json`
//! and GuideLLM's `benchmarks.json`.
//!
//! A count the file does not hold stays None (T15 then says it cannot tell); it is never zero.

use std::path::Path;

use serde_json::Value;

use super::BenchResult;

/// A result file that could not be read, naming the file.
#[derive(Debug, thiserror::Error)]
pub enum ForeignError {
    #[error("{path}: {source}")]
    Io {
        path: String,
        source: std::io::Error,
    },
    #[error("{path}: not JSON: {source}")]
    Json {
        path: String,
        source: serde_json::Error,
    },
    #[error("{path}: {what}")]
    Shape { path: String, what: String },
}

pub(crate) fn read_json(path: &Path) -> Result<Value, ForeignError> {
    let p = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|source| ForeignError::Io {
        path: p.clone(),
        source,
    })?;
    serde_json::from_str(&text).map_err(|source| ForeignError::Json { path: p, source })
}

pub(crate) fn num(v: Option<&Value>) -> Option<f64> {
    match v? {
        Value::Number(n) => n.as_f64(),
        _ => None,
    }
}

/// An aiperf metric: `{"unit": …, "avg": x, …}` (or a bare number).
fn aiperf_metric(doc: &Value, names: &[&str], stat: &str) -> Option<f64> {
    names.iter().find_map(|name| {
        let m = doc.get(*name)?;
        num(Some(m)).or_else(|| num(m.get(stat))).or_else(|| {
            // Totals are exported as a single value under one of these keys.
            ["avg", "value", "sum"].iter().find_map(|k| num(m.get(*k)))
        })
    })
}

fn empty_result(path: &Path, backend: &str) -> BenchResult {
    BenchResult {
        backend: Some(backend.to_string()),
        path: path.display().to_string(),
        ..BenchResult::default()
    }
}

/// Reads AIPerf's `profile_export_aiperf.json`.
pub fn load_aiperf(path: &Path) -> Result<BenchResult, ForeignError> {
    let doc = read_json(path)?;
    if !doc.is_object()
        || (doc.get("aiperf_version").is_none() && doc.get("request_count").is_none())
    {
        return Err(ForeignError::Shape {
            path: path.display().to_string(),
            what: "not an aiperf profile export (no aiperf_version or request_count)".into(),
        });
    }
    let mut r = empty_result(path, "aiperf");
    r.completed = aiperf_metric(&doc, &["request_count"], "avg");
    r.failed = aiperf_metric(&doc, &["error_request_count"], "avg").or_else(|| {
        // No error metric and an empty error summary: the run had no failed request.
        match doc.get("error_summary") {
            Some(Value::Array(a)) if a.is_empty() => Some(0.0),
            _ => None,
        }
    });
    r.total_output_tokens = aiperf_metric(
        &doc,
        &[
            "total_output_tokens",
            "total_output_sequence_length",
            "total_osl",
        ],
        "avg",
    )
    .or_else(|| {
        aiperf_metric(
            &doc,
            &["output_sequence_length", "output_token_count"],
            "sum",
        )
    });
    r.total_input_tokens = aiperf_metric(
        &doc,
        &[
            "total_input_tokens",
            "total_input_sequence_length",
            "total_isl",
        ],
        "avg",
    )
    .or_else(|| aiperf_metric(&doc, &["input_sequence_length"], "sum"));
    r.duration = aiperf_metric(&doc, &["benchmark_duration"], "avg");
    r.output_throughput = aiperf_metric(&doc, &["output_token_throughput"], "avg");
    r.mean_ttft_ms = aiperf_metric(&doc, &["time_to_first_token"], "avg");
    r.median_ttft_ms = doc
        .get("time_to_first_token")
        .and_then(|m| num(m.get("p50")));
    r.p99_ttft_ms = doc
        .get("time_to_first_token")
        .and_then(|m| num(m.get("p99")));
    // Older exports keep the load under `loadgen`; aiperf 0.13 (schema 1.4) keeps it in the
    // profiling phase of `phases`.
    let loadgen = doc.pointer("/input_config/loadgen");
    let profiling = doc
        .pointer("/input_config/phases")
        .and_then(Value::as_array)
        .and_then(|phases| {
            phases
                .iter()
                .find(|p| p.get("kind").and_then(Value::as_str) == Some("profiling"))
        });
    r.max_concurrency = loadgen
        .and_then(|l| num(l.get("concurrency")))
        .or_else(|| profiling.and_then(|p| num(p.get("concurrency"))));
    r.num_prompts = loadgen
        .and_then(|l| num(l.get("request_count")))
        .or_else(|| profiling.and_then(|p| num(p.get("requests"))));
    Ok(r)
}

/// Reads GuideLLM's `benchmarks.json`: the counts summed over every benchmark in the file (the
/// server's counters cover them all).
pub fn load_guidellm(path: &Path) -> Result<BenchResult, ForeignError> {
    let doc = read_json(path)?;
    let Some(benchmarks) = doc.get("benchmarks").and_then(Value::as_array) else {
        return Err(ForeignError::Shape {
            path: path.display().to_string(),
            what: "not a GuideLLM report (no benchmarks list)".into(),
        });
    };
    Ok(guidellm_result(path, benchmarks))
}

/// The counts of `benchmarks` (some or all of a GuideLLM report's), summed.
pub(crate) fn guidellm_result(path: &Path, benchmarks: &[Value]) -> BenchResult {
    let mut r = empty_result(path, "guidellm");
    let sum = |f: &dyn Fn(&Value) -> Option<f64>| -> Option<f64> {
        let mut total = 0.0;
        for b in benchmarks {
            total += f(b)?;
        }
        (!benchmarks.is_empty()).then_some(total)
    };
    r.completed = sum(&|b| num(b.pointer("/metrics/request_totals/successful")));
    r.failed = sum(&|b| {
        let errored = num(b.pointer("/metrics/request_totals/errored"))?;
        let incomplete = num(b.pointer("/metrics/request_totals/incomplete")).unwrap_or(0.0);
        Some(errored + incomplete)
    });
    r.total_output_tokens =
        sum(&|b| num(b.pointer("/metrics/output_token_count/successful/total_sum")));
    r.total_input_tokens =
        sum(&|b| num(b.pointer("/metrics/prompt_token_count/successful/total_sum")));
    r.duration = sum(&|b| {
        num(b.get("duration")).or_else(|| Some(num(b.get("end_time"))? - num(b.get("start_time"))?))
    });
    if let Some(last) = benchmarks.last() {
        r.max_concurrency = num(last.pointer("/config/strategy/streams"))
            .or_else(|| num(last.pointer("/args/strategy/streams")));
        let ttft = last.pointer("/metrics/time_to_first_token_ms/successful");
        r.mean_ttft_ms = ttft.and_then(|t| num(t.get("mean")));
        r.median_ttft_ms = ttft.and_then(|t| num(t.get("median")));
        r.p99_ttft_ms = ttft.and_then(|t| num(t.pointer("/percentiles/p99")));
    }
    if let (Some(t), Some(d)) = (r.total_output_tokens, r.duration) {
        if d > 0.0 {
            r.output_throughput = Some(t / d);
        }
    }
    r.output_lens = guidellm_output_lens(benchmarks, r.completed).unwrap_or_default();
    r
}

/// Each successful request's output tokens, in the report's order: what T18 reads where the
/// server counts no finished reasons (llama.cpp). Only when the report lists every successful
/// request (GuideLLM 0.8 keeps every request's token counts; earlier releases kept a sample,
/// whose lengths would be judged as if they were all).
fn guidellm_output_lens(benchmarks: &[Value], completed: Option<f64>) -> Option<Vec<f64>> {
    let mut lens = Vec::new();
    for b in benchmarks {
        for request in b.pointer("/requests/successful")?.as_array()? {
            lens.push(num(request.get("output_tokens"))?);
        }
    }
    (!lens.is_empty() && Some(lens.len() as f64) == completed).then_some(lens)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(dir: &Path, name: &str, v: &Value) -> std::path::PathBuf {
        let p = dir.join(name);
        std::fs::write(&p, serde_json::to_string(v).unwrap()).unwrap();
        p
    }

    #[test]
    fn reads_aiperf_totals() {
        let dir = tempfile::tempdir().unwrap();
        let p = write(
            dir.path(),
            "profile_export_aiperf.json",
            &serde_json::json!({
                "schema_version": "1.0", "aiperf_version": "0.13.0",
                "request_count": {"unit": "requests", "avg": 40.0},
                "error_request_count": {"unit": "requests", "avg": 2.0},
                "total_output_tokens": {"unit": "tokens", "avg": 1280.0},
                "benchmark_duration": {"unit": "sec", "avg": 2.5},
                "time_to_first_token": {"unit": "ms", "avg": 50.0, "p50": 48.0, "p99": 90.0},
                "input_config": {"loadgen": {"concurrency": 8, "request_count": 42}},
                "error_summary": []
            }),
        );
        let r = load_aiperf(&p).unwrap();
        assert_eq!(r.completed, Some(40.0));
        assert_eq!(r.failed, Some(2.0));
        assert_eq!(r.total_output_tokens, Some(1280.0));
        assert_eq!(r.max_concurrency, Some(8.0));
        assert_eq!(r.p99_ttft_ms, Some(90.0));
        assert_eq!(r.backend.as_deref(), Some("aiperf"));
    }

    #[test]
    fn aiperf_013_keeps_the_load_in_its_profiling_phase() {
        let dir = tempfile::tempdir().unwrap();
        let p = write(
            dir.path(),
            "profile_export_aiperf.json",
            &serde_json::json!({
                "schema_version": "1.4", "aiperf_version": "0.13.0",
                "request_count": {"unit": "requests", "avg": 16.0},
                "input_config": {"phases": [
                    {"kind": "warmup", "concurrency": 1, "requests": 2},
                    {"kind": "profiling", "concurrency": 8, "requests": 16}
                ]},
                "error_summary": []
            }),
        );
        let r = load_aiperf(&p).unwrap();
        assert_eq!(r.max_concurrency, Some(8.0));
        assert_eq!(r.num_prompts, Some(16.0));
    }

    #[test]
    fn aiperf_missing_counts_stay_unknown() {
        let dir = tempfile::tempdir().unwrap();
        let p = write(
            dir.path(),
            "a.json",
            &serde_json::json!({"aiperf_version": "0.13.0", "error_summary": [{"x": 1}]}),
        );
        let r = load_aiperf(&p).unwrap();
        assert_eq!(r.completed, None);
        assert_eq!(r.failed, None);
        assert_eq!(r.total_output_tokens, None);
        let bad = write(dir.path(), "b.json", &serde_json::json!([1, 2]));
        assert!(load_aiperf(&bad)
            .unwrap_err()
            .to_string()
            .contains("b.json"));
    }

    #[test]
    fn reads_guidellm_sums() {
        let dir = tempfile::tempdir().unwrap();
        let bench = |ok: f64, err: f64, toks: f64| {
            serde_json::json!({
                "config": {"strategy": {"type_": "concurrent", "streams": 4}},
                "duration": 2.0,
                "metrics": {
                    "request_totals": {"successful": ok, "errored": err, "incomplete": 0, "total": ok + err},
                    "output_token_count": {"successful": {"total_sum": toks}},
                    "prompt_token_count": {"successful": {"total_sum": 64.0 * ok}},
                    "time_to_first_token_ms": {"successful": {"mean": 10.0, "median": 9.0, "percentiles": {"p99": 20.0}}}
                }
            })
        };
        let p = write(
            dir.path(),
            "benchmarks.json",
            &serde_json::json!({"benchmarks": [bench(10.0, 1.0, 320.0), bench(10.0, 0.0, 320.0)]}),
        );
        let r = load_guidellm(&p).unwrap();
        assert_eq!(r.completed, Some(20.0));
        assert_eq!(r.failed, Some(1.0));
        assert_eq!(r.total_output_tokens, Some(640.0));
        assert_eq!(r.max_concurrency, Some(4.0));
        assert_eq!(r.output_throughput, Some(160.0));
        let bad = write(dir.path(), "x.json", &serde_json::json!({"a": 1}));
        assert!(load_guidellm(&bad).is_err());
    }
}
