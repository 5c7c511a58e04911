//! T15 client-server-mismatch: the load tool's result file against the server's counters
//! (docs/design/tripwires.md#t15).

use crate::bench::BenchResult;
use crate::checks::counters::{finished_delta, snapshot_delta, CounterQuery, DeltaError};
use crate::engine::Engine;
use crate::evidence::{JsonF64, T15Evidence};
use crate::fmt::{thousands, thousands_f};
use crate::result::{CheckResult, Tripwire};
use crate::snapshot::Snapshot;

fn plural(n: i64) -> &'static str {
    if n == 1 {
        ""
    } else {
        "s"
    }
}

/// Compares finished requests and generated tokens; `expected_extra` is the number of untimed
/// requests (test, warm-up) the client sent but left out of its result.
pub fn check(
    result: &BenchResult,
    before: &Snapshot,
    after: &Snapshot,
    expected_extra: u64,
    engine: Engine,
) -> CheckResult {
    let names = engine.metrics();
    let finished = finished_delta(before, after, engine);
    let tokens = snapshot_delta(before, after, &CounterQuery::new(names.generation_tokens));
    let client = T15Evidence {
        client_completed: Some(result.completed.map(JsonF64)),
        client_failed: Some(result.failed.map(JsonF64)),
        client_output_tokens: Some(result.total_output_tokens.map(JsonF64)),
        expected_extra_requests: Some(expected_extra),
        result_file: Some(result.path.clone()),
        ..Default::default()
    };
    let (server_finished, server_tokens) = match (finished, tokens) {
        (Ok(f), Ok(t)) => (f, t),
        (Err(DeltaError::NotCounted { engine, .. }), Ok(t)) => {
            return tokens_only(result, t, expected_extra, engine, client)
        }
        (Err(DeltaError::Restarted(r)), _) | (_, Err(DeltaError::Restarted(r))) => {
            return CheckResult::unknown(Tripwire::T15, r.to_string()).with_evidence(T15Evidence {
                restarted: Some(true),
                ..client
            })
        }
        _ => {
            return CheckResult::unknown(
                Tripwire::T15,
                "a server counter is missing from a snapshot",
            )
            .with_evidence(client)
        }
    };
    let server = T15Evidence {
        server_finished: Some(server_finished),
        server_output_tokens: Some(server_tokens),
        ..client
    };
    let (completed, client_tokens) = match client_counts(result, &server) {
        Ok(c) => c,
        Err(unknown) => return *unknown,
    };
    let counts = Counts {
        completed,
        client_tokens,
        server_finished,
        server_tokens,
        expected: expected_extra as i64,
    };
    let extra = counts.extra_requests();
    counts.judge().with_evidence(T15Evidence {
        extra_requests: Some(extra),
        extra_output_tokens: Some(JsonF64(server_tokens - client_tokens)),
        ..server
    })
}

/// Why a window in which the client completed nothing passes nothing
/// (docs/design/tripwires.md#t15).
const NOTHING_COMPLETED: &str = "the load tool completed no request: client and server have nothing to agree on (T17 says which requests failed)";

/// The client's completed requests and output tokens, or T15's Can't tell without them (boxed:
/// a verdict is large beside two numbers).
fn client_counts(result: &BenchResult, ev: &T15Evidence) -> Result<(f64, f64), Box<CheckResult>> {
    match (result.completed, result.total_output_tokens) {
        (Some(c), Some(t)) => Ok((c, t)),
        _ => Err(Box::new(
            CheckResult::unknown(
                Tripwire::T15,
                "the result file has no completed or output-token count",
            )
            .with_evidence(ev.clone()),
        )),
    }
}

/// Whether the server's output tokens are the client's plus what its `expected` untimed requests
/// generated: up to 1.5 times their share at the run's average length, at least 1 token each.
fn tokens_agree(server: f64, client: f64, completed: f64, expected: f64) -> bool {
    let per_request = if completed > 0.0 {
        (client / completed).max(1.0)
    } else {
        1.0
    };
    (0.0..=expected * per_request * 1.5).contains(&(server - client))
}

/// T15 on an engine that counts tokens but not requests (llama.cpp): the output tokens alone,
/// allowing for the untimed requests' share ([`tokens_agree`]).
fn tokens_only(
    result: &BenchResult,
    server_tokens: f64,
    expected_extra: u64,
    engine: &str,
    client: T15Evidence,
) -> CheckResult {
    let ev = T15Evidence {
        server_output_tokens: Some(server_tokens),
        ..client
    };
    let (completed, client_tokens) = match client_counts(result, &ev) {
        Ok(c) => c,
        Err(unknown) => return *unknown,
    };
    let ev = T15Evidence {
        extra_output_tokens: Some(JsonF64(server_tokens - client_tokens)),
        ..ev
    };
    if completed <= 0.0 {
        return CheckResult::unknown(Tripwire::T15, NOTHING_COMPLETED).with_evidence(ev);
    }
    if !tokens_agree(
        server_tokens,
        client_tokens,
        completed,
        expected_extra as f64,
    ) {
        return CheckResult::warn(
            Tripwire::T15,
            format!(
                "the server generated {} output tokens and the load tool counted {} ({engine} counts no requests, so only tokens are compared)",
                thousands_f(server_tokens, 0),
                thousands(client_tokens as i64)
            ),
        )
        .with_evidence(ev);
    }
    CheckResult::pass(
        Tripwire::T15,
        format!(
            "client and server agree on {} output tokens over {} requests ({engine} counts no requests, so only tokens are compared)",
            thousands(client_tokens as i64),
            completed as i64
        ),
    )
    .with_evidence(ev)
}

/// What the client and the server each counted, and the untimed requests expected between.
struct Counts {
    completed: f64,
    client_tokens: f64,
    server_finished: f64,
    server_tokens: f64,
    /// Untimed requests (test, warm-up) the client sent but left out of its result.
    expected: i64,
}

impl Counts {
    /// Requests the server finished beyond the ones the client completed.
    fn extra_requests(&self) -> i64 {
        (self.server_finished as i64).saturating_sub(self.completed as i64)
    }

    /// The verdict on the requests, then on the tokens.
    fn judge(&self) -> CheckResult {
        let completed_n = self.completed as i64;
        let (extra, expected) = (self.extra_requests(), self.expected);
        if extra > expected {
            let k = extra - expected;
            return CheckResult::fail(
                Tripwire::T15,
                format!("the server finished {k} more request{} than the load tool sent; other traffic shared the server during the run", plural(k)),
            );
        }
        if completed_n == 0 {
            // Agreement on no request is no agreement worth a pass
            // (docs/design/tripwires.md#t15).
            return CheckResult::unknown(Tripwire::T15, NOTHING_COMPLETED);
        }
        if extra < expected {
            let k = expected - extra;
            return CheckResult::fail(
                Tripwire::T15,
                format!(
                    "the load tool counted {k} more completed request{} than the server finished",
                    plural(k)
                ),
            );
        }
        self.judge_tokens(completed_n, extra)
    }

    /// Requests agree: the tokens must too, allowing for what untimed requests generated
    /// ([`tokens_agree`]).
    fn judge_tokens(&self, completed_n: i64, extra: i64) -> CheckResult {
        if !tokens_agree(
            self.server_tokens,
            self.client_tokens,
            self.completed,
            self.expected as f64,
        ) {
            return CheckResult::warn(
                Tripwire::T15,
                format!(
                    "requests agree, but the server generated {} output tokens and the load tool counted {}",
                    thousands_f(self.server_tokens, 0),
                    thousands(self.client_tokens as i64)
                ),
            );
        }
        let mut msg = format!(
            "client and server agree: {completed_n} requests, {} output tokens",
            thousands(self.client_tokens as i64)
        );
        if extra > 0 {
            msg.push_str(&format!(
                ", plus {extra} untimed request{} (test or warm-up)",
                plural(extra)
            ));
        }
        CheckResult::pass(Tripwire::T15, msg)
    }
}
