//! The results as `vllm bench serve` computes, prints and saves them
//! (docs/design/engines.md#bench-serve-results).

use std::path::PathBuf;

use inferlint_core::series::python_json;
use serde_json::{json, Map, Value};

use super::args::{BenchArgs, BenchRelease};
use super::client::Outcome;

/// numpy's default (linear) percentile.
pub(super) fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let rank = p / 100.0 * (sorted.len() - 1) as f64;
    let lo = rank.floor() as usize;
    let hi = rank.ceil() as usize;
    sorted[lo] + (sorted[hi] - sorted[lo]) * (rank - lo as f64)
}

pub(super) fn mean(x: &[f64]) -> f64 {
    if x.is_empty() {
        0.0
    } else {
        x.iter().sum::<f64>() / x.len() as f64
    }
}

/// Population standard deviation (numpy's default).
pub(super) fn std_dev(x: &[f64]) -> f64 {
    if x.is_empty() {
        return 0.0;
    }
    let m = mean(x);
    (x.iter().map(|v| (v - m) * (v - m)).sum::<f64>() / x.len() as f64).sqrt()
}

/// Python's `str(float)` for the file name and JSON (`10.0`, `inf`).
pub(super) fn py_float(x: f64) -> String {
    crate::expo::py_repr(x)
}

pub(super) fn summarize(
    a: &BenchArgs,
    model: &str,
    rate: f64,
    duration: f64,
    outs: &[Outcome],
) -> Map<String, Value> {
    let ok: Vec<&Outcome> = outs.iter().filter(|o| o.success).collect();
    let completed = ok.len();
    let failed = outs.len() - completed;
    let total_input: u64 = ok.iter().map(|o| o.prompt_len as u64).sum();
    let total_output: u64 = ok.iter().map(|o| o.output_tokens as u64).sum();
    let ttfts: Vec<f64> = ok.iter().map(|o| o.ttft).collect();
    let tpots: Vec<f64> = ok
        .iter()
        .filter(|o| o.output_tokens > 1)
        .map(|o| (o.latency - o.ttft) / (o.output_tokens - 1) as f64)
        .collect();
    let itls: Vec<f64> = ok.iter().flat_map(|o| o.itl.iter().copied()).collect();
    let e2els: Vec<f64> = ok.iter().map(|o| o.latency).collect();
    let (peak_tokens, peak_conc) = peaks(&ok);
    let mut r = run_header(a, model, rate);
    r.insert("duration".into(), json!(duration));
    r.insert("completed".into(), json!(completed));
    if a.vllm_version != BenchRelease::V011 {
        r.insert("failed".into(), json!(failed));
    }
    r.insert("total_input_tokens".into(), json!(total_input));
    r.insert("total_output_tokens".into(), json!(total_output));
    r.insert(
        "request_throughput".into(),
        json!(completed as f64 / duration),
    );
    r.insert("request_goodput".into(), Value::Null);
    r.insert(
        "output_throughput".into(),
        json!(total_output as f64 / duration),
    );
    r.insert(
        "total_token_throughput".into(),
        json!((total_input + total_output) as f64 / duration),
    );
    per_request_lists(a, outs, &mut r);
    r.insert("max_output_tokens_per_s".into(), json!(peak_tokens));
    r.insert("max_concurrent_requests".into(), json!(peak_conc));
    if a.vllm_version != BenchRelease::V011 {
        r.insert("rtfx".into(), json!(0.0));
    }
    percentiles(
        a,
        &mut r,
        [
            ("ttft", ttfts),
            ("tpot", tpots),
            ("itl", itls),
            ("e2el", e2els),
        ],
    );
    r
}

/// The result's first keys: when, against what, at which rate (`--metadata` among them).
fn run_header(a: &BenchArgs, model: &str, rate: f64) -> Map<String, Value> {
    let mut r = Map::new();
    r.insert(
        "date".into(),
        json!(chrono::Local::now().format("%Y%m%d-%H%M%S").to_string()),
    );
    r.insert("endpoint_type".into(), json!(a.backend));
    r.insert("backend".into(), json!(a.backend));
    r.insert("label".into(), json!(a.label));
    r.insert("model_id".into(), json!(model));
    r.insert(
        "tokenizer_id".into(),
        json!(a.tokenizer.clone().unwrap_or_else(|| model.to_string())),
    );
    r.insert("num_prompts".into(), json!(a.num_prompts));
    for kv in &a.metadata {
        if let Some((k, v)) = kv.split_once('=') {
            r.insert(k.to_string(), json!(v));
        }
    }
    r.insert(
        "request_rate".into(),
        if rate.is_infinite() {
            json!("inf")
        } else {
            json!(rate)
        },
    );
    r.insert("burstiness".into(), json!(a.burstiness));
    r.insert("max_concurrency".into(), json!(a.max_concurrency));
    r
}

/// The most output tokens in one second of the run, and the most requests in flight.
fn peaks(ok: &[&Outcome]) -> (f64, u64) {
    if ok.is_empty() {
        return (0.0, 0);
    }
    let min_start = ok
        .iter()
        .map(|o| o.start_time)
        .fold(f64::INFINITY, f64::min);
    let max_end = ok
        .iter()
        .map(|o| o.start_time + o.latency)
        .fold(0.0, f64::max);
    let secs = (max_end - min_start).ceil() as usize + 1;
    let mut tok = vec![0.0; secs];
    let mut conc = vec![0_u64; secs];
    for o in ok {
        let mut t = o.start_time + o.ttft;
        let mut times = vec![t];
        for d in &o.itl {
            t += d;
            times.push(t);
        }
        for tt in times {
            let b = (tt - min_start) as usize;
            if b < secs {
                tok[b] += 1.0;
            }
        }
        let s = (o.start_time - min_start) as usize;
        let e = ((o.start_time + o.latency) - min_start) as usize;
        for c in conc.iter_mut().take((e + 1).min(secs)).skip(s) {
            *c += 1;
        }
    }
    let peak_tokens = tok.iter().copied().fold(0.0, f64::max);
    (peak_tokens, conc.iter().copied().max().unwrap_or(0))
}

/// The per-request lists of the releases and flags that save them, in vLLM's key order.
fn per_request_lists(a: &BenchArgs, outs: &[Outcome], r: &mut Map<String, Value>) {
    let newer = matches!(a.vllm_version, BenchRelease::V030 | BenchRelease::V033);
    if a.save_detailed {
        r.insert(
            "input_lens".into(),
            json!(outs.iter().map(|o| o.prompt_len).collect::<Vec<_>>()),
        );
        r.insert(
            "output_lens".into(),
            json!(outs
                .iter()
                .map(|o| if o.success { o.output_tokens } else { 0 })
                .collect::<Vec<_>>()),
        );
        r.insert(
            "ttfts".into(),
            json!(outs.iter().map(|o| o.ttft).collect::<Vec<_>>()),
        );
        r.insert(
            "itls".into(),
            json!(outs.iter().map(|o| o.itl.clone()).collect::<Vec<_>>()),
        );
    }
    if newer {
        r.insert(
            "latencies".into(),
            json!(outs
                .iter()
                .map(|o| if o.success { o.latency } else { 0.0 })
                .collect::<Vec<_>>()),
        );
    }
    if a.save_detailed && a.vllm_version != BenchRelease::V011 {
        r.insert(
            "start_times".into(),
            json!(outs.iter().map(|o| o.start_time).collect::<Vec<_>>()),
        );
    }
    if newer {
        r.insert(
            "queue_times".into(),
            json!(outs.iter().map(|o| o.queue_time).collect::<Vec<_>>()),
        );
    }
    if a.save_detailed {
        r.insert(
            "generated_texts".into(),
            json!(outs
                .iter()
                .map(|o| o.generated_text.clone())
                .collect::<Vec<_>>()),
        );
        r.insert(
            "errors".into(),
            json!(outs.iter().map(|o| o.error.clone()).collect::<Vec<_>>()),
        );
    }
}

/// Mean, median, standard deviation and `--metric-percentiles` of each of
/// `--percentile-metrics`, in milliseconds.
fn percentiles(a: &BenchArgs, r: &mut Map<String, Value>, mut series: [(&str, Vec<f64>); 4]) {
    let metrics = a
        .percentile_metrics
        .clone()
        .unwrap_or_else(|| "ttft,tpot,itl".into());
    let ps: Vec<f64> = a
        .metric_percentiles
        .split(',')
        .filter_map(|p| p.trim().parse().ok())
        .collect();
    for m in metrics.split(',').map(str::trim) {
        let Some((_, v)) = series.iter_mut().find(|(name, _)| *name == m) else {
            continue;
        };
        v.sort_by(|x, y| x.total_cmp(y));
        let ms: Vec<f64> = v.iter().map(|x| x * 1000.0).collect();
        r.insert(format!("mean_{m}_ms"), json!(mean(&ms)));
        r.insert(format!("median_{m}_ms"), json!(percentile(&ms, 50.0)));
        r.insert(format!("std_{m}_ms"), json!(std_dev(&ms)));
        for p in &ps {
            let word = if p.fract() == 0.0 {
                format!("{}", *p as i64)
            } else {
                p.to_string()
            };
            r.insert(format!("p{word}_{m}_ms"), json!(percentile(&ms, *p)));
        }
    }
}

/// How a summary line shows its value: a count, or two decimals.
#[derive(Clone, Copy)]
enum Shown {
    Count,
    Decimals,
}

/// The summary's lines after the request counts: label, result key, how it is shown.
const TOTALS: &[(&str, &str, Shown)] = &[
    ("Benchmark duration (s):", "duration", Shown::Decimals),
    ("Total input tokens:", "total_input_tokens", Shown::Count),
    (
        "Total generated tokens:",
        "total_output_tokens",
        Shown::Count,
    ),
    (
        "Request throughput (req/s):",
        "request_throughput",
        Shown::Decimals,
    ),
    (
        "Output token throughput (tok/s):",
        "output_throughput",
        Shown::Decimals,
    ),
    (
        "Peak output token throughput (tok/s):",
        "max_output_tokens_per_s",
        Shown::Decimals,
    ),
    (
        "Peak concurrent requests:",
        "max_concurrent_requests",
        Shown::Decimals,
    ),
    (
        "Total token throughput (tok/s):",
        "total_token_throughput",
        Shown::Decimals,
    ),
];

/// The console summary `vllm bench serve` prints.
pub(super) fn print_summary(a: &BenchArgs, r: &Map<String, Value>) {
    let num = |k: &str| r.get(k).and_then(Value::as_f64).unwrap_or(0.0);
    let int = |k: &str| r.get(k).and_then(Value::as_u64).unwrap_or(0);
    println!("{:=^50}", " Serving Benchmark Result ");
    println!("{:<40} {:<10}", "Successful requests:", int("completed"));
    println!("{:<40} {:<10}", "Failed requests:", int("failed"));
    if let Some(c) = a.max_concurrency {
        println!("{:<40} {:<10}", "Maximum request concurrency:", c);
    }
    for (label, key, shown) in TOTALS {
        match shown {
            Shown::Count => println!("{label:<40} {:<10}", int(key)),
            Shown::Decimals => println!("{label:<40} {:<10.2}", num(key)),
        }
    }
    print_percentiles(a, r);
    println!("{}", "=".repeat(50));
}

/// The summary's section of each of `--percentile-metrics`.
fn print_percentiles(a: &BenchArgs, r: &Map<String, Value>) {
    let num = |k: &str| r.get(k).and_then(Value::as_f64).unwrap_or(0.0);
    let metrics = a
        .percentile_metrics
        .clone()
        .unwrap_or_else(|| "ttft,tpot,itl".into());
    for m in metrics.split(',').map(str::trim) {
        let (name, header) = match m {
            "ttft" => ("TTFT", "Time to First Token"),
            "tpot" => ("TPOT", "Time per Output Token (excl. 1st token)"),
            "itl" => ("ITL", "Inter-token Latency"),
            "e2el" => ("E2EL", "End-to-end Latency"),
            _ => continue,
        };
        println!("{header:-^50}");
        println!(
            "{:<40} {:<10.2}",
            format!("Mean {name} (ms):"),
            num(&format!("mean_{m}_ms"))
        );
        println!(
            "{:<40} {:<10.2}",
            format!("Median {name} (ms):"),
            num(&format!("median_{m}_ms"))
        );
        for p in a.metric_percentiles.split(',').map(str::trim) {
            let Ok(pf) = p.parse::<f64>() else { continue };
            let word = if pf.fract() == 0.0 {
                format!("{}", pf as i64)
            } else {
                p.to_string()
            };
            println!(
                "{:<40} {:<10.2}",
                format!("P{word} {name} (ms):"),
                num(&format!("p{word}_{m}_ms"))
            );
        }
    }
}

pub(super) fn save(
    a: &BenchArgs,
    model: &str,
    rate: f64,
    r: &Map<String, Value>,
) -> crate::error::SimResult<()> {
    let date = r.get("date").and_then(Value::as_str).unwrap_or("");
    let name = match &a.result_filename {
        Some(n) => n.clone(),
        None => {
            let rate = if rate.is_infinite() {
                "inf".to_string()
            } else {
                py_float(rate)
            };
            let conc = a
                .max_concurrency
                .map_or(String::new(), |c| format!("-concurrency{c}"));
            let base = model.rsplit('/').next().unwrap_or(model);
            format!(
                "{}-{rate}qps{conc}-{base}-{date}.json",
                a.label.as_deref().unwrap_or(&a.backend)
            )
        }
    };
    let path = match &a.result_dir {
        Some(d) => {
            std::fs::create_dir_all(d)?;
            d.join(name)
        }
        None => PathBuf::from(name),
    };
    let text = python_json(&Value::Object(r.clone()));
    if a.append_result && path.exists() && std::fs::metadata(&path)?.len() > 0 {
        use std::io::Write;
        let mut f = std::fs::OpenOptions::new().append(true).open(&path)?;
        write!(f, "\n{text}")?;
    } else {
        std::fs::write(&path, text)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn percentiles_are_numpy_linear() {
        let v = [1.0, 2.0, 3.0, 4.0];
        assert_eq!(percentile(&v, 50.0), 2.5);
        assert!((percentile(&v, 99.0) - 3.97).abs() < 1e-12);
        assert_eq!(std_dev(&[2.0, 4.0]), 1.0);
    }

    #[test]
    fn result_json_uses_python_separators() {
        let v = json!({"a": 1, "b": [1.5, "inf"], "c": null});
        assert_eq!(
            python_json(&v),
            "{\"a\": 1, \"b\": [1.5, \"inf\"], \"c\": null}"
        );
    }
}
