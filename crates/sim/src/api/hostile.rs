//! The hostile `/metrics` of `--metrics-fault` and the boot of `--boot-never-ends`: the ways a
//! real server (or something in front of it) answers badly, so that a run against the
//! simulator can be made to meet each one. The first `--metrics-fault-after` answers are the
//! normal exposition, so a run's first scrapes succeed and the fault arrives mid-run.

use std::sync::atomic::Ordering;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::http::{HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use futures_util::StreamExt;

use super::front::Front;
use crate::logline::Logger;
use crate::os::unix_now;
use crate::settings::MetricsFault;

const PROM_CONTENT_TYPE: &str = "text/plain; version=1.0.0; charset=utf-8";

/// `GET /metrics`, with the configured fault once the normal answers are used up.
pub async fn metrics(front: Arc<Front>) -> Response {
    let n = front.metrics_answers.fetch_add(1, Ordering::SeqCst);
    let fault = front
        .cfg
        .metrics_fault
        .filter(|_| n >= u64::from(front.cfg.metrics_fault_after));
    match fault {
        None => prometheus(front.lock().reg.render()),
        Some(MetricsFault::Restart) => {
            // The restart happens once, at the first faulty answer; the new life then counts
            // on from zero like any server.
            let mut st = front.lock();
            if n == u64::from(front.cfg.metrics_fault_after) {
                st.reg.restart(&front.cfg, unix_now());
            }
            prometheus(st.reg.render())
        }
        Some(MetricsFault::Status500) => {
            (StatusCode::INTERNAL_SERVER_ERROR, "Internal Server Error").into_response()
        }
        Some(MetricsFault::Hang) => {
            // Never answers; the client's timeout (or the server's stop) ends the request.
            std::future::pending::<()>().await;
            unreachable!("a pending future never completes")
        }
        Some(MetricsFault::Garbage) => garbage(),
        Some(MetricsFault::OtherEngine) => {
            let st = front.lock();
            prometheus(sglang_exposition(
                front.cfg.model_name(),
                st.running,
                st.waiting,
                st.kv_usage,
            ))
        }
        Some(MetricsFault::Huge) => {
            let text = front.lock().reg.render();
            let padding = huge_padding(front.cfg.metrics_huge_mb as usize * 1_000_000);
            let len = text.len() + padding.len();
            let chunks: Vec<Result<Bytes, std::io::Error>> =
                vec![Ok(Bytes::from(text)), Ok(padding)];
            with_length(Body::from_stream(futures_util::stream::iter(chunks)), len)
        }
        Some(MetricsFault::BrokenOff) => {
            // Promise the whole exposition, send its first half, then fail the body: the
            // server closes the connection in the middle of the answer.
            let text = front.lock().reg.render();
            let len = text.len();
            let half = Bytes::from(text).slice(..len / 2);
            // The pause lets the headers and the first half reach the client before the break.
            let broken = async {
                tokio::time::sleep(Duration::from_millis(50)).await;
                Err(std::io::Error::new(
                    std::io::ErrorKind::ConnectionReset,
                    "the exporter died mid-answer",
                ))
            };
            let chunks = futures_util::stream::once(async { Ok::<_, std::io::Error>(half) })
                .chain(futures_util::stream::once(broken));
            with_length(Body::from_stream(chunks), len)
        }
    }
}

fn prometheus(text: String) -> Response {
    let mut resp = text.into_response();
    resp.headers_mut()
        .insert("content-type", HeaderValue::from_static(PROM_CONTENT_TYPE));
    resp
}

fn with_length(body: Body, len: usize) -> Response {
    let mut resp = Response::new(body);
    resp.headers_mut()
        .insert("content-type", HeaderValue::from_static(PROM_CONTENT_TYPE));
    resp.headers_mut()
        .insert("content-length", HeaderValue::from(len));
    resp
}

/// A proxy's error page, with HTTP 200, followed by bytes that are not text at all.
fn garbage() -> Response {
    let mut body = b"<!DOCTYPE html>\n<html><head><title>502 Bad Gateway</title></head>\n<body><h1>Bad Gateway</h1><p>The upstream server returned an invalid response.</p></body></html>\n".to_vec();
    body.extend([0u8, 0xff, 0xfe, 0x80, 0x1b, b'\n', 0xc3, 0x28, 0x00]);
    let mut resp = Response::new(Body::from(body));
    resp.headers_mut()
        .insert("content-type", HeaderValue::from_static("text/html"));
    resp
}

/// SGLang 0.5's exposition (SGLang 0.5.2's published sample scrape, abridged), with the
/// simulator's own scheduler state in its gauges.
pub fn sglang_exposition(model: &str, running: u32, waiting: u32, kv_usage: f64) -> String {
    let m = crate::expo::py_repr;
    let sched =
        format!("engine_type=\"unified\",model_name=\"{model}\",pp_rank=\"0\",tp_rank=\"0\"");
    let mut out = String::new();
    for (name, help, value) in [
        (
            "sglang:num_running_reqs",
            "The number of running requests.",
            running as f64,
        ),
        (
            "sglang:num_queue_reqs",
            "The number of requests in the waiting queue.",
            waiting as f64,
        ),
        ("sglang:token_usage", "The token usage.", kv_usage),
        (
            "sglang:num_retracted_reqs",
            "The number of retracted requests.",
            0.0,
        ),
    ] {
        out.push_str(&format!(
            "# HELP {name} {help}\n# TYPE {name} gauge\n{name}{{{sched}}} {}\n",
            m(value)
        ));
    }
    for (name, help) in [
        (
            "sglang:prompt_tokens",
            "Number of prefill tokens processed.",
        ),
        (
            "sglang:generation_tokens",
            "Number of generation tokens processed.",
        ),
        ("sglang:num_requests", "Number of requests processed."),
    ] {
        out.push_str(&format!(
            "# HELP {name}_total {help}\n# TYPE {name}_total counter\n{name}_total{{model_name=\"{model}\"}} 0.0\n"
        ));
    }
    out
}

/// About `bytes` of one high-cardinality family, built once per process and shared by every
/// answer: an instrumentator that labels requests by their raw path gains a series per path.
fn huge_padding(bytes: usize) -> Bytes {
    static PADDING: OnceLock<Bytes> = OnceLock::new();
    PADDING
        .get_or_init(|| {
            let name = "http_untemplated_requests_total";
            let mut s = String::with_capacity(bytes + 256);
            s.push_str(&format!(
                "# HELP {name} Requests by raw path (an instrumentator left ungrouped).\n# TYPE {name} counter\n"
            ));
            let mut i: u64 = 0;
            while s.len() < bytes {
                s.push_str(&format!(
                    "{name}{{handler=\"/v1/files/file-{i:016x}\",method=\"GET\",status=\"4xx\"}} 1.0\n"
                ));
                i += 1;
            }
            Bytes::from(s)
        })
        .clone()
}

/// How often the never-ending boot logs that it is still waiting (vLLM logs it every 10 s;
/// faster here, so a short test sees a log that keeps growing).
pub const NEVER_ENDING_BOOT_LINE_EVERY: Duration = Duration::from_millis(50);

/// The line vLLM's API server logs while it waits for its engine's handshake.
pub fn log_still_waiting(log: &Logger) {
    // vllm/v1/engine/utils.py's `wait_for_engine_startup`.
    log.info(
        "utils.py:1237",
        "Waiting for 1 local, 0 remote core engine proc(s) to start.",
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sglang_exposition_reads_as_sglang() {
        let text = sglang_exposition("m", 3, 2, 0.25);
        let m = inferlint_core::prom::Metrics::parse(&text).unwrap();
        assert_eq!(m.engine(), Some(inferlint_core::engine::Engine::Sglang));
        assert_eq!(m.total("sglang:num_running_reqs"), Some(3.0));
        assert_eq!(m.total("sglang:token_usage"), Some(0.25));
        assert!(!m.names().any(|n| n.starts_with("vllm:")));
    }

    #[test]
    fn huge_padding_is_prometheus_text_of_the_asked_size() {
        let p = huge_padding(200_000);
        assert!(p.len() >= 200_000 && p.len() < 200_200, "{}", p.len());
        let m = inferlint_core::prom::Metrics::parse(std::str::from_utf8(&p).unwrap()).unwrap();
        assert!(m.samples().len() > 1000);
        assert_eq!(m.engine(), None);
    }
}
