//! The HTTP surface (docs/design/engines.md#http-surface): routes, `--api-key` authentication on
//! `/v1/*`, uvicorn's access log and the instrumentator's `http_*` metrics around every request.

use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use axum::body::{Body, Bytes, HttpBody};
use axum::extract::{ConnectInfo, Request, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::Router;
use futures_util::Stream;
use serde_json::json;

use super::front::Front;
use super::openai::{self, Endpoint};
use crate::metrics::HttpRequest;
use crate::os::{mono_now, unix_now};

/// The routes the boot log lists and the instrumentator names as handlers.
pub const ROUTES: &[(&str, &str)] = &[
    ("/openapi.json", "HEAD, GET"),
    ("/docs", "HEAD, GET"),
    ("/docs/oauth2-redirect", "HEAD, GET"),
    ("/redoc", "HEAD, GET"),
    ("/health", "GET"),
    ("/load", "GET"),
    ("/version", "GET"),
    ("/ping", "GET"),
    ("/ping", "POST"),
    ("/v1/models", "GET"),
    ("/metrics", "GET"),
    ("/v1/completions", "POST"),
    ("/v1/chat/completions", "POST"),
];

/// The engine's `routes`, behind the shared fallback, authentication, access log and metrics.
pub fn router(front: Arc<Front>, routes: Router<Arc<Front>>) -> Router {
    routes
        .fallback(not_found)
        .layer(axum::middleware::from_fn_with_state(front.clone(), observe))
        .with_state(front)
}

pub(crate) async fn models(State(front): State<Arc<Front>>) -> Response {
    let created = unix_now() as u64;
    let data: Vec<_> = front
        .cfg
        .served_names
        .iter()
        .map(|name| {
            json!({
                "id": name, "object": "model", "created": created, "owned_by": front.cfg.engine.key(), "root": front.cfg.model,
                "parent": null, "max_model_len": front.cfg.max_model_len,
                "permission": [{"id": format!("modelperm-{:016x}", rand::random::<u64>()), "object": "model_permission",
                    "created": created, "allow_create_engine": false, "allow_sampling": true, "allow_logprobs": true,
                    "allow_search_indices": false, "allow_view": true, "allow_fine_tuning": false, "organization": "*",
                    "group": null, "is_blocking": false}]
            })
        })
        .collect();
    axum::Json(json!({"object": "list", "data": data})).into_response()
}

pub(crate) async fn metrics(State(front): State<Arc<Front>>) -> Response {
    super::hostile::metrics(front).await
}

pub(crate) async fn completions(
    State(front): State<Arc<Front>>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    openai::handle(front, Endpoint::Completions, headers, body).await
}

pub(crate) async fn chat(
    State(front): State<Arc<Front>>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    openai::handle(front, Endpoint::Chat, headers, body).await
}

async fn not_found() -> Response {
    (
        StatusCode::NOT_FOUND,
        axum::Json(json!({"detail": "Not Found"})),
    )
        .into_response()
}

/// vLLM's `AuthenticationMiddleware`: `/v1/*` needs `Authorization: Bearer <key>`.
fn authorized(front: &Front, path: &str, headers: &HeaderMap) -> bool {
    let Some(key) = &front.cfg.api_key else {
        return true;
    };
    if !path.starts_with("/v1") {
        return true;
    }
    let Some(value) = headers.get("authorization").and_then(|v| v.to_str().ok()) else {
        return false;
    };
    let (scheme, param) = value.split_once(' ').unwrap_or((value, ""));
    scheme.eq_ignore_ascii_case("bearer") && param == key
}

/// What the instrumentator records once a response is complete.
struct HttpRecord {
    front: Arc<Front>,
    req: HttpRequest,
    start: f64,
}

impl HttpRecord {
    fn record(mut self) {
        self.req.secs = mono_now() - self.start;
        let mut st = self.front.lock();
        st.reg.http_request(&self.req, unix_now());
    }
}

/// A streamed body that records its request's metrics when it ends or is dropped.
struct Observed {
    inner: axum::body::BodyDataStream,
    record: Option<HttpRecord>,
}

impl Stream for Observed {
    type Item = Result<Bytes, axum::Error>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let r = Pin::new(&mut self.inner).poll_next(cx);
        if let Poll::Ready(None) = r {
            if let Some(rec) = self.record.take() {
                rec.record();
            }
        }
        r
    }
}

impl Drop for Observed {
    fn drop(&mut self) {
        if let Some(rec) = self.record.take() {
            rec.record();
        }
    }
}

async fn observe(
    State(front): State<Arc<Front>>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    req: Request,
    next: Next,
) -> Response {
    let start = mono_now();
    let method = req.method().as_str().to_string();
    let path = req.uri().path().to_string();
    let target = req
        .uri()
        .path_and_query()
        .map_or_else(|| path.clone(), |pq| pq.as_str().to_string());
    let req_bytes = req
        .headers()
        .get("content-length")
        .and_then(|v| v.to_str().ok()?.parse::<f64>().ok())
        .unwrap_or(0.0);
    // SGLang names every endpoint by its path; vLLM's instrumentator only its routes.
    let routed = ROUTES
        .iter()
        .chain(front.more_routes)
        .any(|(p, _)| *p == path);
    let handler = if front.label_every_path || routed {
        path.clone()
    } else {
        "none".to_string()
    };
    front.lock().reg.http_started(&HttpRequest {
        handler: handler.clone(),
        method: method.clone(),
        ..HttpRequest::default()
    });
    let mut resp = if authorized(&front, &path, req.headers()) {
        next.run(req).await
    } else {
        (
            StatusCode::UNAUTHORIZED,
            axum::Json(json!({"error": "Unauthorized"})),
        )
            .into_response()
    };
    resp.headers_mut()
        .insert("server", HeaderValue::from_static("uvicorn"));
    let status = resp.status();
    if front.cfg.access_log {
        front.log.access(
            &peer.to_string(),
            &method,
            &target,
            status.as_u16(),
            status.canonical_reason().unwrap_or(""),
        );
    }
    let streaming = resp
        .headers()
        .get("content-type")
        .is_some_and(|v| v.as_bytes().starts_with(b"text/event-stream"));
    let mut record = HttpRecord {
        front: front.clone(),
        req: HttpRequest {
            handler,
            method,
            status: status.as_u16(),
            req_bytes,
            ..HttpRequest::default()
        },
        start,
    };
    if streaming {
        let (parts, body) = resp.into_parts();
        let observed = Observed {
            inner: body.into_data_stream(),
            record: Some(record),
        };
        return Response::from_parts(parts, Body::from_stream(observed));
    }
    record.req.resp_bytes = resp.body().size_hint().exact().unwrap_or(0) as f64;
    record.record();
    resp
}
