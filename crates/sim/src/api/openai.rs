//! `/v1/completions` and `/v1/chat/completions`: the responses (JSON, or SSE chunks with
//! `stream_options.include_usage`) to the requests [`super::request`] admits.
//!
//! Each generated token is one word.

use std::sync::Arc;

use axum::body::{Body, Bytes};
use axum::http::HeaderMap;
use axum::response::{IntoResponse, Response};
use serde_json::{json, Value};

use super::front::{Ev, Front, Refused, Submitted};
pub use super::request::Endpoint;
use super::request::{parse, ApiError, Parsed};
use crate::failures;
use crate::os::unix_now;
use crate::sched::Finish;

const VOCAB: &[&str] = &[
    " the", " quick", " brown", " fox", " jumps", " over", " a", " lazy", " dog", ".",
];

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
    let sub = match front.submit(super::front::Ask {
        prompt: p.prompt_tokens,
        blocks: &p.blocks,
        max_tokens: p.max_tokens,
        ignore_eos: p.ignore_eos,
        periodic: p.periodic,
        streaming: p.stream,
        rank: p.dp_rank,
    }) {
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
        stream(shape, p, sub, front.cfg.stream_interval)
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
    /// `--stream-interval`, and the generated tokens not sent yet.
    interval: u32,
    held: u32,
}

impl StreamState {
    /// Appends the SSE events one engine output turns into.
    fn push(&mut self, ev: Option<Ev>, buf: &mut Vec<u8>) {
        let mut put = |v: &Value| buf.extend_from_slice(format!("data: {v}\n\n").as_bytes());
        match ev {
            Some(Ev::Tokens { n, finish }) => {
                self.generated += n;
                self.held += n;
                // vLLM's output processor sends the first token alone, then once the interval's
                // tokens have gathered, and at the finish whatever is left.
                let sent_any = self.generated > self.held;
                if finish.is_none() && sent_any && self.held < self.interval {
                    return;
                }
                if self.first && self.shape.ep == Endpoint::Chat {
                    put(&self.shape.chunk("", None, None, true));
                    self.first = false;
                }
                let text = text_of(self.generated - self.held, self.held);
                self.held = 0;
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

fn stream(shape: Shape, p: Parsed, sub: Submitted, interval: u32) -> Response {
    let st = StreamState {
        shape,
        p,
        sub,
        generated: 0,
        first: true,
        finished: false,
        interval,
        held: 0,
    };
    // One write per wake-up: outputs already queued are merged, as vLLM's output collector
    // merges the deltas a slow consumer has not picked up yet.
    let s = futures_util::stream::unfold(st, |mut st| async move {
        if st.finished {
            return None;
        }
        let mut buf = Vec::new();
        // Tokens held back for the stream interval write nothing: wait for the next output.
        while buf.is_empty() && !st.finished {
            let ev = st.sub.rx.recv().await;
            st.push(ev, &mut buf);
        }
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
