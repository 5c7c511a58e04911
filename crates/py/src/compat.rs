//! Evidence keys 0.3.1 wrote under other names: each is added beside the library's own key,
//! never in its place, so code that read 0.3.1's evidence reads the same keys. Nothing here
//! computes anything; the values are the library check's own.

use serde_json::{Map, Value};

use crate::core::Engine;

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
