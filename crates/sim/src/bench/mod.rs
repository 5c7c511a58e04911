//! `inferlint sim bench`: a load client with `vllm bench serve`'s flags, console summary and result
//! JSON (docs/design/engines.md#bench-serve-results), including the initial test request of the
//! releases that send one. Prompts are random words (one token each to the simulated server).

mod args;
mod client;
mod engines;
mod result;

use std::sync::Arc;
use std::time::{Duration, Instant};

use rand::{Rng, SeedableRng};
use serde_json::Value;

pub use self::args::{BenchArgs, BenchRelease};
use self::client::Target;
use self::engines::Client;
use self::result::{print_summary, py_float, save, summarize};
use crate::error::SimError;

const WORDS: &[&str] = &[
    "alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india", "juliet",
];

fn sample_len(rng: &mut rand::rngs::StdRng, len: u32, ratio: f64) -> u32 {
    if ratio <= 0.0 {
        return len;
    }
    let lo = (len as f64 * (1.0 - ratio)).floor().max(1.0) as u32;
    let hi = (len as f64 * (1.0 + ratio)).ceil() as u32;
    rng.random_range(lo..=hi)
}

fn prompt_text(rng: &mut rand::rngs::StdRng, n: u32) -> String {
    (0..n)
        .map(|_| WORDS[rng.random_range(0..WORDS.len())])
        .collect::<Vec<_>>()
        .join(" ")
}

/// When each request is sent, seconds after the first could be: Poisson gaps, rescaled as
/// `vllm bench serve` rescales them so that the last one falls at exactly requests / rate
/// (vllm/benchmarks/serve.py `get_request`, 0.32); all at 0 for an infinite rate.
fn schedule(rng: &mut rand::rngs::StdRng, n: usize, rate: f64) -> Vec<f64> {
    if !rate.is_finite() || n == 0 {
        return vec![0.0; n];
    }
    let mut at = 0.0_f64;
    let mut times: Vec<f64> = (0..n)
        .map(|_| {
            at += -rng.random::<f64>().max(1e-12).ln() / rate;
            at
        })
        .collect();
    let scale = n as f64 / rate / at;
    for t in &mut times {
        *t *= scale;
    }
    times
}

/// `inferlint sim bench`: returns the exit status.
pub fn run_bench(a: BenchArgs) -> crate::error::SimResult<i32> {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    rt.block_on(bench(a))
}

async fn bench(a: BenchArgs) -> crate::error::SimResult<i32> {
    if a.dataset_name != "random" {
        return Err(SimError::Usage(format!(
            "the simulator's client generates the random dataset only, not '{}'",
            a.dataset_name
        )));
    }
    let rate = request_rate(&a)?;
    let who = Client::of(&a.backend);
    let target = Arc::new(connect(&a, who).await?);
    let mut rng = rand::rngs::StdRng::seed_from_u64(a.seed);
    let requests = prompts(&mut rng, &a);
    let id_prefix = a
        .request_id_prefix
        .clone()
        .unwrap_or_else(|| format!("bench-{:08x}-", rand::random::<u32>()));
    before_the_load(&a, who, &target, &requests, &id_prefix).await?;
    println!(
        "Traffic request rate: {}",
        if rate.is_infinite() {
            "inf".to_string()
        } else {
            py_float(rate)
        }
    );
    println!(
        "Burstiness factor: {} (Poisson process)",
        py_float(a.burstiness)
    );
    println!(
        "Maximum request concurrency: {}",
        a.max_concurrency
            .map_or("None".to_string(), |c| c.to_string())
    );
    let send_at = schedule(&mut rng, requests.len(), rate);
    let t0 = Instant::now();
    let outcomes = load(&a, &target, requests, &send_at, &id_prefix, t0).await?;
    let duration = t0.elapsed().as_secs_f64();
    let model = &target.model;
    let result = summarize(&a, model, rate, duration, &outcomes);
    print_summary(&a, &result);
    match who {
        Client::Sglang => {
            let line = engines::sglang_result(&a, rate, duration, &outcomes, &result);
            engines::save_sglang(&a, &line)?;
        }
        Client::Trtllm if a.save_result || a.append_result => {
            let r = engines::trtllm_result(&a, model, duration, &outcomes, &result);
            save(&a, model, rate, &r)?;
        }
        Client::Vllm if a.save_result || a.append_result => save(&a, model, rate, &result)?,
        _ => {}
    }
    Ok(0)
}

/// `--request-rate`: requests per second, infinite for `inf`.
fn request_rate(a: &BenchArgs) -> crate::error::SimResult<f64> {
    let rate: f64 = if a.request_rate == "inf" {
        f64::INFINITY
    } else {
        a.request_rate.parse().map_err(|_| {
            SimError::Usage(format!(
                "--request-rate must be a number or 'inf', got '{}'",
                a.request_rate
            ))
        })?
    };
    if rate.is_finite() && a.burstiness != 1.0 {
        return Err(SimError::Usage(
            "the simulator's client draws Poisson arrivals only (--burstiness 1.0)".into(),
        ));
    }
    Ok(rate)
}

/// The server's endpoint and model (the first `/v1/models` lists unless `--model` names one).
async fn connect(a: &BenchArgs, who: Client) -> crate::error::SimResult<Target> {
    let chat = a.backend == "openai-chat";
    let endpoint = a.endpoint.clone().unwrap_or_else(|| {
        if chat {
            "/v1/chat/completions".into()
        } else {
            "/v1/completions".into()
        }
    });
    let base = a
        .base_url
        .clone()
        .unwrap_or_else(|| format!("http://{}:{}", a.host, a.port));
    let base = base.trim_end_matches('/').to_string();
    // The server under test is reached directly, never through the environment's proxy.
    let client = reqwest::Client::builder()
        .no_proxy()
        .pool_max_idle_per_host(4096)
        .build()?;
    let api_key = std::env::var("OPENAI_API_KEY")
        .ok()
        .filter(|k| !k.is_empty());
    let model = match &a.model {
        Some(m) => m.clone(),
        None => {
            let mut req = client.get(format!("{base}/v1/models"));
            if let Some(k) = &api_key {
                req = req.bearer_auth(k);
            }
            let v: Value = req.send().await?.json().await?;
            v.pointer("/data/0/id")
                .and_then(Value::as_str)
                .ok_or_else(|| SimError::Usage(format!("{base}/v1/models lists no model")))?
                .to_string()
        }
    };
    Ok(Target {
        client,
        url: format!("{base}{endpoint}"),
        model,
        chat,
        ignore_eos: match who {
            Client::Sglang => !a.disable_ignore_eos,
            _ => a.ignore_eos,
        },
        api_key,
        headers: headers(&a.header)?,
    })
}

/// `--header KEY=VALUE` pairs; one without `=` is a usage error, as vLLM's parser makes it.
fn headers(pairs: &[String]) -> Result<Vec<(String, String)>, SimError> {
    pairs
        .iter()
        .map(|p| {
            p.split_once('=')
                .map(|(k, v)| (k.trim().to_string(), v.trim().to_string()))
                .filter(|(k, _)| !k.is_empty())
                .ok_or_else(|| SimError::Usage(format!("--header {p}: expected KEY=VALUE")))
        })
        .collect()
}

/// The random prompts: (text, prompt tokens, output tokens), each after the shared prefix.
fn prompts(rng: &mut rand::rngs::StdRng, a: &BenchArgs) -> Vec<(String, u32, u32)> {
    let prefix_len = a.random_prefix_len;
    let prefix = prompt_text(rng, prefix_len);
    (0..a.num_prompts)
        .map(|_| {
            let il = sample_len(rng, a.random_input_len, a.random_range_ratio);
            let ol = sample_len(rng, a.random_output_len, a.random_range_ratio).max(1);
            let body = prompt_text(rng, il);
            let text = if prefix_len > 0 {
                format!("{prefix} {body}")
            } else {
                body
            };
            (text, il + prefix_len, ol)
        })
        .collect()
}

/// What each client does before the measured load: SGLang's one warm-up request, vLLM's and
/// TensorRT-LLM's initial test request (until the server answers), then `--num-warmups`.
async fn before_the_load(
    a: &BenchArgs,
    who: Client,
    target: &Target,
    requests: &[(String, u32, u32)],
    id_prefix: &str,
) -> crate::error::SimResult<()> {
    // TensorRT-LLM's client keeps vLLM 0.11's initial test run.
    let old_flow = a.vllm_version == BenchRelease::V011 || who == Client::Trtllm;
    let ready_check = a
        .ready_check_timeout_sec
        .unwrap_or(if old_flow { 600 } else { 0 });
    if who == Client::Sglang {
        // SGLang's client warms up with one request instead (its `--warmup-requests 1`).
        println!("Starting warmup with 1 sequences...");
        if let Some((p, pl, ol)) = requests.first() {
            target
                .send(p, *pl, *ol, &format!("{id_prefix}warmup"))
                .await;
        }
        println!("Warmup completed with 1 sequences. Starting main benchmark run...");
    } else {
        println!("Starting initial single prompt test run...");
    }
    if who != Client::Sglang && ready_check > 0 {
        test_run(target, requests, id_prefix, ready_check).await?;
        if old_flow {
            println!("Initial test run completed. Starting main benchmark run...");
        } else {
            println!("Initial test run completed.");
        }
    } else if who != Client::Sglang {
        println!("Skipping endpoint ready check.");
    }
    if a.num_warmups > 0 {
        println!("Warming up with {} requests...", a.num_warmups);
        for i in 0..a.num_warmups {
            let (p, pl, ol) = &requests[i % requests.len().max(1)];
            target
                .send(p, *pl, *ol, &format!("{id_prefix}warmup-{i}"))
                .await;
        }
        println!("Warmup run completed.");
    }
    if !old_flow && who == Client::Vllm {
        println!("Starting main benchmark run...");
    }
    Ok(())
}

/// The initial test request, sent again every second until it succeeds or `timeout_s` pass.
async fn test_run(
    target: &Target,
    requests: &[(String, u32, u32)],
    id_prefix: &str,
    timeout_s: u64,
) -> crate::error::SimResult<()> {
    let (p, pl, ol) = requests
        .first()
        .cloned()
        .unwrap_or_else(|| ("hello".into(), 1, 1));
    let deadline = Instant::now() + Duration::from_secs(timeout_s);
    loop {
        let o = target.send(&p, pl, ol, &format!("{id_prefix}test")).await;
        if o.success {
            return Ok(());
        }
        if Instant::now() >= deadline {
            return Err(SimError::Usage(format!("Initial test run failed - Please make sure benchmark arguments are correctly specified. Error: {}", o.error)));
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
}

/// The measured load: each request sent at its time (`send_at`, seconds after `t0`), at most
/// `--max-concurrency` in flight; their outcomes in order.
async fn load(
    a: &BenchArgs,
    target: &Arc<Target>,
    requests: Vec<(String, u32, u32)>,
    send_at: &[f64],
    id_prefix: &str,
    t0: Instant,
) -> crate::error::SimResult<Vec<client::Outcome>> {
    let sem = a
        .max_concurrency
        .map(|c| Arc::new(tokio::sync::Semaphore::new(c.max(1))));
    let mut tasks = Vec::with_capacity(requests.len());
    for (i, (p, pl, ol)) in requests.into_iter().enumerate() {
        let wait = send_at[i] - t0.elapsed().as_secs_f64();
        if wait > 0.0 {
            tokio::time::sleep(Duration::from_secs_f64(wait)).await;
        }
        let target = target.clone();
        let overwrite_prompt_len = a.vllm_version == BenchRelease::V033;
        let sem = sem.clone();
        let rid = format!("{id_prefix}{i}");
        tasks.push(tokio::spawn(async move {
            let queued = Instant::now();
            let _permit = match &sem {
                // The semaphore is never closed, so a permit always comes.
                Some(s) => s.clone().acquire_owned().await.ok(),
                None => None,
            };
            let queue_time = queued.elapsed().as_secs_f64();
            let start = t0.elapsed().as_secs_f64();
            let mut o = target.send(&p, pl, ol, &rid).await;
            // 0.33 takes the prompt length from the server's usage.
            if overwrite_prompt_len {
                if let Some(n) = o.usage_prompt_tokens {
                    o.prompt_len = n;
                }
            }
            o.start_time = start;
            o.queue_time = queue_time;
            o
        }));
    }
    let mut outcomes = Vec::with_capacity(tasks.len());
    for t in tasks {
        outcomes.push(t.await?);
    }
    Ok(outcomes)
}

#[cfg(test)]
mod tests {
    use super::*;

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
