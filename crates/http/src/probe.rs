//! T7's requests to a live server (docs/design/tripwires.md#t7): list the models, send one
//! completion, then a burst of `concurrency` at once, then check `/health`. A server that is
//! "ready" but dies on its first real request fails here, before a benchmark's numbers are trusted.

use std::time::{Duration, Instant};

use serde_json::{json, Value};

use inferlint_core::checks::t7::{self, ProbeOutcome, Reply};
use inferlint_core::result::CheckResult;

/// The prompt every probe request sends.
pub const PROMPT: &str = "Write one sentence about the weather.";

/// How to probe. Timeouts are injectable so tests need not wait minutes.
#[derive(Clone, Debug)]
pub struct ProbeOptions {
    /// The model to ask for; None = the first of `/v1/models`.
    pub model: Option<String>,
    pub concurrency: usize,
    pub max_tokens: u32,
    /// Sent as `Authorization: Bearer …` when the server wants a key.
    pub api_key: Option<String>,
    pub list_timeout: Duration,
    pub request_timeout: Duration,
    pub health_timeout: Duration,
}

impl Default for ProbeOptions {
    fn default() -> Self {
        ProbeOptions {
            model: None,
            concurrency: 8,
            max_tokens: 16,
            api_key: None,
            list_timeout: Duration::from_secs(30),
            request_timeout: Duration::from_secs(300),
            health_timeout: Duration::from_secs(10),
        }
    }
}

/// An error as one short line: the HTTP status and reason, or the transport error's chain.
fn error_text(e: &reqwest::Error) -> String {
    if let Some(status) = e.status() {
        return http_reason(status);
    }
    let mut parts = vec![e.to_string()];
    let mut source = std::error::Error::source(e);
    while let Some(s) = source {
        let t = s.to_string();
        if !parts.iter().any(|p| p.contains(&t)) {
            parts.push(t);
        }
        source = s.source();
    }
    if e.is_timeout() && !parts.iter().any(|p| p.contains("timed out")) {
        parts.push("timed out".into());
    }
    parts.join(": ")
}

fn http_reason(status: reqwest::StatusCode) -> String {
    format!(
        "HTTP {} {}",
        status.as_u16(),
        status.canonical_reason().unwrap_or("")
    )
    .trim_end()
    .to_string()
}

/// One client for the process (building one loads TLS roots, too slow for a 20 ms poll). No
/// idle connections are pooled, so it is safe to share between runtimes.
fn client() -> reqwest::Client {
    static CLIENT: std::sync::OnceLock<reqwest::Client> = std::sync::OnceLock::new();
    CLIENT
        .get_or_init(|| crate::client(|b| b.pool_max_idle_per_host(0)))
        .clone()
}

fn base(url: &str) -> &str {
    url.trim_end_matches('/')
}

/// The first model id `/v1/models` lists.
pub async fn first_model(
    url: &str,
    api_key: Option<&str>,
    timeout: Duration,
) -> Result<String, String> {
    let req = crate::keyed(
        client()
            .get(format!("{}/v1/models", base(url)))
            .timeout(timeout),
        api_key,
    );
    let resp = req.send().await.map_err(|e| error_text(&e))?;
    if !resp.status().is_success() {
        return Err(http_reason(resp.status()));
    }
    let body: Value = resp
        .json()
        .await
        .map_err(|e| format!("not JSON: {}", error_text(&e)))?;
    body.get("data")
        .and_then(Value::as_array)
        .and_then(|d| d.first())
        .and_then(|m| m.get("id"))
        .and_then(Value::as_str)
        .map(String::from)
        .ok_or_else(|| "the server lists no model".to_string())
}

/// Whether `GET /health` answers 200 within the timeout.
pub async fn healthy(url: &str, timeout: Duration) -> bool {
    client()
        .get(format!("{}/health", base(url)))
        .timeout(timeout)
        .send()
        .await
        .is_ok_and(|r| r.status().is_success())
}

async fn complete(client: &reqwest::Client, url: &str, model: &str, opts: &ProbeOptions) -> Reply {
    let start = Instant::now();
    let req = crate::keyed(
        client
            .post(format!("{}/v1/completions", base(url)))
            .timeout(opts.request_timeout)
            .json(&json!({
                "model": model,
                "prompt": PROMPT,
                "max_tokens": opts.max_tokens,
                "temperature": 0.0,
            })),
        opts.api_key.as_deref(),
    );
    let outcome: Result<(), String> = async {
        let resp = req.send().await.map_err(|e| error_text(&e))?;
        if !resp.status().is_success() {
            return Err(http_reason(resp.status()));
        }
        let body: Value = resp.json().await.map_err(|e| error_text(&e))?;
        let tokens = body
            .pointer("/usage/completion_tokens")
            .and_then(Value::as_f64)
            .unwrap_or(0.0);
        let text = body
            .pointer("/choices/0/text")
            .and_then(Value::as_str)
            .unwrap_or("");
        if tokens > 0.0 || !text.is_empty() {
            Ok(())
        } else {
            Err("empty completion".to_string())
        }
    }
    .await;
    Reply {
        ok: outcome.is_ok(),
        seconds: start.elapsed().as_secs_f64(),
        error: outcome.err(),
    }
}

/// Probes the server at `url` into a T7 result: the requests here, the verdict in
/// [`inferlint_core::checks::t7`].
pub async fn probe(url: &str, opts: &ProbeOptions) -> CheckResult {
    t7::check(&probe_outcome(url, opts).await)
}

/// The probe's requests and what each answered.
pub async fn probe_outcome(url: &str, opts: &ProbeOptions) -> ProbeOutcome {
    let model = match &opts.model {
        Some(m) => m.clone(),
        None => match first_model(url, opts.api_key.as_deref(), opts.list_timeout).await {
            Ok(m) => m,
            Err(e) => return ProbeOutcome::NoModel(e),
        },
    };
    let http = client();
    let first = complete(&http, url, &model, opts).await;
    if !first.ok {
        let alive_after = healthy(url, opts.health_timeout).await;
        return ProbeOutcome::Served {
            model,
            first,
            burst: None,
            alive_after,
        };
    }
    let burst: Vec<Reply> = futures_util::future::join_all(
        (0..opts.concurrency).map(|_| complete(&http, url, &model, opts)),
    )
    .await;
    let alive_after = healthy(url, opts.health_timeout).await;
    ProbeOutcome::Served {
        model,
        first,
        burst: Some(burst),
        alive_after,
    }
}
