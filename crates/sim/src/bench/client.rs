//! One request as `vllm bench serve`'s OpenAI backends send and time it: TTFT at the first
//! chunk with choices, inter-token latencies between chunks, output tokens from the final usage.

use std::time::Instant;

use futures_util::StreamExt;
use serde_json::{json, Value};

/// One request's outcome, as vLLM's `RequestFuncOutput`.
#[derive(Clone, Debug, Default)]
pub struct Outcome {
    pub success: bool,
    pub error: String,
    pub prompt_len: u32,
    /// The server's prompt token count from the final usage chunk.
    pub usage_prompt_tokens: Option<u32>,
    pub output_tokens: u32,
    pub ttft: f64,
    pub itl: Vec<f64>,
    pub latency: f64,
    /// Seconds from the benchmark start to sending.
    pub start_time: f64,
    pub queue_time: f64,
    pub generated_text: String,
}

pub struct Target {
    pub client: reqwest::Client,
    pub url: String,
    pub model: String,
    pub chat: bool,
    pub ignore_eos: bool,
    pub api_key: Option<String>,
    /// `--header` pairs sent with every request.
    pub headers: Vec<(String, String)>,
}

/// When the request was sent, and when its first and latest chunk with choices arrived.
struct Clock {
    sent: Instant,
    first: bool,
    last: Instant,
}

impl Target {
    pub async fn send(
        &self,
        prompt: &str,
        prompt_len: u32,
        max_tokens: u32,
        request_id: &str,
    ) -> Outcome {
        let mut out = Outcome {
            prompt_len,
            ..Outcome::default()
        };
        let mut req = self
            .client
            .post(&self.url)
            .json(&self.payload(prompt, max_tokens))
            .header("x-request-id", request_id);
        for (k, v) in &self.headers {
            req = req.header(k.as_str(), v.as_str());
        }
        if let Some(k) = &self.api_key {
            req = req.bearer_auth(k);
        }
        let st = Instant::now();
        let resp = match req.send().await {
            Ok(r) => r,
            Err(e) => {
                out.error = e.to_string();
                return out;
            }
        };
        if resp.status() != reqwest::StatusCode::OK {
            out.error = resp.status().canonical_reason().unwrap_or("").to_string();
            return out;
        }
        let mut clock = Clock {
            sent: st,
            first: false,
            last: st,
        };
        let mut body = resp.bytes_stream();
        let mut buf: Vec<u8> = Vec::new();
        while let Some(chunk) = body.next().await {
            let Ok(chunk) = chunk else {
                out.error = "connection closed mid-stream".into();
                break;
            };
            buf.extend_from_slice(&chunk);
            while let Some(pos) = buf.windows(2).position(|w| w == b"\n\n") {
                let event: Vec<u8> = buf.drain(..pos + 2).collect();
                self.read_event(&event, &mut out, &mut clock);
            }
        }
        if clock.first {
            out.success = true;
            if out.output_tokens == 0 {
                out.output_tokens = out.generated_text.split_whitespace().count() as u32;
            }
        } else if out.error.is_empty() {
            out.error = "Never received a valid chunk to calculate TTFT.This response will be marked as failed!".into();
        }
        out.latency = (clock.last - st).as_secs_f64();
        out
    }

    /// The request body of vLLM's `openai` or `openai-chat` backend.
    fn payload(&self, prompt: &str, max_tokens: u32) -> Value {
        let mut payload = if self.chat {
            json!({"model": self.model, "messages": [{"role": "user", "content": prompt}], "max_completion_tokens": max_tokens,
                   "stream": true, "stream_options": {"include_usage": true}})
        } else {
            json!({"model": self.model, "prompt": prompt, "repetition_penalty": 1.0, "max_tokens": max_tokens,
                   "logprobs": null, "stream": true, "stream_options": {"include_usage": true}})
        };
        if self.ignore_eos {
            payload["ignore_eos"] = json!(true);
        }
        payload
    }

    /// One server-sent event: a chunk with choices times a token and adds its text; the final
    /// chunk's usage gives the token counts.
    fn read_event(&self, event: &[u8], out: &mut Outcome, clock: &mut Clock) {
        let text = String::from_utf8_lossy(event);
        let data = text.trim().trim_start_matches("data: ");
        if data.is_empty() || data == "[DONE]" {
            return;
        }
        let Ok(v) = serde_json::from_str::<Value>(data) else {
            return;
        };
        match v.get("choices").and_then(Value::as_array) {
            Some(choices) if !choices.is_empty() => {
                let now = Instant::now();
                if clock.first {
                    out.itl.push((now - clock.last).as_secs_f64());
                } else {
                    clock.first = true;
                    out.ttft = (now - clock.sent).as_secs_f64();
                }
                clock.last = now;
                let c = &choices[0];
                let piece = if self.chat {
                    c.pointer("/delta/content")
                } else {
                    c.get("text")
                };
                out.generated_text
                    .push_str(piece.and_then(Value::as_str).unwrap_or(""));
            }
            _ => {
                if let Some(n) = v
                    .pointer("/usage/completion_tokens")
                    .and_then(Value::as_u64)
                {
                    out.output_tokens = n as u32;
                }
                if let Some(n) = v.pointer("/usage/prompt_tokens").and_then(Value::as_u64) {
                    out.usage_prompt_tokens = Some(n as u32);
                }
            }
        }
    }
}
