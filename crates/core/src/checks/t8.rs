//! T8 concurrency-not-reached: the load kept N requests open, the server never ran N at once
//! (docs/design/tripwires.md#t8).

use serde_json::{Map, Value};

use crate::bootlog::BootFacts;
use crate::engine::Engine;
use crate::evidence::{JsonF64, T8Evidence};
use crate::fmt::g;
use crate::result::{CheckResult, Tripwire};
use crate::series::Series;

/// What the engine needs to serve its running, waiting and KV gauges, for messages about their
/// absence; empty for engines that always serve them.
pub fn gauges_hint(engine: Engine) -> &'static str {
    match engine {
        Engine::Trtllm => "TensorRT-LLM serves its running, waiting and KV gauges only with 'enable_iter_perf_stats: true' in the YAML file given to trtllm-serve --config",
        Engine::Llamacpp => "llama.cpp serves its gauges only when llama-server is started with --metrics",
        Engine::Vllm | Engine::Sglang => "",
    }
}

/// The server's own limit on requests running at once, from its boot log.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RunningLimit {
    pub value: u64,
    /// Why the server lowered it (SGLang: `mamba state cache`).
    pub reason: Option<String>,
    /// The limit it was started with, when it lowered it.
    pub requested: Option<u64>,
}

impl RunningLimit {
    /// Whether the server settled on less than it was started with, and said why.
    pub fn lowered(&self) -> bool {
        self.reason.is_some() && self.requested.is_some_and(|r| r > self.value)
    }

    /// How the limit was set, for a message: `the server runs at most 10 at once
    /// (--max-num-seqs 10)`, or the engine's own lowering of it with its reason.
    pub fn sentence(&self, engine: Engine) -> String {
        let v = self.value;
        if self.lowered() {
            return format!(
                "{} lowered its limit to {v} running because of the {}, although it was started with --max-running-requests {}",
                engine.name(),
                self.reason.as_deref().unwrap_or_default(),
                self.requested.unwrap_or_default()
            );
        }
        format!(
            "the server runs at most {v} at once ({} {v})",
            limit_flag(engine)
        )
    }
}

/// The flag that sets the running limit.
pub fn limit_flag(engine: Engine) -> &'static str {
    match engine {
        Engine::Vllm => "--max-num-seqs",
        Engine::Sglang | Engine::Trtllm => "--max-running-requests",
        Engine::Llamacpp => "--parallel",
    }
}

/// The running limit the boot log shows: vLLM's non-default `max_num_seqs`, SGLang's settled
/// limit (with the reason it was lowered), TensorRT-LLM's `max_num_requests`, llama.cpp's slots.
pub fn running_limit(facts: &BootFacts, engine: Engine) -> Option<RunningLimit> {
    match engine {
        Engine::Vllm => Some(RunningLimit {
            value: arg_u64(facts.non_default_args.as_ref(), "max_num_seqs")?,
            reason: None,
            requested: None,
        }),
        Engine::Sglang => Some(RunningLimit {
            value: facts.running_cap?,
            reason: facts.running_cap_reason.clone(),
            requested: facts.requested_running,
        }),
        Engine::Trtllm | Engine::Llamacpp => Some(RunningLimit {
            value: facts.running_cap?,
            reason: None,
            requested: None,
        }),
    }
}

/// A whole-number setting from an args dict (a number, or digits in a string).
fn arg_u64(args: Option<&Map<String, Value>>, key: &str) -> Option<u64> {
    match args?.get(key)? {
        Value::Number(n) => n.as_u64().or_else(|| {
            n.as_f64()
                .filter(|f| *f >= 0.0 && f.fract() == 0.0)
                .map(|f| f as u64)
        }),
        Value::String(s) => s.trim().parse().ok(),
        _ => None,
    }
}

/// Compares the requested concurrency with the most requests the recording saw running.
pub fn check(
    series: &Series,
    requested: u64,
    facts: Option<&BootFacts>,
    engine: Engine,
) -> CheckResult {
    let vllm_args = facts
        .filter(|_| engine == Engine::Vllm)
        .and_then(|f| f.non_default_args.as_ref());
    // A data-parallel server runs its requests on several engines, each with its own running
    // limit: the server's is their sum (docs/tripwires.md, "Data-parallel servers").
    let ids = series.engine_ids();
    let peaks = series.peaks();
    let seen = Seen {
        requested,
        peak: peaks.running,
        peak_in_flight: peaks.in_flight,
        queued_reqs: arg_u64(vllm_args, "max_num_queued_reqs"),
        queued_tokens: arg_u64(vllm_args, "max_num_queued_tokens"),
        limit: facts.and_then(|f| running_limit(f, engine)),
        engines: ids.len().max(1) as u64,
    };
    let r = verdict(&seen, engine);
    with_evidence(r, &seen, &ids, series, facts, engine)
}

/// What the recording and the boot log say about the requests that ran.
struct Seen {
    requested: u64,
    /// The most requests any sample saw running.
    peak: Option<f64>,
    /// The most requests any sample saw running or waiting.
    peak_in_flight: Option<f64>,
    /// vLLM's admission control, when set.
    queued_reqs: Option<u64>,
    queued_tokens: Option<u64>,
    limit: Option<RunningLimit>,
    /// Engines of the server, 1 unless it is data-parallel.
    engines: u64,
}

/// The largest of the numbers that are not NaN.
fn max_of(xs: impl Iterator<Item = f64>) -> Option<f64> {
    xs.filter(|x| !x.is_nan())
        .fold(None, |m: Option<f64>, x| Some(m.map_or(x, |m| m.max(x))))
}

/// The verdict and message, before the evidence.
fn verdict(seen: &Seen, engine: Engine) -> CheckResult {
    let requested = seen.requested;
    let Some(peak) = seen.peak else {
        let mut msg = "series has no num_requests_running samples".to_string();
        let hint = gauges_hint(engine);
        if !hint.is_empty() {
            msg.push_str("; ");
            msg.push_str(hint);
        }
        return CheckResult::unknown(Tripwire::T8, msg);
    };
    let n = requested as f64;
    // No sample saw a request: the load sent none the engine saw (a client that failed at once,
    // every request refused before the queue), or each ended between two samples. Neither is a
    // server that held requests back: can't tell, as T16 says for an empty window.
    if peak == 0.0 && seen.peak_in_flight.is_none_or(|f| f == 0.0) && n > 0.0 {
        return CheckResult::unknown(
            Tripwire::T8,
            format!(
                "requested {requested} concurrent, but no sample saw a request running or waiting: the load sent none, none reached the engine, or each ended between two samples (the load's exit code, T15 and T17 say which)"
            ),
        );
    }
    if peak >= n {
        return CheckResult::pass(
            Tripwire::T8,
            format!("reached {} running (requested {requested})", g(peak)),
        );
    }
    if engine.gauges_lag() {
        return CheckResult::unknown(
            Tripwire::T8,
            format!(
                "requested {requested} concurrent, the recording never showed more than {}; {} updates the gauge only when a request completes, so it may have run more in between",
                g(peak),
                engine.name()
            ),
        );
    }
    CheckResult::fail(Tripwire::T8, fail_message(seen, peak, engine))
}

/// Why fewer ran than were asked for, where the server says: admission control, or its running
/// limit reached.
fn fail_message(seen: &Seen, peak: f64, engine: Engine) -> String {
    let (requested, engines) = (seen.requested, seen.engines);
    let mut msg = format!(
        "requested {requested} concurrent, server never ran more than {}",
        g(peak)
    );
    if let (Some(cap), Some(in_flight)) = (seen.queued_reqs, seen.peak_in_flight) {
        if cap < requested && in_flight >= cap as f64 {
            msg.push_str(&format!(
                "; admission control (--max-num-queued-reqs {cap}) kept at most {cap} in flight, so the other {} were rejected, not queued",
                requested - cap
            ));
        }
    }
    if let Some(limit) = seen.limit.as_ref() {
        let server_cap = limit.value.saturating_mul(engines);
        if engines > 1 && server_cap < requested && peak >= server_cap as f64 {
            msg.push_str(&format!(
                "; the server runs at most {server_cap} at once ({} {} on each of its {engines} engines)",
                limit_flag(engine),
                limit.value
            ));
        } else if engines == 1 && limit.value < requested && peak >= limit.value as f64 {
            msg.push_str(&format!("; {}", limit.sentence(engine)));
        }
    }
    msg
}

/// The result with T8's evidence, each engine's peak included for a data-parallel server.
fn with_evidence(
    r: CheckResult,
    seen: &Seen,
    ids: &[String],
    series: &Series,
    facts: Option<&BootFacts>,
    engine: Engine,
) -> CheckResult {
    let engines = seen.engines;
    let per_engine =
        (engines > 1).then(|| {
            ids.iter()
                .map(|id| {
                    let peak =
                        max_of(series.samples.iter().filter_map(|s| {
                            s.per_engine().iter().find(|e| e.engine == *id)?.running
                        }));
                    (id.clone(), peak.map(JsonF64))
                })
                .collect()
        });
    r.with_evidence(T8Evidence {
        engines: (engines > 1).then_some(engines),
        peak_running_per_engine: per_engine,
        requested: Some(seen.requested),
        peak_running: Some(seen.peak),
        peak_in_flight: Some(seen.peak_in_flight),
        boot_line_max_concurrency: Some(facts.and_then(|f| f.max_concurrency)),
        boot_line_request_len: Some(facts.and_then(|f| f.max_concurrency_request_len)),
        max_num_queued_reqs: Some(seen.queued_reqs),
        max_num_queued_tokens: Some(seen.queued_tokens),
        running_cap: Some(seen.limit.as_ref().map(|l| l.value)),
        gauges_lag: Some(engine.gauges_lag()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::result::Status;
    use crate::series::{Readings, SeriesHeader, SeriesSample};

    fn series(rows: &[(Option<f64>, Option<f64>)]) -> Series {
        let samples = rows
            .iter()
            .map(|&(running, waiting)| {
                SeriesSample::from(Readings {
                    running,
                    waiting,
                    ..Readings::default()
                })
            })
            .collect();
        Series::from_samples(
            SeriesHeader {
                url: String::new(),
                interval_s: 0.25,
                engine: None,
            },
            samples,
        )
    }

    fn args(pairs: &[(&str, Value)]) -> BootFacts {
        let map: Map<String, Value> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.clone()))
            .collect();
        BootFacts {
            non_default_args: Some(map),
            ..Default::default()
        }
    }

    #[test]
    fn the_boundary_is_exact() {
        let s = series(&[(Some(3.0), Some(1.0)), (Some(4.0), Some(0.0))]);
        assert_eq!(check(&s, 4, None, Engine::Vllm).status, Status::Pass);
        assert_eq!(
            check(&s, 4, None, Engine::Vllm).message,
            "reached 4 running (requested 4)"
        );
        let r = check(&s, 5, None, Engine::Vllm);
        assert_eq!(r.status, Status::Fail);
        assert_eq!(
            r.message,
            "requested 5 concurrent, server never ran more than 4"
        );
    }

    #[test]
    fn a_load_that_sent_nothing_is_unknown_not_a_failure() {
        let idle = series(&[(Some(0.0), Some(0.0)), (Some(0.0), Some(0.0))]);
        let r = check(&idle, 4, None, Engine::Sglang);
        assert_eq!(r.status, Status::Unknown, "{}", r.message);
        assert!(
            r.message.contains("no sample saw a request"),
            "{}",
            r.message
        );
        // One request seen (running, or only waiting) is evidence: the rule judges again.
        let one = series(&[(Some(0.0), Some(0.0)), (Some(1.0), Some(0.0))]);
        assert_eq!(check(&one, 4, None, Engine::Sglang).status, Status::Fail);
        let queued = series(&[(Some(0.0), Some(3.0))]);
        assert_eq!(check(&queued, 4, None, Engine::Sglang).status, Status::Fail);
    }

    #[test]
    fn admission_control_and_the_running_limit_are_named() {
        let s = series(&[(Some(11.0), Some(5.0)), (Some(10.0), Some(6.0))]);
        let facts = args(&[("max_num_queued_reqs", Value::from(16))]);
        let r = check(&s, 32, Some(&facts), Engine::Vllm);
        assert_eq!(
            r.message,
            "requested 32 concurrent, server never ran more than 11; admission control (--max-num-queued-reqs 16) kept at most 16 in flight, so the other 16 were rejected, not queued"
        );
        assert_eq!(r.evidence_json()["peak_in_flight"], 16.0);
        let facts = args(&[("max_num_seqs", Value::from(11))]);
        assert_eq!(
            check(&s, 32, Some(&facts), Engine::Vllm).message,
            "requested 32 concurrent, server never ran more than 11; the server runs at most 11 at once (--max-num-seqs 11)"
        );
        // A limit that was not reached is not the reason.
        let facts = args(&[("max_num_seqs", Value::from(16))]);
        assert_eq!(
            check(&s, 32, Some(&facts), Engine::Vllm).message,
            "requested 32 concurrent, server never ran more than 11"
        );
    }

    #[test]
    fn sglang_names_its_lowered_limit() {
        let s = series(&[(Some(1.0), Some(31.0))]);
        let facts = BootFacts {
            running_cap: Some(1),
            running_cap_reason: Some("mamba state cache".into()),
            requested_running: Some(32),
            ..Default::default()
        };
        assert_eq!(
            check(&s, 32, Some(&facts), Engine::Sglang).message,
            "requested 32 concurrent, server never ran more than 1; SGLang lowered its limit to 1 running because of the mamba state cache, although it was started with --max-running-requests 32"
        );
        let plain = BootFacts {
            running_cap: Some(1),
            ..Default::default()
        };
        assert_eq!(
            check(&s, 32, Some(&plain), Engine::Sglang).message,
            "requested 32 concurrent, server never ran more than 1; the server runs at most 1 at once (--max-running-requests 1)"
        );
    }

    #[test]
    fn lagging_gauges_and_missing_gauges_are_unknown() {
        let s = series(&[(Some(30.0), Some(0.0))]);
        let r = check(&s, 32, None, Engine::Trtllm);
        assert_eq!(r.status, Status::Unknown);
        assert!(r.message.ends_with("so it may have run more in between"));
        assert_eq!(r.evidence_json()["gauges_lag"], true);
        let empty = series(&[(None, None)]);
        let r = check(&empty, 32, None, Engine::Vllm);
        assert_eq!(r.status, Status::Unknown);
        assert_eq!(r.message, "series has no num_requests_running samples");
        let r = check(&empty, 32, None, Engine::Trtllm);
        assert_eq!(
            r.message,
            format!(
                "series has no num_requests_running samples; {}",
                gauges_hint(Engine::Trtllm)
            )
        );
        assert_eq!(gauges_hint(Engine::Vllm), "");
    }
}
