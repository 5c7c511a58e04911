//! T17 failed-requests: requests of the measured window that did not finish, as the load tool
//! and the server count them (docs/design/tripwires.md#t17).

use indexmap::IndexMap;

use crate::bench::BenchResult;
use crate::checks::counters::{
    finished_reason_delta, restart_between, snapshot_delta, CounterQuery, DeltaError, Restart,
};
use crate::engine::{Engine, HttpCounter};
use crate::evidence::{RefusedCounts, T17Evidence};
use crate::fmt::{shorten, thousands_f};
use crate::prom::Metrics;
use crate::result::{CheckResult, Tripwire};
use crate::snapshot::Snapshot;

/// The endpoints that take inference requests: a refusal there is a request of the load.
pub const INFERENCE_ENDPOINTS: [&str; 6] = [
    "/v1/completions",
    "/v1/chat/completions",
    "/v1/responses",
    "/v1/embeddings",
    "/generate",
    "/invocations",
];

/// The longest first error quoted in a message.
const ERROR_CHARS: usize = 160;

/// What the server's counters say of the window's failed requests.
#[derive(Clone, Debug, Default, PartialEq)]
struct ServerFailures {
    aborted: Option<f64>,
    errored: Option<f64>,
    refused: IndexMap<String, RefusedCounts>,
}

impl ServerFailures {
    fn refused_total(&self) -> f64 {
        self.refused
            .values()
            .map(|r| r.client_errors + r.server_errors)
            .sum()
    }
    fn total(&self) -> f64 {
        self.aborted.unwrap_or(0.0) + self.errored.unwrap_or(0.0) + self.refused_total()
    }
}

/// T17 on the load tool's result and the server's snapshots around the load, either of which
/// may be missing (never both: the caller then has nothing to decide on).
pub fn check(
    result: Option<&BenchResult>,
    server: Option<(&Snapshot, &Snapshot)>,
    engine: Engine,
) -> CheckResult {
    let mut ev = T17Evidence {
        result_file: result.map(|r| r.path.clone()),
        client_completed: result.and_then(|r| r.completed),
        client_failed: result.and_then(|r| r.failed),
        first_error: result.and_then(|r| r.first_error.clone()),
        ..Default::default()
    };
    // An engine that counts no failures at all (llama.cpp).
    let mut uncounted = false;
    let failures = match server.map(|(b, a)| server_failures(b, a, engine)) {
        Some(Err(DeltaError::Restarted(r))) => {
            ev.restarted = Some(true);
            return CheckResult::unknown(Tripwire::T17, r.to_string()).with_evidence(ev);
        }
        Some(Err(DeltaError::NotCounted { .. })) => {
            uncounted = true;
            None
        }
        Some(Err(DeltaError::Absent { .. })) | None => None,
        Some(Ok(f)) => Some(f),
    };
    if let Some(f) = &failures {
        ev.server_aborted = f.aborted;
        ev.server_errored = f.errored;
        ev.refused = (!f.refused.is_empty()).then(|| f.refused.clone());
    }
    let client_failed = ev.client_failed.unwrap_or(0.0);
    let server_failed = failures.as_ref().map_or(0.0, ServerFailures::total);
    // A refused request is failed for the client and refused for the server: the same request
    // counted twice, so the larger count is how many failed.
    let failed = client_failed.max(server_failed);
    if failed > 0.0 {
        ev.failed = Some(failed);
        let msg = failure_message(&ev, failures.as_ref(), failed, engine);
        return CheckResult::fail(Tripwire::T17, msg).with_evidence(ev);
    }
    // An engine that counts no failures leaves the client's count as the whole account.
    let Some(r) = result.filter(|_| failures.is_some() || uncounted) else {
        let why = if result.is_none() {
            "the server aborted, errored and refused none, but without the load tool's result its own failures (timeouts, lost connections) are unknown"
        } else {
            "the load tool counted no failure, but the server's counters are missing: aborts, errors and refusals cannot be told"
        };
        return CheckResult::unknown(Tripwire::T17, why).with_evidence(ev);
    };
    match r.completed {
        Some(c) if c > 0.0 => {
            let none = if uncounted {
                format!(
                    "none failed, by the load tool's count ({} counts no aborted or failed requests)",
                    engine.name()
                )
            } else {
                "none failed, aborted or refused".to_string()
            };
            CheckResult::pass(
                Tripwire::T17,
                format!("every request finished: {} completed, {none}", thousands_f(c, 0)),
            )
        }
        Some(_) => CheckResult::unknown(Tripwire::T17, "the load tool completed no request and counted none failed: the window measured nothing"),
        None => CheckResult::unknown(Tripwire::T17, "the result file has no completed count"),
    }
    .with_evidence(ev)
}

/// What a client says when the server closed a connection it had sent a request on, or was
/// sending one on: aiohttp's (both, seen against llama-server in the real lane), httpx's and
/// http.client's words.
const DISCONNECTED: [&str; 4] = [
    "ServerDisconnectedError",
    "Cannot write to closing transport",
    "Server disconnected without sending a response",
    "RemoteDisconnected",
];

/// The known cause of failures whose first error is `error` on `engine`, said after it.
/// llama-server ends the connection after every streamed response while its headers announce
/// keep-alive, so a pooling client that sends the next request on it at once loses that request
/// (docs/engines.md#where-the-tripwires-differ, recorded in tests/fixtures/llamacpp-0.6-cpu/).
fn known_cause(engine: Engine, error: Option<&str>) -> Option<&'static str> {
    let disconnected = error.is_some_and(|e| DISCONNECTED.iter().any(|d| e.contains(d)));
    (engine == Engine::Llamacpp && disconnected).then_some(
        "; llama-server closes the connection after each streamed response although its headers keep it alive, so a client that sends its next request on it at once loses that request: send `Connection: close` with each request (vllm bench serve --header Connection=close)",
    )
}

fn failure_message(
    ev: &T17Evidence,
    server: Option<&ServerFailures>,
    failed: f64,
    engine: Engine,
) -> String {
    let mut parts = Vec::new();
    if let Some(n) = ev.client_failed.filter(|n| *n > 0.0) {
        parts.push(format!(
            "the load tool counted {} failed",
            thousands_f(n, 0)
        ));
    }
    if let Some(s) = server {
        let refused = s.refused_total();
        if refused > 0.0 {
            let where_: Vec<String> = s
                .refused
                .iter()
                .filter(|(_, r)| r.client_errors + r.server_errors > 0.0)
                .map(
                    |(h, r)| match (r.client_errors > 0.0, r.server_errors > 0.0) {
                        (true, false) => {
                            format!("{} × 4xx on {h}", thousands_f(r.client_errors, 0))
                        }
                        (false, true) => {
                            format!("{} × 5xx on {h}", thousands_f(r.server_errors, 0))
                        }
                        _ => format!(
                            "{} × 4xx and {} × 5xx on {h}",
                            thousands_f(r.client_errors, 0),
                            thousands_f(r.server_errors, 0)
                        ),
                    },
                )
                .collect();
            parts.push(format!("the API server refused {}", where_.join(", ")));
        }
        if let Some(n) = s.aborted.filter(|n| *n > 0.0) {
            parts.push(format!("the engine aborted {}", thousands_f(n, 0)));
        }
        if let Some(n) = s.errored.filter(|n| *n > 0.0) {
            let counted = if ev.client_failed == Some(0.0) {
                ", which the load tool counted as successes"
            } else {
                ""
            };
            parts.push(format!(
                "the engine ended {} with an error{counted}",
                thousands_f(n, 0)
            ));
        }
    }
    let error = ev
        .first_error
        .as_deref()
        .map(|e| format!("; first error: {}", shorten(e.trim(), ERROR_CHARS)))
        .unwrap_or_default();
    let cause = known_cause(engine, ev.first_error.as_deref()).unwrap_or_default();
    let survivors = match ev.client_completed {
        Some(c) if c > 0.0 => format!(
            "; latency and throughput are over the {} that succeeded",
            thousands_f(c, 0)
        ),
        Some(_) => "; no request succeeded, so the benchmark's figures describe no served request"
            .to_string(),
        None => String::new(),
    };
    let total = ev
        .client_completed
        .map(|c| format!(" of {}", thousands_f(c + failed, 0)))
        .unwrap_or_default();
    format!(
        "{}{total} request{} failed ({}){error}{cause}{survivors}",
        thousands_f(failed, 0),
        if failed == 1.0 && total.is_empty() {
            ""
        } else {
            "s"
        },
        parts.join("; ")
    )
}

/// The engine's aborts and errors and the API server's refusals between the snapshots. The
/// engine counters are optional (an engine may lack the label); the refusals are read only
/// where the API server exports its request counter.
fn server_failures(
    before: &Snapshot,
    after: &Snapshot,
    engine: Engine,
) -> Result<ServerFailures, DeltaError> {
    if let Some(r) = restart_between(&before.metrics, &after.metrics) {
        return Err(DeltaError::Restarted(r));
    }
    let names = engine.metrics();
    let reason = |r: &'static str| finished_reason_delta(before, after, engine, r);
    let aborted = match names.aborted {
        Some(counter) => optional(snapshot_delta(before, after, &CounterQuery::new(counter)))?,
        None => reason("abort")?,
    };
    let errored = reason("error")?;
    let http = names.http.filter(|h| after.metrics.has(h.name));
    let refused = match http {
        Some(h) => refusals(&before.metrics, &after.metrics, h)?,
        None => IndexMap::new(),
    };
    if aborted.is_none() && errored.is_none() && http.is_none() {
        return Err(match names.finished {
            Some(f) => DeltaError::Absent {
                name: f.to_string(),
            },
            None => DeltaError::NotCounted {
                engine: engine.name(),
                what: "failed or aborted requests",
            },
        });
    }
    Ok(ServerFailures {
        aborted,
        errored,
        refused,
    })
}

fn optional(d: Result<f64, DeltaError>) -> Result<Option<f64>, DeltaError> {
    match d {
        Ok(v) => Ok(Some(v)),
        Err(DeltaError::Absent { .. }) => Ok(None),
        Err(e) => Err(e),
    }
}

/// 4xx and 5xx answers per inference endpoint between two readings of the API server's answer
/// counter; endpoints with neither are left out. A status's series appears at its first answer,
/// so one absent before started at 0.
fn refusals(
    before: &Metrics,
    after: &Metrics,
    http: HttpCounter,
) -> Result<IndexMap<String, RefusedCounts>, DeltaError> {
    let mut out: IndexMap<String, RefusedCounts> = IndexMap::new();
    for s in after.series(http.name, &[]) {
        let (Some(endpoint), Some(status)) = (s.label(http.endpoint), s.label(http.status)) else {
            continue;
        };
        if !INFERENCE_ENDPOINTS.contains(&endpoint) {
            continue;
        }
        let class = status.as_bytes().first().copied();
        if !matches!(class, Some(b'4' | b'5')) {
            continue;
        }
        let v0 = before
            .series(http.name, &[])
            .into_iter()
            .find(|b| b.labels == s.labels)
            .map_or(0.0, |b| b.value);
        if s.value < v0 {
            return Err(DeltaError::Restarted(Restart::WentDown {
                name: http.name.to_string(),
                before: v0,
                after: s.value,
            }));
        }
        let d = s.value - v0;
        if d <= 0.0 {
            continue;
        }
        let e = out.entry(endpoint.to_string()).or_default();
        if class == Some(b'4') {
            e.client_errors += d;
        } else {
            e.server_errors += d;
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::result::Status;
    use crate::testkit::snapshot_from_prom;

    fn snap(abort: f64, error: f64, refused: f64) -> Snapshot {
        snapshot_from_prom(&format!(
            "vllm:request_success_total{{finished_reason=\"length\"}} 8\n\
             vllm:request_success_total{{finished_reason=\"abort\"}} {abort}\n\
             vllm:request_success_total{{finished_reason=\"error\"}} {error}\n\
             http_requests_total{{handler=\"/v1/completions\",method=\"POST\",status=\"2xx\"}} 8\n\
             http_requests_total{{handler=\"/v1/completions\",method=\"POST\",status=\"4xx\"}} {refused}\n\
             http_requests_total{{handler=\"/metrics\",method=\"GET\",status=\"4xx\"}} 3\n"
        ))
    }

    fn bench(completed: f64, failed: f64) -> BenchResult {
        BenchResult {
            completed: Some(completed),
            failed: Some(failed),
            path: "bench.json".into(),
            ..Default::default()
        }
    }

    #[test]
    fn a_clean_window_passes_and_one_refusal_fails() {
        let b = snap(0.0, 0.0, 0.0);
        let r = check(Some(&bench(8.0, 0.0)), Some((&b, &b)), Engine::Vllm);
        assert_eq!(
            (r.status, r.message.as_str()),
            (
                Status::Pass,
                "every request finished: 8 completed, none failed, aborted or refused"
            )
        );
        let r = check(
            Some(&bench(7.0, 1.0)),
            Some((&b, &snap(0.0, 0.0, 1.0))),
            Engine::Vllm,
        );
        assert_eq!(r.status, Status::Fail);
        assert_eq!(r.message, "1 of 8 requests failed (the load tool counted 1 failed; the API server refused 1 × 4xx on /v1/completions); latency and throughput are over the 7 that succeeded");
    }

    #[test]
    fn an_in_band_error_counted_as_a_success_fails() {
        let r = check(
            Some(&bench(8.0, 0.0)),
            Some((&snap(0.0, 0.0, 0.0), &snap(0.0, 2.0, 0.0))),
            Engine::Vllm,
        );
        assert_eq!(r.status, Status::Fail);
        assert!(
            r.message.contains(
                "the engine ended 2 with an error, which the load tool counted as successes"
            ),
            "{}",
            r.message
        );
    }

    #[test]
    fn sglang_refusals_are_read_from_its_status_codes() {
        let snap = |refused: f64| {
            snapshot_from_prom(&format!(
                "sglang:num_requests_total 8\n\
                 sglang:http_responses_total{{endpoint=\"/v1/completions\",method=\"POST\",status_code=\"200\"}} 8\n\
                 sglang:http_responses_total{{endpoint=\"/v1/completions\",method=\"POST\",status_code=\"400\"}} {refused}\n\
                 sglang:http_responses_total{{endpoint=\"/health\",method=\"GET\",status_code=\"503\"}} 1\n"
            ))
        };
        let r = check(
            Some(&bench(8.0, 0.0)),
            Some((&snap(0.0), &snap(0.0))),
            Engine::Sglang,
        );
        assert_eq!(r.status, Status::Pass, "{}", r.message);
        let r = check(
            Some(&bench(8.0, 2.0)),
            Some((&snap(0.0), &snap(2.0))),
            Engine::Sglang,
        );
        assert_eq!(r.status, Status::Fail);
        assert!(
            r.message
                .contains("the API server refused 2 × 4xx on /v1/completions"),
            "{}",
            r.message
        );
    }

    #[test]
    fn nothing_to_decide_on_is_unknown() {
        let b = snap(0.0, 0.0, 0.0);
        assert_eq!(
            check(None, Some((&b, &b)), Engine::Vllm).status,
            Status::Unknown
        );
        assert_eq!(
            check(Some(&bench(8.0, 0.0)), None, Engine::Vllm).status,
            Status::Unknown
        );
        assert_eq!(
            check(Some(&bench(0.0, 0.0)), Some((&b, &b)), Engine::Vllm).status,
            Status::Unknown
        );
        // A failure is certain on the client's word alone.
        assert_eq!(
            check(Some(&bench(0.0, 8.0)), None, Engine::Vllm).status,
            Status::Fail
        );
    }
}
