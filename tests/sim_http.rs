//! The simulated vLLM's OpenAI-compatible HTTP surface: the same routes, status codes and error
//! bodies as vLLM's server (docs/design/engines.md#http-surface), SSE streaming with usage, and
//! `--api-key`.

use crate::sim_support;

use sim_support::*;

fn error_shape(body: &str, code: u16) -> serde_json::Value {
    let v = json(body);
    let e = &v["error"];
    assert!(e["message"].is_string(), "{body}");
    assert!(e["type"].is_string(), "{body}");
    assert!(e.get("param").is_some(), "{body}");
    assert_eq!(e["code"], code, "{body}");
    assert_eq!(
        v.as_object().unwrap().len(),
        1,
        "only an `error` key: {body}"
    );
    v
}

#[test]
fn bad_input_gets_vllms_status_and_error_body_and_the_server_keeps_serving() {
    let sim = Sim::start(&["--max-model-len", "100", "--served-model-name", "qwen38"]);
    let url = sim.url("/v1/completions");
    // Malformed JSON: FastAPI's validation error, rewritten by vLLM as 400 "Bad Request".
    let (s, b) = post(&url, r#"{"prompt": "a", "max_tokens": "#, &[]);
    assert_eq!(s, 400);
    let v = error_shape(&b, 400);
    assert_eq!(v["error"]["type"], "Bad Request");
    assert!(
        v["error"]["message"]
            .as_str()
            .unwrap()
            .contains("json_invalid"),
        "{b}"
    );
    // Binary garbage is malformed JSON too.
    let (s, b) = post(&url, "\u{0}\u{1}\u{2}", &[]);
    assert_eq!(s, 400);
    error_shape(&b, 400);
    // A wrong type.
    let (s, b) = post(&url, r#"{"prompt": "a", "max_tokens": "many"}"#, &[]);
    assert_eq!(s, 400);
    error_shape(&b, 400);
    // Unknown model: 404 NotFoundError naming the parameter.
    let (s, b) = post(&url, r#"{"model": "gpt-4", "prompt": "a"}"#, &[]);
    assert_eq!(s, 404);
    let v = error_shape(&b, 404);
    assert_eq!(v["error"]["type"], "NotFoundError");
    assert_eq!(v["error"]["message"], "The model `gpt-4` does not exist.");
    assert_eq!(v["error"]["param"], "model");
    // max_tokens 0.
    let (s, b) = post(
        &url,
        r#"{"model": "qwen38", "prompt": "a", "max_tokens": 0}"#,
        &[],
    );
    assert_eq!(s, 400);
    let v = error_shape(&b, 400);
    assert_eq!(v["error"]["type"], "BadRequestError");
    assert_eq!(
        v["error"]["message"],
        "max_tokens must be at least 1, got 0."
    );
    // Over the context: 3 prompt tokens + 98 > 100.
    let (s, b) = post(&url, r#"{"prompt": "a b c", "max_tokens": 98}"#, &[]);
    assert_eq!(s, 400);
    let v = error_shape(&b, 400);
    assert_eq!(
        v["error"]["message"],
        "'max_tokens' or 'max_completion_tokens' is too large: 98. This model's maximum context length is 100 tokens and your request has 3 input tokens (98 > 100 - 3)."
    );
    // A prompt alone over the context.
    let long = vec!["w"; 100].join(" ");
    let (s, b) = post(&url, &format!(r#"{{"prompt": "{long}"}}"#), &[]);
    assert_eq!(s, 400);
    assert!(error_shape(&b, 400)["error"]["message"]
        .as_str()
        .unwrap()
        .contains(
            "maximum context length is 100 tokens. However, your request has 100 input tokens"
        ));
    // Chat without messages.
    let (s, b) = post(
        &sim.url("/v1/chat/completions"),
        r#"{"model": "qwen38"}"#,
        &[],
    );
    assert_eq!(s, 400);
    error_shape(&b, 400);
    // Unknown route: FastAPI's 404.
    let (s, b) = get(&sim.url("/v2/nothing"));
    assert_eq!(
        (s, json(&b)),
        (404, serde_json::json!({"detail": "Not Found"}))
    );
    // Still serving after all that, and the access log recorded each status.
    let (s, b) = post(&url, r#"{"prompt": "a b c", "max_tokens": 97}"#, &[]);
    assert_eq!(s, 200, "{b}");
    assert_eq!(json(&b)["usage"]["completion_tokens"], 97);
    let wait = std::time::Duration::from_secs(5);
    assert!(sim.wait_for("\"POST /v1/completions HTTP/1.1\" 400 Bad Request", wait));
    assert!(sim.wait_for("\"POST /v1/completions HTTP/1.1\" 404 Not Found", wait));
    assert!(sim.wait_for("\"POST /v1/completions HTTP/1.1\" 200 OK", wait));
}

#[test]
fn an_api_key_guards_v1_only() {
    let sim = Sim::start(&["--api-key", "s3cret-key"]);
    let (s, b) = post(&sim.url("/v1/completions"), r#"{"prompt": "a"}"#, &[]);
    assert_eq!(
        (s, json(&b)),
        (401, serde_json::json!({"error": "Unauthorized"}))
    );
    let (s, _) = post(
        &sim.url("/v1/completions"),
        r#"{"prompt": "a"}"#,
        &[("Authorization", "Bearer wrong")],
    );
    assert_eq!(s, 401);
    let (s, _) = get(&sim.url("/v1/models"));
    assert_eq!(s, 401);
    let (s, b) = post(
        &sim.url("/v1/completions"),
        r#"{"prompt": "a"}"#,
        &[("Authorization", "Bearer s3cret-key")],
    );
    assert_eq!(s, 200, "{b}");
    // Health and metrics are open, as in vLLM.
    assert_eq!(get(&sim.url("/health")).0, 200);
    assert_eq!(get(&sim.url("/metrics")).0, 200);
    // The key never reaches the log.
    assert!(!sim.log().contains("s3cret-key"));
}

#[test]
fn info_routes_answer_like_vllm() {
    let sim = Sim::start(&[
        "--vllm-version",
        "0.30",
        "--served-model-name",
        "qwen38",
        "--max-model-len",
        "16384",
        "--max-num-batched-tokens",
        "16384",
    ]);
    let (s, b) = get(&sim.url("/health"));
    assert_eq!((s, b.as_str()), (200, ""));
    assert_eq!(
        json(&get(&sim.url("/version")).1),
        serde_json::json!({"version": "0.30.0"})
    );
    let models = json(&get(&sim.url("/v1/models")).1);
    assert_eq!(models["object"], "list");
    let m = &models["data"][0];
    assert_eq!(
        (m["id"].as_str(), m["owned_by"].as_str(), m["root"].as_str()),
        (Some("qwen38"), Some("vllm"), Some("m"))
    );
    assert_eq!(m["max_model_len"], 16384);
    assert_eq!(m["permission"][0]["object"], "model_permission");
    let (s, text) = get(&sim.url("/metrics"));
    assert_eq!(s, 200);
    assert!(text.contains("# TYPE vllm:num_requests_running gauge"));
}

/// The `data:` payloads of an SSE body, in order.
fn events(body: &str) -> Vec<String> {
    body.split("\n\n")
        .filter_map(|e| e.strip_prefix("data: "))
        .map(str::to_string)
        .collect()
}

#[test]
fn streaming_completions_end_with_usage_then_done() {
    let sim = Sim::start(&["--tokens-per-s", "500"]);
    let (s, body) = post(
        &sim.url("/v1/completions"),
        r#"{"model": "m", "prompt": "one two three four", "max_tokens": 7, "ignore_eos": true, "stream": true, "stream_options": {"include_usage": true}}"#,
        &[("x-request-id", "bench-1234abcd-0")],
    );
    assert_eq!(s, 200);
    let ev = events(&body);
    assert_eq!(ev.last().map(String::as_str), Some("[DONE]"));
    let chunks: Vec<serde_json::Value> = ev[..ev.len() - 1].iter().map(|e| json(e)).collect();
    let usage = chunks.last().unwrap();
    assert_eq!(usage["choices"], serde_json::json!([]));
    assert_eq!(
        usage["usage"],
        serde_json::json!({"prompt_tokens": 4, "total_tokens": 11, "completion_tokens": 7})
    );
    let content = &chunks[..chunks.len() - 1];
    let text: String = content
        .iter()
        .map(|c| c["choices"][0]["text"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(text.split_whitespace().count(), 7);
    assert!(content
        .iter()
        .all(|c| c["id"] == "cmpl-bench-1234abcd-0" && c["object"] == "text_completion"));
    let finishes: Vec<&serde_json::Value> = content
        .iter()
        .map(|c| &c["choices"][0]["finish_reason"])
        .collect();
    assert_eq!(
        finishes.last().unwrap().as_str(),
        Some("length"),
        "the last content chunk carries the finish reason"
    );
    assert!(finishes[..finishes.len() - 1].iter().all(|f| f.is_null()));
    // Without include_usage there is no usage chunk.
    let (_, body) = post(
        &sim.url("/v1/completions"),
        r#"{"prompt": "x", "max_tokens": 3, "stream": true}"#,
        &[],
    );
    assert!(events(&body).iter().all(|e| !e.contains("\"usage\"")));
}

#[test]
fn streaming_chat_starts_with_the_role() {
    let sim = Sim::start(&["--tokens-per-s", "500"]);
    let (s, body) = post(
        &sim.url("/v1/chat/completions"),
        r#"{"messages": [{"role": "user", "content": "hi there"}], "max_tokens": 3, "stream": true, "stream_options": {"include_usage": true}}"#,
        &[],
    );
    assert_eq!(s, 200);
    let ev = events(&body);
    let first = json(&ev[0]);
    assert_eq!(first["object"], "chat.completion.chunk");
    assert!(first["id"].as_str().unwrap().starts_with("chatcmpl-"));
    assert_eq!(
        first["choices"][0]["delta"],
        serde_json::json!({"role": "assistant", "content": ""})
    );
    let usage = json(&ev[ev.len() - 2]);
    assert_eq!(usage["usage"]["completion_tokens"], 3);
    // 2 words + one message's template + the assistant header.
    assert_eq!(usage["usage"]["prompt_tokens"], 2 + 4 + 3);
}

#[test]
fn non_streaming_answers_carry_usage_and_finish_reason() {
    let sim = Sim::start(&["--tokens-per-s", "500", "--eos-after", "2"]);
    let (s, b) = post(
        &sim.url("/v1/completions"),
        r#"{"prompt": "a b", "max_tokens": 5}"#,
        &[],
    );
    assert_eq!(s, 200);
    let v = json(&b);
    assert_eq!(v["object"], "text_completion");
    assert_eq!(
        v["choices"][0]["finish_reason"], "stop",
        "the model stops at its end-of-sequence token"
    );
    assert_eq!(v["usage"]["completion_tokens"], 2);
    let (_, b) = post(
        &sim.url("/v1/completions"),
        r#"{"prompt": "a b", "max_tokens": 5, "ignore_eos": true}"#,
        &[],
    );
    let v = json(&b);
    assert_eq!(v["choices"][0]["finish_reason"], "length");
    assert_eq!(
        v["usage"],
        serde_json::json!({"prompt_tokens": 2, "total_tokens": 7, "completion_tokens": 5, "prompt_tokens_details": null, "completion_tokens_details": null})
    );
    let (_, b) = post(
        &sim.url("/v1/chat/completions"),
        r#"{"messages": [{"role": "user", "content": "x"}], "max_tokens": 4, "ignore_eos": true}"#,
        &[],
    );
    let v = json(&b);
    assert_eq!(v["object"], "chat.completion");
    assert_eq!(v["choices"][0]["message"]["role"], "assistant");
    assert_eq!(v["usage"]["completion_tokens"], 4);
}

#[test]
fn admission_control_rejects_over_max_num_queued_reqs() {
    let sim = Sim::start(&[
        "--max-num-queued-reqs",
        "3",
        "--tokens-per-s",
        "20",
        "--vllm-version",
        "0.33",
    ]);
    let bodies = burst(&sim, 5, 4, 10);
    let rejected = bodies.iter().filter(|b| b.contains("\"code\":503")).count();
    let served = bodies
        .iter()
        .filter(|b| b.contains("\"finish_reason\":\"length\""))
        .count();
    assert_eq!((served, rejected), (3, 2), "{bodies:?}");
    let (_, m) = metrics(&sim);
    assert_eq!(
        m.total_where(
            "vllm:admission_rejections_total",
            &[("reason", "max_num_queued_reqs")]
        ),
        Some(2.0)
    );
    assert_eq!(
        m.total_where(
            "vllm:request_success_total",
            &[("finished_reason", "length")]
        ),
        Some(3.0)
    );
    assert!(sim.log().contains("Request queue full - rejecting request"));
}
