//! vLLM's development endpoints (docs/design/engines.md#cache-resets): served only when
//! `VLLM_SERVER_DEV_MODE` is a non-zero integer, as vLLM's `envs` reads it, with a security
//! warning at boot. The simulator serves the cache resets, `/server_info` and `/is_sleeping`;
//! `/sleep`, `/wake_up` and `/collective_rpc` are left out (404): answering them without
//! sleeping or running anything would tell a client something false.

use std::sync::Arc;

use axum::extract::{Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::Router;
use serde_json::{json, Value};

use crate::api::front::Front;
use crate::logline::Logger;
use crate::settings::ServeConfig;
use crate::surface::CacheHold;

/// The variable that turns the development endpoints on.
pub const DEV_MODE_ENV: &str = "VLLM_SERVER_DEV_MODE";

/// The development routes as the boot log lists them, after the others.
const DEV_ROUTES: &[(&str, &str)] = &[
    ("/reset_prefix_cache", "POST"),
    ("/reset_mm_cache", "POST"),
    ("/reset_encoder_cache", "POST"),
    ("/server_info", "GET"),
    ("/is_sleeping", "GET"),
];

/// Where each line is logged from: near the released source's numbers; no reader depends on
/// them (as with `crate::logline::Sites`).
const SECURITY_SITE: &str = "__init__.py:36";
const RESETTING_SITE: &str = "api_router.py:39";
const RESETTING_MM_SITE: &str = "api_router.py:50";
const RESET_FAILED_SITE: &str = "block_pool.py:431";
const RESET_DONE_SITE: &str = "block_pool.py:450";

const SECURITY_WARNING: &str =
    "SECURITY WARNING: Development endpoints are enabled! This should NOT be used in production!";

/// Whether the API server's environment turns the development endpoints on: a non-zero
/// integer (vLLM's `bool(int(os.getenv(...)))`).
pub fn enabled() -> bool {
    std::env::var(DEV_MODE_ENV)
        .ok()
        .and_then(|v| v.trim().parse::<i64>().ok())
        .is_some_and(|n| n != 0)
}

/// The development routes as listed and named, or none outside dev mode.
pub fn routes_listed() -> &'static [(&'static str, &'static str)] {
    if enabled() {
        DEV_ROUTES
    } else {
        &[]
    }
}

/// The security warning, when the app is built with the development routers.
pub fn boot_line(log: &Logger) {
    if enabled() {
        log.warn(SECURITY_SITE, SECURITY_WARNING);
    }
}

/// The development routes, or none outside dev mode.
pub fn routes() -> Router<Arc<Front>> {
    if !enabled() {
        return Router::new();
    }
    Router::new()
        .route("/reset_prefix_cache", post(reset_prefix_cache))
        .route("/reset_mm_cache", post(reset_mm_cache))
        .route("/reset_encoder_cache", post(reset_encoder_cache))
        .route("/server_info", get(server_info))
        .route("/is_sleeping", get(is_sleeping))
}

/// The engine's `BlockPool.reset_prefix_cache`: only with no block held.
pub fn engine_reset(log: &Logger, hold: CacheHold) -> bool {
    if hold.blocks > 0 {
        log.warn(
            RESET_FAILED_SITE,
            &format!(
                "Failed to reset prefix cache because some blocks ({}) are not freed yet",
                hold.blocks
            ),
        );
        return false;
    }
    log.info(RESET_DONE_SITE, "Successfully reset prefix cache");
    true
}

/// A FastAPI boolean query parameter (false when absent), or the value it cannot read.
fn query_bool(q: &[(String, String)], name: &str) -> Result<bool, String> {
    let Some((_, raw)) = q.iter().rev().find(|(k, _)| k == name) else {
        return Ok(false);
    };
    match raw.to_ascii_lowercase().as_str() {
        "1" | "true" | "t" | "yes" | "y" | "on" => Ok(true),
        "0" | "false" | "f" | "no" | "n" | "off" => Ok(false),
        _ => Err(raw.clone()),
    }
}

/// FastAPI's 422 for a query parameter that is not a boolean.
fn bool_parsing(name: &str, raw: &str) -> Response {
    (
        StatusCode::UNPROCESSABLE_ENTITY,
        axum::Json(json!({"detail": [{
            "type": "bool_parsing", "loc": ["query", name],
            "msg": "Input should be a valid boolean, unable to interpret input",
            "input": raw
        }]})),
    )
        .into_response()
}

/// `POST /reset_prefix_cache?reset_running_requests=&reset_external=`: `{"success": bool}`.
/// The simulator has no external (connector) cache, so `reset_external` changes nothing.
async fn reset_prefix_cache(
    State(front): State<Arc<Front>>,
    Query(q): Query<Vec<(String, String)>>,
) -> Response {
    let (running, external) = ("reset_running_requests", "reset_external");
    let reset_running = match query_bool(&q, running) {
        Ok(b) => b,
        Err(raw) => return bool_parsing(running, &raw),
    };
    if let Err(raw) = query_bool(&q, external) {
        return bool_parsing(external, &raw);
    }
    front.log.info(RESETTING_SITE, "Resetting prefix cache...");
    let success = front.reset_prefix_cache(reset_running).await;
    axum::Json(json!({"success": success})).into_response()
}

/// The simulator caches no multi-modal inputs: nothing to empty.
async fn reset_mm_cache(State(front): State<Arc<Front>>) -> Response {
    front
        .log
        .info(RESETTING_MM_SITE, "Resetting multi-modal cache...");
    StatusCode::OK.into_response()
}

/// The simulator caches no encoder outputs: nothing to empty.
async fn reset_encoder_cache() -> Response {
    StatusCode::OK.into_response()
}

/// `GET /server_info`: the configuration as text (its default `config_format=text`).
async fn server_info(State(front): State<Arc<Front>>) -> Response {
    axum::Json(json!({"vllm_config": config_text(&front.cfg)})).into_response()
}

fn config_text(cfg: &ServeConfig) -> Value {
    Value::String(format!(
        "model='{m}', speculative_config=None, tokenizer='{m}', max_seq_len={}, tensor_parallel_size={}, data_parallel_size={}, served_model_name={}, enable_prefix_caching={}",
        cfg.max_model_len,
        cfg.tp,
        cfg.dp,
        cfg.served_names.join(","),
        if cfg.prefix_caching { "True" } else { "False" },
        m = cfg.model,
    ))
}

/// The simulated engine never sleeps.
async fn is_sleeping() -> Response {
    axum::Json(json!({"is_sleeping": false})).into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn q(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn boolean_query_parameters_read_as_fastapi_reads_them() {
        let name = "reset_running_requests";
        assert_eq!(query_bool(&q(&[]), name).ok(), Some(false));
        for yes in ["true", "True", "1", "on", "yes"] {
            assert_eq!(
                query_bool(&q(&[(name, yes)]), name).ok(),
                Some(true),
                "{yes}"
            );
        }
        for no in ["false", "0", "off", "no"] {
            assert_eq!(
                query_bool(&q(&[(name, no)]), name).ok(),
                Some(false),
                "{no}"
            );
        }
        assert_eq!(
            query_bool(&q(&[(name, "maybe")]), name),
            Err("maybe".into())
        );
        assert_eq!(
            bool_parsing(name, "maybe").status(),
            StatusCode::UNPROCESSABLE_ENTITY
        );
    }
}
