//! T25 graph-batch: whether the server ran more requests at once than the largest decode batch
//! it captured as a CUDA graph, so that those steps ran eager (docs/design/tripwires.md#t25).
//!
//! vLLM captures decode graphs up to `max_cudagraph_capture_size` (by default twice
//! `--max-num-seqs`, at most 512; lower when set), SGLang up to `cuda_graph_max_bs`; a larger
//! batch runs without a graph. The running gauge is an upper bound of the decode batch (it
//! counts requests in prefill too), read per engine on a data-parallel server, whose engines
//! each capture their own graphs.

use crate::bootlog::BootFacts;
use crate::engine::Engine;
use crate::evidence::{JsonF64, T25Evidence};
use crate::fmt::pct;
use crate::result::{CheckResult, Tripwire};
use crate::series::Series;

/// Beyond the largest graph on this share of the busy samples or more is a finding: steps
/// several times slower (about 4× in the reports) on a twentieth of the time cost a sixth of
/// the throughput.
pub const BEYOND_SHARE: f64 = 0.05;

/// Why T25 cannot tell without the fact.
const NO_GRAPHS: &str = "the boot log names no captured CUDA graph (eager, the CPU build, or no boot log): the batches cannot be compared with one";

/// T25 on any boot: [`check`] where the boot log names the captured graphs, Unknown where it
/// does not (what the Python API answers; the run leaves T25 out then).
pub fn judge(series: &Series, boot: Option<&BootFacts>, engine: Engine) -> CheckResult {
    match graph_batch(boot) {
        Some(g) => check(series, g, engine),
        None => CheckResult::unknown(Tripwire::T25, NO_GRAPHS),
    }
}

/// The largest captured decode batch in requests, where the boot log says graphs were
/// captured; None for an eager server or a log that does not say. vLLM's capture sizes are in
/// tokens, and a decode step of speculative decoding takes 1 + `num_speculative_tokens` of them
/// per request.
pub fn graph_batch(boot: Option<&BootFacts>) -> Option<u64> {
    let b = boot?;
    if b.cudagraphs == Some(false) {
        return None;
    }
    let per_request = 1 + b
        .non_default_args
        .as_ref()
        .and_then(|a| a.get("speculative_config"))
        .and_then(|s| s.get("num_speculative_tokens"))
        .and_then(serde_json::Value::as_u64)
        .unwrap_or(0);
    b.decode_graph_max_batch
        .map(|n| n / per_request)
        .filter(|n| *n > 0)
}

/// T25 on a recording: each busy sample's running requests (each engine's on a data-parallel
/// server) against the largest captured decode batch `graphs`.
pub fn check(series: &Series, graphs: u64, engine: Engine) -> CheckResult {
    let mut ev = T25Evidence {
        graph_max_batch: Some(graphs),
        ..Default::default()
    };
    let (mut busy, mut beyond, mut peak) = (0u64, 0u64, 0.0f64);
    for s in &series.samples {
        let per = s.per_engine();
        let most = if per.is_empty() {
            s.running()
        } else {
            per.iter().filter_map(|e| e.running).reduce(f64::max)
        };
        let Some(r) = most.filter(|r| *r > 0.0) else {
            continue;
        };
        busy += 1;
        peak = peak.max(r);
        if r > graphs as f64 {
            beyond += 1;
        }
    }
    if busy == 0 {
        return CheckResult::unknown(
            Tripwire::T25,
            "no reading with a request running: the batches cannot be told",
        )
        .with_evidence(ev);
    }
    ev.busy_samples = Some(busy);
    ev.beyond_samples = Some(beyond);
    ev.peak_running = Some(peak as u64);
    let share = beyond as f64 / busy as f64;
    ev.beyond_share = Some(JsonF64(share));
    let per = if series.engine_ids().len() > 1 {
        " on one engine"
    } else {
        ""
    };
    if share >= BEYOND_SHARE {
        let knob = match engine {
            Engine::Sglang => "--cuda-graph-max-bs",
            _ => "--max-cudagraph-capture-size",
        };
        return CheckResult::warn(
            Tripwire::T25,
            format!(
                "the server ran up to {} requests at once{per}, beyond the largest decode batch captured as a CUDA graph ({graphs}), on {beyond} of {busy} busy samples ({}): those steps ran eager, several times slower each; raise {knob} to the requests run at once, or run fewer",
                peak as u64,
                pct(share, 0)
            ),
        )
        .with_evidence(ev);
    }
    CheckResult::pass(
        Tripwire::T25,
        format!(
            "the server ran at most {} requests at once{per}, within the largest decode batch captured as a CUDA graph ({graphs}) on {} of the busy samples",
            peak as u64,
            pct(1.0 - share, 0)
        ),
    )
    .with_evidence(ev)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::result::Status;
    use crate::series::{Readings, SeriesHeader, SeriesSample};

    fn series_from_running(running: &[f64]) -> Series {
        let samples = running
            .iter()
            .map(|&r| {
                SeriesSample::from(Readings {
                    running: Some(r),
                    ..Readings::default()
                })
            })
            .collect();
        let header = SeriesHeader {
            url: String::new(),
            interval_s: 0.25,
            engine: None,
        };
        Series::from_samples(header, samples)
    }

    #[test]
    fn batches_beyond_the_largest_graph_warn_and_within_pass() {
        let s = series_from_running(&[0.0, 8.0, 16.0, 16.0, 12.0, 0.0]);
        let r = check(&s, 8, Engine::Vllm);
        assert_eq!(r.status, Status::Warn, "{}", r.message);
        assert!(
            r.message.starts_with("the server ran up to 16 requests at once, beyond the largest decode batch captured as a CUDA graph (8), on 3 of 4 busy samples (75%)"),
            "{}",
            r.message
        );
        let r = check(&s, 16, Engine::Vllm);
        assert_eq!(r.status, Status::Pass, "{}", r.message);
        assert_eq!(
            check(&series_from_running(&[0.0, 0.0]), 8, Engine::Vllm).status,
            Status::Unknown
        );
    }

    #[test]
    fn an_eager_server_has_no_graph_batch() {
        let eager = BootFacts {
            cudagraphs: Some(false),
            decode_graph_max_batch: Some(0),
            ..BootFacts::default()
        };
        assert_eq!(graph_batch(Some(&eager)), None);
        let graphs = BootFacts {
            decode_graph_max_batch: Some(64),
            ..BootFacts::default()
        };
        assert_eq!(graph_batch(Some(&graphs)), Some(64));
    }
}
