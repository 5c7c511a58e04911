//! A `/v1/completions` or `/v1/chat/completions` request as vLLM validates it, in its order, with
//! its status codes and error bodies.
//!
//! Tokens are words: a prompt has as many tokens as whitespace-separated words (or ids, for a
//! token-id prompt).

use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::{json, Value};

use super::front::Front;

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
    /// The data-parallel rank the `X-data-parallel-rank` header asks for; a value that is not
    /// a number is ignored, as vLLM 0.32 ignores it.
    pub dp_rank: Option<usize>,
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

/// The body as JSON, which must be an object (400 `Bad Request` otherwise, as pydantic says it).
fn json_object(raw: &[u8]) -> Result<Value, ApiError> {
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
    Ok(body)
}

/// The prompt's length in tokens (`prompt` for completions, `messages` for chat).
fn prompt_of(ep: Endpoint, body: &Value) -> Result<u32, ApiError> {
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
    Ok(prompt)
}

/// A `model` the server does not serve is 404.
fn served_model(front: &Front, body: &Value) -> Result<(), ApiError> {
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
    Ok(())
}

/// The request's `max_tokens` once checked against the prompt and the model length (400
/// `BadRequestError` as vLLM words it), with the endpoint's default when not given.
fn admitted_max_tokens(
    front: &Front,
    ep: Endpoint,
    prompt: u32,
    max_tokens: Option<i64>,
) -> Result<i64, ApiError> {
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
    Ok(max_tokens)
}

/// Parses and validates a request body the way vLLM does, in its order: JSON and types (400
/// `Bad Request`), the model name (404), then lengths (400 `BadRequestError`).
pub fn parse(
    front: &Front,
    ep: Endpoint,
    raw: &[u8],
    headers: &HeaderMap,
) -> Result<Parsed, ApiError> {
    let body = json_object(raw)?;
    let prompt = prompt_of(ep, &body)?;
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
    served_model(front, &body)?;
    if n != 1 {
        return Err(ApiError::bad(format!(
            "the simulator serves n=1 only, got n={n}"
        )));
    }
    let max_tokens = admitted_max_tokens(front, ep, prompt, max_tokens)?;
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
        dp_rank: headers
            .get("x-data-parallel-rank")
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.trim().parse().ok()),
    })
}
