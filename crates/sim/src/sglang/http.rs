//! SGLang's HTTP surface (docs/design/engines.md#the-simulated-sglang, the recorded boot logs' access lines):
//! `/health` (503 until the launcher's own warm-up request is answered, as recorded),
//! `/health_generate`, `/get_model_info` and `/model_info`, `/get_server_info` and
//! `/server_info`, the native `/generate`, `/flush_cache`, the OpenAI endpoints the vLLM
//! simulation serves, and `/metrics` only with `--enable-metrics` (404 otherwise). There is no
//! `/version` (the recording's `GET /version` is a 404).

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use axum::body::Bytes;
use axum::extract::{Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::Router;
use serde_json::{json, Value};

use super::boot;
use crate::api::front::{Ev, Front};
use crate::api::http as shared;
use crate::os::mono_now;

/// The routes of an SGLang server, before the fallback and the access-log layer.
pub fn routes() -> Router<Arc<Front>> {
    Router::new()
        .route("/health", get(health))
        .route("/health_generate", get(health_generate))
        .route("/get_model_info", get(model_info))
        .route("/model_info", get(model_info))
        .route("/get_server_info", get(get_server_info))
        .route("/server_info", get(server_info))
        .route("/generate", post(generate))
        .route("/flush_cache", post(flush_cache).get(flush_cache))
        .route("/v1/models", get(shared::models))
        .route("/metrics", get(metrics))
        .route("/v1/completions", post(shared::completions))
        .route("/v1/chat/completions", post(shared::chat))
}

fn ready(front: &Front) -> bool {
    front.warmed.load(Ordering::SeqCst) && !front.engine_dead.load(Ordering::SeqCst)
}

async fn health(State(front): State<Arc<Front>>) -> Response {
    if ready(&front) {
        StatusCode::OK.into_response()
    } else {
        StatusCode::SERVICE_UNAVAILABLE.into_response()
    }
}

/// `/health_generate` runs a one-token generation through the scheduler.
async fn health_generate(State(front): State<Arc<Front>>) -> Response {
    if !ready(&front) {
        return StatusCode::SERVICE_UNAVAILABLE.into_response();
    }
    match run(&front, 1, 1, false).await {
        Some(_) => StatusCode::OK.into_response(),
        None => StatusCode::SERVICE_UNAVAILABLE.into_response(),
    }
}

async fn model_info(State(front): State<Arc<Front>>) -> Response {
    let m = &front.cfg.model;
    axum::Json(json!({
        "model_path": m, "tokenizer_path": m, "is_generation": true,
        "preferred_sampling_params": null, "weight_version": "default",
        "has_image_understanding": false, "has_audio_understanding": false,
        "model_type": "qwen3", "architectures": ["Qwen3ForCausalLM"]
    }))
    .into_response()
}

/// The server's arguments (the boot log's `server_args` dict, read back as JSON), its version
/// and the scheduler's internal state.
fn server_info_body(front: &Front) -> Value {
    let text = boot::server_args(&front.cfg, 0);
    let mut body = inferlint_core::bootlog::pyliteral::parse_dict(&text).unwrap_or_default();
    let st = front.lock();
    body.insert(
        "internal_states".into(),
        json!([{
            "last_gen_throughput": 0.0,
            "memory_usage": {"weight": boot::Memory::of(&front.cfg).weights,
                             "kvcache": 2.0 * boot::Memory::of(&front.cfg).k_size,
                             "token_capacity": front.cfg.pool_tokens()},
            "num_running_reqs": st.running, "num_queue_reqs": st.waiting,
        }]),
    );
    body.insert("version".into(), json!(super::VERSION));
    Value::Object(body)
}

async fn get_server_info(State(front): State<Arc<Front>>) -> Response {
    front.log.info("", "Endpoint '/get_server_info' is deprecated and will be removed in a future version. Please use '/server_info' instead.");
    axum::Json(server_info_body(&front)).into_response()
}

async fn server_info(State(front): State<Arc<Front>>) -> Response {
    axum::Json(server_info_body(&front)).into_response()
}

/// `GET|POST /flush_cache?timeout=`: with `timeout` > 0 it first waits that long for no request
/// in flight; then every scheduler flushes if it has nothing running or queued (its own lines
/// say which), emptying the radix cache so that `sglang:cached_tokens_total` stops growing for
/// prompts seen before.
async fn flush_cache(
    State(front): State<Arc<Front>>,
    Query(q): Query<Vec<(String, String)>>,
) -> Response {
    let timeout = match q.iter().rev().find(|(k, _)| k == "timeout") {
        None => 0.0,
        Some((_, raw)) => match raw.trim().parse::<f64>() {
            Ok(t) if t.is_finite() => t.max(0.0),
            _ => return float_parsing("timeout", raw),
        },
    };
    if timeout > 0.0 && !front.wait_idle(Duration::from_secs_f64(timeout)).await {
        return (StatusCode::BAD_REQUEST, "Timed out waiting for idle state.").into_response();
    }
    if front.reset_prefix_cache(false).await {
        return "Cache flushed.\nPlease check backend logs for more details. (When there are running or waiting requests, the operation will not be performed.)\n".into_response();
    }
    (StatusCode::BAD_REQUEST, "Flush cache failed.\n").into_response()
}

/// FastAPI's 422 for a query parameter that is not a number.
fn float_parsing(name: &str, raw: &str) -> Response {
    (
        StatusCode::UNPROCESSABLE_ENTITY,
        axum::Json(json!({"detail": [{
            "type": "float_parsing", "loc": ["query", name],
            "msg": "Input should be a valid number, unable to parse string as a number",
            "input": raw
        }]})),
    )
        .into_response()
}

async fn metrics(State(front): State<Arc<Front>>) -> Response {
    if !front.cfg.options.enable_metrics {
        return (
            StatusCode::NOT_FOUND,
            axum::Json(json!({"detail": "Not Found"})),
        )
            .into_response();
    }
    shared::metrics(State(front)).await
}

/// Runs one request to its end; its generated tokens and finish reason, None if it failed.
async fn run(
    front: &Arc<Front>,
    prompt: u32,
    max_tokens: u32,
    stream: bool,
) -> Option<(u32, &'static str)> {
    let blocks =
        crate::api::prefix::block_hashes(&vec![0u32; prompt as usize], front.cfg.block_size);
    let mut sub = front
        .submit(crate::api::front::Ask {
            prompt,
            blocks: &blocks,
            max_tokens,
            ignore_eos: true,
            periodic: false,
            streaming: stream,
            rank: None,
        })
        .ok()?;
    let mut n = 0;
    loop {
        match sub.rx.recv().await? {
            Ev::Tokens { n: k, finish } => {
                n += k;
                if let Some(f) = finish {
                    sub.done = true;
                    return Some((n, f.label()));
                }
            }
            Ev::Failed(..) => {
                sub.done = true;
                return None;
            }
        }
    }
}

/// SGLang's native `/generate`: `{"text": …, "sampling_params": {"max_new_tokens": N}}`,
/// answered whole with `text`, `output_ids` and `meta_info`.
async fn generate(State(front): State<Arc<Front>>, raw: Bytes) -> Response {
    let body: Value = match serde_json::from_slice(&raw) {
        Ok(v) => v,
        Err(e) => {
            return (
                StatusCode::BAD_REQUEST,
                axum::Json(json!({"error": {"message": e.to_string()}})),
            )
                .into_response()
        }
    };
    let prompt = match (body.get("text"), body.get("input_ids")) {
        (Some(Value::String(s)), _) => s.split_whitespace().count() as u32,
        (_, Some(Value::Array(ids))) => ids.len() as u32,
        _ => 1,
    };
    let max_new = body
        .pointer("/sampling_params/max_new_tokens")
        .and_then(Value::as_u64)
        .unwrap_or(128) as u32;
    let t0 = mono_now();
    match run(&front, prompt.max(1), max_new, false).await {
        Some((n, reason)) => axum::Json(json!({
            "text": " token".repeat(n as usize),
            "output_ids": (0..n).collect::<Vec<u32>>(),
            "meta_info": {"id": format!("{:032x}", rand::random::<u128>()),
                          "finish_reason": {"type": reason, "length": n},
                          "prompt_tokens": prompt, "completion_tokens": n, "cached_tokens": 0,
                          "e2e_latency": mono_now() - t0}
        }))
        .into_response(),
        None => (
            StatusCode::SERVICE_UNAVAILABLE,
            axum::Json(json!({"error": {"message": "The server is shutting down."}})),
        )
            .into_response(),
    }
}

/// The launcher's warm-up, as SGLang's `_wait_and_warmup` does it and the recording shows:
/// `GET /model_info`, then a short `POST /generate`, over HTTP to its own port, then the
/// fired-up line; `/health` answers 200 from then on.
pub async fn warm_up(front: Arc<Front>, port: u16) {
    let base = format!("http://127.0.0.1:{port}");
    let client = reqwest::Client::builder()
        .no_proxy()
        .timeout(Duration::from_secs(600))
        .build();
    if let Ok(client) = client {
        let _ = client.get(format!("{base}/model_info")).send().await;
        let warm = json!({"text": "The capital city of France is", "sampling_params": {"temperature": 0, "max_new_tokens": 8}});
        let _ = client
            .post(format!("{base}/generate"))
            .json(&warm)
            .send()
            .await;
    }
    front.warmed.store(true, Ordering::SeqCst);
    front.log.info("", boot::FIRED_UP);
}
