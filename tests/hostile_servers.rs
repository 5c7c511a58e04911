//! `inferlint snapshot`, `watch` and `preemption` against hostile and failing servers (issue 10
//! item 3), each a small server started by the test on 127.0.0.1: /metrics answering 500,
//! hanging past the scrape timeout, returning garbage or another engine's metrics, counters going
//! backwards, a 50 MB body, and a connection closed in the middle of the answer. Each must give
//! a clear message and the right exit status, write nothing half-done, and never panic or hang.

use crate::loopback;

use std::path::Path;
use std::process::{Command, Output};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Router;
use inferlint_core::series::Series;
use inferlint_core::snapshot::Snapshot;
use loopback::{start, Server};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

const BIN: &str = env!("CARGO_BIN_EXE_inferlint");

/// What the server does at /metrics.
#[derive(Clone)]
enum Hostile {
    /// HTTP 500 every time.
    Error500,
    /// Answers only after this long.
    Hang(Duration),
    /// This body, with HTTP 200.
    Body(Arc<String>),
    /// The first body to the first request, the second to every later one.
    Then(Arc<String>, Arc<String>),
}

async fn metrics(State((h, n)): State<(Hostile, Arc<AtomicUsize>)>) -> Response {
    let k = n.fetch_add(1, Ordering::SeqCst);
    match h {
        Hostile::Error500 => (StatusCode::INTERNAL_SERVER_ERROR, "boom").into_response(),
        Hostile::Hang(d) => {
            tokio::time::sleep(d).await;
            "vllm:num_requests_running 0.0\n".into_response()
        }
        Hostile::Body(b) => b.as_str().to_owned().into_response(),
        Hostile::Then(a, b) => if k == 0 { a } else { b }
            .as_str()
            .to_owned()
            .into_response(),
    }
}

/// Starts a server on 127.0.0.1 that answers /metrics as `h` says.
fn serve(h: Hostile) -> Server {
    start(move |listener, stop| async move {
        let app = Router::new()
            .route("/metrics", axum::routing::get(metrics))
            .with_state((h, Arc::new(AtomicUsize::new(0))));
        axum::serve(listener, app)
            .with_graceful_shutdown(stop)
            .await
            .unwrap();
    })
}

/// A server that promises a 100,000-byte answer, sends 100 bytes of it and closes.
fn serve_broken_off() -> Server {
    start(|listener, stop| async move {
        let accept = async {
            loop {
                let Ok((mut sock, _)) = listener.accept().await else {
                    return;
                };
                let mut buf = [0u8; 4096];
                let _ = sock.read(&mut buf).await;
                let head =
                    "HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\ncontent-length: 100000\r\n\r\n";
                let _ = sock.write_all(head.as_bytes()).await;
                let _ = sock
                    .write_all(&b"vllm:num_requests_running 1.0\n".repeat(4)[..100])
                    .await;
                drop(sock);
            }
        };
        tokio::select! {
            _ = accept => {}
            _ = stop => {}
        }
    })
}

fn inferlint(args: &[&str]) -> (Output, Duration) {
    let t0 = Instant::now();
    let o = Command::new(BIN)
        .args(args)
        .env_remove("INFERLINT_ENGINE")
        .output()
        .unwrap();
    (o, t0.elapsed())
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn p(path: &Path) -> &str {
    path.to_str().unwrap()
}

/// A snapshot that failed: exit status 2, one `inferlint: URL/metrics: …` line, no panic, and
/// no file.
fn assert_refused(o: &Output, url: &str, out: &Path, says: &str) {
    let err = text(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.starts_with(&format!("inferlint: {url}/metrics")),
        "{err}"
    );
    assert!(err.contains(says), "{err}");
    assert!(!err.contains("panicked"), "{err}");
    assert!(!out.exists(), "a failed snapshot left {}", out.display());
}

#[test]
fn metrics_answering_500() {
    let s = serve(Hostile::Error500);
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("x.snapshot.json");
    let (o, _) = inferlint(&["snapshot", &s.url, "-o", p(&out)]);
    assert_refused(&o, &s.url, &out, "answered HTTP 500");

    // A recording of a server that never answers keeps its header and reports every failure.
    let series = dir.path().join("run.series.jsonl");
    let (o, took) = inferlint(&[
        "watch",
        &s.url,
        "-o",
        p(&series),
        "--interval",
        "0.1",
        "--duration",
        "0.5",
    ]);
    let err = text(&o.stderr);
    assert!(!err.contains("panicked"), "{err}");
    assert!(took < Duration::from_secs(10), "{took:?}");
    assert!(
        err.contains("scrape failed: ") && err.contains("HTTP 500"),
        "{err}"
    );
    let rec = Series::load(&series).unwrap();
    assert!(rec.samples.is_empty());
    assert_eq!(rec.header.engine, None);
}

#[test]
fn metrics_hanging_past_the_scrape_timeout() {
    let s = serve(Hostile::Hang(Duration::from_secs(60)));
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("x.snapshot.json");
    let (o, took) = inferlint(&["snapshot", &s.url, "-o", p(&out)]);
    assert_refused(&o, &s.url, &out, "timed out");
    // The scrape timeout is 10 s: the command gives up then, not when the server does.
    assert!(took >= Duration::from_secs(9), "{took:?}");
    assert!(took < Duration::from_secs(30), "{took:?}");
}

#[test]
fn metrics_returning_garbage() {
    let s = serve(Hostile::Body(Arc::new(
        "<html><body>502 Bad Gateway</body></html>\n".to_string(),
    )));
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("x.snapshot.json");
    let (o, _) = inferlint(&["snapshot", &s.url, "-o", p(&out)]);
    assert_refused(&o, &s.url, &out, "line 1: not a Prometheus sample");
}

#[test]
fn metrics_of_another_engine() {
    let sglang = "sglang:num_running_reqs{model_name=\"m\"} 3.0\nsglang:token_usage{model_name=\"m\"} 0.5\nsglang:num_queue_reqs{model_name=\"m\"} 0.0\n";
    let s = serve(Hostile::Body(Arc::new(sglang.to_string())));
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("x.snapshot.json");
    let (o, _) = inferlint(&["snapshot", &s.url, "-o", p(&out), "--engine", "vllm"]);
    let err = text(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("SGLang"), "{err}");
    assert!(!err.contains("panicked"), "{err}");
    assert!(!out.exists());
    // Without --engine the reading is kept, as SGLang's.
    let (o, _) = inferlint(&["snapshot", &s.url, "-o", p(&out)]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    assert_eq!(
        Snapshot::load(&out).unwrap().engine(),
        Some(inferlint_core::Engine::Sglang)
    );
}

#[test]
fn counters_going_backwards_are_a_restart() {
    let before = "vllm:num_preemptions_total{engine=\"0\",model_name=\"m\"} 100.0\nvllm:num_requests_running{engine=\"0\",model_name=\"m\"} 1.0\n";
    let after = "vllm:num_preemptions_total{engine=\"0\",model_name=\"m\"} 5.0\nvllm:num_requests_running{engine=\"0\",model_name=\"m\"} 1.0\n";
    let s = serve(Hostile::Then(
        Arc::new(before.to_string()),
        Arc::new(after.to_string()),
    ));
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = (dir.path().join("a.json"), dir.path().join("b.json"));
    for f in [&a, &b] {
        let (o, _) = inferlint(&["snapshot", &s.url, "-o", p(f)]);
        assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    }
    let (o, _) = inferlint(&["preemption", p(&a), p(&b)]);
    let out = text(&o.stdout);
    assert!(
        out.contains(
            "vllm:num_preemptions_total went down (100 -> 5); counters only reset on restart"
        ),
        "{out}"
    );
    assert_eq!(o.status.code(), Some(1), "{out}{}", text(&o.stderr));
}

#[test]
fn a_50_mb_metrics_body() {
    // 50 MB of well-formed samples: read whole, parsed, and saved, in bounded time.
    let line = "vllm:request_success_total{engine=\"0\",finished_reason=\"stop\",model_name=\"Qwen/Qwen3-8B\",x=\"";
    let mut body = String::with_capacity(50 * 1024 * 1024 + 200);
    let mut i = 0u64;
    while body.len() < 50 * 1024 * 1024 {
        body.push_str(&format!("{line}{i}\"}} 1.0\n"));
        i += 1;
    }
    let s = serve(Hostile::Body(Arc::new(body)));
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("big.snapshot.json");
    let (o, took) = inferlint(&["snapshot", &s.url, "-o", p(&out)]);
    let err = text(&o.stderr);
    assert_eq!(o.status.code(), Some(0), "{err}");
    assert!(took < Duration::from_secs(60), "{took:?}");
    let snap = Snapshot::load(&out).unwrap();
    assert_eq!(snap.metrics.samples().len() as u64, i);
    assert_eq!(
        snap.metrics.total("vllm:request_success_total"),
        Some(i as f64)
    );
}

#[test]
fn a_connection_closed_mid_answer() {
    let s = serve_broken_off();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("x.snapshot.json");
    let (o, took) = inferlint(&["snapshot", &s.url, "-o", p(&out)]);
    assert_refused(&o, &s.url, &out, "the answer broke off");
    assert!(took < Duration::from_secs(10), "{took:?}");
}
