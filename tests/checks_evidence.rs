//! The counter and series tripwires (T1, T8, T9, T10, T14, T15) on the recorded evidence, with
//! the numbers docs/design/evidence.md pins, both verdicts of each, and the mutations of
//! docs/design/evidence.md#mutations: one number or
//! line of real evidence changed in memory, verdict flipped.

use inferlint_core::bench::{self, BenchResult};
use inferlint_core::bootlog::BootFacts;
use inferlint_core::checks::blocks::{infer_blocks, predicted_ceiling};
use inferlint_core::checks::counters::{snapshot_delta, CounterQuery, DeltaError, Restart};
use inferlint_core::checks::{t1, t10, t14, t15, t8, t9};
use inferlint_core::prom::Metrics;
use inferlint_core::series::Series;
use inferlint_core::snapshot::Snapshot;
use inferlint_core::{CheckResult, Engine, Status};
use serde_json::{Map, Value};

fn snap(rel: &str) -> Option<Snapshot> {
    let p = inferlint_core::testkit::evidence(rel)?;
    Some(Snapshot::load(&p).unwrap_or_else(|e| panic!("{rel}: {e}")))
}

fn rec(rel: &str) -> Option<Series> {
    let p = inferlint_core::testkit::evidence(rel)?;
    Some(Series::load(&p).unwrap_or_else(|e| panic!("{rel}: {e}")))
}

fn boot(rel: &str) -> Option<BootFacts> {
    let p = inferlint_core::testkit::evidence(rel)?;
    Some(inferlint_core::bootlog::parse_file(&p, None).unwrap_or_else(|e| panic!("{rel}: {e}")))
}

fn result_file(rel: &str) -> Option<BenchResult> {
    let p = inferlint_core::testkit::evidence(rel)?;
    Some(bench::load(&p).unwrap_or_else(|e| panic!("{rel}: {e}")))
}

/// The snapshot with its Prometheus text edited (exactly one occurrence of `from` replaced).
fn edited(s: &Snapshot, from: &str, to: &str) -> Snapshot {
    assert_eq!(
        s.text.matches(from).count(),
        1,
        "{from:?} must occur once in {}",
        s.source
    );
    with_text(s, s.text.replacen(from, to, 1))
}

/// The snapshot without the lines of one metric name.
fn without_metric(s: &Snapshot, name: &str) -> Snapshot {
    let kept: Vec<&str> = s
        .text
        .lines()
        .filter(|l| {
            let n = l.split(['{', ' ']).next().unwrap_or("");
            n != name
        })
        .collect();
    assert!(
        kept.len() < s.text.lines().count(),
        "{name} not in {}",
        s.source
    );
    with_text(s, kept.join("\n") + "\n")
}

fn with_text(s: &Snapshot, text: String) -> Snapshot {
    Snapshot {
        metrics: Metrics::parse(&text).expect("edited text parses"),
        text,
        ..s.clone()
    }
}

macro_rules! some_or_skip {
    ($e:expr) => {
        match $e {
            Some(v) => v,
            None => return,
        }
    };
}

// ------------------------------------------ vLLM 0.28 live (docs/design/evidence.md#vllm-028-live)

#[test]
fn live_028_t1_fails_with_22_preemptions() {
    let before = some_or_skip!(snap("vllm-0.28/live/before.snapshot.json"));
    let after = some_or_skip!(snap("vllm-0.28/live/after.snapshot.json"));
    let r = t1::check(&before, &after, None, None, Engine::Vllm);
    assert_eq!(r.status, Status::Fail);
    assert_eq!(r.message, "22 preemptions during the run");
    assert_eq!(r.evidence_json()["preemptions"], 22.0);
    assert_eq!(r.evidence_json()["series"], "vllm:num_preemptions_total");
    assert_eq!(r.evidence_json()["engine"], "vllm");
    let err = r.raise_for_status(true, true).unwrap_err();
    assert_eq!(
        err.to_string(),
        "[T1] TRIPWIRE-FAILED: 22 preemptions during the run"
    );
    // Same snapshot on both sides: nothing happened in between.
    let r = t1::check(&after, &after, None, None, Engine::Vllm);
    assert_eq!(
        (r.status, r.message.as_str()),
        (Status::Pass, "no preemptions")
    );
}

#[test]
fn live_028_series_preemptions_match_the_snapshot_delta() {
    let before = some_or_skip!(snap("vllm-0.28/live/before.snapshot.json"));
    let after = some_or_skip!(snap("vllm-0.28/live/after.snapshot.json"));
    let s = some_or_skip!(rec("vllm-0.28/live/run.series.jsonl"));
    let p: Vec<f64> = s.samples.iter().filter_map(|x| x.preemptions()).collect();
    let delta = snapshot_delta(&before, &after, &CounterQuery::new(t1::VLLM_PREEMPTIONS)).unwrap();
    assert_eq!(p.last().unwrap() - p.first().unwrap(), delta);
}

#[test]
fn live_028_t14_t9_t8() {
    let s = some_or_skip!(rec("vllm-0.28/live/run.series.jsonl"));
    let after = some_or_skip!(snap("vllm-0.28/live/after.snapshot.json"));
    let t14r = t14::check(&s, &after, Engine::Vllm);
    assert_eq!(
        t14r.line(),
        "[T14] PASS  gauge denominator is 42 = num_gpu_blocks (43) - 1 null block"
    );
    assert_eq!(t14r.evidence_json()["reported_num_gpu_blocks"], 43);
    assert_eq!(t14r.evidence_json()["inferred_usable_blocks"], 42);
    let blocks = t14::usable_blocks(&t14r);
    assert_eq!(blocks, Some(42));

    let t9r = t9::check(&s, blocks, None, Engine::Vllm);
    assert_eq!(
        t9r.line(),
        "[ T9] WARN  ceiling moved between 7 and 10 as requests grew (one request held 9.5% to 14.3% of the cache); concurrency was not a constant of this run"
    );
    let bmin = t9r.evidence_json()["blocks_per_request_min"]
        .as_f64()
        .unwrap();
    assert!((bmin - 4.0).abs() < 0.05, "{bmin}");
    assert_eq!(t9r.evidence_json()["usable_blocks"], 42);

    let t8r = t8::check(&s, 32, None, Engine::Vllm);
    assert_eq!(
        t8r.line(),
        "[ T8] TRIPWIRE-FAILED  requested 32 concurrent, server never ran more than 10"
    );
    assert_eq!(t8r.evidence_json()["peak_running"], 10.0);
    // The peak is the largest ceiling.
    assert_eq!(t9r.evidence_json()["ceiling_max"], 10);
    // Every busy sample ran no more than fit, in whole blocks.
    for x in s.busy() {
        let (u, r) = (x.kv_usage().unwrap(), x.running().unwrap());
        assert!(
            r as u64 <= predicted_ceiling(u, r, Some(42)).unwrap(),
            "{x:?}"
        );
    }
}

#[test]
fn live_028_t10_rate_and_span() {
    let before = some_or_skip!(snap("vllm-0.28/live/before.snapshot.json"));
    let after = some_or_skip!(snap("vllm-0.28/live/after.snapshot.json"));
    let r = t10::check(&before, &after, None, Engine::Vllm);
    assert_eq!(r.status, Status::Pass);
    assert_eq!(r.message, "341.44 tokens/s over 93.720s");
    assert_eq!(r.evidence_json()["tokens"], 32000.0);
    let span = r.evidence_json()["span_s"].as_f64().unwrap();
    assert!((span - 93.72).abs() <= 0.01, "{span}");
    let unc = r.evidence_json()["span_uncertainty_s"].as_f64().unwrap();
    assert!(unc < 0.02 && (unc - 0.007).abs() < 0.0005, "{unc}");
    assert_eq!(
        t10::with_integer_second_comparison(&r).message,
        "341.44 tokens/s over 93.720s; an integer-second timer would say 344.09 (+0.77%)"
    );
}

// ------------------------------- vLLM 0.28 xray (docs/design/evidence.md#vllm-028-recorded-by-run)

#[test]
fn xray_028_pins() {
    let before = some_or_skip!(snap("vllm-0.28/xray/before.snapshot.json"));
    let after = some_or_skip!(snap("vllm-0.28/xray/after.snapshot.json"));
    let s = some_or_skip!(rec("vllm-0.28/xray/run.series.jsonl"));
    let r = t1::check(&before, &after, Some(&s), None, Engine::Vllm);
    assert_eq!(
        (r.status, r.message.as_str()),
        (Status::Fail, "21 preemptions during the run")
    );
    let t14r = t14::check(&s, &after, Engine::Vllm);
    assert_eq!(t14r.status, Status::Pass);
    assert_eq!(t14::usable_blocks(&t14r), Some(42));
    let t9r = t9::check(&s, Some(42), None, Engine::Vllm);
    assert_eq!(
        t9r.message,
        "ceiling moved between 5 and 10 as requests grew (one request held 9.5% to 19.0% of the cache); concurrency was not a constant of this run"
    );
    let t8r = t8::check(&s, 32, None, Engine::Vllm);
    assert_eq!(t8r.status, Status::Fail);
    assert_eq!(t8r.evidence_json()["peak_running"], 10.0);
    let t10r = t10::check(&before, &after, None, Engine::Vllm);
    assert_eq!(t10r.evidence_json()["tokens"], 32000.0);
    assert_eq!(
        t10::with_integer_second_comparison(&t10r).line(),
        "[T10] PASS  314.99 tokens/s over 101.590s; an integer-second timer would say 313.73 (-0.40%)"
    );
}

#[test]
fn xray_028_t15_agrees_and_mutations_of_completed_flip_it() {
    let before = some_or_skip!(snap("vllm-0.28/xray/before.snapshot.json"));
    let after = some_or_skip!(snap("vllm-0.28/xray/after.snapshot.json"));
    let b = some_or_skip!(result_file("vllm-0.28/xray/bench.json"));
    let r = t15::check(&b, &before, &after, 0, Engine::Vllm);
    assert_eq!(
        r.line(),
        "[T15] PASS  client and server agree: 32 requests, 32,000 output tokens"
    );
    assert_eq!(r.evidence_json()["extra_requests"], 0);
    assert_eq!(r.evidence_json()["server_finished"], 32.0);
    for key in [
        "client_completed",
        "client_failed",
        "client_output_tokens",
        "server_finished",
        "server_output_tokens",
        "expected_extra_requests",
        "extra_requests",
        "extra_output_tokens",
        "result_file",
    ] {
        assert!(r.evidence_json().contains_key(key), "{key}");
    }
    let lowered = BenchResult {
        completed: Some(30.0),
        ..b.clone()
    };
    let r = t15::check(&lowered, &before, &after, 0, Engine::Vllm);
    assert_eq!(r.status, Status::Fail);
    assert_eq!(
        r.message,
        "the server finished 2 more requests than the load tool sent; other traffic shared the server during the run"
    );
    let raised = BenchResult {
        completed: Some(33.0),
        ..b.clone()
    };
    let r = t15::check(&raised, &before, &after, 0, Engine::Vllm);
    assert_eq!(r.status, Status::Fail);
    assert_eq!(
        r.message,
        "the load tool counted 1 more completed request than the server finished"
    );
    let removed = BenchResult {
        completed: None,
        ..b.clone()
    };
    let r = t15::check(&removed, &before, &after, 0, Engine::Vllm);
    assert_eq!(r.status, Status::Unknown);
    assert_eq!(
        r.message,
        "the result file has no completed or output-token count"
    );
    // Tokens the client did not count, with no untimed request to explain them: a warning.
    let fewer_tokens = BenchResult {
        total_output_tokens: Some(31_000.0),
        ..b.clone()
    };
    let r = t15::check(&fewer_tokens, &before, &after, 0, Engine::Vllm);
    assert_eq!(r.status, Status::Warn);
    assert_eq!(
        r.message,
        "requests agree, but the server generated 32,000 output tokens and the load tool counted 31,000"
    );
    // A server counter missing from a snapshot.
    let r = t15::check(
        &b,
        &before,
        &without_metric(&after, "vllm:request_success_total"),
        0,
        Engine::Vllm,
    );
    assert_eq!(r.status, Status::Unknown);
    assert_eq!(r.message, "a server counter is missing from a snapshot");
}

// -------------------------------- vLLM 0.28 metrics (docs/design/evidence.md#vllm-028-other-files)

#[test]
fn preempted_prom_files_count_60_and_the_mutation_to_106_passes() {
    let before = some_or_skip!(snap("vllm-0.28/metrics/preempted_before.prom"));
    let after = some_or_skip!(snap("vllm-0.28/metrics/preempted_after.prom"));
    assert!(after.metrics.len() > 300);
    assert!(!before.has_clock());
    let r = t1::check(&before, &after, None, None, Engine::Vllm);
    assert_eq!(
        (r.status, r.message.as_str()),
        (Status::Fail, "60 preemptions during the run")
    );
    assert_eq!(
        t1::check(&after, &after, None, None, Engine::Vllm).status,
        Status::Pass
    );

    let line =
        |v: &str| format!("vllm:num_preemptions_total{{engine=\"0\",model_name=\"qwen38\"}} {v}");
    let mutated = edited(&after, &line("166.0"), &line("106.0"));
    let r = t1::check(&before, &mutated, None, None, Engine::Vllm);
    assert_eq!(
        (r.status, r.message.as_str()),
        (Status::Pass, "no preemptions")
    );

    let removed = without_metric(&after, "vllm:num_preemptions_total");
    let r = t1::check(&before, &removed, None, None, Engine::Vllm);
    assert_eq!(r.status, Status::Unknown);
    assert_eq!(
        r.message,
        "vllm:num_preemptions_total absent from a snapshot; preemption cannot be ruled out"
    );
    // Lowered below the before value: the counter went down, so the server restarted.
    let down = edited(&after, &line("166.0"), &line("100.0"));
    let r = t1::check(&before, &down, None, None, Engine::Vllm);
    assert_eq!(r.status, Status::Fail);
    assert_eq!(
        r.message,
        "vllm:num_preemptions_total went down (106 -> 100); counters only reset on restart"
    );
    let ev = r.evidence_json();
    assert_eq!(ev["restarted"], true);
    assert_eq!(ev["counter"], "vllm:num_preemptions_total");
    assert_eq!(
        (ev["before"].as_f64(), ev["after"].as_f64()),
        (Some(106.0), Some(100.0))
    );
    assert!(!ev.contains_key("created_changed"));
}

#[test]
fn preempted_snapshots_rate_over_68_seconds() {
    let before = some_or_skip!(snap("vllm-0.28/metrics/preempted_before.snapshot.json"));
    let after = some_or_skip!(snap("vllm-0.28/metrics/preempted_after.snapshot.json"));
    let r = t10::check(&before, &after, None, Engine::Vllm);
    assert_eq!(r.status, Status::Pass);
    let span = r.evidence_json()["span_s"].as_f64().unwrap();
    assert!((span - 68.251).abs() < 0.001, "{span}");
    let int_span = r.evidence_json()["integer_second_span_s"].as_i64().unwrap();
    assert!(int_span == 68 || int_span == 69);
    assert!(t10::with_integer_second_comparison(&r)
        .message
        .contains("; an integer-second timer would say "));
    // The bare .prom files carry no clock.
    let b = some_or_skip!(snap("vllm-0.28/metrics/preempted_before.prom"));
    let a = some_or_skip!(snap("vllm-0.28/metrics/preempted_after.prom"));
    let r = t10::check(&b, &a, None, Engine::Vllm);
    assert_eq!(r.status, Status::Unknown);
    assert_eq!(
        r.message,
        "snapshots carry no clock (bare Prometheus text); no span available"
    );
}

/// `after` with every `*_created` line that `before` also has given `before`'s value.
fn copy_created(before: &Snapshot, after: &Snapshot) -> Snapshot {
    let key = |l: &str| l.rsplit_once(' ').map(|(k, _)| k.to_string());
    let stamps: std::collections::HashMap<String, String> = before
        .text
        .lines()
        .filter(|l| !l.starts_with('#') && l.contains("_created"))
        .filter_map(|l| Some((key(l)?, l.to_string())))
        .collect();
    let text: Vec<String> = after
        .text
        .lines()
        .map(|l| match key(l).and_then(|k| stamps.get(&k)) {
            Some(b) if !l.starts_with('#') => b.clone(),
            _ => l.to_string(),
        })
        .collect();
    with_text(after, text.join("\n") + "\n")
}

#[test]
fn a_restart_is_caught_by_moved_created_stamps_and_hidden_when_they_are_copied() {
    let before = some_or_skip!(snap("vllm-0.28/metrics/restart_before.prom"));
    let after = some_or_skip!(snap("vllm-0.28/metrics/restart_after.prom"));
    // The generation counter rose across the restart...
    let gen = CounterQuery::new(t10::VLLM_GENERATION_TOKENS);
    assert!(after.metrics.total(gen.name).unwrap() > before.metrics.total(gen.name).unwrap());
    // ... yet there is no delta: the stamps moved.
    let err = snapshot_delta(&before, &after, &gen).unwrap_err();
    let DeltaError::Restarted(Restart::CreatedMoved(moved)) = &err else {
        panic!("expected moved stamps, got {err:?}");
    };
    assert_eq!(moved.len(), 41);
    let r = t1::check(&before, &after, None, None, Engine::Vllm);
    assert_eq!(r.status, Status::Fail);
    assert!(
        r.message
            .starts_with("server restarted between snapshots (41 *_created stamps moved, e.g. "),
        "{}",
        r.message
    );
    let ev = r.evidence_json();
    assert_eq!(ev["restarted"], true);
    assert_eq!(ev["created_changed"], 41);
    assert_eq!(ev["example"], moved[0].name.as_str());
    assert_eq!(
        (ev["before"].as_f64(), ev["after"].as_f64()),
        (Some(moved[0].before), Some(moved[0].after))
    );
    assert!(moved[0].before != moved[0].after && !ev.contains_key("counter"));
    let t10r = t10::check(&before, &after, None, Engine::Vllm);
    assert_eq!(t10r.status, Status::Unknown);
    assert!(t10r
        .message
        .starts_with("server restarted between snapshots"));

    let hidden = copy_created(&before, &after);
    let r = t1::check(&before, &hidden, None, None, Engine::Vllm);
    assert_eq!(r.status, Status::Fail);
    assert!(!r.evidence_json().contains_key("restarted"), "{r:?}");
    assert_eq!(r.message, "4490 preemptions during the run");
}

// --------------------------------- vLLM 0.28 series (docs/design/evidence.md#vllm-028-other-files)

#[test]
fn ladder_t8_boundary_t9_and_t14() {
    let s = some_or_skip!(rec("vllm-0.28/series/ladder.series.jsonl"));
    let snapshot = some_or_skip!(snap("vllm-0.28/series/ladder_snapshot.prom"));
    let r = t8::check(&s, 32, None, Engine::Vllm);
    assert_eq!(r.status, Status::Fail);
    assert_eq!(r.evidence_json()["peak_running"], 4.0);
    assert_eq!(t8::check(&s, 4, None, Engine::Vllm).status, Status::Pass);
    assert_eq!(
        t8::check(&s, 4, None, Engine::Vllm).message,
        "reached 4 running (requested 4)"
    );
    assert_eq!(
        t8::check(&s, 5, None, Engine::Vllm).message,
        "requested 5 concurrent, server never ran more than 4"
    );
    let t14r = t14::check(&s, &snapshot, Engine::Vllm);
    assert_eq!(
        t14r.message,
        "gauge denominator is 52 = num_gpu_blocks (53) - 1 null block"
    );
    let t9r = t9::check(&s, t14::usable_blocks(&t14r), None, Engine::Vllm);
    assert_eq!(t9r.status, Status::Pass);
    assert_eq!(
        (
            t9r.evidence_json()["ceiling_min"].as_u64(),
            t9r.evidence_json()["ceiling_max"].as_u64()
        ),
        (Some(4), Some(4))
    );
    // The boot line's concurrency is shown as evidence, never used to decide.
    let facts = some_or_skip!(boot("vllm-0.28/boot_eager.log"));
    let r = t8::check(&s, 4, Some(&facts), Engine::Vllm);
    assert_eq!(r.status, Status::Pass);
    assert_eq!(r.evidence_json()["boot_line_max_concurrency"], 1.93);
    assert_eq!(r.evidence_json()["boot_line_request_len"], 16_384);
}

#[test]
fn blocks_recording_infers_44_and_its_label_mutations_flip_t14() {
    let s = some_or_skip!(rec("vllm-0.28/series/blocks.series.jsonl"));
    let snapshot = some_or_skip!(snap("vllm-0.28/series/blocks_snapshot.prom"));
    let inf = infer_blocks(&s.usage_readings());
    assert_eq!(inf.blocks, Some(44));
    assert!(inf.trusted);
    let r = t14::check(&s, &snapshot, Engine::Vllm);
    assert_eq!(
        r.line(),
        "[T14] PASS  gauge denominator is 44 = num_gpu_blocks (45) - 1 null block"
    );
    let r = t14::check(
        &s,
        &edited(&snapshot, "num_gpu_blocks=\"45\"", "num_gpu_blocks=\"44\""),
        Engine::Vllm,
    );
    assert_eq!(r.status, Status::Fail);
    assert_eq!(
        r.message,
        "gauge denominator is 44, expected num_gpu_blocks - 1 = 43; the usage semantics changed, or the series is not from this boot"
    );
    let r = t14::check(
        &s,
        &edited(&snapshot, "num_gpu_blocks=\"45\",", ""),
        Engine::Vllm,
    );
    assert_eq!(r.status, Status::Unknown);
    assert_eq!(
        r.message,
        "vllm:cache_config_info has no num_gpu_blocks label"
    );
    // The blocks recording against the ladder run's snapshot: not from this boot.
    let ladder_snap = some_or_skip!(snap("vllm-0.28/series/ladder_snapshot.prom"));
    assert_eq!(
        t14::check(&s, &ladder_snap, Engine::Vllm).status,
        Status::Fail
    );
}

#[test]
fn t14_is_unknown_when_the_readings_cannot_be_trusted() {
    let mut s = some_or_skip!(rec("vllm-0.28/series/blocks.series.jsonl"));
    let snapshot = some_or_skip!(snap("vllm-0.28/series/blocks_snapshot.prom"));
    // Keep the samples of only two distinct readings.
    let mut seen = Vec::new();
    s.samples.retain(|x| match x.kv_usage() {
        Some(u) if u > 0.0 && (seen.contains(&u.to_bits()) || seen.len() < 2) => {
            if !seen.contains(&u.to_bits()) {
                seen.push(u.to_bits());
            }
            true
        }
        _ => false,
    });
    let r = t14::check(&s, &snapshot, Engine::Vllm);
    assert_eq!(r.status, Status::Unknown);
    assert_eq!(
        r.message,
        "block count not inferable: only 2 distinct readings; a divisor of N could fit by luck"
    );
}

// ---------------------------------------------------- vLLM 0.30 (docs/design/evidence.md#vllm-030)

#[test]
fn capped_030_names_admission_control_only_with_the_boot_log() {
    let s = some_or_skip!(rec("vllm-0.30/capped/run.series.jsonl"));
    let r = t8::check(&s, 32, None, Engine::Vllm);
    assert_eq!(
        r.message,
        "requested 32 concurrent, server never ran more than 11"
    );
    assert_eq!(r.evidence_json()["peak_running"], 11.0);
    assert_eq!(r.evidence_json()["peak_in_flight"], 16.0);
    let facts = some_or_skip!(boot("vllm-0.30/capped/boot.log"));
    let r = t8::check(&s, 32, Some(&facts), Engine::Vllm);
    assert_eq!(
        r.line(),
        "[ T8] TRIPWIRE-FAILED  requested 32 concurrent, server never ran more than 11; admission control (--max-num-queued-reqs 16) kept at most 16 in flight, so the other 16 were rejected, not queued"
    );
    assert_eq!(r.evidence_json()["max_num_queued_reqs"], 16);
    assert_eq!(r.evidence_json()["running_cap"], 32);
}

#[test]
fn capped_030_t15_does_not_count_rejected_requests() {
    let before = some_or_skip!(snap("vllm-0.30/capped/before.snapshot.json"));
    let after = some_or_skip!(snap("vllm-0.30/capped/after.snapshot.json"));
    let b = some_or_skip!(result_file("vllm-0.30/capped/bench.json"));
    assert_eq!((b.completed, b.failed), (Some(16.0), Some(16.0)));
    let r = t15::check(&b, &before, &after, 0, Engine::Vllm);
    assert_eq!(r.status, Status::Pass, "{}", r.message);
    assert_eq!(r.evidence_json()["server_finished"], 16.0);
}

// ----------------------------------------------- SGLang 0.5.20 (docs/design/evidence.md#sglang-05)

#[test]
fn sglang_capped() {
    let before = some_or_skip!(snap("sglang-0.5/capped/before.snapshot.json"));
    let after = some_or_skip!(snap("sglang-0.5/capped/after.snapshot.json"));
    let s = some_or_skip!(rec("sglang-0.5/capped/run.series.jsonl"));
    let b = some_or_skip!(result_file("sglang-0.5/capped/bench.json"));
    assert_eq!(s.engine(), Some(Engine::Sglang));
    assert_eq!(after.engine(), Some(Engine::Sglang));
    // No retraction counter yet: the witness gauge says 0.
    assert!(!after.metrics.has("sglang:num_retracted_requests_total"));
    let r = t1::check(&before, &after, Some(&s), None, Engine::Sglang);
    assert_eq!(r.line(), "[ T1] PASS  no retractions");
    let r = t10::check(&before, &after, None, Engine::Sglang);
    assert_eq!(r.evidence_json()["tokens"], 32000.0);
    let r = t14::check(&s, &after, Engine::Sglang);
    assert_eq!(
        r.line(),
        "[T14] N/A  does not apply to SGLang: T14 is about vLLM's reserved null block"
    );
    assert!(r.is_ok());
    assert_eq!(r.evidence_json()["engine"], "sglang");
    let facts = some_or_skip!(boot("sglang-0.5/capped/boot.log"));
    assert_eq!(facts.engine, Some(Engine::Sglang));
    let r = t8::check(&s, 32, Some(&facts), Engine::Sglang);
    assert_eq!(
        r.message,
        "requested 32 concurrent, server never ran more than 1; SGLang lowered its limit to 1 running because of the mamba state cache, although it was started with --max-running-requests 32"
    );
    let r = t9::check(&s, None, None, Engine::Sglang);
    assert_eq!(r.status, Status::Pass);
    assert!(r
        .message
        .contains(" of the fullest memory pool (KV cache or request state); "));
    assert_eq!(
        (
            r.evidence_json()["ceiling_min"].as_u64(),
            r.evidence_json()["ceiling_max"].as_u64()
        ),
        (Some(1), Some(1))
    );
    let r = t15::check(&b, &before, &after, 0, Engine::Sglang);
    assert_eq!(r.status, Status::Pass);
    assert_eq!(r.evidence_json()["server_finished"], 32.0);
}

#[test]
fn sglang_live_shortfall_without_reaching_its_limit() {
    let before = some_or_skip!(snap("sglang-0.5/live/before.snapshot.json"));
    let after = some_or_skip!(snap("sglang-0.5/live/after.snapshot.json"));
    let s = some_or_skip!(rec("sglang-0.5/live/run.series.jsonl"));
    let b = some_or_skip!(result_file("sglang-0.5/live/bench.json"));
    assert_eq!(
        t1::check(&before, &after, None, None, Engine::Sglang).message,
        "no retractions"
    );
    let facts = some_or_skip!(boot("sglang-0.5/live/boot.log"));
    assert_eq!(facts.running_cap, Some(10));
    let r = t8::check(&s, 32, Some(&facts), Engine::Sglang);
    // The limit of 10 was not reached, so it is not named.
    assert_eq!(
        r.message,
        "requested 32 concurrent, server never ran more than 5"
    );
    assert_eq!(r.evidence_json()["running_cap"], 10);
    let r = t9::check(&s, None, None, Engine::Sglang);
    assert_eq!(
        (
            r.evidence_json()["ceiling_min"].as_u64(),
            r.evidence_json()["ceiling_max"].as_u64()
        ),
        (Some(5), Some(5))
    );
    assert_eq!(
        t15::check(&b, &before, &after, 0, Engine::Sglang).status,
        Status::Pass
    );
}

#[test]
fn sglang_qwen3_8b() {
    let before = some_or_skip!(snap("sglang-0.5/qwen3-8b/before.snapshot.json"));
    let after = some_or_skip!(snap("sglang-0.5/qwen3-8b/after.snapshot.json"));
    let s = some_or_skip!(rec("sglang-0.5/qwen3-8b/run.series.jsonl"));
    let b = some_or_skip!(result_file("sglang-0.5/qwen3-8b/bench.json"));
    assert_eq!(
        t1::check(&before, &after, None, None, Engine::Sglang).message,
        "no retractions"
    );
    assert_eq!(
        t8::check(&s, 32, None, Engine::Sglang).message,
        "requested 32 concurrent, server never ran more than 29"
    );
    assert_eq!(t8::check(&s, 29, None, Engine::Sglang).status, Status::Pass);
    assert_eq!(t8::check(&s, 30, None, Engine::Sglang).status, Status::Fail);
    // The run asked for 32: the lowest ceiling, 30, could bind.
    let r = t9::check(&s, None, Some(32), Engine::Sglang);
    assert_eq!(
        (
            r.evidence_json()["ceiling_min"].as_u64(),
            r.evidence_json()["ceiling_max"].as_u64()
        ),
        (Some(30), Some(31))
    );
    assert_eq!(r.status, Status::Warn);
    // Asked for no more than the 29 that ran, it never bound.
    assert_eq!(
        t9::check(&s, None, Some(29), Engine::Sglang).status,
        Status::Pass
    );
    let r = t15::check(&b, &before, &after, 0, Engine::Sglang);
    assert_eq!(r.status, Status::Pass);
    let fewer = BenchResult {
        completed: Some(30.0),
        ..b.clone()
    };
    assert_eq!(
        t15::check(&fewer, &before, &after, 0, Engine::Sglang).status,
        Status::Fail
    );
}

#[test]
fn sglang_own_client_counts_retractions_and_its_warm_up() {
    let before = some_or_skip!(snap("sglang-0.5/qwen3-8b-own-client/before.snapshot.json"));
    let after = some_or_skip!(snap("sglang-0.5/qwen3-8b-own-client/after.snapshot.json"));
    let s = some_or_skip!(rec("sglang-0.5/qwen3-8b-own-client/run.series.jsonl"));
    let b = some_or_skip!(result_file("sglang-0.5/qwen3-8b-own-client/bench.jsonl"));
    let load = some_or_skip!(inferlint_core::testkit::evidence_text(
        "sglang-0.5/qwen3-8b-own-client/load.log"
    ));
    let r = t1::check(&before, &after, None, None, Engine::Sglang);
    assert_eq!(
        r.line(),
        "[ T1] TRIPWIRE-FAILED  3 retractions during the run (SGLang logs a warning for each)"
    );
    assert_eq!(
        t8::check(&s, 32, None, Engine::Sglang).line(),
        "[ T8] PASS  reached 32 running (requested 32)"
    );
    let extra = bench::untimed_requests(&load);
    assert_eq!(extra, 1);
    let r = t15::check(&b, &before, &after, extra, Engine::Sglang);
    assert_eq!(
        r.line(),
        "[T15] PASS  client and server agree: 32 requests, 32,000 output tokens, plus 1 untimed request (test or warm-up)"
    );
    // Without the warm-up accounted for, the server finished one more than the client sent.
    assert_eq!(
        t15::check(&b, &before, &after, 0, Engine::Sglang).status,
        Status::Fail
    );
    // The retraction counter removed from the after snapshot, witness kept: nothing counted.
    let r = t1::check(
        &before,
        &without_metric(&after, "sglang:num_retracted_requests_total"),
        None,
        None,
        Engine::Sglang,
    );
    assert_eq!(r.message, "no retractions");
}

// -------------------------------------- TensorRT-LLM 1.3 (docs/design/evidence.md#tensorrt-llm-13)

fn trt_facts(pauses: Option<u64>, served: Option<u64>, policy: Option<&str>) -> BootFacts {
    let server_args = policy.map(|p| {
        let mut m = Map::new();
        m.insert(
            "capacity_scheduler_policy".into(),
            Value::from(format!("<CapacitySchedulerPolicy.{p}: '{p}'>")),
        );
        m
    });
    BootFacts {
        engine: Some(Engine::Trtllm),
        pauses,
        served_in_log: served,
        server_args,
        running_cap: Some(32),
        ..Default::default()
    }
}

#[test]
fn trtllm_t1_from_the_log_the_gauge_or_the_policy() {
    let before = some_or_skip!(snap("trtllm-1.3/qwen3-8b/before.snapshot.json"));
    let after = some_or_skip!(snap("trtllm-1.3/qwen3-8b/after.snapshot.json"));
    let s = some_or_skip!(rec("trtllm-1.3/qwen3-8b/run.series.jsonl"));
    assert!(after.url.ends_with("/prometheus/metrics"));
    let log_path = some_or_skip!(inferlint_core::testkit::evidence(
        "trtllm-1.3/qwen3-8b/boot.log"
    ));
    let text = std::fs::read_to_string(&log_path).unwrap();
    let log = inferlint_core::bootlog::parse_text(&text, None);
    let r = t1::check(&before, &after, Some(&s), Some(&log), Engine::Trtllm);
    assert_eq!(
        r.line(),
        "[ T1] PASS  no pause in the server log, which covers 41 answered requests"
    );
    assert_eq!(r.evidence_json()["paused_in_log"], 0);
    assert_eq!(r.evidence_json()["served_in_log"], 41);
    // The log cut at the ready line covers no request: its pause count is unknown, and the
    // recording's gauge and the scheduler policy decide.
    let ready = text
        .find("Application startup complete")
        .expect("ready line");
    let cut_text = &text[..text[ready..]
        .find('\n')
        .map_or(text.len(), |i| ready + i + 1)];
    let cut = inferlint_core::bootlog::parse_text(cut_text, None);
    assert_eq!((cut.pauses, cut.served_in_log.unwrap_or(0)), (None, 0));
    let r = t1::check(&before, &after, Some(&s), Some(&cut), Engine::Trtllm);
    assert_eq!(r.status, Status::Pass);
    let n = s.samples.iter().filter(|x| x.paused().is_some()).count();
    assert_eq!(
        r.message,
        format!("no paused request in {n} readings, and the scheduler policy (GUARANTEED_NO_EVICT) admits a request only when its whole output fits")
    );
    // Another policy in the same log: a pause between readings cannot be ruled out.
    let other = inferlint_core::bootlog::parse_text(
        &cut_text.replace("GUARANTEED_NO_EVICT", "MAX_UTILIZATION"),
        None,
    );
    let r = t1::check(&before, &after, Some(&s), Some(&other), Engine::Trtllm);
    assert_eq!(r.status, Status::Unknown);
    assert!(r.message.starts_with(&format!(
        "no paused request in {n} readings; TensorRT-LLM counts no pauses"
    )));
    let paused = trt_facts(Some(13), Some(41), Some("MAX_UTILIZATION"));
    let r = t1::check(&before, &after, Some(&s), Some(&paused), Engine::Trtllm);
    assert_eq!(
        r.message,
        "13 requests paused for recompute during the run, from the server log (TensorRT-LLM counts none)"
    );
    // A paused reading in the recording.
    let mut s2 = s.clone();
    s2.samples[5].set_paused(Some(2.0));
    let r = t1::check(&before, &after, Some(&s2), Some(&cut), Engine::Trtllm);
    assert_eq!(r.status, Status::Fail);
    assert_eq!(
        r.message,
        format!("requests were paused for recompute in 1 of {n} readings, up to 2 at once (TensorRT-LLM counts no pauses, so the number is unknown)")
    );
    let ev = r.evidence_json();
    assert_eq!(ev["series"], "trtllm_num_paused_requests");
    assert_eq!(
        (ev["paused_readings"].as_u64(), ev["readings"].as_u64()),
        (Some(1), Some(n as u64))
    );
    assert_eq!(ev["paused_max"], 2.0);
    // Neither a log nor a recording.
    let r = t1::check(&before, &after, None, None, Engine::Trtllm);
    assert_eq!(r.status, Status::Unknown);
    assert_eq!(
        r.message,
        "TensorRT-LLM counts no pauses; it logs each one, so the server log saved until after the run is needed to count them"
    );
}

#[test]
fn trtllm_gauges_lag() {
    let before = some_or_skip!(snap("trtllm-1.3/qwen3-8b/before.snapshot.json"));
    let after = some_or_skip!(snap("trtllm-1.3/qwen3-8b/after.snapshot.json"));
    let s = some_or_skip!(rec("trtllm-1.3/qwen3-8b/run.series.jsonl"));
    let b = some_or_skip!(result_file("trtllm-1.3/qwen3-8b/bench.json"));
    assert!(s.usage_readings().len() <= 3);
    assert_eq!(
        t10::check(&before, &after, None, Engine::Trtllm).evidence_json()["tokens"],
        32000.0
    );
    let r = t8::check(&s, 32, None, Engine::Trtllm);
    assert_eq!(r.message, "reached 32 running (requested 32)");
    assert_eq!(r.evidence_json()["gauges_lag"], true);
    assert_eq!(
        t8::check(&s, 33, None, Engine::Trtllm).status,
        Status::Unknown
    );
    let r = t8::check(&s, 64, None, Engine::Trtllm);
    assert_eq!(r.status, Status::Unknown);
    assert!(r.message.ends_with("may have run more in between"));
    let r = t9::check(&s, None, None, Engine::Trtllm);
    assert_eq!(r.evidence_json()["ceiling_min"], 35);
    assert!(
        r.message
            .ends_with("; TensorRT-LLM updates its gauges only when a request completes)"),
        "{}",
        r.message
    );
    assert!(r.message.contains(" (from 2 readings; "), "{}", r.message);
    assert_eq!(
        t14::check(&s, &after, Engine::Trtllm).message,
        "does not apply to TensorRT-LLM: T14 is about vLLM's reserved null block"
    );
    let r = t15::check(&b, &before, &after, 0, Engine::Trtllm);
    assert_eq!(r.status, Status::Pass);
    assert_eq!(r.evidence_json()["server_finished"], 32.0);
    let more = BenchResult {
        completed: Some(34.0),
        ..b.clone()
    };
    assert_eq!(
        t15::check(&more, &before, &after, 0, Engine::Trtllm).status,
        Status::Fail
    );
}

#[test]
fn trtllm_without_iteration_stats_cannot_tell_concurrency() {
    let before = some_or_skip!(snap("trtllm-1.3/no-iter-stats/before.snapshot.json"));
    let after = some_or_skip!(snap("trtllm-1.3/no-iter-stats/after.snapshot.json"));
    let s = some_or_skip!(rec("trtllm-1.3/no-iter-stats/run.series.jsonl"));
    let b = some_or_skip!(result_file("trtllm-1.3/no-iter-stats/bench.json"));
    let load = some_or_skip!(inferlint_core::testkit::evidence_text(
        "trtllm-1.3/no-iter-stats/load.log"
    ));
    assert!(after.metrics.has("trtllm_generation_tokens_total"));
    assert!(!after.metrics.has("trtllm_num_requests_running"));
    assert_eq!(s.engine(), Some(Engine::Trtllm));
    for r in [
        t8::check(&s, 32, None, Engine::Trtllm),
        t9::check(&s, None, None, Engine::Trtllm),
    ] {
        assert_eq!(r.status, Status::Unknown);
        assert!(
            r.message.contains("'enable_iter_perf_stats: true'"),
            "{}",
            r.message
        );
    }
    let extra = bench::untimed_requests(&load);
    let r = t15::check(&b, &before, &after, extra, Engine::Trtllm);
    assert_eq!(r.status, Status::Pass, "{}", r.message);
    assert_eq!(r.evidence_json()["expected_extra_requests"], 1);
    assert_eq!(t8::gauges_hint(Engine::Vllm), "");
}

/// Every check keeps a result, never a panic, on the wrong engine's evidence.
#[test]
fn checks_never_fail_as_functions_on_another_engines_files() {
    let before = some_or_skip!(snap("sglang-0.5/qwen3-8b/before.snapshot.json"));
    let after = some_or_skip!(snap("sglang-0.5/qwen3-8b/after.snapshot.json"));
    let s = some_or_skip!(rec("sglang-0.5/qwen3-8b/run.series.jsonl"));
    let results: Vec<CheckResult> = vec![
        t1::check(&before, &after, Some(&s), None, Engine::Vllm),
        t10::check(&before, &after, None, Engine::Vllm),
        t14::check(&s, &after, Engine::Vllm),
    ];
    for r in &results {
        assert_eq!(r.status, Status::Unknown, "{}", r.line());
    }
}
