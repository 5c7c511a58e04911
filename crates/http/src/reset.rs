//! The prefix-cache reset between a sweep's points, through the engine's own endpoint, and what
//! the server's answer says (docs/design/sweeps.md#between-the-points): vLLM answers
//! `POST /reset_prefix_cache` with `{"success": bool}` (false while a KV block is still held),
//! only when the server runs with `VLLM_SERVER_DEV_MODE=1`; SGLang answers `POST /flush_cache`
//! 200 or 400 (requests still pending); llama.cpp erases one slot at a time
//! (`POST /slots/ID?action=erase`, served only with `--slot-save-path`; what else must hold for
//! the reset to take is `inferlint_core::sweep::llamacpp_reset_blocker`'s); TensorRT-LLM has no
//! such endpoint.

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
        Engine::Llamacpp => return erase_slots(url, api_key).await,
    };
    let client = crate::client(|b| b);
    let req = crate::keyed(
        client
            .post(format!("{}{path}", url.trim_end_matches('/')))
            .timeout(RESET_TIMEOUT),
        api_key,
    );
    let resp = match req.send().await {
        Ok(r) => r,
        Err(e) => return Reset::Unavailable(format!("POST {path} failed: {e}")),
    };
    let status = resp.status().as_u16();
    let body = resp.text().await.unwrap_or_default();
    answer(engine, path, status, &body)
}

/// llama.cpp's reset: each slot `GET /slots` lists, erased in turn. Done when every erase was
/// answered; the first that was not says why.
async fn erase_slots(url: &str, api_key: Option<&str>) -> Reset {
    let base = url.trim_end_matches('/');
    let client = crate::client(|b| b);
    let listed = crate::keyed(
        client.get(format!("{base}/slots")).timeout(RESET_TIMEOUT),
        api_key,
    )
    .send()
    .await;
    let ids = match listed {
        Ok(r) => {
            let status = r.status().as_u16();
            let body = r.text().await.unwrap_or_default();
            match slot_ids(status, &body) {
                Ok(ids) => ids,
                Err(why) => return why,
            }
        }
        Err(e) => return Reset::Unavailable(format!("GET /slots failed: {e}")),
    };
    for id in ids {
        let path = format!("/slots/{id}?action=erase");
        let erased = crate::keyed(
            client.post(format!("{base}{path}")).timeout(RESET_TIMEOUT),
            api_key,
        )
        .send()
        .await;
        let r = match erased {
            Ok(r) => r,
            Err(e) => return Reset::Unavailable(format!("POST {path} failed: {e}")),
        };
        let status = r.status().as_u16();
        let body = r.text().await.unwrap_or_default();
        if let Err(why) = erase_answer(&path, status, &body) {
            return why;
        }
    }
    Reset::Done
}

/// The slots' ids in llama-server's answer to `GET /slots` (an array of objects with an
/// `id`), or what the reset is when there are none to erase.
fn slot_ids(status: u16, body: &str) -> Result<Vec<u64>, Reset> {
    let first_line = body.lines().next().unwrap_or("").trim();
    if status != 200 {
        return Err(Reset::Unavailable(format!(
            "GET /slots answered HTTP {status} ({first_line}): it lists the slots to erase, and llama-server serves it unless started with --no-slots"
        )));
    }
    let ids: Vec<u64> = serde_json::from_str::<Vec<serde_json::Value>>(body)
        .unwrap_or_default()
        .iter()
        .filter_map(|s| s.get("id")?.as_u64())
        .collect();
    if ids.is_empty() {
        return Err(Reset::Unavailable(format!(
            "GET /slots listed no slot: {first_line}"
        )));
    }
    Ok(ids)
}

/// What llama-server's answer to one erase says: `{"id_slot": 0, "n_erased": 95}` with 200, or
/// 501 with "Start it with `--slot-save-path`" where the server erases nothing.
fn erase_answer(path: &str, status: u16, body: &str) -> Result<(), Reset> {
    let message = serde_json::from_str::<serde_json::Value>(body)
        .ok()
        .and_then(|v| v.pointer("/error/message")?.as_str().map(str::to_string))
        .unwrap_or_else(|| body.lines().next().unwrap_or("").trim().to_string());
    match status {
        200 => Ok(()),
        501 => Err(Reset::Unavailable(format!(
            "POST {path} answered HTTP 501 ({message}): llama-server erases a slot only when started with --slot-save-path DIR"
        ))),
        s => Err(Reset::Refused(format!(
            "POST {path} answered HTTP {s}: {message}"
        ))),
    }
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

    /// A recorded answer of llama-server (tests/fixtures/llamacpp-0.6-cpu/reset/): its status
    /// and its body.
    fn recorded(name: &str) -> Option<(u16, String)> {
        let text =
            inferlint_core::testkit::evidence_text(&format!("llamacpp-0.6-cpu/reset/{name}"))?;
        let status = text
            .split_whitespace()
            .nth(1)
            .and_then(|s| s.parse().ok())
            .unwrap_or_else(|| panic!("{name}: no status line"));
        let (_, body) = text
            .split_once("\r\n\r\n")
            .unwrap_or_else(|| panic!("{name}: no blank line after the headers"));
        Some((status, body.to_string()))
    }

    #[test]
    fn llamacpps_slots_are_listed_and_erased() {
        let Some((status, body)) = recorded("slots.http.txt") else {
            return;
        };
        assert_eq!(slot_ids(status, &body), Ok(vec![0, 1]));
        // One field changed: a list whose entries have no id lists no slot.
        let renamed = body.replace("\"id\":", "\"slot\":");
        assert!(matches!(
            slot_ids(status, &renamed),
            Err(Reset::Unavailable(_))
        ));
        let Err(Reset::Unavailable(why)) = slot_ids(501, "{}") else {
            panic!("no list is no reset");
        };
        assert!(why.contains("--no-slots"), "{why}");
        let (status, body) = recorded("erase.http.txt").unwrap();
        assert_eq!(erase_answer("/slots/1?action=erase", status, &body), Ok(()));
    }

    #[test]
    fn llamacpp_without_a_save_path_erases_nothing_and_says_so() {
        let Some((status, body)) = recorded("erase-without-save-path.http.txt") else {
            return;
        };
        let Err(Reset::Unavailable(why)) = erase_answer("/slots/0?action=erase", status, &body)
        else {
            panic!("501 is no endpoint");
        };
        assert!(
            why.contains("does not support slots action") && why.contains("--slot-save-path DIR"),
            "{why}"
        );
        assert!(matches!(
            erase_answer("/slots/0?action=erase", 500, &body),
            Err(Reset::Refused(_))
        ));
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
