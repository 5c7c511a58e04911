//! T4 pool-size-jump and T11 kv-memory-drift: starts with identical flags that drew different KV
//! pools or KV memory budgets. Starts are grouped by `[engine, config_args]`; a group of one
//! gives no result, and starts that never became ready or printed no flags are `not_compared`.

use indexmap::IndexMap;

use crate::bootlog::BootFacts;
use crate::evidence::{JsonF64, T11Evidence, T4Evidence};
use crate::fmt::{g, pct, thousands};
use crate::result::{CheckResult, Tripwire};

/// A group of starts with the same flags: their labels and facts.
type Group<'a> = Vec<(&'a str, &'a BootFacts)>;

/// Groups comparable starts by flags (in order of first appearance) and lists the others.
fn groups<'a>(facts: &'a [(String, &'a BootFacts)]) -> (Vec<Group<'a>>, Vec<String>) {
    let mut keys: Vec<String> = Vec::new();
    let mut out: Vec<Group<'a>> = Vec::new();
    let mut not_compared = Vec::new();
    for (label, f) in facts {
        let Some(config) = f.config_args.as_ref().filter(|_| f.ready) else {
            not_compared.push(label.clone());
            continue;
        };
        let key = serde_json::to_string(&(f.engine, config)).unwrap_or_default();
        match keys.iter().position(|k| *k == key) {
            Some(i) => out[i].push((label.as_str(), *f)),
            None => {
                keys.push(key);
                out.push(vec![(label.as_str(), *f)]);
            }
        }
    }
    out.retain(|g| g.len() >= 2);
    (out, not_compared)
}

fn names(group: &Group<'_>) -> String {
    group.iter().map(|(l, _)| *l).collect::<Vec<_>>().join(", ")
}

fn by_label<T>(group: &Group<'_>, value: impl Fn(&BootFacts) -> T) -> IndexMap<String, T> {
    let mut m = IndexMap::new();
    for (label, f) in group {
        m.insert(label.to_string(), value(f));
    }
    m
}

/// A float fact of each start, by label.
fn floats_by_label(
    group: &Group<'_>,
    value: impl Fn(&BootFacts) -> Option<f64>,
) -> Option<IndexMap<String, Option<JsonF64>>> {
    Some(by_label(group, |f| value(f).map(JsonF64)))
}

/// T4 across several starts: one result per group of two or more starts with the same flags.
pub fn check_t4(facts: &[(String, &BootFacts)]) -> Vec<CheckResult> {
    let t = Tripwire::T4;
    let (groups, not_compared) = groups(facts);
    groups
        .iter()
        .map(|group| {
            let missing: Vec<&str> = group
                .iter()
                .filter(|(_, f)| f.kv_pool_tokens.is_none())
                .map(|(l, _)| *l)
                .collect();
            let pools = by_label(group, |f| f.kv_pool_tokens);
            if !missing.is_empty() {
                return CheckResult::unknown(t, format!("no KV pool line in: {}", missing.join(", ")))
                    .with_evidence(T4Evidence {
                        pools: Some(pools),
                        levels: None,
                        not_compared: Some(not_compared.clone()),
                    });
            }
            let mut levels: Vec<u64> = group.iter().filter_map(|(_, f)| f.kv_pool_tokens).collect();
            levels.sort_unstable();
            levels.dedup();
            let (lo, hi) = (levels[0], levels[levels.len() - 1]);
            let r = if levels.len() == 1 {
                CheckResult::pass(
                    t,
                    format!("same flags, same pool ({} tokens): {}", thousands(lo as i64), names(group)),
                )
            } else {
                CheckResult::warn(
                    t,
                    format!(
                        "same flags, {} different pools: {} to {} tokens ({} apart) across {}; compare results only within one pool",
                        levels.len(),
                        thousands(lo as i64),
                        thousands(hi as i64),
                        pct((hi - lo) as f64 / lo.max(1) as f64, 2),
                        names(group)
                    ),
                )
            };
            r.with_evidence(T4Evidence {
                pools: Some(pools),
                levels: Some(levels),
                not_compared: Some(not_compared.clone()),
            })
        })
        .collect()
}

/// `lo to hi` of a value over a group, when it is known for two starts or more and differs.
fn spread(group: &Group<'_>, value: impl Fn(&BootFacts) -> Option<f64>) -> Option<(f64, f64)> {
    let vals: Vec<f64> = group.iter().filter_map(|(_, f)| value(f)).collect();
    if vals.len() < 2 {
        return None;
    }
    let lo = vals.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = vals.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    (lo != hi).then_some((lo, hi))
}

/// T11 across several starts: one result per group of two or more starts with the same flags.
pub fn check_t11(facts: &[(String, &BootFacts)]) -> Vec<CheckResult> {
    let t = Tripwire::T11;
    let (groups, not_compared) = groups(facts);
    groups
        .iter()
        .map(|group| {
            let evidence = |r: CheckResult| {
                r.with_evidence(T11Evidence {
                    available_kv_cache_gib: floats_by_label(group, |f| f.available_kv_cache_gib),
                    cudagraph_actual_gib: floats_by_label(group, |f| f.cudagraph_actual_gib),
                    consumed_gib: floats_by_label(group, |f| f.consumed_gib),
                    peak_activation_gib: floats_by_label(group, |f| f.peak_activation_gib),
                    compiled_fresh: Some(by_label(group, |f| f.compiled_fresh)),
                    not_compared: Some(not_compared.clone()),
                })
            };
            if group
                .iter()
                .any(|(_, f)| f.available_kv_cache_gib.is_none())
            {
                return evidence(CheckResult::unknown(
                    t,
                    "a boot log lacks 'Available KV cache memory'",
                ));
            }
            let Some((lo, hi)) = spread(group, |f| f.available_kv_cache_gib) else {
                let v = group[0].1.available_kv_cache_gib.unwrap_or_default();
                return evidence(CheckResult::pass(
                    t,
                    format!("same flags, {} GiB for KV cache on every boot", g(v)),
                ));
            };
            let mut notes = Vec::new();
            if let Some((a, b)) = spread(group, |f| f.consumed_gib) {
                notes.push(format!(
                    "weights and non-torch memory {} to {} GiB",
                    g(a),
                    g(b)
                ));
            }
            if let Some((a, b)) = spread(group, |f| f.peak_activation_gib) {
                notes.push(format!("peak activation {} to {} GiB", g(a), g(b)));
            }
            let compiled = group
                .iter()
                .filter(|(_, f)| f.compiled_fresh == Some(true))
                .count();
            let loaded = group
                .iter()
                .filter(|(_, f)| f.compiled_fresh == Some(false))
                .count();
            if compiled > 0 && loaded > 0 {
                notes.push(format!(
                    "{compiled} of {} starts compiled the model from scratch",
                    group.len()
                ));
            }
            let mut msg = format!(
                "same flags, KV cache memory varied: {} to {} GiB",
                g(lo),
                g(hi)
            );
            if !notes.is_empty() {
                msg.push_str(&format!(" ({})", notes.join("; ")));
            }
            evidence(CheckResult::warn(t, msg))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Status;
    use serde_json::{json, Value};

    fn boot(pool: u64, kv: f64, args: Value) -> BootFacts {
        BootFacts {
            ready: true,
            kv_pool_tokens: Some(pool),
            available_kv_cache_gib: Some(kv),
            config_args: Some(args),
            ..Default::default()
        }
    }

    #[test]
    fn groups_by_flags() {
        let a = boot(13575, 1.59, json!({"x": 1}));
        let b = boot(12405, 1.44, json!({"x": 1}));
        let c = boot(9999, 1.0, json!({"x": 2}));
        let failed = BootFacts::default();
        let set = vec![
            ("hi".to_string(), &a),
            ("lo".to_string(), &b),
            ("other".to_string(), &c),
            ("failed".to_string(), &failed),
        ];
        let t4 = check_t4(&set);
        assert_eq!(t4.len(), 1, "different flags give no result");
        assert_eq!(t4[0].status, Status::Warn);
        assert_eq!(t4[0].message, "same flags, 2 different pools: 12,405 to 13,575 tokens (9.43% apart) across hi, lo; compare results only within one pool");
        assert_eq!(t4[0].evidence_json()["levels"], json!([12405, 13575]));
        assert_eq!(t4[0].evidence_json()["not_compared"], json!(["failed"]));
        let t11 = check_t11(&set);
        assert_eq!(
            t11[0].message,
            "same flags, KV cache memory varied: 1.44 to 1.59 GiB"
        );
        let b2 = boot(13575, 1.59, json!({"x": 1}));
        let same = vec![("a".to_string(), &a), ("b".to_string(), &b2)];
        assert_eq!(
            check_t4(&same)[0].message,
            "same flags, same pool (13,575 tokens): a, b"
        );
        assert_eq!(
            check_t11(&same)[0].message,
            "same flags, 1.59 GiB for KV cache on every boot"
        );
        assert!(check_t4(&same[..1]).is_empty());
    }
}
