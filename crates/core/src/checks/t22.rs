//! T22 dp-balance: whether the engines of a data-parallel server shared the load, or one carried
//! it while the others idled (docs/design/tripwires.md#t22).
//!
//! Each engine of `vllm serve --data-parallel-size N` counts its own finished requests and
//! exports its own running gauge (label `engine`). The server's figures are those of N engines
//! only when the requests were spread over them: a routing bias, a client that pins one rank
//! (`X-data-parallel-rank`) or a stuck coordinator measure one engine's queue instead.

use indexmap::IndexMap;

use crate::checks::counters::{snapshot_delta, CounterQuery, DeltaError};
use crate::engine::Engine;
use crate::evidence::{EngineShare, JsonF64, T22Evidence};
use crate::fmt::{g, pct, thousands_f};
use crate::result::{CheckResult, Tripwire};
use crate::series::{engine_labels, Series, ENGINE_LABEL};
use crate::snapshot::Snapshot;

/// An engine that carried this many times its even share (1/N) carried the others' load: for
/// two engines, 75 % or more of the requests.
pub const UNEVEN: f64 = 1.5;
/// Fewer finished requests than this per engine say nothing of how a router spreads them.
pub const MIN_PER_ENGINE: f64 = 2.0;

/// The engine ids of a data-parallel server (two or more `engine` labels on its counters or
/// gauges); None for a one-engine server.
pub fn engines(after: &Snapshot, engine: Engine) -> Option<Vec<String>> {
    let ids = engine_labels(&after.metrics, engine);
    (ids.len() >= 2).then_some(ids)
}

/// T22 on any server: [`check`] on a data-parallel one, Unknown on a server of one engine
/// (what the Python API answers; the run prints T22 only for a data-parallel server).
pub fn judge(
    before: &Snapshot,
    after: &Snapshot,
    series: Option<&Series>,
    engine: Engine,
) -> CheckResult {
    match engines(after, engine) {
        Some(ids) => check(before, after, series, &ids, engine),
        None => CheckResult::unknown(
            Tripwire::T22,
            "one engine: no data-parallel engines whose balance to judge",
        ),
    }
}

/// T22 on a data-parallel server ([`engines`]): the busiest engine's share of the requests
/// finished between the snapshots against an even share, with each engine's mean running
/// requests over the recording's busy samples beside it.
pub fn check(
    before: &Snapshot,
    after: &Snapshot,
    series: Option<&Series>,
    ids: &[String],
    engine: Engine,
) -> CheckResult {
    let n = ids.len() as f64;
    let mut ev = T22Evidence {
        even_share: Some(JsonF64(1.0 / n)),
        ..Default::default()
    };
    let Some(finished) = engine.metrics().finished else {
        return CheckResult::unknown(
            Tripwire::T22,
            format!(
                "{} counts no finished requests: how the load was spread cannot be told",
                engine.name()
            ),
        )
        .with_evidence(ev);
    };
    let running = series.map(|s| mean_running(s, ids));
    let per = match finished_per_engine(before, after, ids, finished, running.as_deref()) {
        Ok(per) => per,
        Err((restarted, why)) => {
            ev.restarted = restarted.then_some(true);
            return CheckResult::unknown(Tripwire::T22, why).with_evidence(ev);
        }
    };
    let total: f64 = per.values().map(|e| e.finished).sum();
    ev.finished = Some(total);
    let Some((busiest, most)) = per
        .iter()
        .max_by(|a, b| a.1.finished.total_cmp(&b.1.finished))
        .map(|(id, e)| (id.clone(), e.finished))
    else {
        return CheckResult::unknown(Tripwire::T22, "no engine counted a request")
            .with_evidence(ev);
    };
    let counts = counts_text(&per);
    ev.engines = Some(per);
    if total < MIN_PER_ENGINE * n {
        return CheckResult::unknown(
            Tripwire::T22,
            format!(
                "{} requests finished on {} engines ({counts}): too few to tell how the load was spread",
                thousands_f(total, 0),
                ids.len()
            ),
        )
        .with_evidence(ev);
    }
    let share = most / total;
    ev.busiest = Some(busiest.clone());
    ev.busiest_share = Some(JsonF64(share));
    let running_text = running_text(ev.engines.as_ref());
    if share >= UNEVEN / n {
        CheckResult::warn(
            Tripwire::T22,
            format!(
                "engine {busiest} finished {} of the {} requests ({}; an even share is {}){running_text}: the figures describe one engine's queue, not the {} engines' capacity",
                thousands_f(most, 0),
                thousands_f(total, 0),
                pct(share, 0),
                pct(1.0 / n, 0),
                ids.len()
            ),
        )
        .with_evidence(ev)
    } else {
        CheckResult::pass(
            Tripwire::T22,
            format!(
                "{} engines shared the load: {counts} requests finished (the busiest {}; an even share is {}){running_text}",
                ids.len(),
                pct(share, 0),
                pct(1.0 / n, 0)
            ),
        )
        .with_evidence(ev)
    }
}

/// Each engine's requests finished between the snapshots, with its mean running requests where
/// there is a recording; Err with whether a restart is why, and the reason, when a delta cannot
/// be told.
fn finished_per_engine(
    before: &Snapshot,
    after: &Snapshot,
    ids: &[String],
    finished: &str,
    running: Option<&[Option<f64>]>,
) -> Result<IndexMap<String, EngineShare>, (bool, String)> {
    let mut per = IndexMap::new();
    for (i, id) in ids.iter().enumerate() {
        let only = [(ENGINE_LABEL, id.as_str())];
        let q = CounterQuery::new(finished).with_labels(&only);
        let done = match snapshot_delta(before, after, &q) {
            Ok(d) => d,
            Err(DeltaError::Restarted(r)) => return Err((true, r.to_string())),
            Err(e) => {
                return Err((
                    false,
                    format!("engine {id}: {e}: how the engines shared the load cannot be told"),
                ))
            }
        };
        let mean = running.and_then(|r| r[i]);
        per.insert(
            id.clone(),
            EngineShare {
                finished: done,
                mean_running: mean.map(JsonF64),
            },
        );
    }
    Ok(per)
}

/// `6 and 6`, `12, 0 and 0`: each engine's finished requests in id order.
fn counts_text(per: &IndexMap<String, EngineShare>) -> String {
    let counts: Vec<String> = per.values().map(|e| thousands_f(e.finished, 0)).collect();
    match counts.as_slice() {
        [rest @ .., last] if !rest.is_empty() => format!("{} and {last}", rest.join(", ")),
        _ => counts.join(""),
    }
}

/// `, running 3.9 and 0 on average while busy`, or nothing without a recording.
fn running_text(per: Option<&IndexMap<String, EngineShare>>) -> String {
    let Some(per) = per else {
        return String::new();
    };
    let means: Option<Vec<String>> = per
        .values()
        .map(|e| e.mean_running.map(|m| g(round1(m.0))))
        .collect();
    match means.as_deref() {
        Some([rest @ .., last]) if !rest.is_empty() => {
            format!(
                ", running {} and {last} on average while busy",
                rest.join(", ")
            )
        }
        _ => String::new(),
    }
}

fn round1(x: f64) -> f64 {
    (x * 10.0).round() / 10.0
}

/// Each engine's mean running requests over the samples on which the server ran any; None for
/// an engine with no gauge on those samples.
fn mean_running(series: &Series, ids: &[String]) -> Vec<Option<f64>> {
    let mut sums = vec![(0.0, 0u64); ids.len()];
    for s in &series.samples {
        let per = s.per_engine();
        if per.iter().filter_map(|e| e.running).sum::<f64>() <= 0.0 {
            continue;
        }
        for (i, id) in ids.iter().enumerate() {
            if let Some(r) = per.iter().find(|e| &e.engine == id).and_then(|e| e.running) {
                sums[i].0 += r;
                sums[i].1 += 1;
            }
        }
    }
    sums.into_iter()
        .map(|(sum, k)| (k > 0).then(|| sum / k as f64))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::result::Status;
    use crate::testkit::snapshot_from_prom;

    fn snap(e0: f64, e1: f64) -> Snapshot {
        snapshot_from_prom(&format!(
            "vllm:request_success_total{{engine=\"0\",finished_reason=\"length\"}} {e0}\n\
             vllm:request_success_total{{engine=\"1\",finished_reason=\"length\"}} {e1}\n\
             vllm:num_requests_running{{engine=\"0\"}} 0\nvllm:num_requests_running{{engine=\"1\"}} 0\n"
        ))
    }

    fn judge(e0: f64, e1: f64) -> CheckResult {
        let (b, a) = (snap(0.0, 0.0), snap(e0, e1));
        let ids = engines(&a, Engine::Vllm).unwrap();
        check(&b, &a, None, &ids, Engine::Vllm)
    }

    #[test]
    fn one_engine_carrying_the_load_warns_and_an_even_split_passes() {
        let r = judge(12.0, 0.0);
        assert_eq!(r.status, Status::Warn, "{}", r.message);
        assert!(
            r.message.starts_with(
                "engine 0 finished 12 of the 12 requests (100%; an even share is 50%)"
            ),
            "{}",
            r.message
        );
        let r = judge(6.0, 6.0);
        assert_eq!(r.status, Status::Pass, "{}", r.message);
        assert_eq!(
            r.message,
            "2 engines shared the load: 6 and 6 requests finished (the busiest 50%; an even share is 50%)"
        );
        // The threshold: 9 of 12 is 75 %, 1.5 times an even share.
        assert_eq!(judge(9.0, 3.0).status, Status::Warn);
        assert_eq!(judge(8.0, 4.0).status, Status::Pass);
    }

    #[test]
    fn too_few_requests_and_a_one_engine_server_cannot_tell() {
        assert_eq!(judge(3.0, 0.0).status, Status::Unknown);
        let one = snapshot_from_prom("vllm:request_success_total{engine=\"0\"} 4\n");
        assert!(engines(&one, Engine::Vllm).is_none());
    }
}
