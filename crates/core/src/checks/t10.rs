//! T10 integer-second-timer: the token rate between two snapshots over their monotonic span, and
//! what a timer with whole-second stamps would have said (docs/design/tripwires.md#t10).

use crate::checks::counters::{snapshot_delta, span, CounterQuery, DeltaError};
use crate::engine::Engine;
use crate::evidence::{JsonF64, T10Evidence};
use crate::fmt::pct_signed;
use crate::result::{CheckResult, Status, Tripwire};
use crate::snapshot::Snapshot;

/// vLLM's generated-token counter.
pub const VLLM_GENERATION_TOKENS: &str = "vllm:generation_tokens_total";

/// T10 on the engine's generated-token counter, or on `counter`.
pub fn check(
    before: &Snapshot,
    after: &Snapshot,
    counter: Option<&str>,
    engine: Engine,
) -> CheckResult {
    let name = counter.unwrap_or(engine.metrics().generation_tokens);
    let tokens = match snapshot_delta(before, after, &CounterQuery::new(name)) {
        Ok(t) => t,
        Err(DeltaError::Restarted(r)) => {
            return CheckResult::unknown(Tripwire::T10, r.to_string()).with_evidence(T10Evidence {
                restarted: Some(true),
                ..Default::default()
            })
        }
        Err(e @ (DeltaError::Absent { .. } | DeltaError::NotCounted { .. })) => {
            return CheckResult::unknown(Tripwire::T10, e.to_string())
        }
    };
    let span = match span(before, after) {
        Ok(s) => s,
        Err(e) => {
            return CheckResult::unknown(Tripwire::T10, e.to_string()).with_evidence(T10Evidence {
                tokens: Some(tokens),
                ..Default::default()
            })
        }
    };
    if tokens == 0.0 {
        // A rate over a window in which nothing was generated measures no serving at all
        // (docs/design/tripwires.md#t10): 0.3.1 passed it as "0.00 tokens/s".
        return CheckResult::unknown(
            Tripwire::T10,
            format!(
                "no output token was generated in {:.3}s between the snapshots: a rate over no work measures nothing (T17 says which requests failed)",
                span.seconds
            ),
        )
        .with_evidence(T10Evidence {
            tokens: Some(tokens),
            span_s: Some(JsonF64(span.seconds)),
            ..Default::default()
        });
    }
    let rate = tokens / span.seconds;
    // Truncated wall seconds, as `$(date +%s)` gives them, even when the rate uses the
    // monotonic span.
    let int_span = after.t_wall.trunc() as i64 - before.t_wall.trunc() as i64;
    let (naive, error) = if int_span > 0 {
        let naive = tokens / int_span as f64;
        (Some(naive), Some(naive / rate - 1.0))
    } else {
        (None, None)
    };
    CheckResult::pass(
        Tripwire::T10,
        format!("{rate:.2} tokens/s over {:.3}s", span.seconds),
    )
    .with_evidence(T10Evidence {
        restarted: None,
        tokens: Some(tokens),
        span_s: Some(JsonF64(span.seconds)),
        span_uncertainty_s: Some(span.uncertainty_s.map(JsonF64)),
        rate_per_s: Some(JsonF64(rate)),
        integer_second_span_s: Some(int_span),
        integer_second_rate_per_s: Some(naive.map(JsonF64)),
        integer_second_error: Some(error.map(JsonF64)),
    })
}

/// The result with `; an integer-second timer would say {naive:.2f} ({error:+.2%})` appended,
/// as the terminal shows it (JSON output and the HTML finding keep the bare message).
pub fn with_integer_second_comparison(result: &CheckResult) -> CheckResult {
    match integer_second_note(result) {
        Some(note) => result
            .clone()
            .with_message(format!("{}{note}", result.message)),
        None => result.clone(),
    }
}

/// What the terminal adds to a T10 PASS line (`CheckResult::line`): what a whole-second timer
/// would have said, from the result's own evidence. None for another result, a figure that is
/// not finite, or a message that already says it.
pub fn integer_second_note(result: &CheckResult) -> Option<String> {
    let e = result.evidence.t10()?;
    // A non-finite figure was never a comparison worth printing.
    let finite = |x: Option<JsonF64>| x.map(|x| x.0).filter(|x| x.is_finite());
    let naive = finite(e.integer_second_rate_per_s.flatten())?;
    let error = finite(e.integer_second_error.flatten())?;
    let note = format!(
        "; an integer-second timer would say {naive:.2} ({})",
        pct_signed(error, 2)
    );
    (result.status == Status::Pass && !result.message.ends_with(&note)).then_some(note)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::prom::Metrics;

    fn snap(tokens: f64, t_wall: f64) -> Snapshot {
        let text = format!("{VLLM_GENERATION_TOKENS} {tokens}\n");
        Snapshot {
            url: "test".into(),
            t_wall,
            t_mono_ns: Some((t_wall * 1e9).round() as i64),
            latency_s: Some(0.01),
            metrics: Metrics::parse(&text).unwrap(),
            text,
            source: "test".into(),
        }
    }

    #[test]
    fn whole_second_stamps_are_off_by_up_to_a_second_at_each_end() {
        let r = check(
            &snap(0.0, 1000.005),
            &snap(2899.0, 1028.995),
            None,
            Engine::Vllm,
        );
        assert_eq!(r.status, Status::Pass);
        assert_eq!(r.message, "100.00 tokens/s over 28.990s");
        assert_eq!(r.evidence_json()["integer_second_span_s"], 28);
        assert_eq!(
            with_integer_second_comparison(&r).message,
            "100.00 tokens/s over 28.990s; an integer-second timer would say 103.54 (+3.54%)"
        );
        let r = check(
            &snap(0.0, 1000.5),
            &snap(2899.0, 1029.49),
            None,
            Engine::Vllm,
        );
        assert_eq!(r.evidence_json()["integer_second_span_s"], 29);
        assert_eq!(
            with_integer_second_comparison(&r).message,
            "100.00 tokens/s over 28.990s; an integer-second timer would say 99.97 (-0.03%)"
        );
    }

    #[test]
    fn no_comparison_without_a_positive_whole_second_span() {
        let r = check(&snap(0.0, 1000.1), &snap(50.0, 1000.6), None, Engine::Vllm);
        assert_eq!(r.status, Status::Pass);
        assert_eq!(
            r.evidence_json()["integer_second_rate_per_s"],
            serde_json::Value::Null
        );
        assert_eq!(with_integer_second_comparison(&r), r);
    }

    #[test]
    fn missing_counter_or_clock_is_unknown() {
        let r = check(
            &snap(0.0, 1.0),
            &snap(5.0, 2.0),
            Some("nope_total"),
            Engine::Vllm,
        );
        assert_eq!(r.status, Status::Unknown);
        assert_eq!(r.message, "nope_total absent from a snapshot");
        let mut bare = snap(5.0, 2.0);
        bare.t_wall = f64::NAN;
        bare.t_mono_ns = None;
        let r = check(&snap(0.0, 1.0), &bare, None, Engine::Vllm);
        assert_eq!(
            r.message,
            "snapshots carry no clock (bare Prometheus text); no span available"
        );
    }
}
