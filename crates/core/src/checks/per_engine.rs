//! Data-parallel servers: T9 and T14 judged per engine pool, then one verdict for the server
//! (docs/tripwires.md, "Data-parallel servers").
//!
//! Each engine of `vllm serve --data-parallel-size N` has its own KV pool, scheduler and
//! gauges (label `engine`). A usage reading is a fraction of one engine's pool, so block
//! inference and ceilings only make sense per engine; the single-pool checks are run on each
//! engine's part of the recording, unchanged, and their verdicts combined here.

use crate::engine::Engine;
use crate::evidence::{
    self, EngineVerdict, Evidence, PerEngine, PerEngineEvidence, T14Evidence, T9Evidence,
};
use crate::prom::{Metrics, Sample};
use crate::result::{CheckResult, Status, Tripwire};
use crate::series::{Series, ENGINE_LABEL};
use crate::snapshot::Snapshot;

/// One verdict from per-engine verdicts: the most severe status (failures first); one message
/// when every engine says the same, else each distinct message with the engines that gave it,
/// the most severe first. Evidence: each engine's own under `engines`, and at the top level
/// every key on which all engines agree (so a usable block count shared by every pool stays
/// where [`crate::checks::t14::usable_blocks`] looks for it).
pub fn combine<E: PerEngineEvidence>(
    tripwire: Tripwire,
    per: Vec<(String, CheckResult)>,
) -> CheckResult {
    let n = per.len();
    let status = per
        .iter()
        .map(|(_, r)| r.status)
        .min()
        .unwrap_or(Status::Unknown);
    let mut groups: Vec<(Status, &str, Vec<&str>)> = Vec::new();
    for (id, r) in &per {
        match groups
            .iter_mut()
            .find(|(s, m, _)| *s == r.status && *m == r.message)
        {
            Some(g) => g.2.push(id),
            None => groups.push((r.status, &r.message, vec![id])),
        }
    }
    let message = if groups.len() == 1 {
        format!("each of {n} engines: {}", groups[0].1)
    } else {
        groups.sort_by_key(|g| g.0);
        groups
            .iter()
            .map(|(_, m, ids)| format!("{}: {m}", engine_names(ids)))
            .collect::<Vec<_>>()
            .join("; ")
    };
    let each: PerEngine<E> = per
        .into_iter()
        .map(|(id, r)| {
            let verdict = EngineVerdict {
                status: r.status,
                message: r.message,
                evidence: E::of(r.evidence).unwrap_or_default(),
            };
            (id, verdict)
        })
        .collect();
    let mut shared: E = evidence::common(&each.values().map(|v| &v.evidence).collect::<Vec<_>>());
    shared.set_engines(each);
    CheckResult::new(tripwire, status, message).with_evidence(shared)
}

/// `engine 1`, `engines 0 and 2`, `engines 0, 2 and 3`.
pub fn engine_names(ids: &[&str]) -> String {
    match ids {
        [one] => format!("engine {one}"),
        [rest @ .., last] => format!("engines {} and {last}", rest.join(", ")),
        [] => "no engine".to_string(),
    }
}

/// T9 per engine pool, when the recording is a data-parallel server's; None otherwise.
pub fn t9(
    series: &Series,
    usable_blocks: Option<u64>,
    requested: Option<u64>,
    engine: Engine,
    saturation: f64,
) -> Option<CheckResult> {
    let ids = series.engine_ids();
    if ids.len() < 2 {
        return None;
    }
    let per = ids
        .into_iter()
        .map(|id| {
            let part = series.for_engine(&id);
            let r =
                crate::checks::t9::check_at(&part, usable_blocks, requested, engine, saturation);
            (id, r)
        })
        .collect();
    Some(combine::<T9Evidence>(Tripwire::T9, per))
}

/// T14 per engine pool, when the recording is a data-parallel server's; None otherwise.
///
/// vLLM exports `cache_config_info` once per engine, but its `num_gpu_blocks` label is the
/// sum over the engines (measured on vLLM 0.32 with `--data-parallel-size 2
/// --num-gpu-blocks-override 6`: the label says 12, `kv_cache_size_tokens` is 6 × 128, and the
/// gauge moves in fifths). Each engine's pool is the label divided by the number of engines;
/// a label that does not divide is "can't tell".
pub fn t14(series: &Series, snapshot: &Snapshot, engine: Engine) -> Option<CheckResult> {
    let info = engine.metrics().cache_info?;
    let ids = series.engine_ids();
    if ids.len() < 2 {
        return None;
    }
    let n = ids.len() as u64;
    let info_series = snapshot.metrics.series(info, &[]);
    let mut total_reported = None;
    let per = ids
        .into_iter()
        .map(|id| {
            let part = series.for_engine(&id);
            let own = info_series
                .iter()
                .find(|s| s.label(ENGINE_LABEL) == Some(id.as_str()))
                .or(info_series.first())
                .copied();
            let label = own.and_then(|s| s.label("num_gpu_blocks"));
            let total = label
                .filter(|v| !v.is_empty() && v.bytes().all(|b| b.is_ascii_digit()))
                .and_then(|v| v.parse::<u64>().ok());
            total_reported = total_reported.or(total);
            let r = match (own, total) {
                (Some(s), Some(total)) if total % n == 0 => {
                    let pool = engine_snapshot(snapshot, s, total / n);
                    crate::checks::t14::check(&part, &pool, engine)
                }
                (Some(_), Some(total)) => CheckResult::unknown(
                    Tripwire::T14,
                    format!("{info}'s num_gpu_blocks ({total}) does not divide among {n} engines"),
                )
                .with_evidence(T14Evidence {
                    reported_num_gpu_blocks: Some(Some(total)),
                    ..Default::default()
                }),
                // No label, or not digits: the single-pool check says which.
                _ => crate::checks::t14::check(&part, snapshot, engine),
            };
            (id, r)
        })
        .collect();
    let mut r = combine::<T14Evidence>(Tripwire::T14, per);
    if let Some(total) = total_reported.filter(|t| t % n == 0) {
        if matches!(r.status, Status::Pass | Status::Fail) {
            r.message.push_str(&format!(
                " (the {info} label says {total}: the sum over the {n} engines)"
            ));
        }
        if let Evidence::T14(e) = &mut r.evidence {
            e.reported_num_gpu_blocks_total = Some(total);
        }
    }
    if let Evidence::T14(e) = &mut r.evidence {
        e.engine_count = Some(n);
    }
    Some(r)
}

/// The snapshot as one engine's: only its cache-info series, with `num_gpu_blocks` its own
/// pool's.
fn engine_snapshot(snapshot: &Snapshot, info: &Sample, blocks: u64) -> Snapshot {
    let mut own = info.clone();
    for (k, v) in &mut own.labels {
        if k == "num_gpu_blocks" {
            *v = blocks.to_string();
        }
    }
    Snapshot {
        url: snapshot.url.clone(),
        t_wall: snapshot.t_wall,
        t_mono_ns: snapshot.t_mono_ns,
        latency_s: snapshot.latency_s,
        text: String::new(),
        metrics: Metrics::from_samples([own]),
        source: snapshot.source.clone(),
    }
}
