//! `inferlint sim bench`: a load client with `vllm bench serve`'s flags, console summary and
//! result JSON (spec/engines.md §4), including the initial test request of the releases that
//! send one. Prompts are random words (one token each to the simulated server).

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures_util::StreamExt;
use rand::{Rng, SeedableRng};
use serde_json::{json, Map, Value};

/// The `vllm bench serve` release to copy: whether it sends a test request first, and its
/// result keys.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum BenchRelease {
    #[value(name = "0.11")]
    V011,
    #[value(name = "0.28")]
    V028,
    #[value(name = "0.30")]
    V030,
    #[value(name = "0.33")]
    V033,
}

#[derive(clap::Args, Debug, Clone)]
pub struct BenchArgs {
    #[arg(long, default_value = "openai")]
    pub backend: String,
    #[arg(long)]
    pub base_url: Option<String>,
    #[arg(long, default_value = "127.0.0.1")]
    pub host: String,
    #[arg(long, default_value_t = 8000)]
    pub port: u16,
    #[arg(long)]
    pub endpoint: Option<String>,
    /// Default: the first model /v1/models lists.
    #[arg(long)]
    pub model: Option<String>,
    #[arg(long)]
    pub tokenizer: Option<String>,
    #[arg(long)]
    pub max_concurrency: Option<usize>,
    /// Requests per second, or `inf` (all at once).
    #[arg(long, default_value = "inf")]
    pub request_rate: String,
    #[arg(long, default_value_t = 1.0)]
    pub burstiness: f64,
    #[arg(long, default_value_t = 1000)]
    pub num_prompts: usize,
    #[arg(long, default_value = "random")]
    pub dataset_name: String,
    #[arg(long, default_value_t = 1024)]
    pub random_input_len: u32,
    #[arg(long, default_value_t = 128)]
    pub random_output_len: u32,
    #[arg(long, default_value_t = 0.0)]
    pub random_range_ratio: f64,
    #[arg(long, default_value_t = 0)]
    pub random_prefix_len: u32,
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    #[arg(long)]
    pub ignore_eos: bool,
    #[arg(long)]
    pub save_result: bool,
    #[arg(long)]
    pub save_detailed: bool,
    #[arg(long)]
    pub append_result: bool,
    #[arg(long)]
    pub result_dir: Option<PathBuf>,
    #[arg(long)]
    pub result_filename: Option<String>,
    #[arg(long, num_args = 1..)]
    pub metadata: Vec<String>,
    #[arg(long)]
    pub label: Option<String>,
    #[arg(long)]
    pub percentile_metrics: Option<String>,
    #[arg(long, default_value = "99")]
    pub metric_percentiles: String,
    #[arg(long, default_value_t = 0)]
    pub num_warmups: usize,
    /// Seconds to wait for the server with one test request; 0 skips it (the default since
    /// 0.15; `--vllm-version 0.11` defaults to 600).
    #[arg(long)]
    pub ready_check_timeout_sec: Option<u64>,
    #[arg(long)]
    pub request_id_prefix: Option<String>,
    #[arg(long)]
    pub disable_tqdm: bool,
    /// The `vllm bench serve` release to copy.
    #[arg(long, value_enum, default_value = "0.28")]
    pub vllm_version: BenchRelease,
}

/// One request's outcome, as vLLM's `RequestFuncOutput`.
#[derive(Clone, Debug, Default)]
struct Outcome {
    success: bool,
    error: String,
    prompt_len: u32,
    output_tokens: u32,
    ttft: f64,
    itl: Vec<f64>,
    latency: f64,
    /// Seconds from the benchmark start to sending.
    start_time: f64,
    queue_time: f64,
    generated_text: String,
}

struct Target {
    client: reqwest::Client,
    url: String,
    model: String,
    chat: bool,
    ignore_eos: bool,
    api_key: Option<String>,
}

impl Target {
    async fn send(&self, prompt: &str, prompt_len: u32, max_tokens: u32, request_id: &str) -> Outcome {
        let mut out = Outcome { prompt_len, ..Outcome::default() };
        let mut payload = if self.chat {
            json!({"model": self.model, "messages": [{"role": "user", "content": prompt}], "max_completion_tokens": max_tokens,
                   "stream": true, "stream_options": {"include_usage": true}})
        } else {
            json!({"model": self.model, "prompt": prompt, "repetition_penalty": 1.0, "max_tokens": max_tokens,
                   "logprobs": null, "stream": true, "stream_options": {"include_usage": true}})
        };
        if self.ignore_eos {
            payload["ignore_eos"] = json!(true);
        }
        let mut req = self.client.post(&self.url).json(&payload).header("x-request-id", request_id);
        if let Some(k) = &self.api_key {
            req = req.bearer_auth(k);
        }
        let st = Instant::now();
        let resp = match req.send().await {
            Ok(r) => r,
            Err(e) => {
                out.error = e.to_string();
                return out;
            }
        };
        if resp.status() != reqwest::StatusCode::OK {
            out.error = resp.status().canonical_reason().unwrap_or("").to_string();
            return out;
        }
        let mut body = resp.bytes_stream();
        let mut buf: Vec<u8> = Vec::new();
        let mut first = false;
        let mut last = st;
        while let Some(chunk) = body.next().await {
            let Ok(chunk) = chunk else {
                out.error = "connection closed mid-stream".into();
                break;
            };
            buf.extend_from_slice(&chunk);
            while let Some(pos) = buf.windows(2).position(|w| w == b"\n\n") {
                let event: Vec<u8> = buf.drain(..pos + 2).collect();
                let text = String::from_utf8_lossy(&event);
                let data = text.trim().trim_start_matches("data: ");
                if data.is_empty() || data == "[DONE]" {
                    continue;
                }
                let Ok(v) = serde_json::from_str::<Value>(data) else { continue };
                match v.get("choices").and_then(Value::as_array) {
                    Some(choices) if !choices.is_empty() => {
                        let now = Instant::now();
                        if !first {
                            first = true;
                            out.ttft = (now - st).as_secs_f64();
                        } else {
                            out.itl.push((now - last).as_secs_f64());
                        }
                        last = now;
                        let c = &choices[0];
                        let piece = if self.chat { c.pointer("/delta/content") } else { c.get("text") };
                        out.generated_text.push_str(piece.and_then(Value::as_str).unwrap_or(""));
                    }
                    _ => {
                        if let Some(n) = v.pointer("/usage/completion_tokens").and_then(Value::as_u64) {
                            out.output_tokens = n as u32;
                        }
                    }
                }
            }
        }
        if first {
            out.success = true;
            if out.output_tokens == 0 {
                out.output_tokens = out.generated_text.split_whitespace().count() as u32;
            }
        } else if out.error.is_empty() {
            out.error = "Never received a valid chunk to calculate TTFT.This response will be marked as failed!".into();
        }
        out.latency = (last - st).as_secs_f64();
        out
    }
}

const WORDS: &[&str] = &["alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india", "juliet"];

fn sample_len(rng: &mut rand::rngs::StdRng, len: u32, ratio: f64) -> u32 {
    if ratio <= 0.0 {
        return len;
    }
    let lo = (len as f64 * (1.0 - ratio)).floor().max(1.0) as u32;
    let hi = (len as f64 * (1.0 + ratio)).ceil() as u32;
    rng.random_range(lo..=hi)
}

fn prompt_text(rng: &mut rand::rngs::StdRng, n: u32) -> String {
    (0..n).map(|_| WORDS[rng.random_range(0..WORDS.len())]).collect::<Vec<_>>().join(" ")
}

/// numpy's default (linear) percentile.
fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let rank = p / 100.0 * (sorted.len() - 1) as f64;
    let lo = rank.floor() as usize;
    let hi = rank.ceil() as usize;
    sorted[lo] + (sorted[hi] - sorted[lo]) * (rank - lo as f64)
}

fn mean(x: &[f64]) -> f64 {
    if x.is_empty() {
        0.0
    } else {
        x.iter().sum::<f64>() / x.len() as f64
    }
}

/// Population standard deviation (numpy's default).
fn std_dev(x: &[f64]) -> f64 {
    if x.is_empty() {
        return 0.0;
    }
    let m = mean(x);
    (x.iter().map(|v| (v - m) * (v - m)).sum::<f64>() / x.len() as f64).sqrt()
}

/// Python's `str(float)` for the file name and JSON (`10.0`, `inf`).
fn py_float(x: f64) -> String {
    crate::sim::expo::py_repr(x)
}

/// `json.dumps` separators: `", "` and `": "` on one line.
struct PyFormatter;

impl serde_json::ser::Formatter for PyFormatter {
    fn begin_array_value<W: ?Sized + std::io::Write>(&mut self, w: &mut W, first: bool) -> std::io::Result<()> {
        if first {
            Ok(())
        } else {
            w.write_all(b", ")
        }
    }

    fn begin_object_key<W: ?Sized + std::io::Write>(&mut self, w: &mut W, first: bool) -> std::io::Result<()> {
        if first {
            Ok(())
        } else {
            w.write_all(b", ")
        }
    }

    fn begin_object_value<W: ?Sized + std::io::Write>(&mut self, w: &mut W) -> std::io::Result<()> {
        w.write_all(b": ")
    }
}

pub fn to_python_json(v: &Value) -> String {
    let mut out = Vec::new();
    let mut ser = serde_json::Serializer::with_formatter(&mut out, PyFormatter);
    serde::Serialize::serialize(v, &mut ser).expect("JSON values serialise");
    String::from_utf8(out).expect("serde_json writes UTF-8")
}

/// `inferlint sim bench`: returns the exit status.
pub fn run_bench(a: BenchArgs) -> anyhow::Result<i32> {
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build()?;
    rt.block_on(bench(a))
}

async fn bench(a: BenchArgs) -> anyhow::Result<i32> {
    if a.dataset_name != "random" {
        anyhow::bail!("the simulator's client generates the random dataset only, not '{}'", a.dataset_name);
    }
    let rate: f64 = if a.request_rate == "inf" { f64::INFINITY } else { a.request_rate.parse().map_err(|_| anyhow::anyhow!("--request-rate must be a number or 'inf', got '{}'", a.request_rate))? };
    if rate.is_finite() && a.burstiness != 1.0 {
        anyhow::bail!("the simulator's client draws Poisson arrivals only (--burstiness 1.0)");
    }
    let chat = a.backend == "openai-chat";
    let endpoint = a.endpoint.clone().unwrap_or_else(|| if chat { "/v1/chat/completions".into() } else { "/v1/completions".into() });
    let base = a.base_url.clone().unwrap_or_else(|| format!("http://{}:{}", a.host, a.port));
    let base = base.trim_end_matches('/').to_string();
    let client = reqwest::Client::builder().pool_max_idle_per_host(4096).build()?;
    let api_key = std::env::var("OPENAI_API_KEY").ok().filter(|k| !k.is_empty());
    let model = match &a.model {
        Some(m) => m.clone(),
        None => {
            let mut req = client.get(format!("{base}/v1/models"));
            if let Some(k) = &api_key {
                req = req.bearer_auth(k);
            }
            let v: Value = req.send().await?.json().await?;
            v.pointer("/data/0/id").and_then(Value::as_str).ok_or_else(|| anyhow::anyhow!("{base}/v1/models lists no model"))?.to_string()
        }
    };
    let target = Arc::new(Target { client, url: format!("{base}{endpoint}"), model: model.clone(), chat, ignore_eos: a.ignore_eos, api_key });
    let mut rng = rand::rngs::StdRng::seed_from_u64(a.seed);
    let prefix_len = a.random_prefix_len;
    let prefix = prompt_text(&mut rng, prefix_len);
    let requests: Vec<(String, u32, u32)> = (0..a.num_prompts)
        .map(|_| {
            let il = sample_len(&mut rng, a.random_input_len, a.random_range_ratio);
            let ol = sample_len(&mut rng, a.random_output_len, a.random_range_ratio).max(1);
            let body = prompt_text(&mut rng, il);
            let text = if prefix_len > 0 { format!("{prefix} {body}") } else { body };
            (text, il + prefix_len, ol)
        })
        .collect();
    let id_prefix = a.request_id_prefix.clone().unwrap_or_else(|| format!("bench-{:08x}-", rand::random::<u32>()));

    let ready_check = a.ready_check_timeout_sec.unwrap_or(if a.vllm_version == BenchRelease::V011 { 600 } else { 0 });
    println!("Starting initial single prompt test run...");
    if ready_check > 0 {
        let (p, pl, ol) = requests.first().cloned().unwrap_or_else(|| ("hello".into(), 1, 1));
        let deadline = Instant::now() + Duration::from_secs(ready_check);
        loop {
            let o = target.send(&p, pl, ol, &format!("{id_prefix}test")).await;
            if o.success {
                break;
            }
            if Instant::now() >= deadline {
                anyhow::bail!("Initial test run failed - Please make sure benchmark arguments are correctly specified. Error: {}", o.error);
            }
            tokio::time::sleep(Duration::from_secs(1)).await;
        }
        if a.vllm_version == BenchRelease::V011 {
            println!("Initial test run completed. Starting main benchmark run...");
        } else {
            println!("Initial test run completed.");
        }
    } else {
        println!("Skipping endpoint ready check.");
    }
    if a.num_warmups > 0 {
        println!("Warming up with {} requests...", a.num_warmups);
        for i in 0..a.num_warmups {
            let (p, pl, ol) = &requests[i % requests.len().max(1)];
            target.send(p, *pl, *ol, &format!("{id_prefix}warmup-{i}")).await;
        }
        println!("Warmup run completed.");
    }
    if a.vllm_version != BenchRelease::V011 {
        println!("Starting main benchmark run...");
    }
    println!("Traffic request rate: {}", if rate.is_infinite() { "inf".to_string() } else { py_float(rate) });
    println!("Burstiness factor: {} (Poisson process)", py_float(a.burstiness));
    println!("Maximum request concurrency: {}", a.max_concurrency.map_or("None".to_string(), |c| c.to_string()));

    let sem = a.max_concurrency.map(|c| Arc::new(tokio::sync::Semaphore::new(c.max(1))));
    let t0 = Instant::now();
    let mut tasks = Vec::with_capacity(requests.len());
    let mut next_at = 0.0_f64;
    for (i, (p, pl, ol)) in requests.into_iter().enumerate() {
        if rate.is_finite() {
            let gap: f64 = -rng.random::<f64>().max(1e-12).ln() / rate;
            next_at += gap;
            let wait = next_at - t0.elapsed().as_secs_f64();
            if wait > 0.0 {
                tokio::time::sleep(Duration::from_secs_f64(wait)).await;
            }
        }
        let target = target.clone();
        let sem = sem.clone();
        let rid = format!("{id_prefix}{i}");
        tasks.push(tokio::spawn(async move {
            let queued = Instant::now();
            let _permit = match &sem {
                Some(s) => Some(s.clone().acquire_owned().await.expect("semaphore is never closed")),
                None => None,
            };
            let queue_time = queued.elapsed().as_secs_f64();
            let start = t0.elapsed().as_secs_f64();
            let mut o = target.send(&p, pl, ol, &rid).await;
            o.start_time = start;
            o.queue_time = queue_time;
            o
        }));
    }
    let mut outcomes = Vec::with_capacity(tasks.len());
    for t in tasks {
        outcomes.push(t.await?);
    }
    let duration = t0.elapsed().as_secs_f64();
    let result = summarize(&a, &model, rate, duration, &outcomes);
    print_summary(&a, &result);
    if a.save_result || a.append_result {
        save(&a, &model, rate, &result)?;
    }
    Ok(0)
}

fn summarize(a: &BenchArgs, model: &str, rate: f64, duration: f64, outs: &[Outcome]) -> Map<String, Value> {
    let ok: Vec<&Outcome> = outs.iter().filter(|o| o.success).collect();
    let completed = ok.len();
    let failed = outs.len() - completed;
    let total_input: u64 = ok.iter().map(|o| o.prompt_len as u64).sum();
    let total_output: u64 = ok.iter().map(|o| o.output_tokens as u64).sum();
    let mut ttfts: Vec<f64> = ok.iter().map(|o| o.ttft).collect();
    let mut tpots: Vec<f64> = ok.iter().filter(|o| o.output_tokens > 1).map(|o| (o.latency - o.ttft) / (o.output_tokens - 1) as f64).collect();
    let mut itls: Vec<f64> = ok.iter().flat_map(|o| o.itl.iter().copied()).collect();
    let mut e2els: Vec<f64> = ok.iter().map(|o| o.latency).collect();
    let (mut peak_tokens, mut peak_conc) = (0.0_f64, 0_u64);
    if !ok.is_empty() {
        let min_start = ok.iter().map(|o| o.start_time).fold(f64::INFINITY, f64::min);
        let max_end = ok.iter().map(|o| o.start_time + o.latency).fold(0.0, f64::max);
        let secs = (max_end - min_start).ceil() as usize + 1;
        let mut tok = vec![0.0; secs];
        let mut conc = vec![0_u64; secs];
        for o in &ok {
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
        peak_tokens = tok.iter().copied().fold(0.0, f64::max);
        peak_conc = conc.iter().copied().max().unwrap_or(0);
    }
    let mut r = Map::new();
    r.insert("date".into(), json!(chrono::Local::now().format("%Y%m%d-%H%M%S").to_string()));
    r.insert("endpoint_type".into(), json!(a.backend));
    r.insert("backend".into(), json!(a.backend));
    r.insert("label".into(), json!(a.label));
    r.insert("model_id".into(), json!(model));
    r.insert("tokenizer_id".into(), json!(a.tokenizer.clone().unwrap_or_else(|| model.to_string())));
    r.insert("num_prompts".into(), json!(a.num_prompts));
    for kv in &a.metadata {
        if let Some((k, v)) = kv.split_once('=') {
            r.insert(k.to_string(), json!(v));
        }
    }
    r.insert("request_rate".into(), if rate.is_infinite() { json!("inf") } else { json!(rate) });
    r.insert("burstiness".into(), json!(a.burstiness));
    r.insert("max_concurrency".into(), json!(a.max_concurrency));
    r.insert("duration".into(), json!(duration));
    r.insert("completed".into(), json!(completed));
    if a.vllm_version != BenchRelease::V011 {
        r.insert("failed".into(), json!(failed));
    }
    r.insert("total_input_tokens".into(), json!(total_input));
    r.insert("total_output_tokens".into(), json!(total_output));
    r.insert("request_throughput".into(), json!(completed as f64 / duration));
    r.insert("request_goodput".into(), Value::Null);
    r.insert("output_throughput".into(), json!(total_output as f64 / duration));
    r.insert("total_token_throughput".into(), json!((total_input + total_output) as f64 / duration));
    let newer = matches!(a.vllm_version, BenchRelease::V030 | BenchRelease::V033);
    if a.save_detailed {
        r.insert("input_lens".into(), json!(outs.iter().map(|o| o.prompt_len).collect::<Vec<_>>()));
        r.insert("output_lens".into(), json!(outs.iter().map(|o| if o.success { o.output_tokens } else { 0 }).collect::<Vec<_>>()));
        r.insert("ttfts".into(), json!(outs.iter().map(|o| o.ttft).collect::<Vec<_>>()));
        r.insert("itls".into(), json!(outs.iter().map(|o| o.itl.clone()).collect::<Vec<_>>()));
    }
    if newer {
        r.insert("latencies".into(), json!(outs.iter().map(|o| if o.success { o.latency } else { 0.0 }).collect::<Vec<_>>()));
    }
    if a.save_detailed && a.vllm_version != BenchRelease::V011 {
        r.insert("start_times".into(), json!(outs.iter().map(|o| o.start_time).collect::<Vec<_>>()));
    }
    if newer {
        r.insert("queue_times".into(), json!(outs.iter().map(|o| o.queue_time).collect::<Vec<_>>()));
    }
    if a.save_detailed {
        r.insert("generated_texts".into(), json!(outs.iter().map(|o| o.generated_text.clone()).collect::<Vec<_>>()));
        r.insert("errors".into(), json!(outs.iter().map(|o| o.error.clone()).collect::<Vec<_>>()));
    }
    r.insert("max_output_tokens_per_s".into(), json!(peak_tokens));
    r.insert("max_concurrent_requests".into(), json!(peak_conc));
    if a.vllm_version != BenchRelease::V011 {
        r.insert("rtfx".into(), json!(0.0));
    }
    let metrics = a.percentile_metrics.clone().unwrap_or_else(|| "ttft,tpot,itl".into());
    let ps: Vec<f64> = a.metric_percentiles.split(',').filter_map(|p| p.trim().parse().ok()).collect();
    for m in metrics.split(',').map(str::trim) {
        let v: &mut Vec<f64> = match m {
            "ttft" => &mut ttfts,
            "tpot" => &mut tpots,
            "itl" => &mut itls,
            "e2el" => &mut e2els,
            _ => continue,
        };
        v.sort_by(|x, y| x.total_cmp(y));
        let ms: Vec<f64> = v.iter().map(|x| x * 1000.0).collect();
        r.insert(format!("mean_{m}_ms"), json!(mean(&ms)));
        r.insert(format!("median_{m}_ms"), json!(percentile(&ms, 50.0)));
        r.insert(format!("std_{m}_ms"), json!(std_dev(&ms)));
        for p in &ps {
            let word = if p.fract() == 0.0 { format!("{}", *p as i64) } else { p.to_string() };
            r.insert(format!("p{word}_{m}_ms"), json!(percentile(&ms, *p)));
        }
    }
    r
}

fn print_summary(a: &BenchArgs, r: &Map<String, Value>) {
    let num = |k: &str| r.get(k).and_then(Value::as_f64).unwrap_or(0.0);
    let int = |k: &str| r.get(k).and_then(Value::as_u64).unwrap_or(0);
    println!("{:=^50}", " Serving Benchmark Result ");
    println!("{:<40} {:<10}", "Successful requests:", int("completed"));
    println!("{:<40} {:<10}", "Failed requests:", int("failed"));
    if let Some(c) = a.max_concurrency {
        println!("{:<40} {:<10}", "Maximum request concurrency:", c);
    }
    println!("{:<40} {:<10.2}", "Benchmark duration (s):", num("duration"));
    println!("{:<40} {:<10}", "Total input tokens:", int("total_input_tokens"));
    println!("{:<40} {:<10}", "Total generated tokens:", int("total_output_tokens"));
    println!("{:<40} {:<10.2}", "Request throughput (req/s):", num("request_throughput"));
    println!("{:<40} {:<10.2}", "Output token throughput (tok/s):", num("output_throughput"));
    println!("{:<40} {:<10.2}", "Peak output token throughput (tok/s):", num("max_output_tokens_per_s"));
    println!("{:<40} {:<10.2}", "Peak concurrent requests:", num("max_concurrent_requests"));
    println!("{:<40} {:<10.2}", "Total token throughput (tok/s):", num("total_token_throughput"));
    let metrics = a.percentile_metrics.clone().unwrap_or_else(|| "ttft,tpot,itl".into());
    for m in metrics.split(',').map(str::trim) {
        let (name, header) = match m {
            "ttft" => ("TTFT", "Time to First Token"),
            "tpot" => ("TPOT", "Time per Output Token (excl. 1st token)"),
            "itl" => ("ITL", "Inter-token Latency"),
            "e2el" => ("E2EL", "End-to-end Latency"),
            _ => continue,
        };
        println!("{:-^50}", header);
        println!("{:<40} {:<10.2}", format!("Mean {name} (ms):"), num(&format!("mean_{m}_ms")));
        println!("{:<40} {:<10.2}", format!("Median {name} (ms):"), num(&format!("median_{m}_ms")));
        for p in a.metric_percentiles.split(',').map(str::trim) {
            let Ok(pf) = p.parse::<f64>() else { continue };
            let word = if pf.fract() == 0.0 { format!("{}", pf as i64) } else { p.to_string() };
            println!("{:<40} {:<10.2}", format!("P{word} {name} (ms):"), num(&format!("p{word}_{m}_ms")));
        }
    }
    println!("{}", "=".repeat(50));
}

fn save(a: &BenchArgs, model: &str, rate: f64, r: &Map<String, Value>) -> anyhow::Result<()> {
    let date = r.get("date").and_then(Value::as_str).unwrap_or("");
    let name = match &a.result_filename {
        Some(n) => n.clone(),
        None => {
            let rate = if rate.is_infinite() { "inf".to_string() } else { py_float(rate) };
            let conc = a.max_concurrency.map_or(String::new(), |c| format!("-concurrency{c}"));
            let base = model.rsplit('/').next().unwrap_or(model);
            format!("{}-{rate}qps{conc}-{base}-{date}.json", a.label.as_deref().unwrap_or(&a.backend))
        }
    };
    let path = match &a.result_dir {
        Some(d) => {
            std::fs::create_dir_all(d)?;
            d.join(name)
        }
        None => PathBuf::from(name),
    };
    let text = to_python_json(&Value::Object(r.clone()));
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
        assert_eq!(to_python_json(&v), "{\"a\": 1, \"b\": [1.5, \"inf\"], \"c\": null}");
    }

    #[test]
    fn lengths_vary_within_the_range_ratio() {
        let mut rng = rand::rngs::StdRng::seed_from_u64(0);
        for _ in 0..100 {
            let n = sample_len(&mut rng, 100, 0.5);
            assert!((50..=150).contains(&n));
        }
        assert_eq!(sample_len(&mut rng, 100, 0.0), 100);
    }
}
