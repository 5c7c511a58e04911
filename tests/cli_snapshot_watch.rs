//! `inferlint snapshot` and `inferlint watch` against a small metrics server started in the test
//! (127.0.0.1, a free port, stopped when the test ends), plus the recorder and the scraper's
//! clocks through the library.

use crate::loopback;

use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::extract::State;
use axum::http::{StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use axum::Router;
use inferlint_core::clock::{Clock, ClockReading};
use inferlint_core::series::Series;
use inferlint_core::snapshot::Snapshot;
use inferlint_core::testkit::evidence;
use inferlint_core::Engine;
use inferlint_http::scrape::Scraper;
use inferlint_run::record::{record, RecordOptions};

const BIN: &str = env!("CARGO_BIN_EXE_inferlint");

/// What the mock server answers.
#[derive(Default)]
struct Behaviour {
    /// Text at `/metrics` (None: 404, as SGLang without --enable-metrics).
    metrics: Option<String>,
    /// TensorRT-LLM: JSON at `/metrics`, this text at `/prometheus/metrics`.
    trt_text: Option<String>,
    /// Answer HTTP 500 to every n-th request (1-based).
    fail_every: Option<usize>,
    delay: Duration,
    requests: AtomicUsize,
    arrivals: Mutex<Vec<Instant>>,
}

struct Mock {
    url: String,
    state: Arc<Behaviour>,
    _server: loopback::Server,
}

impl Mock {
    fn start(b: Behaviour) -> Mock {
        let state = Arc::new(b);
        let st = state.clone();
        let server = loopback::start(move |listener, stop| async move {
            let app = Router::new().fallback(answer).with_state(st);
            axum::serve(listener, app)
                .with_graceful_shutdown(stop)
                .await
                .unwrap();
        });
        Mock {
            url: server.url.clone(),
            state,
            _server: server,
        }
    }
}

async fn answer(State(b): State<Arc<Behaviour>>, uri: Uri) -> Response {
    b.arrivals.lock().unwrap().push(Instant::now());
    let n = b.requests.fetch_add(1, Ordering::SeqCst) + 1;
    if !b.delay.is_zero() {
        tokio::time::sleep(b.delay).await;
    }
    if b.fail_every.is_some_and(|k| n % k == 0) {
        return (StatusCode::INTERNAL_SERVER_ERROR, "boom").into_response();
    }
    match (uri.path(), &b.metrics, &b.trt_text) {
        ("/metrics", _, Some(_)) => "[{\"iter\": 1}]".into_response(),
        ("/prometheus/metrics", _, Some(t)) => t.clone().into_response(),
        ("/metrics", Some(t), None) => t.clone().into_response(),
        _ => (StatusCode::NOT_FOUND, "Not Found").into_response(),
    }
}

fn vllm_text() -> Option<String> {
    Some(std::fs::read_to_string(evidence("vllm-0.28/live/raw_metrics.prom")?).unwrap())
}

fn snapshot_text(rel: &str) -> Option<String> {
    Some(Snapshot::load(&evidence(rel)?).unwrap().text)
}

fn inferlint(args: &[&str]) -> Output {
    Command::new(BIN)
        .args(args)
        .env_remove("INFERLINT_ENGINE")
        .output()
        .unwrap()
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn path_str(p: &Path) -> &str {
    p.to_str().unwrap()
}

// ---- snapshot ----

#[test]
fn snapshot_writes_the_document_and_says_so() {
    let Some(body) = vllm_text() else { return };
    let mock = Mock::start(Behaviour {
        metrics: Some(body.clone()),
        ..Behaviour::default()
    });
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("runs/today/before.snapshot.json");
    let o = inferlint(&["snapshot", &mock.url, "-o", path_str(&out)]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    let stdout = text(&o.stdout);
    let expected_start = "430 samples, scrape ";
    let expected_end = format!("s -> {}\n", out.display());
    assert!(
        stdout.starts_with(expected_start) && stdout.ends_with(&expected_end),
        "{stdout}"
    );
    let latency = &stdout[expected_start.len()..stdout.len() - expected_end.len()];
    assert_eq!(latency.len(), 5, "three decimals: {latency}");
    let snap = Snapshot::load(&out).unwrap();
    assert_eq!(snap.url, format!("{}/metrics", mock.url));
    assert_eq!(snap.text, body);
    assert!(snap.t_mono_ns.is_some() && snap.has_clock());
    assert!(snap.latency_s.unwrap() >= 0.0);
    assert_eq!(snap.metrics.total("vllm:num_preemptions_total"), Some(22.0));
    // The document: indent 1, schema first, trailing newline.
    let doc = std::fs::read_to_string(&out).unwrap();
    assert!(doc.starts_with("{\n \"schema\": \"inferlint.snapshot/1\",\n \"url\": "));
    assert!(doc.ends_with("}\n"));
}

#[test]
fn snapshot_refuses_another_engine_and_writes_nothing() {
    let Some(body) = vllm_text() else { return };
    let mock = Mock::start(Behaviour {
        metrics: Some(body),
        ..Behaviour::default()
    });
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("x.snapshot.json");
    let o = inferlint(&[
        "snapshot",
        &mock.url,
        "-o",
        path_str(&out),
        "--engine",
        "sglang",
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert_eq!(text(&o.stdout), "");
    assert_eq!(
        text(&o.stderr),
        format!(
            "inferlint: --engine sglang, but the server at {} runs vLLM. Check the server address or the file, or name the engine it came from.\n",
            mock.url
        )
    );
    assert!(!out.exists());

    let o = Command::new(BIN)
        .args(["snapshot", &mock.url, "-o", path_str(&out)])
        .env("INFERLINT_ENGINE", "trtllm")
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(
        text(&o.stderr).starts_with("inferlint: INFERLINT_ENGINE=trtllm, but the server at "),
        "{}",
        text(&o.stderr)
    );
    assert!(!out.exists());
}

#[test]
fn snapshot_of_sglang_without_metrics_names_the_flag() {
    let mock = Mock::start(Behaviour::default()); // /metrics → 404
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("x.snapshot.json");
    let o = inferlint(&[
        "snapshot",
        &mock.url,
        "-o",
        path_str(&out),
        "--engine",
        "sglang",
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        text(&o.stderr).ends_with("--enable-metrics\n"),
        "{}",
        text(&o.stderr)
    );
    assert!(!out.exists());

    // Text without any engine's metrics (a plain Python process), no engine named.
    let plain = Mock::start(Behaviour {
        metrics: Some("# TYPE python_info gauge\npython_info{version=\"3.12\"} 1.0\n".into()),
        ..Behaviour::default()
    });
    let o = inferlint(&["snapshot", &plain.url, "-o", path_str(&out)]);
    assert_eq!(o.status.code(), Some(2));
    let stderr = text(&o.stderr);
    assert!(
        stderr.contains("serves no metrics of vLLM, SGLang or TensorRT-LLM"),
        "{stderr}"
    );
    assert!(stderr.ends_with("--enable-metrics\n"), "{stderr}");
    assert!(!out.exists());
}

#[test]
fn snapshot_finds_tensorrt_llm_prometheus_path() {
    let Some(body) = snapshot_text("trtllm-1.3/qwen3-8b/after.snapshot.json") else {
        return;
    };
    let mock = Mock::start(Behaviour {
        trt_text: Some(body),
        ..Behaviour::default()
    });
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("after.snapshot.json");
    let o = inferlint(&[
        "snapshot",
        &mock.url,
        "-o",
        path_str(&out),
        "--engine",
        "trtllm",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    let snap = Snapshot::load(&out).unwrap();
    assert_eq!(snap.url, format!("{}/prometheus/metrics", mock.url));
    assert_eq!(snap.engine(), Some(Engine::Trtllm));
}

#[test]
fn snapshot_of_nothing_listening_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("x.snapshot.json");
    let o = inferlint(&["snapshot", "http://127.0.0.1:9", "-o", path_str(&out)]);
    assert_eq!(o.status.code(), Some(2));
    assert!(text(&o.stderr).starts_with("inferlint: http://127.0.0.1:9/metrics: "));
    assert!(!out.exists());
}

/// A cluster's proxy in the environment: the server under test is still reached directly. The
/// "proxy" is a mock that counts every request reaching it; snapshot and watch send it none.
#[test]
fn snapshot_and_watch_never_use_the_environments_proxy() {
    let Some(body) = vllm_text() else { return };
    let mock = Mock::start(Behaviour {
        metrics: Some(body),
        ..Behaviour::default()
    });
    let proxy = Mock::start(Behaviour::default());
    let dir = tempfile::tempdir().unwrap();
    let snap = dir.path().join("before.snapshot.json");
    let series = dir.path().join("run.series.jsonl");
    let runs: [Vec<&str>; 2] = [
        vec!["snapshot", &mock.url, "-o", path_str(&snap)],
        vec![
            "watch",
            &mock.url,
            "-o",
            path_str(&series),
            "--interval",
            "0.1",
            "--duration",
            "0.3",
        ],
    ];
    for args in runs {
        let mut cmd = Command::new(BIN);
        cmd.args(&args).env_remove("INFERLINT_ENGINE");
        for var in [
            "http_proxy",
            "HTTP_PROXY",
            "https_proxy",
            "HTTPS_PROXY",
            "ALL_PROXY",
            "all_proxy",
        ] {
            cmd.env(var, &proxy.url);
        }
        for var in ["no_proxy", "NO_PROXY"] {
            cmd.env_remove(var);
        }
        let o = cmd.output().unwrap();
        assert_eq!(o.status.code(), Some(0), "{args:?}: {}", text(&o.stderr));
    }
    assert_eq!(
        proxy.state.requests.load(Ordering::SeqCst),
        0,
        "requests reached the proxy"
    );
    assert!(mock.state.requests.load(Ordering::SeqCst) >= 2);
    assert!(!Series::load(&series).unwrap().samples.is_empty());
}

/// A proxy asked for (`--proxy`, or `INFERLINT_PROXY`) is used: every request of snapshot goes
/// through it and none straight to the server. The "proxy" answers as the server would.
#[test]
fn a_proxy_asked_for_carries_every_request() {
    let Some(body) = vllm_text() else { return };
    let server = Mock::start(Behaviour {
        metrics: Some(body.clone()),
        ..Behaviour::default()
    });
    let proxy = Mock::start(Behaviour {
        metrics: Some(body),
        ..Behaviour::default()
    });
    let dir = tempfile::tempdir().unwrap();
    let snap = dir.path().join("s.snapshot.json");
    let by_flag = [
        "snapshot",
        &server.url,
        "-o",
        path_str(&snap),
        "--proxy",
        &proxy.url,
    ];
    let o = Command::new(BIN)
        .args(by_flag)
        .env_remove("INFERLINT_PROXY")
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    let o = Command::new(BIN)
        .args(["snapshot", &server.url, "-o", path_str(&snap)])
        .env("INFERLINT_PROXY", &proxy.url)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    assert_eq!(proxy.state.requests.load(Ordering::SeqCst), 2);
    assert_eq!(server.state.requests.load(Ordering::SeqCst), 0);
    // A proxy that is no URL is refused before any request, naming the option.
    let o = inferlint(&[
        "snapshot",
        &server.url,
        "-o",
        path_str(&snap),
        "--proxy",
        "::",
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        text(&o.stderr).starts_with("inferlint: --proxy ::: not a proxy URL"),
        "{}",
        text(&o.stderr)
    );
}

// ---- watch ----

fn series_lines(p: &Path) -> usize {
    std::fs::read_to_string(p).map_or(0, |t| t.lines().count())
}

#[test]
fn watch_records_for_the_duration() {
    let Some(body) = vllm_text() else { return };
    let mock = Mock::start(Behaviour {
        metrics: Some(body),
        ..Behaviour::default()
    });
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("sub/run.series.jsonl");
    let o = inferlint(&[
        "watch",
        &mock.url,
        "-o",
        path_str(&out),
        "--interval",
        "0.1",
        "--duration",
        "0.5",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    let s = Series::load(&out).unwrap();
    let n = s.samples.len();
    assert!((1..=5).contains(&n), "{n} samples");
    assert_eq!(
        text(&o.stdout),
        format!("{n} samples -> {}\n", out.display())
    );
    assert_eq!(s.engine(), Some(Engine::Vllm));
    assert_eq!(s.header.interval_s, 0.1);
    assert_eq!(s.header.url, mock.url);
    assert_eq!(s.samples[0].preemptions(), Some(22.0));
    assert_eq!(s.samples[0].running(), Some(0.0));
    assert_eq!(s.skipped_lines, 0);
}

#[test]
fn watch_reports_failed_scrapes_and_leaves_gaps() {
    let Some(body) = vllm_text() else { return };
    let mock = Mock::start(Behaviour {
        metrics: Some(body),
        fail_every: Some(2),
        ..Behaviour::default()
    });
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("run.series.jsonl");
    let o = inferlint(&[
        "watch",
        &mock.url,
        "-o",
        path_str(&out),
        "--interval",
        "0.1",
        "--duration",
        "0.6",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    let failures = text(&o.stderr)
        .lines()
        .filter(|l| l.starts_with("scrape failed: ") && l.contains("HTTP 500"))
        .count();
    let requests = mock.state.requests.load(Ordering::SeqCst);
    assert!(failures >= 1, "{}", text(&o.stderr));
    assert_eq!(failures, requests / 2);
    let s = Series::load(&out).unwrap();
    assert_eq!(s.samples.len(), requests - failures);
    assert_eq!(series_lines(&out), 1 + requests - failures);
}

#[test]
fn watch_stops_cleanly_on_sigint() {
    let Some(body) = vllm_text() else { return };
    let mock = Mock::start(Behaviour {
        metrics: Some(body),
        ..Behaviour::default()
    });
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("run.series.jsonl");
    let mut child = Command::new(BIN)
        .args([
            "watch",
            &mock.url,
            "-o",
            path_str(&out),
            "--interval",
            "0.05",
        ])
        .env_remove("INFERLINT_ENGINE")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    while series_lines(&out) < 3 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    let pid = nix::unistd::Pid::from_raw(child.id() as i32);
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGINT).unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    while child.try_wait().unwrap().is_none() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    if child.try_wait().unwrap().is_none() {
        let _ = child.kill();
        panic!("watch did not stop on SIGINT");
    }
    let o = child.wait_with_output().unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    let s = Series::load(&out).unwrap();
    assert!(s.samples.len() >= 2);
    assert_eq!(
        text(&o.stdout),
        format!("{} samples -> {}\n", s.samples.len(), out.display())
    );
}

#[test]
fn watch_refuses_a_server_without_engine_metrics() {
    let mock = Mock::start(Behaviour::default()); // SGLang without --enable-metrics: 404
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("run.series.jsonl");
    let o = inferlint(&[
        "watch",
        &mock.url,
        "-o",
        path_str(&out),
        "--engine",
        "sglang",
        "--duration",
        "5",
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        text(&o.stderr).ends_with("--enable-metrics\n"),
        "{}",
        text(&o.stderr)
    );
    assert!(!out.exists());
}

#[test]
fn watch_refuses_another_engine() {
    let Some(body) = vllm_text() else { return };
    let mock = Mock::start(Behaviour {
        metrics: Some(body),
        ..Behaviour::default()
    });
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("run.series.jsonl");
    let o = inferlint(&[
        "watch",
        &mock.url,
        "-o",
        path_str(&out),
        "--engine",
        "trtllm",
        "--duration",
        "5",
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert_eq!(
        text(&o.stderr),
        format!(
            "inferlint: --engine trtllm, but the server at {} runs vLLM. Check the server address or the file, or name the engine it came from.\n",
            mock.url
        )
    );
    assert!(!out.exists());
}

// ---- the library: recorder schedule, SGLang rows, scrape clocks ----

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

#[test]
fn recorder_keeps_a_fixed_schedule_despite_slow_scrapes() {
    let Some(body) = vllm_text() else { return };
    // Each scrape takes 50 ms; samples are due every 200 ms. A recorder that slept 200 ms after
    // each scrape would drift by 50 ms per sample.
    let mock = Mock::start(Behaviour {
        metrics: Some(body),
        delay: Duration::from_millis(50),
        ..Behaviour::default()
    });
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("r.series.jsonl");
    let opts = RecordOptions {
        interval: Duration::from_millis(200),
        duration: Some(Duration::from_millis(1600)),
        ..RecordOptions::default()
    };
    let summary = runtime()
        .block_on(record(&mock.url, &out, opts, std::future::pending(), |e| {
            panic!("unexpected scrape failure: {e}")
        }))
        .unwrap();
    let arrivals = mock.state.arrivals.lock().unwrap().clone();
    assert_eq!(summary.samples, arrivals.len());
    assert!(arrivals.len() >= 6, "{} samples", arrivals.len());
    let on_schedule = arrivals
        .iter()
        .filter(|t| {
            let ms = t.duration_since(arrivals[0]).as_secs_f64() * 1000.0;
            let off = ms % 200.0;
            off.min(200.0 - off) < 35.0
        })
        .count();
    assert!(
        on_schedule * 10 >= arrivals.len() * 8,
        "{on_schedule} of {} samples on the 200 ms grid",
        arrivals.len()
    );
    let s = Series::load(&out).unwrap();
    assert_eq!(s.samples.len(), summary.samples);
    assert_eq!(summary.engine, Some(Engine::Vllm));
}

#[test]
fn recorder_writes_sglang_rows_with_the_witness_gauge() {
    let Some(body) = snapshot_text("sglang-0.5/capped/after.snapshot.json") else {
        return;
    };
    let mock = Mock::start(Behaviour {
        metrics: Some(body),
        ..Behaviour::default()
    });
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("s.series.jsonl");
    let opts = RecordOptions {
        interval: Duration::from_millis(50),
        duration: Some(Duration::from_millis(120)),
        ..RecordOptions::default()
    };
    let summary = runtime()
        .block_on(record(
            &mock.url,
            &out,
            opts,
            std::future::pending(),
            |_| {},
        ))
        .unwrap();
    assert!(summary.samples >= 1);
    let s = Series::load(&out).unwrap();
    assert_eq!(s.engine(), Some(Engine::Sglang));
    // The retraction counter is absent from this text; its witness gauge is present.
    assert_eq!(s.samples[0].preemptions(), Some(0.0));
    assert!(s.samples[0].running().is_some());
}

#[test]
fn recorder_writes_the_header_even_when_no_scrape_succeeds() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("none.series.jsonl");
    let opts = RecordOptions {
        interval: Duration::from_millis(50),
        duration: Some(Duration::from_millis(120)),
        timeout: Duration::from_secs(1),
        ..RecordOptions::default()
    };
    let mut errors = Vec::new();
    let summary = runtime()
        .block_on(record(
            "http://127.0.0.1:9",
            &out,
            opts,
            std::future::pending(),
            |e| errors.push(e.to_string()),
        ))
        .unwrap();
    assert_eq!(summary.samples, 0);
    assert!(!errors.is_empty());
    assert_eq!(summary.failed_scrapes, errors.len());
    let s = Series::load(&out).unwrap();
    assert!(s.samples.is_empty());
    assert_eq!(s.engine(), None);
}

/// Clocks that read 100.0 s / 1.0e9 ns, then 100.4 s / 1.4e9 ns.
struct TwoReadings(Mutex<Vec<ClockReading>>);

impl Clock for TwoReadings {
    fn now(&self) -> ClockReading {
        self.0.lock().unwrap().remove(0)
    }
}

#[test]
fn scrape_clocks_are_the_midpoint_of_the_get() {
    let mock = Mock::start(Behaviour {
        metrics: Some("vllm:num_preemptions_total{engine=\"0\"} 3.0\n".into()),
        ..Behaviour::default()
    });
    let clock = TwoReadings(Mutex::new(vec![
        ClockReading {
            wall: 100.0,
            mono_ns: 1_000_000_000,
        },
        ClockReading {
            wall: 100.4,
            mono_ns: 1_400_000_000,
        },
    ]));
    let scraper = Scraper::with_clock(Arc::new(clock));
    let snap = runtime()
        .block_on(scraper.scrape(&mock.url, None, Duration::from_secs(10)))
        .unwrap();
    assert!((snap.t_wall - 100.2).abs() < 1e-9);
    assert_eq!(snap.t_mono_ns, Some(1_200_000_000));
    assert!((snap.latency_s.unwrap() - 0.4).abs() < 1e-12);
    assert_eq!(snap.metrics.total("vllm:num_preemptions_total"), Some(3.0));
}
