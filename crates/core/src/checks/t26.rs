//! T26 kv-offload: whether KV offloading, while on, loaded back any of what it stored
//! (docs/design/tripwires.md#t26).
//!
//! vLLM's offloading connectors store computed KV blocks in CPU memory and load them back when
//! a later prompt needs blocks the GPU's prefix cache has lost. A connector that stores and
//! never loads (a lookup that never matches, a load whose prompts never return) costs the
//! stores and gives nothing back: every request is prefilled again while the configuration
//! says offloading is on, and a comparison "with offloading" measures the server without it.
//!
//! vLLM's native `OffloadingConnector` counts bytes: `vllm:kv_offload_store_bytes` and
//! `…_load_bytes`, created at their first transfer, and the deprecated
//! `vllm:kv_offload_total_bytes{transfer_type}`, registered at 0 with the connector (so its
//! presence says an absent successor is still 0). `SimpleCPUOffloadConnector` counts blocks:
//! `vllm:simple_kv_offload_save_outcomes_total{outcome="stored"}` and
//! `vllm:simple_kv_offload_load_blocks_total`, with `vllm:simple_kv_offload_info` registered
//! at start. The scheduler's `vllm:external_prefix_cache_{queries,hits}` count the prompt
//! tokens asked of the connector and those it served.

use crate::bootlog::BootFacts;
use crate::checks::counters::{snapshot_delta, CounterQuery, DeltaError};
use crate::evidence::{JsonF64, T26Evidence};
use crate::fmt::{g, pct, thousands_f};
use crate::result::{CheckResult, Tripwire};
use crate::snapshot::Snapshot;

/// The native connector's deprecated byte counter, present from the connector's start.
const TOTAL_BYTES: &str = "vllm:kv_offload_total_bytes_total";
const STORE_BYTES: &str = "vllm:kv_offload_store_bytes_total";
const LOAD_BYTES: &str = "vllm:kv_offload_load_bytes_total";
const TRANSFER: &str = "transfer_type";
const STORED_DIR: &[(&str, &str)] = &[(TRANSFER, "GPU_to_CPU")];
const LOADED_DIR: &[(&str, &str)] = &[(TRANSFER, "CPU_to_GPU")];
/// `SimpleCPUOffloadConnector`'s counters and the gauge it registers at start.
const SIMPLE_SAVES: &str = "vllm:simple_kv_offload_save_outcomes_total";
const SIMPLE_STORED: &[(&str, &str)] = &[("outcome", "stored")];
const SIMPLE_LOADS: &str = "vllm:simple_kv_offload_load_blocks_total";
const SIMPLE_INFO: &str = "vllm:simple_kv_offload_info";
const EXT_QUERIES: &str = "vllm:external_prefix_cache_queries_total";
const EXT_HITS: &str = "vllm:external_prefix_cache_hits_total";

/// Which connector's counters a server exposes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Connector {
    /// `OffloadingConnector`: bytes.
    Native,
    /// `SimpleCPUOffloadConnector`: blocks.
    Simple,
}

/// What shows that offloading was on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Seen {
    /// A connector's counters.
    Counters(Connector),
    /// Only the boot log's configuration: no counter to judge by.
    Configured,
}

/// The offloading the server's counters or boot log show, if any.
fn connector(after: &Snapshot, boot: Option<&BootFacts>) -> Option<Seen> {
    let m = &after.metrics;
    if m.has(TOTAL_BYTES) || m.has(STORE_BYTES) {
        return Some(Seen::Counters(Connector::Native));
    }
    if m.has(SIMPLE_INFO) || m.has(SIMPLE_SAVES) {
        return Some(Seen::Counters(Connector::Simple));
    }
    // On in the configuration, with no counter to show for it.
    let asked = boot
        .and_then(|b| b.non_default_args.as_ref())
        .is_some_and(|a| {
            a.get("kv_offloading_size").is_some_and(|v| !v.is_null())
                || a.get("kv_transfer_config")
                    .is_some_and(|v| v.to_string().contains("Offload"))
        });
    asked.then_some(Seen::Configured)
}

/// Whether KV offloading was on: its counters in the after snapshot, or the boot log's
/// `kv_offloading_size` or an offloading connector in `kv_transfer_config`.
pub fn active(after: &Snapshot, boot: Option<&BootFacts>) -> bool {
    connector(after, boot).is_some()
}

/// T26 on any pair of snapshots: [`check`] where offloading was on, not applicable where
/// neither the counters nor the boot log show it (what the Python API answers; the run leaves
/// T26 out then).
pub fn judge(before: &Snapshot, after: &Snapshot, boot: Option<&BootFacts>) -> CheckResult {
    if active(after, boot) {
        check(before, after, boot)
    } else {
        CheckResult::not_applicable(
            Tripwire::T26,
            "KV offloading was not on: neither the server's counters nor the boot log show it",
        )
    }
}

/// T26 between the snapshots: what offloading stored and what it loaded back.
pub fn check(before: &Snapshot, after: &Snapshot, boot: Option<&BootFacts>) -> CheckResult {
    let mut ev = T26Evidence::default();
    let Some(Seen::Counters(conn)) = connector(after, boot) else {
        return CheckResult::unknown(
            Tripwire::T26,
            "KV offloading is on (the boot log's configuration) but the server exposes none of its counters (vllm:kv_offload_*, vllm:simple_kv_offload_*): what it stored and loaded back cannot be told",
        )
        .with_evidence(ev);
    };
    let moved = match conn {
        Connector::Native => native(before, after),
        Connector::Simple => simple(before, after),
    };
    let (stored, loaded) = match moved {
        Ok(m) => m,
        Err(DeltaError::Restarted(r)) => {
            ev.restarted = Some(true);
            return CheckResult::unknown(Tripwire::T26, r.to_string()).with_evidence(ev);
        }
        Err(e) => {
            return CheckResult::unknown(
                Tripwire::T26,
                format!("{e}: what KV offloading stored and loaded back cannot be told"),
            )
            .with_evidence(ev)
        }
    };
    let unit = match conn {
        Connector::Native => "bytes",
        Connector::Simple => "blocks",
    };
    ev.connector = Some(conn_name(conn).into());
    ev.unit = Some(unit.into());
    ev.stored = Some(stored);
    ev.loaded = Some(loaded);
    let lookups = lookup_counts(before, after);
    ev.queried_tokens = lookups.map(|l| l.0);
    ev.hit_tokens = lookups.map(|l| l.1);
    ev.hit_rate = lookups.filter(|l| l.0 > 0.0).map(|l| JsonF64(l.1 / l.0));
    verdict(conn, stored, loaded, lookups, ev)
}

/// The verdict on what was stored and loaded back, `lookups` the connector's (queried, hit)
/// prompt tokens where the server counts them.
fn verdict(
    conn: Connector,
    stored: f64,
    loaded: f64,
    lookups: Option<(f64, f64)>,
    ev: T26Evidence,
) -> CheckResult {
    if stored <= 0.0 && loaded <= 0.0 {
        return CheckResult::unknown(
            Tripwire::T26,
            "KV offloading is on but stored nothing in the window (no prompt filled a block): whether its blocks come back cannot be told",
        )
        .with_evidence(ev);
    }
    let asked = lookups
        .filter(|(q, _)| *q > 0.0)
        .map(|(q, h)| {
            format!(
                " (the connector served {} of the {} prompt tokens asked of it, {})",
                thousands_f(h, 0),
                thousands_f(q, 0),
                pct(h / q, 0)
            )
        })
        .unwrap_or_default();
    if loaded <= 0.0 {
        return CheckResult::warn(
            Tripwire::T26,
            format!(
                "KV offloading stored {} in CPU memory and loaded none of it back{asked}: every prompt the GPU's cache had lost was prefilled again, so the figures show offloading's cost without its benefit; a load whose prompts never return (a random dataset) cannot use it, and one whose prompts do points to a lookup that never hits",
                amount(conn, stored)
            ),
        )
        .with_evidence(ev);
    }
    CheckResult::pass(
        Tripwire::T26,
        format!(
            "KV offloading stored {} in CPU memory and loaded {} back to the GPU{asked}",
            amount(conn, stored),
            amount(conn, loaded)
        ),
    )
    .with_evidence(ev)
}

fn conn_name(c: Connector) -> &'static str {
    match c {
        Connector::Native => "OffloadingConnector",
        Connector::Simple => "SimpleCPUOffloadConnector",
    }
}

/// Bytes in MiB or GiB, blocks as blocks.
fn amount(c: Connector, x: f64) -> String {
    match c {
        Connector::Simple => format!("{} blocks", thousands_f(x, 0)),
        Connector::Native if x >= f64::from(1u32 << 30) => {
            format!(
                "{} GiB",
                g((x / f64::from(1u32 << 30) * 100.0).round() / 100.0)
            )
        }
        Connector::Native => format!(
            "{} MiB",
            g((x / f64::from(1u32 << 20) * 10.0).round() / 10.0)
        ),
    }
}

/// The native connector's stored and loaded bytes: the successors where the server has them
/// (absent ones are 0 while the deprecated family, registered at start, is there), else the
/// deprecated family's two directions.
fn native(before: &Snapshot, after: &Snapshot) -> Result<(f64, f64), DeltaError> {
    let flat = after.metrics.has(STORE_BYTES) || after.metrics.has(LOAD_BYTES);
    if flat {
        let q = |name| CounterQuery::new(name).with_witness(Some(TOTAL_BYTES));
        let stored = snapshot_delta(before, after, &q(STORE_BYTES));
        let loaded = match snapshot_delta(before, after, &q(LOAD_BYTES)) {
            // vLLM creates the load counter at the first load: with the store counter there
            // and no load counter in either snapshot, nothing was loaded.
            Err(DeltaError::Absent { .. })
                if !after.metrics.has(LOAD_BYTES) && !before.metrics.has(LOAD_BYTES) =>
            {
                Ok(0.0)
            }
            other => other,
        };
        return Ok((stored?, loaded?));
    }
    let dir = |labels| CounterQuery::new(TOTAL_BYTES).with_labels(labels);
    Ok((
        snapshot_delta(before, after, &dir(STORED_DIR))?,
        snapshot_delta(before, after, &dir(LOADED_DIR))?,
    ))
}

/// `SimpleCPUOffloadConnector`'s stored and loaded blocks (each counter 0 until its first
/// count while the connector's info gauge is there).
fn simple(before: &Snapshot, after: &Snapshot) -> Result<(f64, f64), DeltaError> {
    let stored = CounterQuery::new(SIMPLE_SAVES)
        .with_labels(SIMPLE_STORED)
        .with_witness(Some(SIMPLE_INFO));
    let loaded = CounterQuery::new(SIMPLE_LOADS).with_witness(Some(SIMPLE_INFO));
    Ok((
        snapshot_delta(before, after, &stored)?,
        snapshot_delta(before, after, &loaded)?,
    ))
}

/// The prompt tokens asked of the connector and those it served, where the server counts
/// them (vLLM 0.15 on).
fn lookup_counts(before: &Snapshot, after: &Snapshot) -> Option<(f64, f64)> {
    let q = snapshot_delta(before, after, &CounterQuery::new(EXT_QUERIES)).ok()?;
    let h = snapshot_delta(before, after, &CounterQuery::new(EXT_HITS)).ok()?;
    Some((q, h))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::result::Status;

    fn snap(text: &str) -> Snapshot {
        crate::testkit::snapshot_from_prom(text)
    }

    const HEAD: &str = "vllm:external_prefix_cache_queries_total{engine=\"0\"} 0\nvllm:external_prefix_cache_hits_total{engine=\"0\"} 0\n";

    fn native_pair(stored: f64, loaded: f64, queried: f64, hit: f64) -> (Snapshot, Snapshot) {
        let before = format!(
            "{HEAD}vllm:kv_offload_total_bytes_total{{engine=\"0\",transfer_type=\"CPU_to_GPU\"}} 0\nvllm:kv_offload_total_bytes_total{{engine=\"0\",transfer_type=\"GPU_to_CPU\"}} 0\n"
        );
        let mut after = format!(
            "vllm:external_prefix_cache_queries_total{{engine=\"0\"}} {queried}\nvllm:external_prefix_cache_hits_total{{engine=\"0\"}} {hit}\nvllm:kv_offload_total_bytes_total{{engine=\"0\",transfer_type=\"CPU_to_GPU\"}} {loaded}\nvllm:kv_offload_total_bytes_total{{engine=\"0\",transfer_type=\"GPU_to_CPU\"}} {stored}\n"
        );
        if stored > 0.0 {
            after.push_str(&format!(
                "vllm:kv_offload_store_bytes_total{{engine=\"0\"}} {stored}\n"
            ));
        }
        if loaded > 0.0 {
            after.push_str(&format!(
                "vllm:kv_offload_load_bytes_total{{engine=\"0\"}} {loaded}\n"
            ));
        }
        (snap(&before), snap(&after))
    }

    #[test]
    fn stores_never_loaded_back_warn_and_one_load_passes() {
        let (b, a) = native_pair(264_241_152.0, 0.0, 4800.0, 0.0);
        let r = check(&b, &a, None);
        assert_eq!(r.status, Status::Warn, "{}", r.message);
        assert!(
            r.message.starts_with("KV offloading stored 252 MiB in CPU memory and loaded none of it back (the connector served 0 of the 4,800 prompt tokens asked of it, 0%)"),
            "{}",
            r.message
        );
        let (b, a) = native_pair(264_241_152.0, 1_835_008.0, 4800.0, 16.0);
        let r = check(&b, &a, None);
        assert_eq!(r.status, Status::Pass, "{}", r.message);
        assert!(r.message.contains("loaded 1.8 MiB back"), "{}", r.message);
    }

    #[test]
    fn nothing_stored_cannot_tell_and_no_offloading_is_not_due() {
        let (b, a) = native_pair(0.0, 0.0, 0.0, 0.0);
        assert_eq!(check(&b, &a, None).status, Status::Unknown);
        let plain = snap(HEAD);
        assert!(!active(&plain, None));
    }

    #[test]
    fn the_simple_connector_counts_blocks() {
        let before = snap("vllm:simple_kv_offload_info{backend=\"cpu\"} 1\n");
        let after = snap("vllm:simple_kv_offload_info{backend=\"cpu\"} 1\nvllm:simple_kv_offload_save_outcomes_total{outcome=\"stored\"} 40\nvllm:simple_kv_offload_save_outcomes_total{outcome=\"dropped_cpu_full\"} 3\n");
        let r = check(&before, &after, None);
        assert_eq!(r.status, Status::Warn, "{}", r.message);
        assert!(r.message.contains("stored 40 blocks"), "{}", r.message);
        let after = snap("vllm:simple_kv_offload_info{backend=\"cpu\"} 1\nvllm:simple_kv_offload_save_outcomes_total{outcome=\"stored\"} 40\nvllm:simple_kv_offload_load_blocks_total 12\n");
        assert_eq!(check(&before, &after, None).status, Status::Pass);
    }
}
