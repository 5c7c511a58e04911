//! T24 token-counts: whether the prompts the server processed were as long as the load asked,
//! and whether the client's count of them agrees with the server's
//! (docs/design/tripwires.md#t24).
//!
//! A client builds prompts of N tokens with its own tokenizer. With another tokenizer than the
//! server's (a `--tokenizer` of another model, a truncated vocabulary) or a chat template the
//! server applies, the server processes another number, and input tokens/s, TTFT by prompt
//! length and the prefill share describe prompts nobody asked for. `vllm bench serve` then
//! reports the server's count (it reads `usage`), so client and server agree with each other
//! and both disagree with the command.

use crate::bench::BenchResult;
use crate::checks::counters::{finished_delta, snapshot_delta, CounterQuery, DeltaError};
use crate::engine::Engine;
use crate::evidence::{JsonF64, T24Evidence};
use crate::fmt::{g, pct_signed};
use crate::load::LoadIntent;
use crate::result::{CheckResult, Tripwire};
use crate::snapshot::Snapshot;

/// The server's prompt tokens per request may differ from what the load asked by this share
/// before it is a finding (a BOS token or a short template on a long prompt stays within it)…
pub const TOLERANCE: f64 = 0.10;
/// …and by at least this many tokens (a BOS and a chat template's few on a short prompt).
pub const MIN_TOKENS: f64 = 8.0;

/// Whether T24 has anything to judge: a prompt length the load asked for, or a client that
/// counted prompt tokens.
pub fn due(load: &LoadIntent, bench: Option<&BenchResult>) -> bool {
    load.input_len.is_some() || bench.is_some_and(|b| b.total_input_tokens.is_some())
}

/// T24 between the snapshots: the server's prompt tokens per finished request against the
/// length asked, else against the client's own count.
pub fn check(
    before: &Snapshot,
    after: &Snapshot,
    load: &LoadIntent,
    bench: Option<&BenchResult>,
    engine: Engine,
) -> CheckResult {
    let names = engine.metrics();
    let mut ev = T24Evidence {
        asked_input_len: load.input_len,
        ..Default::default()
    };
    let prompt = snapshot_delta(before, after, &CounterQuery::new(names.prompt_tokens));
    let done = finished_delta(before, after, engine);
    let (prompt, done) = match (prompt, done) {
        (Ok(p), Ok(d)) => (p, d),
        (Err(DeltaError::Restarted(r)), _) | (_, Err(DeltaError::Restarted(r))) => {
            ev.restarted = Some(true);
            return CheckResult::unknown(Tripwire::T24, r.to_string()).with_evidence(ev);
        }
        (Err(e), _) | (_, Err(e)) => {
            return CheckResult::unknown(
                Tripwire::T24,
                format!("{e}: the prompt tokens the server processed cannot be told"),
            )
            .with_evidence(ev)
        }
    };
    if done <= 0.0 {
        return CheckResult::unknown(
            Tripwire::T24,
            "the server finished no request in the window",
        )
        .with_evidence(ev);
    }
    let server = prompt / done;
    ev.server_prompt_tokens = Some(prompt);
    ev.server_requests = Some(done);
    ev.server_per_request = Some(JsonF64(server));
    let client = client_per_request(bench);
    ev.client_per_request = client.map(JsonF64);
    if let Some(asked) = load.input_len {
        return against("the load asked for", asked as f64, server, ev);
    }
    match client {
        Some(c) => against("the client counted", c, server, ev),
        None => CheckResult::unknown(
            Tripwire::T24,
            "neither the load's command nor its result says how long the prompts were",
        )
        .with_evidence(ev),
    }
}

/// The client's prompt tokens per request it completed; None without both counts. Its untimed
/// requests (a test prompt, warm-ups) are in the server's counts but not in its own; they are
/// prompts of the same dataset, so the server's mean per request stays comparable.
fn client_per_request(bench: Option<&BenchResult>) -> Option<f64> {
    let b = bench?;
    let completed = b.completed.filter(|c| *c > 0.0)?;
    Some(b.total_input_tokens? / completed)
}

/// The verdict of the server's `server` prompt tokens per request against `expected` (what
/// `whose` says).
fn against(whose: &str, expected: f64, server: f64, mut ev: T24Evidence) -> CheckResult {
    let diff = server - expected;
    let share = if expected > 0.0 {
        diff / expected
    } else {
        f64::INFINITY
    };
    ev.difference = Some(JsonF64(share));
    let server_text = g(round1(server));
    let expected_text = g(round1(expected));
    if share.abs() <= TOLERANCE || diff.abs() < MIN_TOKENS {
        return CheckResult::pass(
            Tripwire::T24,
            format!("the server processed {server_text} prompt tokens per request; {whose} {expected_text}"),
        )
        .with_evidence(ev);
    }
    let cause = if diff < 0.0 {
        ev.direction = Some("fewer".into());
        "the client's tokenizer is not the server's (its prompts encode to fewer tokens on the server)"
    } else {
        ev.direction = Some("more".into());
        "a chat template, BOS tokens or another tokenizer added them on the server"
    };
    let change = if share.is_finite() {
        pct_signed(share, 0)
    } else {
        "none asked".to_string()
    };
    CheckResult::warn(
        Tripwire::T24,
        format!(
            "the server processed {server_text} prompt tokens per request where {whose} {expected_text} ({change}): {cause}; input tokens/s, TTFT by prompt length and the prefill share describe {server_text}-token prompts"
        ),
    )
    .with_evidence(ev)
}

fn round1(x: f64) -> f64 {
    (x * 10.0).round() / 10.0
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::result::Status;
    use crate::testkit::snapshot_from_prom;

    fn snap(prompt: f64, done: f64) -> Snapshot {
        snapshot_from_prom(&format!(
            "vllm:prompt_tokens_total{{engine=\"0\"}} {prompt}\n\
             vllm:request_success_total{{engine=\"0\",finished_reason=\"length\"}} {done}\n"
        ))
    }

    fn load(cmd: &str) -> LoadIntent {
        crate::load::intent(&cmd.split(' ').map(str::to_string).collect::<Vec<_>>())
    }

    #[test]
    fn fewer_prompt_tokens_than_asked_warn_and_as_many_pass() {
        let asked = load("vllm bench serve --dataset-name random --random-input-len 100");
        let b = snap(0.0, 0.0);
        let r = check(&b, &snap(415.0, 16.0), &asked, None, Engine::Vllm);
        assert_eq!(r.status, Status::Warn, "{}", r.message);
        assert!(
            r.message.starts_with(
                "the server processed 25.9 prompt tokens per request where the load asked for 100 (-74%): the client's tokenizer"
            ),
            "{}",
            r.message
        );
        let r = check(&b, &snap(1600.0, 16.0), &asked, None, Engine::Vllm);
        assert_eq!(r.status, Status::Pass, "{}", r.message);
        // A chat template's tokens on top: more than asked.
        let r = check(&b, &snap(2080.0, 16.0), &asked, None, Engine::Vllm);
        assert_eq!(r.status, Status::Warn, "{}", r.message);
        assert!(
            r.message.contains("(+30%): a chat template"),
            "{}",
            r.message
        );
    }

    #[test]
    fn the_clients_count_is_the_reference_without_a_length_asked() {
        let bench = BenchResult {
            completed: Some(16.0),
            total_input_tokens: Some(1600.0),
            ..BenchResult::default()
        };
        let any = load("vllm bench serve --dataset-name sharegpt");
        assert!(due(&any, Some(&bench)));
        let b = snap(0.0, 0.0);
        let r = check(&b, &snap(800.0, 16.0), &any, Some(&bench), Engine::Vllm);
        assert_eq!(r.status, Status::Warn, "{}", r.message);
        assert!(
            r.message.contains("where the client counted 100 (-50%)"),
            "{}",
            r.message
        );
        assert!(!due(&any, None));
    }
}
