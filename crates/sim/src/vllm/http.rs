//! vLLM's endpoints (the routes its boot log lists, `crate::api::http::ROUTES`); the OpenAI
//! ones and `/metrics` are the shared handlers.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::Router;
use serde_json::json;

use crate::api::front::Front;
use crate::api::http::{chat, completions, metrics, models};

pub(super) fn routes() -> Router<Arc<Front>> {
    Router::new()
        .route("/health", get(health))
        .route("/ping", get(health).post(health))
        .route("/load", get(load))
        .route("/version", get(version))
        .route("/v1/models", get(models))
        .route("/metrics", get(metrics))
        .route("/v1/completions", post(completions))
        .route("/v1/chat/completions", post(chat))
        .merge(super::dev::routes())
}

async fn health(State(front): State<Arc<Front>>) -> Response {
    if front.engine_dead.load(Ordering::SeqCst) {
        return StatusCode::SERVICE_UNAVAILABLE.into_response();
    }
    StatusCode::OK.into_response()
}

async fn load(State(front): State<Arc<Front>>) -> Response {
    let n = front.lock().in_flight;
    axum::Json(json!({"server_load": n})).into_response()
}

async fn version(State(front): State<Arc<Front>>) -> Response {
    axum::Json(json!({"version": front.cfg.release.version()})).into_response()
}
