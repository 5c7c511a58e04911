//! T1 silent-preemption: requests evicted from the KV cache and recomputed during the run
//! (docs/design/tripwires.md#t1).
//!
//! vLLM and SGLang count evictions; the delta of the counter between the snapshots is the
//! answer. TensorRT-LLM counts none: its log (one INFO line per pause) is the only full record,
//! its paused gauge a sampled hint, its scheduler policy a guarantee.

use crate::bootlog::BootFacts;
use crate::checks::counters::{snapshot_delta, CounterQuery, DeltaError};
use crate::engine::Engine;
use crate::evidence::{Count, T1Evidence};
use crate::fmt::g;
use crate::result::{CheckResult, Tripwire};
use crate::series::Series;
use crate::snapshot::Snapshot;

/// vLLM's preemption counter.
pub const VLLM_PREEMPTIONS: &str = "vllm:num_preemptions_total";

/// The TensorRT-LLM policy that admits a request only when its whole output fits.
pub const GUARANTEED_NO_EVICT: &str = "GUARANTEED_NO_EVICT";

/// T1 from the snapshots around the run; TensorRT-LLM also reads the recording's paused gauge
/// and the server log's pause lines.
pub fn check(
    before: &Snapshot,
    after: &Snapshot,
    series: Option<&Series>,
    facts: Option<&BootFacts>,
    engine: Engine,
) -> CheckResult {
    let names = engine.metrics();
    if engine == Engine::Llamacpp {
        // A llama.cpp slot runs its request to the end: nothing is evicted to recompute.
        return CheckResult::not_applicable(
            Tripwire::T1,
            "llama.cpp never evicts a running request: each slot runs its request to the end, and a request without a free slot waits (requests_deferred)",
        )
        .with_evidence(T1Evidence {
            engine: Some(engine),
            ..Default::default()
        });
    }
    let Some(counter) = names.preemptions else {
        return check_without_counter(series, facts, engine);
    };
    let word = engine.eviction_word();
    let q = CounterQuery::new(counter).with_witness(names.preemption_witness);
    let base = |restarted: Option<bool>, preemptions: Option<f64>| T1Evidence {
        engine: Some(engine),
        series: Some(counter.to_string()),
        restarted,
        preemptions: Some(preemptions.map(Count::Float)),
        ..Default::default()
    };
    match snapshot_delta(before, after, &q) {
        Err(DeltaError::Restarted(restart)) => CheckResult::fail(Tripwire::T1, restart.to_string())
            .with_evidence(T1Evidence {
                restart: restart.evidence(),
                ..base(Some(true), None)
            }),
        Err(DeltaError::Absent { .. } | DeltaError::NotCounted { .. }) => CheckResult::unknown(
            Tripwire::T1,
            format!("{counter} absent from a snapshot; {word} cannot be ruled out"),
        )
        .with_evidence(base(None, None)),
        Ok(n) if n > 0.0 => {
            let plural = if n == 1.0 { "" } else { "s" };
            let mut msg = format!("{} {word}{plural} during the run", g(n));
            if engine == Engine::Sglang {
                msg.push_str(" (SGLang logs a warning for each)");
            }
            CheckResult::fail(Tripwire::T1, msg).with_evidence(base(None, Some(n)))
        }
        Ok(n) => CheckResult::pass(Tripwire::T1, format!("no {word}s"))
            .with_evidence(base(None, Some(n))),
    }
}

/// TensorRT-LLM: the log's pause count when the log covers the run, else the paused gauge, else
/// the scheduler policy.
fn check_without_counter(
    series: Option<&Series>,
    facts: Option<&BootFacts>,
    engine: Engine,
) -> CheckResult {
    let name = engine.name();
    let base = T1Evidence {
        engine: Some(engine),
        // Unknown unless the log counted them.
        preemptions: Some(None),
        ..Default::default()
    };
    if let Some((pauses, served)) = facts.and_then(|f| Some((f.pauses?, f.served_in_log))) {
        let r = if pauses > 0 {
            let s = if pauses == 1 { "" } else { "s" };
            CheckResult::fail(
                Tripwire::T1,
                format!("{pauses} request{s} paused for recompute during the run, from the server log ({name} counts none)"),
            )
        } else {
            CheckResult::pass(
                Tripwire::T1,
                format!(
                    "no pause in the server log, which covers {} answered requests",
                    served.unwrap_or(0)
                ),
            )
        };
        return r.with_evidence(T1Evidence {
            paused_in_log: Some(pauses),
            served_in_log: Some(served),
            preemptions: Some(Some(Count::Whole(pauses))),
            ..base
        });
    }
    let paused: Vec<f64> = series
        .map(|s| s.samples.iter().filter_map(|x| x.paused()).collect())
        .unwrap_or_default();
    if paused.is_empty() {
        return CheckResult::unknown(
            Tripwire::T1,
            format!("{name} counts no pauses; it logs each one, so the server log saved until after the run is needed to count them"),
        )
        .with_evidence(base);
    }
    let n = paused.len();
    let k = paused.iter().filter(|p| **p > 0.0).count();
    let max = paused.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let evidence = |r: CheckResult| {
        r.with_evidence(T1Evidence {
            series: engine.metrics().paused.map(str::to_string),
            paused_readings: Some(k as u64),
            readings: Some(n as u64),
            paused_max: Some(max),
            ..base.clone()
        })
    };
    if k > 0 {
        return evidence(CheckResult::fail(
            Tripwire::T1,
            format!("requests were paused for recompute in {k} of {n} readings, up to {} at once ({name} counts no pauses, so the number is unknown)", g(max)),
        ));
    }
    let policy = facts
        .and_then(|f| f.server_args.as_ref())
        .and_then(|a| a.get("capacity_scheduler_policy"))
        .map(|v| match v {
            serde_json::Value::String(s) => s.clone(),
            other => other.to_string(),
        });
    if policy.is_some_and(|p| p.contains(GUARANTEED_NO_EVICT)) {
        return evidence(CheckResult::pass(
            Tripwire::T1,
            format!("no paused request in {n} readings, and the scheduler policy ({GUARANTEED_NO_EVICT}) admits a request only when its whole output fits"),
        ));
    }
    evidence(CheckResult::unknown(
        Tripwire::T1,
        format!("no paused request in {n} readings; {name} counts no pauses, so one between readings cannot be ruled out without the server log saved until after the run"),
    ))
}
