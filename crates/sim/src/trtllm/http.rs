//! TensorRT-LLM's HTTP surface (docs/design/engines.md#the-simulated-tensorrt-llm, the recorded
//! access lines): `/health`, `/health_generate`, `/version`, `/v1/models`, the OpenAI
//! endpoints the vLLM simulation serves, `/metrics` as a JSON list of the iteration stats
//! since the last read (drained; empty without `enable_iter_perf_stats`),
//! `/prometheus/metrics` only with `return_perf_metrics` (404 otherwise), and the empty
//! `/perf_metrics` and `/kv_cache_events` lists. There is no `/tokenize` (the recording's
//! `POST /tokenize` is a 404).

use std::sync::atomic::Ordering;
use std::sync::Arc;

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::Router;
use serde_json::json;

use crate::api::front::Front;
use crate::api::http as shared;

/// The routes of a TensorRT-LLM server, before the fallback and the access-log layer.
pub fn routes() -> Router<Arc<Front>> {
    Router::new()
        .route("/health", get(health))
        .route("/health_generate", get(health))
        .route("/version", get(version))
        .route("/v1/models", get(shared::models))
        .route("/metrics", get(iteration_stats))
        .route("/prometheus/metrics", get(prometheus))
        .route("/perf_metrics", get(empty_list))
        .route("/kv_cache_events", post(empty_list).get(empty_list))
        .route("/v1/completions", post(shared::completions))
        .route("/v1/chat/completions", post(shared::chat))
}

async fn health(State(front): State<Arc<Front>>) -> Response {
    if front.engine_dead.load(Ordering::SeqCst) {
        return StatusCode::SERVICE_UNAVAILABLE.into_response();
    }
    StatusCode::OK.into_response()
}

async fn version() -> Response {
    axum::Json(json!({"version": super::VERSION})).into_response()
}

async fn iteration_stats(State(front): State<Arc<Front>>) -> Response {
    let stats = front.lock().reg.drain_iteration_stats().unwrap_or_default();
    axum::Json(stats).into_response()
}

async fn prometheus(State(front): State<Arc<Front>>) -> Response {
    if !front.cfg.options.return_perf_metrics {
        return (
            StatusCode::NOT_FOUND,
            axum::Json(json!({"detail": "Not Found"})),
        )
            .into_response();
    }
    shared::metrics(State(front)).await
}

async fn empty_list() -> Response {
    axum::Json(json!([])).into_response()
}
