//! vLLM's lines while serving and at its end: the periodic `Engine 000: Avg prompt throughput`
//! line, and the `[shutdown]` lines of an orderly stop on SIGTERM/SIGINT.

use std::sync::Arc;
use std::time::Duration;

use crate::api::front::{EngineState, Front, Interval, PrefixTotals};
use crate::api::procs::{stop_engines, EngineProc};
use crate::logline::sites;
use crate::settings::Release;

/// vLLM's orderly stop on SIGTERM/SIGINT.
pub(super) async fn shutdown(front: &Arc<Front>, procs: &mut [EngineProc], serving: bool) -> i32 {
    let log = &front.log;
    let s = sites(log.release);
    let timeout = front.cfg.shutdown_timeout;
    let mode = if timeout > 0 { "drain" } else { "abort" };
    log.info(
        s.api_shutdown[0],
        "[shutdown] API server: shutdown triggered",
    );
    log.info(
        s.api_shutdown[1],
        &format!("[shutdown] API server: stopping engine client mode={mode} timeout={timeout}s"),
    );
    log.info(
        s.client[0],
        &format!("[shutdown] MPClient: start timeout={timeout}s"),
    );
    log.info(s.client[1], "[shutdown] MPClient: stopping engine manager");
    let grace = Duration::from_secs(timeout as u64).max(Duration::from_millis(50));
    stop_engines(log, procs, grace).await;
    log.info(s.client[2], "[shutdown] MPClient: engine manager stopped");
    log.info(
        s.client[3],
        "[shutdown] MPClient: cleaning up background resources",
    );
    log.info(s.client[4], "[shutdown] MPClient: complete");
    front.fail_all(500, "The server is shutting down; the request was aborted.");
    log.info(
        s.api_shutdown[2],
        "[shutdown] API server: engine client stopped",
    );
    log.info(
        s.api_shutdown[3],
        "[shutdown] API server: signalling HTTP server shutdown",
    );
    log.info(
        s.api_shutdown[4],
        "[shutdown] API server: shutting down FastAPI HTTP server",
    );
    if serving {
        log.uvicorn("Shutting down");
    }
    0
}

/// The periodic `Engine 000: Avg prompt throughput: …` line (every VLLM_LOG_STATS_INTERVAL s).
pub(super) async fn stats_loop(front: Arc<Front>) {
    let every: f64 = std::env::var("VLLM_LOG_STATS_INTERVAL")
        .ok()
        .and_then(|v| v.parse().ok())
        .filter(|v: &f64| *v > 0.0)
        .unwrap_or(10.0);
    let mut last_busy = vec![false; front.to_engine.len()];
    let mut tick = tokio::time::interval(Duration::from_secs_f64(every));
    tick.tick().await;
    loop {
        tick.tick().await;
        let (per, st_prefix): (Vec<(Interval, EngineState)>, Vec<PrefixTotals>) = {
            let mut st = front.lock();
            let engines = st.engines.clone();
            let totals = st.prefix_totals.clone();
            let per = st
                .interval
                .iter_mut()
                .map(std::mem::take)
                .zip(engines)
                .collect::<Vec<_>>();
            (per, totals)
        };
        // One line per engine, `Engine 000:`, `Engine 001:`, … as vLLM's logging stat logger.
        for (e, (iv, es)) in per.into_iter().enumerate() {
            let busy = iv.prompt_tokens > 0 || iv.generation_tokens > 0;
            if !(busy || last_busy[e]) {
                continue;
            }
            last_busy[e] = busy;
            let mut parts = vec![
                format!(
                    "Avg prompt throughput: {:.1} tokens/s",
                    iv.prompt_tokens as f64 / every
                ),
                format!(
                    "Avg generation throughput: {:.1} tokens/s",
                    iv.generation_tokens as f64 / every
                ),
                format!("Running: {} reqs", es.running),
                format!("Waiting: {} reqs", es.waiting),
            ];
            let r = front.cfg.release;
            if r == Release::V033 && iv.preemptions > 0 {
                parts.push(format!("Preemptions: {}", iv.preemptions));
            }
            parts.push(format!("GPU KV cache usage: {:.1}%", es.kv_usage * 100.0));
            if r != Release::V033 || iv.prefix_queries > 0 {
                // vLLM's rate is over its recent requests; since the start is the same for runs
                // shorter than its window of 1,000 requests.
                let t = st_prefix.get(e).copied().unwrap_or_default();
                let rate = if t.queries > 0 {
                    t.hits as f64 / t.queries as f64 * 100.0
                } else {
                    0.0
                };
                parts.push(format!("Prefix cache hit rate: {rate:.1}%"));
            }
            front.log.info(
                sites(r).stats,
                &format!("Engine {e:03}: {}", parts.join(", ")),
            );
        }
    }
}
