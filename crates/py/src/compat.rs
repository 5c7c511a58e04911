//! Evidence keys 0.3.1 wrote that the library's checks do not (yet): added beside the
//! library's own, never in their place, so code that read 0.3.1's evidence reads the same keys.
//! Each belongs in the library's check; until it is there, it is filled in here from the same
//! inputs.

use serde_json::{json, Map, Value};

use crate::core::{counters, Engine, Series, Snapshot};

fn add(ev: &mut Map<String, Value>, key: &str, value: Value) {
    if !ev.contains_key(key) {
        ev.insert(key.to_string(), value);
    }
}

/// T1: the restart's own evidence (`created_changed`, `example`, `before`, `after`, or
/// `counter`); for TensorRT-LLM, the gauge read (`series`) and the recording's
/// `readings_with_paused` and `paused_max`.
pub fn t1(
    r: &mut Map<String, Value>,
    before: &Snapshot,
    after: &Snapshot,
    series: Option<&Series>,
    engine: Engine,
) {
    let names = engine.metrics();
    if r.get("restarted") == Some(&Value::Bool(true)) {
        let counter = names.preemptions.unwrap_or(names.generation_tokens);
        let q = counters::CounterQuery::new(counter).with_witness(names.preemption_witness);
        if let Err(counters::DeltaError::Restarted(restart)) =
            counters::snapshot_delta(before, after, &q)
        {
            let ev = restart_json(&restart);
            if let Value::Object(m) = ev {
                for (k, v) in m {
                    add(r, &k, v);
                }
            }
        }
    }
    if names.preemptions.is_none() {
        if let Some(gauge) = names.paused {
            add(r, "series", json!(gauge));
        }
        if let Some(n) = r.get("paused_readings").cloned() {
            add(r, "readings_with_paused", n);
        }
        let paused: Vec<f64> = series
            .map(|s| s.samples.iter().filter_map(|x| x.paused).collect())
            .unwrap_or_default();
        if r.contains_key("readings") && !paused.is_empty() {
            let max = paused.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            add(r, "paused_max", json!(max));
        }
    }
}

/// T6: 0.3.1 called the main model's backends `target`.
pub fn t6(r: &mut Map<String, Value>) {
    if let Some(selected) = r.get("selected").cloned() {
        add(r, "target", selected);
    }
}

/// 0.3.1's evidence of a restart between two snapshots: the first `*_created` stamp that moved
/// (and how many did), or the counter that went down.
pub(crate) fn restart_json(restart: &counters::Restart) -> serde_json::Value {
    match restart {
        counters::Restart::CreatedMoved(moved) => serde_json::json!({
            "created_changed": moved.len(),
            "example": moved[0].name,
            "before": moved[0].before,
            "after": moved[0].after,
        }),
        counters::Restart::WentDown {
            name,
            before,
            after,
        } => serde_json::json!({"counter": name, "before": before, "after": after}),
    }
}
