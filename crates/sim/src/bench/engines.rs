//! The other engines' own load clients, as `sim bench --backend sglang|trtllm` imitates them:
//! SGLang's `python -m sglang.bench_serving` (a warm-up request, then one JSON line appended to
//! `--output-file`) and TensorRT-LLM's `benchmark_serving` (vLLM's initial test run, then
//! `--save-result` JSON). Their keys and order are the recorded results'
//! (tests/fixtures/sglang-0.5/qwen3-8b-own-client/bench.jsonl,
//! tests/fixtures/trtllm-1.3/no-iter-stats/bench.json; docs/design/engines.md#bench-serve-results).

use std::path::PathBuf;

use inferlint_core::series::python_json;
use serde_json::{json, Map, Value};

use super::args::BenchArgs;
use super::client::Outcome;
use super::result::{mean, percentile, std_dev};

/// Whose client `sim bench` is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Client {
    /// `vllm bench serve` (any other `--backend`: `openai`, `openai-chat`, `vllm`).
    Vllm,
    /// SGLang's bench_serving (`--backend sglang`).
    Sglang,
    /// TensorRT-LLM's benchmark_serving (`--backend trtllm`).
    Trtllm,
}

impl Client {
    pub fn of(backend: &str) -> Client {
        match backend {
            "sglang" => Client::Sglang,
            "trtllm" => Client::Trtllm,
            _ => Client::Vllm,
        }
    }
}

/// Stands for Python's `inf` until the text is written (JSON has no infinity; Python's
/// `json.dumps` writes `Infinity`, as the recorded SGLang line shows).
const INFINITY: &str = "__python_infinity__";

/// The latencies of the successful requests, in ms: e2e, TTFT, TPOT, ITL (each sorted).
struct Latencies {
    e2e: Vec<f64>,
    ttft: Vec<f64>,
    tpot: Vec<f64>,
    itl: Vec<f64>,
}

/// What both engines' result files sum over the successful requests, and the run's duration
/// (never 0, it divides).
struct Totals<'a> {
    ok: Vec<&'a Outcome>,
    input: u64,
    output: u64,
    l: Latencies,
    d: f64,
}

fn totals(outs: &[Outcome], duration: f64) -> Totals<'_> {
    let ok: Vec<&Outcome> = outs.iter().filter(|o| o.success).collect();
    Totals {
        input: ok.iter().map(|o| u64::from(o.prompt_len)).sum(),
        output: ok.iter().map(|o| u64::from(o.output_tokens)).sum(),
        l: latencies(&ok),
        d: duration.max(1e-9),
        ok,
    }
}

fn latencies(ok: &[&Outcome]) -> Latencies {
    let sorted = |mut v: Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v
    };
    Latencies {
        e2e: sorted(ok.iter().map(|o| o.latency * 1000.0).collect()),
        ttft: sorted(ok.iter().map(|o| o.ttft * 1000.0).collect()),
        tpot: sorted(
            ok.iter()
                .filter(|o| o.output_tokens > 1)
                .map(|o| (o.latency - o.ttft) / f64::from(o.output_tokens - 1) * 1000.0)
                .collect(),
        ),
        itl: sorted(
            ok.iter()
                .flat_map(|o| o.itl.iter().map(|x| x * 1000.0))
                .collect(),
        ),
    }
}

/// SGLang's result line, in the recorded key order. `vllm` is the vLLM summary of the same
/// run (its throughput peaks are SGLang's too).
pub fn sglang_result(
    a: &BenchArgs,
    rate: f64,
    duration: f64,
    outs: &[Outcome],
    vllm: &Map<String, Value>,
) -> Map<String, Value> {
    let Totals {
        ok,
        input,
        output,
        l,
        d,
    } = totals(outs, duration);
    let mut r = Map::new();
    let mut put = |k: &str, v: Value| {
        r.insert(k.to_string(), v);
    };
    put("tag", Value::Null);
    put("backend", json!("sglang"));
    put("dataset_name", json!(a.dataset_name));
    put(
        "request_rate",
        if rate.is_finite() {
            json!(rate)
        } else {
            json!(INFINITY)
        },
    );
    put("max_concurrency", json!(a.max_concurrency));
    put("sharegpt_output_len", Value::Null);
    put("random_input_len", json!(a.random_input_len));
    put("random_output_len", json!(a.random_output_len));
    put("random_range_ratio", json!(a.random_range_ratio));
    put("server_info", Value::Null);
    put("duration", json!(duration));
    put("completed", json!(ok.len()));
    put("total_input_tokens", json!(input));
    put("total_input_text_tokens", json!(input));
    put("total_input_vision_tokens", json!(0));
    put("total_output_tokens", json!(output));
    put("total_output_tokens_retokenized", json!(output));
    put("request_throughput", json!(ok.len() as f64 / d));
    put("input_throughput", json!(input as f64 / d));
    put("output_throughput", json!(output as f64 / d));
    put("total_throughput", json!((input + output) as f64 / d));
    for (name, v) in [
        ("e2e_latency", &l.e2e),
        ("ttft", &l.ttft),
        ("tpot", &l.tpot),
        ("itl", &l.itl),
    ] {
        put(&format!("mean_{name}_ms"), json!(mean(v)));
        put(&format!("median_{name}_ms"), json!(percentile(v, 50.0)));
        put(&format!("std_{name}_ms"), json!(std_dev(v)));
        for p in [90, 95, 99] {
            put(
                &format!("p{p}_{name}_ms"),
                json!(percentile(v, f64::from(p))),
            );
        }
    }
    put("concurrency", json!(l.e2e.iter().sum::<f64>() / 1000.0 / d));
    put("accept_length", Value::Null);
    for k in ["max_output_tokens_per_s", "max_concurrent_requests"] {
        put(k, vllm.get(k).cloned().unwrap_or(Value::Null));
    }
    if a.save_detailed {
        details(&mut r, &ok, outs);
    }
    r
}

/// `--output-details`: the per-request lists, in the request order.
fn details(r: &mut Map<String, Value>, ok: &[&Outcome], outs: &[Outcome]) {
    let lists = [
        (
            "input_lens",
            json!(ok.iter().map(|o| o.prompt_len).collect::<Vec<_>>()),
        ),
        (
            "output_lens",
            json!(ok.iter().map(|o| o.output_tokens).collect::<Vec<_>>()),
        ),
        (
            "ttfts",
            json!(ok.iter().map(|o| o.ttft).collect::<Vec<_>>()),
        ),
        (
            "itls",
            json!(ok.iter().map(|o| o.itl.clone()).collect::<Vec<_>>()),
        ),
        (
            "generated_texts",
            json!(ok
                .iter()
                .map(|o| o.generated_text.clone())
                .collect::<Vec<_>>()),
        ),
        (
            "errors",
            json!(outs.iter().map(|o| o.error.clone()).collect::<Vec<_>>()),
        ),
    ];
    for (k, v) in lists {
        r.insert(k.to_string(), v);
    }
}

/// SGLang's result file: `--output-file`, else its default name
/// `{backend}_{MMDD}_{num_prompts}_{input_len}_{output_len}.jsonl`; one line appended per run.
pub fn save_sglang(a: &BenchArgs, r: &Map<String, Value>) -> crate::error::SimResult<PathBuf> {
    let path = a.output_file.clone().unwrap_or_else(|| {
        PathBuf::from(format!(
            "sglang_{}_{}_{}_{}.jsonl",
            chrono::Local::now().format("%m%d"),
            a.num_prompts,
            a.random_input_len,
            a.random_output_len
        ))
    });
    let line =
        python_json(&Value::Object(r.clone())).replace(&format!("\"{INFINITY}\""), "Infinity");
    use std::io::Write;
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&path)?;
    writeln!(f, "{line}")?;
    Ok(path)
}

/// TensorRT-LLM's result JSON, in the recorded key order (its `request_goodput:` key keeps the
/// recorded colon; it writes no `failed`).
pub fn trtllm_result(
    a: &BenchArgs,
    model: &str,
    duration: f64,
    outs: &[Outcome],
    vllm: &Map<String, Value>,
) -> Map<String, Value> {
    let Totals {
        ok,
        input,
        output,
        l,
        d,
    } = totals(outs, duration);
    let mut r = Map::new();
    let mut put = |k: &str, v: Value| {
        r.insert(k.to_string(), v);
    };
    put("date", vllm.get("date").cloned().unwrap_or(Value::Null));
    put("backend", json!("openai"));
    put("model_id", json!(model));
    put(
        "tokenizer_id",
        json!(a.tokenizer.as_deref().unwrap_or(model)),
    );
    put("num_prompts", json!(a.num_prompts));
    put("duration", json!(duration));
    put("completed", json!(ok.len()));
    put("total_input_tokens", json!(input));
    put("total_output_tokens", json!(output));
    put("request_throughput", json!(ok.len() as f64 / d));
    put("request_goodput:", Value::Null);
    put("output_throughput", json!(output as f64 / d));
    put("total_token_throughput", json!((input + output) as f64 / d));
    let user = if l.tpot.is_empty() {
        0.0
    } else {
        1000.0 / mean(&l.tpot)
    };
    put("user_throughput", json!(user));
    // One decoded token per iteration: the simulator drafts nothing.
    put(
        "avg_decoded_tokens_per_iter",
        json!({"mean": 1.0, "min": 1.0, "max": 1.0, "median": 1.0, "std": 0.0, "percentiles": {"p99.0": 1.0}}),
    );
    for (k, v) in [
        ("std", 0.0),
        ("min", 1.0),
        ("max", 1.0),
        ("mean", 1.0),
        ("median", 1.0),
        ("p99", 1.0),
    ] {
        put(&format!("{k}_avg_decoded_tokens_per_iter"), json!(v));
    }
    for (name, v) in [("ttft", &l.ttft), ("tpot", &l.tpot), ("itl", &l.itl)] {
        put(&format!("std_{name}_ms"), json!(std_dev(v)));
        put(&format!("mean_{name}_ms"), json!(mean(v)));
        put(&format!("median_{name}_ms"), json!(percentile(v, 50.0)));
        put(&format!("p99_{name}_ms"), json!(percentile(v, 99.0)));
    }
    put(
        "request_rate",
        vllm.get("request_rate").cloned().unwrap_or(json!("inf")),
    );
    put("burstiness", json!(a.burstiness));
    put("max_concurrency", json!(a.max_concurrency));
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_backend_names_the_client() {
        assert_eq!(Client::of("sglang"), Client::Sglang);
        assert_eq!(Client::of("trtllm"), Client::Trtllm);
        assert_eq!(Client::of("openai-chat"), Client::Vllm);
    }
}
