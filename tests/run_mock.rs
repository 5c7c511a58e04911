//! `inferlint run` attached to a running server (no `--serve`), against one small mock server per
//! engine (docs/design/evidence.md#the-one-shot-run-against-a-mock-server). The load command is
//! this test binary itself, re-run as the `load_helper` below: it sends N completions and writes a
//! result file claiming M of them.

use crate::run_support;

use std::path::Path;
use std::time::Duration;

use run_support::{
    inferlint, json_file, message_of, names, status_of, text, Mock, MockConfig, MockEngine,
};
use serde_json::{json, Value};

const LIMIT: Duration = Duration::from_secs(90);

/// Not a test: the load command of the tests below (run only when they set its variables).
#[test]
#[ignore = "the load command of the run tests, started by them"]
fn load_helper() {
    let Ok(url) = std::env::var("MOCK_LOAD_URL") else {
        return;
    };
    let send: u64 = std::env::var("MOCK_LOAD_SEND").unwrap().parse().unwrap();
    let claim: u64 = std::env::var("MOCK_LOAD_CLAIM").unwrap().parse().unwrap();
    let out = std::env::var("MOCK_LOAD_OUT").unwrap();
    let jsonl = std::env::var("MOCK_LOAD_FORMAT").is_ok_and(|f| f == "jsonl");
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let client = reqwest::Client::new();
        for _ in 0..send {
            let r = client
                .post(format!("{url}/v1/completions"))
                .json(&json!({"model": "m", "prompt": "hi", "max_tokens": 10}))
                .send()
                .await
                .unwrap();
            assert!(r.status().is_success());
        }
    });
    println!("sent {send} requests");
    let result = json!({
        "backend": "openai", "max_concurrency": 4, "num_prompts": claim,
        "duration": 1.0, "completed": claim, "failed": 0,
        "total_input_tokens": claim * 8, "total_output_tokens": claim * 10,
    });
    let text = if jsonl {
        let earlier = json!({"max_concurrency": 99, "completed": 99, "total_output_tokens": 990});
        format!("{earlier}\n{result}\n")
    } else {
        result.to_string()
    };
    std::fs::write(out, text).unwrap();
}

struct Attach {
    code: i32,
    stdout: String,
    stderr: String,
    results: Value,
}

fn attach(mock: &Mock, dir: &Path, send: u64, claim: u64, jsonl: bool, extra: &[&str]) -> Attach {
    let out = dir.join("run");
    let result = dir.join(if jsonl { "result.jsonl" } else { "result.json" });
    let me = std::env::current_exe().unwrap();
    let mut args: Vec<String> = vec![
        "xray".into(),
        "-o".into(),
        out.display().to_string(),
        "--url".into(),
        mock.url.clone(),
        "--bench-result".into(),
        result.display().to_string(),
        "--interval".into(),
        "0.1".into(),
    ];
    args.extend(extra.iter().map(|s| s.to_string()));
    args.push("--".into());
    args.extend(
        [
            me.to_str().unwrap(),
            "--ignored",
            "--exact",
            "run_mock::load_helper",
            "--nocapture",
            "--test-threads=1",
        ]
        .map(String::from),
    );
    let send_s = send.to_string();
    let claim_s = claim.to_string();
    let result_s = result.display().to_string();
    let envs = [
        ("MOCK_LOAD_URL", mock.url.as_str()),
        ("MOCK_LOAD_SEND", send_s.as_str()),
        ("MOCK_LOAD_CLAIM", claim_s.as_str()),
        ("MOCK_LOAD_OUT", result_s.as_str()),
        ("MOCK_LOAD_FORMAT", if jsonl { "jsonl" } else { "json" }),
    ];
    let argv: Vec<&str> = args.iter().map(String::as_str).collect();
    let o = inferlint(&argv, &envs, LIMIT);
    let results_path = out.join("results.json");
    let results = if results_path.exists() {
        json_file(&results_path)
    } else {
        Value::Null
    };
    Attach {
        code: o.status.code().unwrap_or(-1),
        stdout: text(&o.stdout),
        stderr: text(&o.stderr),
        results,
    }
}

fn check_attach_run(engine: MockEngine, key: &str, jsonl: bool) {
    let mock = Mock::start(MockConfig::new(engine, "m"));
    let dir = tempfile::tempdir().unwrap();
    let a = attach(&mock, dir.path(), 6, 6, jsonl, &[]);
    let all = format!("{}\n{}", a.stdout, a.stderr);
    let r = &a.results;
    assert_eq!(status_of(r, "T7").as_deref(), Some("pass"), "{all}");
    assert_eq!(status_of(r, "T10").as_deref(), Some("pass"), "{all}");
    assert_eq!(status_of(r, "T15").as_deref(), Some("pass"), "{all}");
    let t15 = r
        .as_array()
        .unwrap()
        .iter()
        .find(|x| x["tripwire"] == "T15")
        .unwrap();
    assert_eq!(t15["evidence"]["extra_requests"], 0, "{t15}");
    for t in ["T1", "T7", "T10", "T15"] {
        assert!(status_of(r, t).is_some(), "{t} missing");
    }
    let out = dir.path().join("run");
    let files = names(&out);
    for f in [
        "before.snapshot.json",
        "after.snapshot.json",
        "run.series.jsonl",
        "load.log",
        "report.html",
        "results.json",
        "run.json",
    ] {
        assert!(files.contains(&f.to_string()), "{f} missing: {files:?}");
    }
    let load_log = std::fs::read_to_string(out.join("load.log")).unwrap();
    assert!(load_log.contains("sent 6 requests"), "{load_log}");
    let report = std::fs::read_to_string(out.join("report.html")).unwrap();
    assert!(report.contains("T15"));
    let header = std::fs::read_to_string(out.join("run.series.jsonl")).unwrap();
    let header: Value = serde_json::from_str(header.lines().next().unwrap()).unwrap();
    assert_eq!(header["engine"], key);
    let t8 = message_of(r, "T8").unwrap();
    assert!(t8.starts_with("requested 4 concurrent"), "{t8}");
    assert!(a.stdout.contains("[T15] PASS"), "{}", a.stdout);
    assert!(a.stdout.contains("report: ") && a.stdout.contains("report.html"));
    // The mock's running gauge never moves: no sample saw a request, so T8 cannot tell (and the
    // run exits 2), on every engine.
    assert_eq!(status_of(r, "T8").as_deref(), Some("unknown"), "{all}");
    assert_eq!(a.code, 2, "{all}");
    if engine == MockEngine::Trtllm {
        assert_eq!(status_of(r, "T1").as_deref(), Some("unknown"));
        assert!(message_of(r, "T1").unwrap().contains("counts no pauses"));
    } else {
        assert!(t8.contains("no sample saw a request"), "{t8}");
        assert_eq!(status_of(r, "T1").as_deref(), Some("pass"));
    }
    assert!(a.stdout.contains(&format!(
        "== engine: {} (from its metrics)",
        match engine {
            MockEngine::Vllm => "vLLM",
            MockEngine::Sglang => "SGLang",
            MockEngine::Trtllm => "TensorRT-LLM",
        }
    )));
}

#[test]
fn attach_to_vllm() {
    check_attach_run(MockEngine::Vllm, "vllm", false);
}

#[test]
fn attach_to_sglang_reads_the_last_result_line() {
    check_attach_run(MockEngine::Sglang, "sglang", true);
}

#[test]
fn attach_to_trtllm_reads_prometheus_metrics() {
    check_attach_run(MockEngine::Trtllm, "trtllm", false);
}

#[test]
fn other_traffic_fails_t15() {
    let mock = Mock::start(MockConfig::new(MockEngine::Vllm, "m"));
    let dir = tempfile::tempdir().unwrap();
    let a = attach(&mock, dir.path(), 7, 5, false, &[]);
    assert_eq!(a.code, 1, "{}", a.stdout);
    assert_eq!(status_of(&a.results, "T15").as_deref(), Some("fail"));
    let m = message_of(&a.results, "T15").unwrap();
    assert!(m.contains("2 more request"), "{m}");
}

#[test]
fn named_engine_must_match_the_server() {
    let mock = Mock::start(MockConfig::new(MockEngine::Sglang, "m"));
    let dir = tempfile::tempdir().unwrap();
    let a = attach(&mock, dir.path(), 1, 1, true, &["--engine", "trtllm"]);
    assert_eq!(a.code, 1, "{}", a.stdout);
    assert!(
        a.stdout
            .contains("problem: the engine named is TensorRT-LLM, but the server at"),
        "{}",
        a.stdout
    );
    assert!(a.stdout.contains("is SGLang's"), "{}", a.stdout);
}

#[test]
fn no_server_answers() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("run");
    let o = inferlint(
        &[
            "xray",
            "-o",
            out.to_str().unwrap(),
            "--url",
            "http://127.0.0.1:9",
            "--",
            "true",
        ],
        &[],
        LIMIT,
    );
    let stdout = text(&o.stdout);
    assert_eq!(o.status.code(), Some(1), "{stdout}");
    assert!(
        stdout.contains("problem: no server answers at http://127.0.0.1:9/health"),
        "{stdout}"
    );
    assert!(!out.join("report.html").exists());
    assert_eq!(json_file(&out.join("results.json")), json!([]));
}

#[test]
fn the_load_command_is_required() {
    let dir = tempfile::tempdir().unwrap();
    let o = inferlint(&["xray", "-o", dir.path().to_str().unwrap()], &[], LIMIT);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        text(&o.stderr).contains("xray needs the load command after --, e.g. -- vllm bench serve ..., or the engine's own benchmark client"),
        "{}",
        text(&o.stderr)
    );
}

/// The boot log of a server started by hand is read, copied into the run folder, and checked.
#[test]
fn attach_with_a_boot_log() {
    let Some(log) = inferlint_core::testkit::evidence("vllm-0.28/live/boot.log") else {
        return;
    };
    let mock = Mock::start(MockConfig::new(MockEngine::Vllm, "m"));
    let dir = tempfile::tempdir().unwrap();
    let a = attach(
        &mock,
        dir.path(),
        2,
        2,
        false,
        &["--boot-log", log.to_str().unwrap(), "--no-probe"],
    );
    assert!(a.stdout.contains("== boot log"), "{}", a.stdout);
    assert!(a
        .stdout
        .contains("[ T5] WARN  attention block size forced to 784 tokens"));
    assert_eq!(
        status_of(&a.results, "T7"),
        None,
        "--no-probe sends nothing"
    );
    assert!(dir.path().join("run/boot.log").exists());
}
