//! `inferlint probe URL` (T7) against mock servers: healthy, dying on the first request, dying
//! under the burst, answering empty completions, and nothing listening.

use crate::run_support;

use std::time::Duration;

use run_support::{inferlint, text, Mock, MockConfig, MockEngine};
use serde_json::Value;

const LIMIT: Duration = Duration::from_secs(60);

fn probe_json(url: &str, extra: &[&str]) -> (i32, Value, String) {
    let mut args = vec!["probe", url, "--json"];
    args.extend_from_slice(extra);
    let out = inferlint(&args, &[], LIMIT);
    let stdout = text(&out.stdout);
    let v: Value = serde_json::from_str(&stdout)
        .unwrap_or_else(|e| panic!("not JSON ({e}): {stdout}\n{}", text(&out.stderr)));
    (out.status.code().unwrap(), v[0].clone(), text(&out.stderr))
}

#[test]
fn healthy_server_passes() {
    let mock = Mock::start(MockConfig::new(MockEngine::Vllm, "mock-model"));
    let (code, r, _) = probe_json(&mock.url, &["--concurrency", "6"]);
    assert_eq!(code, 0, "{r}");
    assert_eq!(r["tripwire"], "T7");
    assert_eq!(r["status"], "pass");
    assert_eq!(
        r["message"],
        "1 + 6 concurrent requests served, server alive"
    );
    assert_eq!(r["evidence"]["model"], "mock-model");
    assert_eq!(r["evidence"]["burst"]["concurrency"], 6);
    assert_eq!(r["evidence"]["burst"]["failed"], 0);
    assert_eq!(r["evidence"]["alive_after"], true);
    assert_eq!(
        mock.state
            .completions
            .load(std::sync::atomic::Ordering::SeqCst),
        7
    );
}

#[test]
fn text_output_is_the_verdict_line() {
    let mock = Mock::start(MockConfig::new(MockEngine::Sglang, "m"));
    let out = inferlint(&["probe", &mock.url], &[], LIMIT);
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(
        text(&out.stdout),
        "[ T7] PASS  1 + 8 concurrent requests served, server alive\n"
    );
}

#[test]
fn death_on_the_first_request_fails() {
    let mut cfg = MockConfig::new(MockEngine::Vllm, "mock-model");
    cfg.die_at = Some(1);
    let mock = Mock::start(cfg);
    let (code, r, _) = probe_json(&mock.url, &[]);
    assert_eq!(code, 1);
    assert_eq!(r["status"], "fail");
    let msg = r["message"].as_str().unwrap();
    assert!(msg.starts_with("first request failed: "), "{msg}");
    assert_eq!(r["evidence"]["alive_after"], false);
}

#[test]
fn death_under_the_burst_fails() {
    let mut cfg = MockConfig::new(MockEngine::Vllm, "mock-model");
    cfg.die_at = Some(3);
    let mock = Mock::start(cfg);
    let (code, r, _) = probe_json(&mock.url, &["--concurrency", "6"]);
    assert_eq!(code, 1, "{r}");
    assert_eq!(r["status"], "fail");
    assert!(
        r["evidence"]["burst"]["failed"].as_u64().unwrap() >= 1,
        "{r}"
    );
    assert!(
        r["message"]
            .as_str()
            .unwrap()
            .ends_with("/6 burst requests failed"),
        "{r}"
    );
}

#[test]
fn empty_completion_fails() {
    let mut cfg = MockConfig::new(MockEngine::Vllm, "mock-model");
    cfg.empty = true;
    let mock = Mock::start(cfg);
    let (code, r, _) = probe_json(&mock.url, &[]);
    assert_eq!(code, 1);
    assert_eq!(r["message"], "first request failed: empty completion");
    assert_eq!(r["evidence"]["alive_after"], true);
}

#[test]
fn nothing_listening_fails() {
    let (code, r, _) = probe_json("http://127.0.0.1:9", &[]);
    assert_eq!(code, 1);
    assert_eq!(r["status"], "fail");
    assert!(
        r["message"]
            .as_str()
            .unwrap()
            .starts_with("cannot list models: "),
        "{r}"
    );
}

#[test]
fn the_model_flag_skips_the_listing() {
    let mock = Mock::start(MockConfig::new(MockEngine::Trtllm, "listed"));
    let (code, r, _) = probe_json(&mock.url, &["--model", "chosen", "--concurrency", "2"]);
    assert_eq!(code, 0);
    assert_eq!(r["evidence"]["model"], "chosen");
    assert_eq!(
        r["message"],
        "1 + 2 concurrent requests served, server alive"
    );
}
