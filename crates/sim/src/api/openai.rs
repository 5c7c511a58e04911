//! `/v1/completions` and `/v1/chat/completions`: request validation with vLLM's status codes and
//! error bodies, and the responses (JSON, or SSE chunks with `stream_options.include_usage`).
//!
//! Tokens are words: a prompt has as many tokens as whitespace-separated words (or ids, for a
//! token-id prompt), and each generated token is one word.

use std::sync::Arc;

use axum::body::{Body, Bytes};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::{json, Value};

use super::front::{Ev, Front, Refused, Submitted};
use crate::failures;
use crate::os::unix_now;
use crate::sched::Finish;

const VOCAB: &[&str] = &[
    " the", " quick", " brown", " fox", " jumps", " over", " a", " lazy", " dog", ".",
];

/// Chat template overhead: tokens around each message, and the assistant header.
const CHAT_TOKENS_PER_MESSAGE: u32 = 4;
const CHAT_TOKENS_ASSISTANT_HEADER: u32 = 3;

/// An error as vLLM's OpenAI server returns it: `{"error": {"message", "type", "param", "code"}}`.
#[derive(Debug)]
pub struct ApiError {
    pub status: u16,
    pub kind: &'static str,
    pub message: String,
    pub param: Option<&'static str>,
}

impl ApiError {
    fn bad(message: String) -> ApiError {
        ApiError {
            status: 400,
            kind: "BadRequestError",
            message,
            param: None,
        }
    }

    /// FastAPI's request validation failure as vLLM's handler rewrites it.
    fn invalid(message: String) -> ApiError {
        ApiError {
            status: 400,
            kind: "Bad Request",
            message,
            param: None,
        }
    }

    pub fn body(&self) -> Value {
        json!({"error": {"message": self.message, "type": self.kind, "param": self.param, "code": self.status}})
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let status = StatusCode::from_u16(self.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        (status, axum::Json(self.body())).into_response()
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Endpoint {
    Completions,
    Chat,
}

/// A validated request.
#[derive(Debug)]
pub struct Parsed {
    pub prompt_tokens: u32,
    pub max_tokens: u32,
    pub stream: bool,
    pub include_usage: bool,
    pub continuous_usage: bool,
    pub ignore_eos: bool,
    pub request_id: Option<String>,
    /// The prompt's block hashes, for the prefix cache.
    pub blocks: Vec<u64>,
    /// The prompt repeats itself with a period (the n-gram drafter's drafts then hold).
    pub periodic: bool,
}

fn type_error(field: &str, expected: &str, got: &Value) -> ApiError {
    ApiError::invalid(format!(
        "[{{'type': '{expected}_type', 'loc': ('body', '{field}'), 'msg': 'Input should be a valid {expected}', 'input': {got}}}]"
    ))
}

fn words(s: &str) -> u32 {
    s.split_whitespace().count() as u32
}

fn prompt_tokens(v: &Value) -> Result<u32, ApiError> {
    match v {
        Value::String(s) => Ok(words(s)),
        Value::Array(items) if items.iter().all(Value::is_u64) => Ok(items.len() as u32),
        Value::Array(items) if items.len() == 1 => prompt_tokens(&items[0]),
        Value::Array(items) if items.is_empty() => Ok(0),
        Value::Array(_) => Err(ApiError::bad(
            "the simulator serves one prompt per request".into(),
        )),
        other => Err(type_error("prompt", "string", other)),
    }
}

fn chat_tokens(v: &Value) -> Result<u32, ApiError> {
    let Value::Array(msgs) = v else {
        return Err(type_error("messages", "list", v));
    };
    let mut total = CHAT_TOKENS_ASSISTANT_HEADER;
    for m in msgs {
        let content = m.get("content").unwrap_or(&Value::Null);
        let n = match content {
            Value::String(s) => words(s),
            Value::Array(parts) => parts
                .iter()
                .filter_map(|p| p.get("text").and_then(Value::as_str))
                .map(words)
                .sum(),
            Value::Null => 0,
            other => return Err(type_error("content", "string", other)),
        };
        total += n + CHAT_TOKENS_PER_MESSAGE;
    }
    Ok(total)
}

/// The prompt's tokens as the prefix cache and the drafter see them: the words of its text
/// (each message's, in order, for a chat) or its token ids.
fn prompt_words(ep: Endpoint, body: &Value) -> Vec<String> {
    let text_words = |s: &str| s.split_whitespace().map(str::to_string).collect::<Vec<_>>();
    match (ep, body.get("prompt"), body.get("messages")) {
        (Endpoint::Completions, Some(Value::String(s)), _) => text_words(s),
        (Endpoint::Completions, Some(Value::Array(items)), _) => match items.as_slice() {
            [Value::String(s)] => text_words(s),
            ids => ids.iter().map(|v| v.to_string()).collect(),
        },
        (Endpoint::Chat, _, Some(Value::Array(msgs))) => msgs
            .iter()
            .filter_map(|m| m.get("content").and_then(Value::as_str))
            .flat_map(text_words)
            .collect(),
        _ => Vec::new(),
    }
}

fn opt_int(body: &Value, field: &str) -> Result<Option<i64>, ApiError> {
    match body.get(field) {
        None | Some(Value::Null) => Ok(None),
        Some(v) => v
            .as_i64()
            .map(Some)
            .ok_or_else(|| type_error(field, "int", v)),
    }
}

fn opt_bool(body: &Value, field: &str) -> Result<bool, ApiError> {
    match body.get(field) {
        None | Some(Value::Null) => Ok(false),
        Some(Value::Bool(b)) => Ok(*b),
        Some(v) => Err(type_error(field, "bool", v)),
    }
}

/// Parses and validates a request body the way vLLM does, in its order: JSON and types (400
/// `Bad Request`), the model name (404), then lengths (400 `BadRequestError`).
pub fn parse(
    front: &Front,
    ep: Endpoint,
    raw: &[u8],
    headers: &HeaderMap,
) -> Result<Parsed, ApiError> {
    let body: Value = serde_json::from_slice(raw).map_err(|e| {
        ApiError::invalid(format!(
            "[{{'type': 'json_invalid', 'loc': ('body', {}), 'msg': 'JSON decode error', 'input': {{}}, 'ctx': {{'error': '{}'}}}}]",
            e.column(),
            e.to_string().replace('\'', "\"")
        ))
    })?;
    if !body.is_object() {
        return Err(ApiError::invalid(format!(
            "[{{'type': 'model_attributes_type', 'loc': ('body',), 'msg': 'Input should be a valid dictionary or object to extract fields from', 'input': {body}}}]"
        )));
    }
    let prompt = match ep {
        Endpoint::Completions => match body.get("prompt") {
            None | Some(Value::Null) => return Err(ApiError::bad("Either prompt or prompt_embeds must be provided and non-empty.".into())),
            Some(p) => prompt_tokens(p)?,
        },
        Endpoint::Chat => match body.get("messages") {
            None => return Err(ApiError::invalid("[{'type': 'missing', 'loc': ('body', 'messages'), 'msg': 'Field required', 'input': {}}]".into())),
            Some(m) => chat_tokens(m)?,
        },
    };
    let mut max_tokens = opt_int(&body, "max_tokens")?;
    if ep == Endpoint::Chat {
        if let Some(m) = opt_int(&body, "max_completion_tokens")? {
            max_tokens = Some(m);
        }
    }
    let n = opt_int(&body, "n")?.unwrap_or(1);
    let stream = opt_bool(&body, "stream")?;
    let ignore_eos = opt_bool(&body, "ignore_eos")?;
    let opts = body.get("stream_options").filter(|v| !v.is_null());
    let include_usage = opts
        .and_then(|o| o.get("include_usage"))
        .and_then(Value::as_bool)
        .unwrap_or(false);
    let continuous_usage = opts
        .and_then(|o| o.get("continuous_usage_stats"))
        .and_then(Value::as_bool)
        .unwrap_or(false);
    if let Some(model) = body.get("model").and_then(Value::as_str) {
        if !front.cfg.served_names.iter().any(|n| n == model) {
            return Err(ApiError {
                status: 404,
                kind: "NotFoundError",
                message: format!("The model `{model}` does not exist."),
                param: Some("model"),
            });
        }
    }
    if n != 1 {
        return Err(ApiError::bad(format!(
            "the simulator serves n=1 only, got n={n}"
        )));
    }
    if prompt == 0 {
        return Err(ApiError::bad("The decoder prompt cannot be empty".into()));
    }
    let len = front.cfg.max_model_len as i64;
    let p = prompt as i64;
    if p >= len {
        return Err(ApiError::bad(format!(
            "This model's maximum context length is {len} tokens. However, your request has {p} input tokens. Please reduce the length of the input messages."
        )));
    }
    let max_tokens = match (ep, max_tokens) {
        (_, Some(m)) => m,
        (Endpoint::Completions, None) => 16,
        (Endpoint::Chat, None) => len - p,
    };
    if max_tokens < 1 {
        return Err(ApiError::bad(format!(
            "max_tokens must be at least 1, got {max_tokens}."
        )));
    }
    if p + max_tokens > len {
        return Err(ApiError::bad(format!(
            "'max_tokens' or 'max_completion_tokens' is too large: {max_tokens}. This model's maximum context length is {len} tokens and your request has {p} input tokens ({max_tokens} > {len} - {p})."
        )));
    }
    let request_id = headers
        .get("x-request-id")
        .and_then(|v| v.to_str().ok())
        .map(str::to_string)
        .or_else(|| {
            body.get("request_id")
                .and_then(Value::as_str)
                .map(str::to_string)
        });
    let words = prompt_words(ep, &body);
    Ok(Parsed {
        blocks: super::prefix::block_hashes(&words, front.cfg.block_size),
        periodic: front.cfg.spec.is_some() && crate::spec::periodic(&words),
        prompt_tokens: prompt,
        max_tokens: max_tokens as u32,
        stream,
        include_usage,
        continuous_usage,
        ignore_eos,
        request_id,
    })
}

fn random_hex() -> String {
    format!("{:016x}", rand::random::<u64>())
}

fn text_of(start: u32, n: u32) -> String {
    (start..start + n)
        .map(|i| VOCAB[i as usize % VOCAB.len()])
        .collect()
}

fn usage(prompt: u32, completion: u32) -> Value {
    json!({"prompt_tokens": prompt, "total_tokens": prompt + completion, "completion_tokens": completion})
}

/// Shapes the chunks and the final response of one request.
struct Shape {
    ep: Endpoint,
    id: String,
    created: u64,
    model: String,
}

impl Shape {
    fn object(&self) -> &'static str {
        match self.ep {
            Endpoint::Completions => "text_completion",
            Endpoint::Chat => "chat.completion.chunk",
        }
    }

    fn chunk(
        &self,
        text: &str,
        finish: Option<Finish>,
        usage: Option<Value>,
        first: bool,
    ) -> Value {
        let finish = finish.map(|f| f.label());
        let choice = match self.ep {
            Endpoint::Completions => {
                json!({"index": 0, "text": text, "logprobs": null, "finish_reason": finish, "stop_reason": null})
            }
            Endpoint::Chat => {
                let delta = if first {
                    json!({"role": "assistant", "content": text})
                } else {
                    json!({"content": text})
                };
                json!({"index": 0, "delta": delta, "logprobs": null, "finish_reason": finish})
            }
        };
        let mut v = json!({"id": self.id, "object": self.object(), "created": self.created, "model": self.model, "choices": [choice]});
        if let Some(u) = usage {
            v["usage"] = u;
        }
        v
    }

    fn usage_chunk(&self, prompt: u32, completion: u32) -> Value {
        json!({"id": self.id, "object": self.object(), "created": self.created, "model": self.model, "choices": [], "usage": usage(prompt, completion)})
    }

    fn full(
        &self,
        text: &str,
        finish: Finish,
        prompt: u32,
        completion: u32,
        release: &str,
    ) -> Value {
        let fingerprint = format!("vllm-{release}-c2a13f52");
        let u = json!({"prompt_tokens": prompt, "total_tokens": prompt + completion, "completion_tokens": completion, "prompt_tokens_details": null, "completion_tokens_details": null});
        match self.ep {
            Endpoint::Completions => json!({
                "id": self.id, "object": "text_completion", "created": self.created, "model": self.model,
                "choices": [{"index": 0, "text": text, "logprobs": null, "finish_reason": finish.label(), "stop_reason": null,
                             "token_ids": null, "prompt_logprobs": null, "prompt_token_ids": null, "routed_experts": null}],
                "service_tier": null, "system_fingerprint": fingerprint, "usage": u,
                "kv_transfer_params": null, "ec_transfer_params": null, "metrics": null
            }),
            Endpoint::Chat => json!({
                "id": self.id, "object": "chat.completion", "created": self.created, "model": self.model,
                "choices": [{"index": 0, "message": {"role": "assistant", "content": text, "refusal": null, "annotations": null,
                             "audio": null, "function_call": null, "reasoning": null},
                             "logprobs": null, "finish_reason": finish.label(), "stop_reason": null, "token_ids": null, "routed_experts": null}],
                "service_tier": null, "system_fingerprint": fingerprint, "usage": u, "prompt_logprobs": null,
                "prompt_token_ids": null, "prompt_text": null, "kv_transfer_params": null, "ec_transfer_params": null, "metrics": null
            }),
        }
    }
}

#[allow(
    clippy::expect_used,
    reason = "a 200 status and a constant content type are always a valid response"
)]
fn sse_response(body: Body) -> Response {
    Response::builder()
        .status(200)
        .header("content-type", "text/event-stream; charset=utf-8")
        .body(body)
        .expect("static response parts are valid")
}

/// Handles a completion or chat request end to end.
pub async fn handle(front: Arc<Front>, ep: Endpoint, headers: HeaderMap, raw: Bytes) -> Response {
    let p = match parse(&front, ep, &raw, &headers) {
        Ok(p) => p,
        Err(e) => return e.into_response(),
    };
    let prefix = match ep {
        Endpoint::Completions => "cmpl",
        Endpoint::Chat => "chatcmpl",
    };
    let base = p.request_id.clone().unwrap_or_else(random_hex);
    let shape = Shape {
        ep,
        id: format!("{prefix}-{base}"),
        created: unix_now() as u64,
        model: front.cfg.model_name().to_string(),
    };
    let sub = match front.submit(
        p.prompt_tokens,
        &p.blocks,
        p.max_tokens,
        p.ignore_eos,
        p.periodic,
        p.stream,
    ) {
        Ok(s) => s,
        Err(Refused::QueueFull { current, max }) => {
            let rid = p
                .stream
                .then(|| format!("{}-0-{}", shape.id, &random_hex()[..8]));
            failures::print_queue_full(&front.log, rid.as_deref(), current, max);
            let err = ApiError {
                status: 503,
                kind: "Service Unavailable",
                message: "The engine is currently busy and cannot accept new requests. Please try again later or on a different instance.".into(),
                param: None,
            };
            if p.stream {
                let body = format!("data: {}\n\ndata: [DONE]\n\n", err.body());
                return sse_response(Body::from(body));
            }
            return err.into_response();
        }
        Err(Refused::EngineDead) => {
            return ApiError {
                status: 500,
                kind: "InternalServerError",
                message:
                    "EngineCore encountered an issue. See stack trace (above) for the root cause."
                        .into(),
                param: None,
            }
            .into_response();
        }
    };
    if p.stream {
        stream(shape, p, sub)
    } else {
        whole(front, shape, p, sub).await
    }
}

async fn whole(front: Arc<Front>, shape: Shape, p: Parsed, mut sub: Submitted) -> Response {
    let mut generated = 0;
    loop {
        match sub.rx.recv().await {
            Some(Ev::Tokens { n, finish }) => {
                generated += n;
                if let Some(f) = finish {
                    sub.done = true;
                    let text = text_of(0, generated);
                    return axum::Json(shape.full(
                        &text,
                        f,
                        p.prompt_tokens,
                        generated,
                        front.cfg.release.version(),
                    ))
                    .into_response();
                }
            }
            Some(Ev::Failed(status, message)) => {
                sub.done = true;
                let kind = if status == 500 {
                    "InternalServerError"
                } else {
                    "Service Unavailable"
                };
                return ApiError {
                    status,
                    kind,
                    message,
                    param: None,
                }
                .into_response();
            }
            None => {
                sub.done = true;
                return ApiError {
                    status: 500,
                    kind: "InternalServerError",
                    message: "request lost".into(),
                    param: None,
                }
                .into_response();
            }
        }
    }
}

struct StreamState {
    shape: Shape,
    p: Parsed,
    sub: Submitted,
    generated: u32,
    first: bool,
    finished: bool,
}

impl StreamState {
    /// Appends the SSE events one engine output turns into.
    fn push(&mut self, ev: Option<Ev>, buf: &mut Vec<u8>) {
        let mut put = |v: &Value| buf.extend_from_slice(format!("data: {v}\n\n").as_bytes());
        match ev {
            Some(Ev::Tokens { n, finish }) => {
                if self.first && self.shape.ep == Endpoint::Chat {
                    put(&self.shape.chunk("", None, None, true));
                    self.first = false;
                }
                let text = text_of(self.generated, n);
                self.generated += n;
                let u = self
                    .p
                    .continuous_usage
                    .then(|| usage(self.p.prompt_tokens, self.generated));
                put(&self.shape.chunk(&text, finish, u, false));
                if finish.is_some() {
                    self.sub.done = true;
                    if self.p.include_usage {
                        put(&self.shape.usage_chunk(self.p.prompt_tokens, self.generated));
                    }
                    buf.extend_from_slice(b"data: [DONE]\n\n");
                    self.finished = true;
                }
            }
            Some(Ev::Failed(status, message)) => {
                self.sub.done = true;
                let kind = if status == 500 {
                    "InternalServerError"
                } else {
                    "Service Unavailable"
                };
                put(&ApiError {
                    status,
                    kind,
                    message,
                    param: None,
                }
                .body());
                buf.extend_from_slice(b"data: [DONE]\n\n");
                self.finished = true;
            }
            None => {
                self.sub.done = true;
                self.finished = true;
            }
        }
    }
}

fn stream(shape: Shape, p: Parsed, sub: Submitted) -> Response {
    let st = StreamState {
        shape,
        p,
        sub,
        generated: 0,
        first: true,
        finished: false,
    };
    // One write per wake-up: outputs already queued are merged, as vLLM's output collector
    // merges the deltas a slow consumer has not picked up yet.
    let s = futures_util::stream::unfold(st, |mut st| async move {
        if st.finished {
            return None;
        }
        let mut buf = Vec::new();
        let ev = st.sub.rx.recv().await;
        st.push(ev, &mut buf);
        while !st.finished {
            match st.sub.rx.try_recv() {
                Ok(ev) => st.push(Some(ev), &mut buf),
                Err(_) => break,
            }
        }
        (!buf.is_empty()).then(|| (Ok::<Bytes, std::convert::Infallible>(Bytes::from(buf)), st))
    });
    sse_response(Body::from_stream(s))
}
