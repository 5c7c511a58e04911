//! T1 silent-preemption: requests evicted from the KV cache and recomputed during the run
//! (docs/design/tripwires.md#t1).
//!
//! vLLM and SGLang count evictions; the delta of the counter between the snapshots is the
//! answer. TensorRT-LLM counts none: its log (one INFO line per pause) is the only full record,
//! its paused gauge a sampled hint, its scheduler policy a guarantee.

use crate::bootlog::BootFacts;
use crate::checks::counters::{snapshot_delta, CounterQuery, DeltaError};
use crate::engine::Engine;
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
    let Some(counter) = names.preemptions else {
        return check_without_counter(series, facts, engine);
    };
    let word = engine.eviction_word();
    let q = CounterQuery::new(counter).with_witness(names.preemption_witness);
    let base = |r: CheckResult| r.with("engine", engine.key()).with("series", counter);
    match snapshot_delta(before, after, &q) {
        Err(DeltaError::Restarted(restart)) => {
            base(CheckResult::fail(Tripwire::T1, restart.to_string()))
                .with("restarted", true)
                .with("preemptions", None::<f64>)
        }
        Err(DeltaError::Absent { .. }) => base(CheckResult::unknown(
            Tripwire::T1,
            format!("{counter} absent from a snapshot; {word} cannot be ruled out"),
        ))
        .with("preemptions", None::<f64>),
        Ok(n) if n > 0.0 => {
            let plural = if n == 1.0 { "" } else { "s" };
            let mut msg = format!("{} {word}{plural} during the run", g(n));
            if engine == Engine::Sglang {
                msg.push_str(" (SGLang logs a warning for each)");
            }
            base(CheckResult::fail(Tripwire::T1, msg)).with("preemptions", n)
        }
        Ok(n) => {
            base(CheckResult::pass(Tripwire::T1, format!("no {word}s"))).with("preemptions", n)
        }
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
    let base = |r: CheckResult| r.with("engine", engine.key());
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
        return base(r)
            .with("paused_in_log", pauses)
            .with("served_in_log", served)
            .with("preemptions", pauses);
    }
    let paused: Vec<f64> = series
        .map(|s| s.samples.iter().filter_map(|x| x.paused).collect())
        .unwrap_or_default();
    if paused.is_empty() {
        return base(CheckResult::unknown(
            Tripwire::T1,
            format!("{name} counts no pauses; it logs each one, so the server log saved until after the run is needed to count them"),
        ))
        .with("preemptions", None::<f64>);
    }
    let n = paused.len();
    let k = paused.iter().filter(|p| **p > 0.0).count();
    let max = paused.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let evidence = |r: CheckResult| {
        base(r)
            .with("paused_readings", k)
            .with("readings", n)
            .with("preemptions", None::<f64>)
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
