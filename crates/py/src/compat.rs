//! Evidence keys 0.3.1 wrote that the library's checks do not (yet): added beside the
//! library's own, never in their place, so code that read 0.3.1's evidence reads the same keys.
//! Each belongs in the library's check; until it is there, it is filled in here from the same
//! inputs.

use serde_json::{json, Value};

use crate::core::{counters, CheckResult, Engine, Series, Snapshot};

fn add(r: &mut CheckResult, key: &str, value: Value) {
    if !r.evidence.contains_key(key) {
        r.evidence.insert(key.to_string(), value);
    }
}

/// T1: the restart's own evidence (`created_changed`, `example`, `before`, `after`, or
/// `counter`); for TensorRT-LLM, the gauge read (`series`) and the recording's
/// `readings_with_paused` and `paused_max`.
pub fn t1(
    mut r: CheckResult,
    before: &Snapshot,
    after: &Snapshot,
    series: Option<&Series>,
    engine: Engine,
) -> CheckResult {
    let names = engine.metrics();
    if r.evidence.get("restarted") == Some(&Value::Bool(true)) {
        let counter = names.preemptions.unwrap_or(names.generation_tokens);
        let q = counters::CounterQuery::new(counter).with_witness(names.preemption_witness);
        if let Err(counters::DeltaError::Restarted(restart)) =
            counters::snapshot_delta(before, after, &q)
        {
            let ev = match &restart {
                counters::Restart::CreatedMoved(moved) => json!({
                    "created_changed": moved.len(),
                    "example": moved[0].name,
                    "before": moved[0].before,
                    "after": moved[0].after,
                }),
                counters::Restart::WentDown {
                    name,
                    before,
                    after,
                } => json!({"counter": name, "before": before, "after": after}),
            };
            if let Value::Object(m) = ev {
                for (k, v) in m {
                    add(&mut r, &k, v);
                }
            }
        }
    }
    if names.preemptions.is_none() {
        if let Some(gauge) = names.paused {
            add(&mut r, "series", json!(gauge));
        }
        if let Some(n) = r.evidence.get("paused_readings").cloned() {
            add(&mut r, "readings_with_paused", n);
        }
        let paused: Vec<f64> = series
            .map(|s| s.samples.iter().filter_map(|x| x.paused).collect())
            .unwrap_or_default();
        if r.evidence.contains_key("readings") && !paused.is_empty() {
            let max = paused.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            add(&mut r, "paused_max", json!(max));
        }
    }
    r
}

/// T6: 0.3.1 called the main model's backends `target`.
pub fn t6(mut r: CheckResult) -> CheckResult {
    if let Some(selected) = r.evidence.get("selected").cloned() {
        add(&mut r, "target", selected);
    }
    r
}
