//! The prefix-cache reset between a sweep's points, through the engine's own endpoint, and what
//! the server's answer says (docs/design/sweeps.md#between-the-points): vLLM answers
//! `POST /reset_prefix_cache` with `{"success": bool}` (false while a KV block is still held),
//! only when the server runs with `VLLM_SERVER_DEV_MODE=1`; SGLang answers `POST /flush_cache`
//! 200 or 400 (requests still pending); TensorRT-LLM has no such endpoint.

use std::time::Duration;

use inferlint_core::engine::Engine;
use inferlint_core::sweep::Reset;

/// How long a reset may take: vLLM resets at once or refuses; SGLang's flush is asked with no
/// wait of its own.
const RESET_TIMEOUT: Duration = Duration::from_secs(30);

/// Asks the server at `url` to reset its prefix cache, and reads whether it did.
pub async fn reset_prefix_cache(url: &str, engine: Engine, api_key: Option<&str>) -> Reset {
    let path = match engine {
        Engine::Vllm => "/reset_prefix_cache",
        Engine::Sglang => "/flush_cache",
        Engine::Trtllm => {
            return Reset::Unavailable(
                "TensorRT-LLM has no endpoint to reset its cache".to_string(),
            )
        }
        Engine::Llamacpp => return Reset::Unavailable(
            "llama.cpp has no endpoint to reset its whole cache (each slot keeps its last prompt)"
                .to_string(),
        ),
    };
    let client = crate::client(|b| b);
    let mut req = client
        .post(format!("{}{path}", url.trim_end_matches('/')))
        .timeout(RESET_TIMEOUT);
    if let Some(k) = api_key {
        req = req.bearer_auth(k);
    }
    let resp = match req.send().await {
        Ok(r) => r,
        Err(e) => return Reset::Unavailable(format!("POST {path} failed: {e}")),
    };
    let status = resp.status().as_u16();
    let body = resp.text().await.unwrap_or_default();
    answer(engine, path, status, &body)
}

/// What an answer to the reset says. vLLM's status alone says nothing: it answers 200 with
/// `{"success": false}` when it could not reset, which peers' clients take for a success.
fn answer(engine: Engine, path: &str, status: u16, body: &str) -> Reset {
    let first_line = body.lines().next().unwrap_or("").trim();
    match (engine, status) {
        (_, 404) => Reset::Unavailable(match engine {
            Engine::Vllm => {
                format!("the server has no {path}: vLLM serves it only with VLLM_SERVER_DEV_MODE=1")
            }
            _ => format!("the server has no {path}"),
        }),
        (Engine::Vllm, 200) => {
            let success = serde_json::from_str::<serde_json::Value>(body)
                .ok()
                .and_then(|v| v.get("success").and_then(serde_json::Value::as_bool));
            match success {
                Some(true) => Reset::Done,
                Some(false) => Reset::Refused(
                    "the server answered success: false (some KV blocks were still held)"
                        .to_string(),
                ),
                None => Reset::Refused(format!(
                    "the server answered 200 without a success field: {first_line}"
                )),
            }
        }
        (_, 200) => Reset::Done,
        (_, s) => Reset::Refused(format!("the server answered HTTP {s}: {first_line}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vllms_body_decides_not_its_status() {
        let p = "/reset_prefix_cache";
        assert_eq!(
            answer(Engine::Vllm, p, 200, r#"{"success": true}"#),
            Reset::Done
        );
        assert!(matches!(
            answer(Engine::Vllm, p, 200, r#"{"success": false}"#),
            Reset::Refused(_)
        ));
        assert!(matches!(
            answer(Engine::Vllm, p, 200, ""),
            Reset::Refused(_)
        ));
        let Reset::Unavailable(why) = answer(Engine::Vllm, p, 404, r#"{"detail":"Not Found"}"#)
        else {
            panic!("404 is no endpoint");
        };
        assert!(why.contains("VLLM_SERVER_DEV_MODE=1"), "{why}");
    }

    #[test]
    fn sglang_refuses_with_400() {
        let p = "/flush_cache";
        assert_eq!(
            answer(Engine::Sglang, p, 200, "Cache flushed.\n"),
            Reset::Done
        );
        let Reset::Refused(why) = answer(Engine::Sglang, p, 400, "Flush cache failed.\n") else {
            panic!("400 is a refusal");
        };
        assert!(why.contains("Flush cache failed."), "{why}");
    }
}
