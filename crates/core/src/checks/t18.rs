//! T18 short-outputs: requests that ended at end-of-sequence before the output length the load
//! asked for (docs/design/tripwires.md#t18).

use crate::bench::BenchResult;
use crate::checks::counters::{finished_reason_delta, DeltaError};
use crate::engine::Engine;
use crate::evidence::{JsonF64, T18Evidence};
use crate::fmt::{pct, thousands_f};
use crate::load::LoadIntent;
use crate::result::{CheckResult, Tripwire};
use crate::snapshot::Snapshot;

/// T18 on the engine's finished-reason counts between the snapshots and the load tool's
/// per-request output lengths; either may be missing.
pub fn check(
    load: &LoadIntent,
    result: Option<&BenchResult>,
    server: Option<(&Snapshot, &Snapshot)>,
    engine: Engine,
) -> CheckResult {
    if load.tool.is_none() {
        return CheckResult::unknown(
            Tripwire::T18,
            "the load is no known benchmark client: which output length it asked for cannot be told",
        );
    }
    if !load.fixed_output() {
        return CheckResult::not_applicable(
            Tripwire::T18,
            "the load asked for no fixed output length: requests end where the model stops",
        );
    }
    let mut ev = T18Evidence {
        asked_output_len: load.output_len,
        ignore_eos: Some(load.ignore_eos),
        ..Default::default()
    };
    match server.map(|(b, a)| reasons(b, a, engine)) {
        Some(Err(DeltaError::Restarted(r))) => {
            ev.restarted = Some(true);
            return CheckResult::unknown(Tripwire::T18, r.to_string()).with_evidence(ev);
        }
        Some(Ok((stop, length))) => {
            ev.server_stop = Some(stop);
            ev.server_length = Some(length);
        }
        Some(Err(DeltaError::Absent { .. } | DeltaError::NotCounted { .. })) | None => {}
    }
    if let (Some(asked), Some(r)) = (load.output_len, result) {
        client_lengths(&mut ev, asked, r);
    }
    // The server's count of end-of-sequence stops is the direct one; the client's shortfall
    // stands in where the engine has no finished_reason label.
    let (early, of) = match (ev.server_stop, ev.server_length, ev.client_short, ev.client_requests) {
        (Some(stop), Some(length), _, _) if stop + length > 0.0 => (stop, stop + length),
        (_, _, Some(short), Some(n)) => (short as f64, n as f64),
        (Some(_), Some(_), _, _) => {
            return CheckResult::unknown(
                Tripwire::T18,
                "no request ran to its end in the window (T17 says which requests failed)",
            )
            .with_evidence(ev)
        }
        _ => {
            return CheckResult::unknown(
                Tripwire::T18,
                "neither the server's finished reasons nor the load tool's output lengths are there: early stops cannot be told",
            )
            .with_evidence(ev)
        }
    };
    ev.stopped_early = Some(early);
    early_stops(load, early, of, ev.median_short_len).with_evidence(ev)
}

/// The load tool's requests that ran and those shorter than `asked`, with their median length.
fn client_lengths(ev: &mut T18Evidence, asked: u64, r: &BenchResult) {
    // Failed requests are written with length 0: they did not stop, they never ran.
    let ran: Vec<f64> = r.output_lens.iter().copied().filter(|n| *n > 0.0).collect();
    if !ran.is_empty() {
        let mut short: Vec<f64> = ran.iter().copied().filter(|n| *n < asked as f64).collect();
        ev.client_requests = Some(ran.len() as u64);
        ev.client_short = Some(short.len() as u64);
        ev.median_short_len = median(&mut short).map(JsonF64);
    }
}

/// The verdict on `early` of `of` requests stopping at end-of-sequence: a failure when the load
/// asked to ignore it, a warning when it did not.
fn early_stops(load: &LoadIntent, early: f64, of: f64, median: Option<JsonF64>) -> CheckResult {
    let asked = load.output_len.map_or_else(
        || "length asked".to_string(),
        |n| format!("{n} tokens asked"),
    );
    if early == 0.0 {
        return CheckResult::pass(
            Tripwire::T18,
            format!("all {} requests ran to the {asked}", thousands_f(of, 0)),
        );
    }
    let median = median
        .map(|m| format!(", median {} tokens", thousands_f(m.0, 0)))
        .unwrap_or_default();
    let msg = format!(
        "{} of {} requests ({}) stopped at end-of-sequence before the {asked}{median}",
        thousands_f(early, 0),
        thousands_f(of, 0),
        pct(early / of, 0)
    );
    if load.ignore_eos {
        CheckResult::fail(
            Tripwire::T18,
            format!("{msg}, although the load asked to ignore end-of-sequence: the option did not reach the server, so tokens per second is over shorter outputs than asked"),
        )
    } else {
        CheckResult::warn(
            Tripwire::T18,
            format!("{msg}: tokens per second compares runs of different lengths; add --ignore-eos for outputs of the length asked"),
        )
    }
}

/// The engine's `stop` and `length` finished-reason deltas.
fn reasons(before: &Snapshot, after: &Snapshot, engine: Engine) -> Result<(f64, f64), DeltaError> {
    let delta = |reason| finished_reason_delta(before, after, engine, reason);
    match (delta("stop")?, delta("length")?) {
        (Some(stop), Some(length)) => Ok((stop, length)),
        _ => Err(match engine.metrics().finished {
            Some(f) => DeltaError::Absent {
                name: format!("{f}{{finished_reason}}"),
            },
            None => DeltaError::NotCounted {
                engine: engine.name(),
                what: "requests by how they ended",
            },
        }),
    }
}

/// The median of `xs` (sorted in place); None when empty.
pub(crate) fn median(xs: &mut [f64]) -> Option<f64> {
    if xs.is_empty() {
        return None;
    }
    xs.sort_by(f64::total_cmp);
    let n = xs.len();
    Some(if n % 2 == 1 {
        xs[n / 2]
    } else {
        f64::midpoint(xs[n / 2 - 1], xs[n / 2])
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::result::Status;
    use crate::testkit::snapshot_from_prom;

    fn snap(stop: f64, length: f64) -> Snapshot {
        snapshot_from_prom(&format!(
            "vllm:request_success_total{{finished_reason=\"stop\"}} {stop}\n\
             vllm:request_success_total{{finished_reason=\"length\"}} {length}\n"
        ))
    }

    fn load(cmd: &str) -> LoadIntent {
        crate::load::intent(&cmd.split(' ').map(str::to_string).collect::<Vec<_>>())
    }

    #[test]
    fn early_stops_warn_and_fail_under_ignore_eos() {
        let fixed = load("vllm bench serve --dataset-name custom --custom-output-len 200");
        let r = check(
            &fixed,
            None,
            Some((&snap(0.0, 0.0), &snap(5.0, 3.0))),
            Engine::Vllm,
        );
        assert_eq!(r.status, Status::Warn);
        assert!(
            r.message.starts_with(
                "5 of 8 requests (62%) stopped at end-of-sequence before the 200 tokens asked: "
            ),
            "{}",
            r.message
        );
        let r = check(
            &fixed,
            None,
            Some((&snap(0.0, 0.0), &snap(0.0, 8.0))),
            Engine::Vllm,
        );
        assert_eq!(
            (r.status, r.message.as_str()),
            (Status::Pass, "all 8 requests ran to the 200 tokens asked")
        );
        let eos = load("vllm bench serve --ignore-eos --random-output-len 200");
        let r = check(
            &eos,
            None,
            Some((&snap(0.0, 0.0), &snap(1.0, 7.0))),
            Engine::Vllm,
        );
        assert_eq!(r.status, Status::Fail);
    }

    #[test]
    fn the_clients_lengths_stand_in_for_a_missing_label() {
        let fixed = load("python -m sglang.bench_serving --dataset-name random --random-output-len 100 --disable-ignore-eos");
        let b = BenchResult {
            output_lens: vec![100.0, 40.0, 0.0, 30.0, 100.0],
            ..Default::default()
        };
        let r = check(&fixed, Some(&b), None, Engine::Sglang);
        assert_eq!(r.status, Status::Warn);
        assert!(r.message.starts_with("2 of 4 requests (50%) stopped at end-of-sequence before the 100 tokens asked, median 35 tokens"), "{}", r.message);
    }

    #[test]
    fn no_fixed_length_does_not_apply_and_no_signal_is_unknown() {
        let free = load("vllm bench serve --dataset-name sharegpt");
        assert_eq!(
            check(&free, None, None, Engine::Vllm).status,
            Status::NotApplicable
        );
        let fixed = load("vllm bench serve --random-output-len 16");
        assert_eq!(
            check(&fixed, None, None, Engine::Vllm).status,
            Status::Unknown
        );
        assert_eq!(
            check(&LoadIntent::unknown(), None, None, Engine::Vllm).status,
            Status::Unknown
        );
    }
}
