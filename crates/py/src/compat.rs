//! Evidence keys 0.3.1 wrote under other names: each is added beside the library's own key,
//! never in its place, so code that read 0.3.1's evidence reads the same keys. Nothing here
//! computes anything; the values are the library check's own.

use serde_json::{Map, Value};

use crate::core::{BootFacts, Engine};

fn alias(ev: &mut Map<String, Value>, key: &str, alias: &str) {
    if let Some(value) = ev.get(key).cloned() {
        ev.entry(alias).or_insert(value);
    }
}

/// T1: 0.3.1 called TensorRT-LLM's `paused_readings` `readings_with_paused`, and named the
/// paused gauge in `series` even when the server log decided.
pub fn t1(r: &mut Map<String, Value>, engine: Engine) {
    alias(r, "paused_readings", "readings_with_paused");
    if let (None, Some(gauge)) = (engine.metrics().preemptions, engine.metrics().paused) {
        r.entry("series").or_insert_with(|| Value::from(gauge));
    }
}

/// T6: 0.3.1 called the main model's backends `target`.
pub fn t6(r: &mut Map<String, Value>) {
    alias(r, "selected", "target");
}

/// Boot facts: 0.3.1 kept a conflicting `GPU KV cache size` line under `kv_pool` as the line's
/// `(tokens, request length, concurrency)`; the library keeps each field's distinct values.
/// `kv_pool` is added beside them: each pool size with the other two fields' value from the
/// same place in their own lists, or their one value where they did not differ.
pub fn boot_conflicts(f: &mut BootFacts) {
    let Some(tokens) = f.conflicts.get("kv_pool_tokens").cloned() else {
        return;
    };
    let beside = |key: &str, one: Value| -> Vec<Value> {
        match f.conflicts.get(key) {
            Some(vals) if vals.len() == tokens.len() => vals.clone(),
            Some(_) => vec![Value::Null; tokens.len()],
            None => vec![one; tokens.len()],
        }
    };
    let lens = beside(
        "max_concurrency_request_len",
        f.max_concurrency_request_len.into(),
    );
    let xs = beside("max_concurrency", f.max_concurrency.into());
    let triples = tokens
        .into_iter()
        .zip(lens)
        .zip(xs)
        .map(|((t, l), x)| Value::Array(vec![t, l, x]))
        .collect();
    f.conflicts.entry("kv_pool".into()).or_insert(triples);
}
