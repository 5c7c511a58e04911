//! Property tests for the counter arithmetic shared by T1, T10 and T15
//! (docs/design/tripwires.md#counter-deltas-and-restarts): deltas and restart detection under
//! random counter histories, written as Prometheus text and read back by the parser; and T10's
//! integer-second comparison against an independent computation in integer microseconds and
//! nanoseconds.
//!
//! Each property runs a modest number of cases so that `cargo test` stays fast; for a long run:
//! `PROPTEST_CASES=100000 cargo test --release --test proptests proptest_counters::`.

use crate::proptest_support;

use inferlint_core::checks::counters::{counter_delta, CounterQuery, DeltaError, Restart};
use inferlint_core::checks::{t1, t10};
use inferlint_core::prom::Metrics;
use inferlint_core::snapshot::Snapshot;
use inferlint_core::{Engine, Status};
use proptest::prelude::*;

const COUNTER: &str = "vllm:num_preemptions_total";
const CREATED: &str = "vllm:num_preemptions_created";
const TOKENS: &str = "vllm:generation_tokens_total";

fn cases(default: u32) -> ProptestConfig {
    proptest_support::config(default, "tests/proptest-regressions/proptest_counters.txt")
}

/// One reading of a counter with several label sets, as a vLLM server exports it: each label
/// set's `_total` and, when `stamps` is given, its `_created` creation time.
fn exposition(values: &[u64], stamps: Option<&[f64]>, extra: &str) -> String {
    let mut text = String::from("# HELP vllm:num_preemptions Cumulative number of preemption from the engine.\n# TYPE vllm:num_preemptions counter\n");
    for (i, v) in values.iter().enumerate() {
        let labels = format!("{{engine=\"{i}\",model_name=\"m\"}}");
        text.push_str(&format!("{COUNTER}{labels} {v}.0\n"));
        if let Some(s) = stamps {
            text.push_str(&format!("{CREATED}{labels} {}\n", s[i]));
        }
    }
    text.push_str(extra);
    text
}

fn metrics(text: &str) -> Metrics {
    Metrics::parse(text).expect("generated exposition parses")
}

fn snapshot(text: &str, t_wall: f64, t_mono_ns: Option<i64>) -> Snapshot {
    let mut s = Snapshot::from_text(text, "x.prom").expect("generated exposition parses");
    s.t_wall = t_wall;
    s.t_mono_ns = t_mono_ns;
    s.latency_s = Some(0.004);
    s
}

/// A counter history: per label set, a start value and non-negative increments per step.
fn history() -> impl Strategy<Value = Vec<Vec<u64>>> {
    (1usize..=4, 2usize..=12).prop_flat_map(|(sets, steps)| {
        prop::collection::vec(
            (
                0u64..1_000_000,
                prop::collection::vec(0u64..5_000, steps - 1),
            )
                .prop_map(|(start, incs)| {
                    let mut v = vec![start];
                    for d in incs {
                        v.push(v.last().unwrap() + d);
                    }
                    v
                }),
            sets,
        )
    })
}

/// The readings of every label set at step `i`.
fn at(h: &[Vec<u64>], i: usize) -> Vec<u64> {
    h.iter().map(|set| set[i]).collect()
}

proptest! {
    #![proptest_config(cases(256))]

    /// A counter that only rises: the delta between any two readings is last − first of the sum
    /// over label sets (integers below 2^53 are exact in f64), and T1 reports that number.
    #[test]
    fn monotonic_history_gives_last_minus_first(
        h in history(),
        pick in any::<(usize, usize)>(),
        stamp in 1.7e9f64..1.8e9,
    ) {
        let steps = h[0].len();
        let (i, j) = (pick.0 % steps, pick.1 % steps);
        let (i, j) = (i.min(j), i.max(j));
        let stamps = vec![stamp; h.len()];
        let before = at(&h, i);
        let after = at(&h, j);
        let want = after.iter().sum::<u64>() - before.iter().sum::<u64>();
        let (tb, ta) = (exposition(&before, Some(&stamps), ""), exposition(&after, Some(&stamps), ""));
        let got = counter_delta(&metrics(&tb), &metrics(&ta), &CounterQuery::new(COUNTER));
        prop_assert_eq!(got, Ok(want as f64));

        let r = t1::check(&snapshot(&tb, 1.0, None), &snapshot(&ta, 2.0, None), None, None, Engine::Vllm);
        prop_assert_eq!(&r.evidence_json()["preemptions"], &serde_json::json!(want as f64));
        if want == 0 {
            prop_assert_eq!(r.status, Status::Pass);
            prop_assert_eq!(r.message, "no preemptions");
        } else {
            prop_assert_eq!(r.status, Status::Fail);
            let plural = if want == 1 { "" } else { "s" };
            prop_assert_eq!(r.message, format!("{} preemption{plural} during the run", inferlint_core::fmt::g(want as f64)));
        }
    }

    /// Restricting to label values sums only the matching label sets.
    #[test]
    fn label_restricted_delta_sums_the_matching_sets(h in history(), which in any::<usize>()) {
        let last = h[0].len() - 1;
        let k = which % h.len();
        let before = metrics(&exposition(&at(&h, 0), None, ""));
        let after = metrics(&exposition(&at(&h, last), None, ""));
        let engine = k.to_string();
        let labels = [("engine", engine.as_str())];
        let q = CounterQuery::new(COUNTER).with_labels(&labels);
        prop_assert_eq!(counter_delta(&before, &after, &q), Ok((h[k][last] - h[k][0]) as f64));
    }

    /// The server restarted between the readings: counters started again from 0 and every
    /// `_created` stamp moved. The restart is reported, never a number, whether the counter
    /// came back below or above its old value.
    #[test]
    fn moved_created_stamps_are_a_restart(
        h in history(),
        after_restart in prop::collection::vec(0u64..3_000_000, 4),
        stamp in 1.7e9f64..1.8e9,
        later in 1.0f64..100_000.0,
        unstamped in 0usize..4,
    ) {
        let sets = h.len();
        let before = at(&h, h[0].len() - 1);
        let after: Vec<u64> = after_restart[..sets].to_vec();
        let old = vec![stamp; sets];
        let new = vec![stamp + later; sets];
        // A `_created` series on one side only (a label set that appeared) moves nothing.
        let lone = format!("vllm:request_success_created{{finished_reason=\"abort\"}} {}\n", stamp + later);
        let tb = exposition(&before, Some(&old), "");
        let ta = exposition(&after, Some(&new), if unstamped % 2 == 0 { &lone } else { "" });
        let got = counter_delta(&metrics(&tb), &metrics(&ta), &CounterQuery::new(COUNTER));
        let Err(DeltaError::Restarted(Restart::CreatedMoved(moved))) = &got else {
            return Err(TestCaseError::fail(format!("expected a restart, got {got:?}")));
        };
        prop_assert_eq!(moved.len(), sets);
        prop_assert!(moved.iter().all(|m| m.name == CREATED && m.before == stamp && m.after == stamp + later));
        let msg = got.clone().unwrap_err().to_string();
        prop_assert_eq!(
            msg,
            format!("server restarted between snapshots ({sets} *_created stamps moved, e.g. {CREATED}: {stamp:.3} -> {:.3})", stamp + later)
        );
        let r = t1::check(&snapshot(&tb, 1.0, None), &snapshot(&ta, 2.0, None), None, None, Engine::Vllm);
        prop_assert_eq!(r.status, Status::Fail);
        prop_assert_eq!(&r.evidence_json()["restarted"], &serde_json::json!(true));
        prop_assert_eq!(&r.evidence_json()["preemptions"], &serde_json::Value::Null);
    }

    /// Without `_created` stamps, a summed counter that went down is a restart (with both sums in
    /// the message); one that rose is a delta, because nothing else can tell.
    #[test]
    fn a_decrease_is_a_restart(
        h in history(),
        after_restart in prop::collection::vec(0u64..3_000_000, 4),
    ) {
        let sets = h.len();
        let before = at(&h, h[0].len() - 1);
        let after: Vec<u64> = after_restart[..sets].to_vec();
        let (s0, s1) = (before.iter().sum::<u64>(), after.iter().sum::<u64>());
        let got = counter_delta(
            &metrics(&exposition(&before, None, "")),
            &metrics(&exposition(&after, None, "")),
            &CounterQuery::new(COUNTER),
        );
        if s1 < s0 {
            prop_assert_eq!(
                &got,
                &Err(DeltaError::Restarted(Restart::WentDown { name: COUNTER.into(), before: s0 as f64, after: s1 as f64 }))
            );
            prop_assert_eq!(
                got.unwrap_err().to_string(),
                format!(
                    "{COUNTER} went down ({} -> {}); counters only reset on restart",
                    inferlint_core::fmt::g(s0 as f64),
                    inferlint_core::fmt::g(s1 as f64)
                )
            );
        } else {
            prop_assert_eq!(got, Ok((s1 - s0) as f64));
        }
    }

    /// A counter missing from either reading has no delta (never 0), and T1 can't tell; SGLang's
    /// witness gauge turns its absent retraction counter into 0.
    #[test]
    fn an_absent_counter_is_no_value(h in history(), missing_before in any::<bool>()) {
        let present = exposition(&at(&h, 0), None, "");
        let absent = "vllm:num_requests_running 3.0\n".to_string();
        let (tb, ta) = if missing_before { (absent, present) } else { (present, absent) };
        let got = counter_delta(&metrics(&tb), &metrics(&ta), &CounterQuery::new(COUNTER));
        prop_assert_eq!(got, Err(DeltaError::Absent { name: COUNTER.into() }));
        let r = t1::check(&snapshot(&tb, 1.0, None), &snapshot(&ta, 2.0, None), None, None, Engine::Vllm);
        prop_assert_eq!(r.status, Status::Unknown);

        let total: u64 = at(&h, 0).iter().sum();
        let witness = "sglang:num_retracted_reqs 0.0\n";
        let later = format!("{witness}sglang:num_retracted_requests_total {total}.0\n");
        let q = CounterQuery::new("sglang:num_retracted_requests_total").with_witness(Some("sglang:num_retracted_reqs"));
        prop_assert_eq!(counter_delta(&metrics(witness), &metrics(&later), &q), Ok(total as f64));
    }

    /// T10's comparison with a whole-second timer, against an independent computation: wall
    /// clocks in integer microseconds, the monotonic clock in integer nanoseconds, so that the
    /// truncated seconds and the spans are exact integers here.
    ///   int_span = ⌊after⌋ − ⌊before⌋;  rate = tokens / span;  naive = tokens / int_span;
    ///   error = naive / rate − 1 = span / int_span − 1.
    #[test]
    fn integer_second_comparison_matches_an_independent_computation(
        start_us in 1_700_000_000_000_000u64..1_800_000_000_000_000,
        span_us in 1_000u64..7_200_000_000,
        tokens in 0u64..50_000_000,
        before_tokens in 0u64..1_000_000_000,
        mono_base in 0i64..1_000_000_000_000_000,
    ) {
        let end_us = start_us + span_us;
        let wall = |us: u64| us as f64 / 1e6;
        let mono = |us: u64| mono_base + ((us - start_us) * 1000) as i64;
        let before = snapshot(&format!("{TOKENS} {before_tokens}.0\n"), wall(start_us), Some(mono(start_us)));
        let after = snapshot(&format!("{TOKENS} {}.0\n", before_tokens + tokens), wall(end_us), Some(mono(end_us)));
        let r = t10::check(&before, &after, None, Engine::Vllm);
        prop_assert_eq!(r.status, Status::Pass, "{}", r.message);

        let int_span = (end_us / 1_000_000) as i64 - (start_us / 1_000_000) as i64;
        let span_ns = (span_us * 1000) as i64;
        let span_s = span_ns as f64 / 1e9;
        let rate = tokens as f64 / span_s;
        prop_assert_eq!(&r.evidence_json()["integer_second_span_s"], &serde_json::json!(int_span));
        prop_assert_eq!(r.message.clone(), format!("{rate:.2} tokens/s over {span_s:.3}s"));
        let ev = |k: &str| r.evidence_json()[k].as_f64();
        prop_assert!((ev("span_s").unwrap() - span_s).abs() <= 1e-9);
        prop_assert!((ev("span_uncertainty_s").unwrap() - 0.004).abs() <= 1e-12);

        let shown = t10::with_integer_second_comparison(&r);
        if int_span > 0 && tokens > 0 {
            let naive = tokens as f64 / int_span as f64;
            // span / int_span − 1 with one rounding: the numerator is an exact integer.
            let error = (span_ns - int_span * 1_000_000_000) as f64 / (int_span as f64 * 1e9);
            let (got_naive, got_error) = (ev("integer_second_rate_per_s").unwrap(), ev("integer_second_error").unwrap());
            prop_assert!((got_naive - naive).abs() <= 1e-9 * naive.max(1.0), "{} vs {}", got_naive, naive);
            prop_assert!((got_error - error).abs() <= 1e-9, "{} vs {}", got_error, error);
            prop_assert_eq!(
                shown.message,
                format!(
                    "{}; an integer-second timer would say {got_naive:.2} ({})",
                    r.message,
                    inferlint_core::fmt::pct_signed(got_error, 2)
                )
            );
        } else if int_span <= 0 {
            prop_assert_eq!(&r.evidence_json()["integer_second_rate_per_s"], &serde_json::Value::Null);
            prop_assert_eq!(&r.evidence_json()["integer_second_error"], &serde_json::Value::Null);
            prop_assert_eq!(shown.message, r.message);
        }
    }

    /// Monotonic and wall spans more than a second apart are two host boots or a stepped wall
    /// clock: T10 can't tell, whatever the counter says.
    #[test]
    fn disagreeing_clocks_are_unknown(
        start_us in 1_700_000_000_000_000u64..1_800_000_000_000_000,
        span_us in 1_000_000u64..7_200_000_000,
        step_ms in prop_oneof![-100_000i64..-1_001, 1_001i64..100_000],
    ) {
        let before = snapshot(&format!("{TOKENS} 0.0\n"), start_us as f64 / 1e6, Some(0));
        let wall_after = (start_us + span_us) as f64 / 1e6 + step_ms as f64 / 1e3;
        let after = snapshot(&format!("{TOKENS} 100.0\n"), wall_after, Some((span_us * 1000) as i64));
        let r = t10::check(&before, &after, None, Engine::Vllm);
        prop_assert_eq!(r.status, Status::Unknown);
        prop_assert!(r.message.contains("disagree"), "{}", r.message);
    }
}
