//! The window's tripwires (T16 cached prompts, T17 failed requests, T18 short outputs, T19
//! speculation on random prompts, T20 warm-up, T21 the client's pace) on the
//! recordings of the real vLLM 0.32 CPU build (tests/fixtures/vllm-0.32-cpu/field/) and on the
//! clean GPU runs, both verdicts of each, and a one-number mutation that flips each verdict
//! (docs/design/evidence.md#mutations).

use inferlint_core::bench::{self, BenchResult};
use inferlint_core::bootlog::analyzer::{Analyzer, BootEventKind};
use inferlint_core::checks::{t16, t17, t18, t19, t20, t21};
use inferlint_core::load::{intent_of_command, LoadIntent};
use inferlint_core::snapshot::Snapshot;
use inferlint_core::testkit::{evidence, evidence_text};
use inferlint_core::{CheckResult, Engine, Status};

const FIELD: &str = "vllm-0.32-cpu/field";

fn snap(rel: &str) -> Option<Snapshot> {
    let p = evidence(rel)?;
    Some(Snapshot::load(&p).unwrap_or_else(|e| panic!("{rel}: {e}")))
}

fn result(rel: &str) -> Option<BenchResult> {
    let p = evidence(rel)?;
    Some(bench::load(&p).unwrap_or_else(|e| panic!("{rel}: {e}")))
}

fn command(rel: &str) -> Option<LoadIntent> {
    Some(intent_of_command(evidence_text(rel)?.trim()))
}

/// The snapshot with exactly one occurrence of `from` in its text replaced.
fn edited(s: &Snapshot, from: &str, to: &str) -> Snapshot {
    assert_eq!(s.text.matches(from).count(), 1, "{from:?} in {}", s.source);
    Snapshot::from_text(&s.text.replacen(from, to, 1), &s.source).unwrap()
}

/// The line of `name{labels} value` in a snapshot, for a mutation to start from.
fn line_of<'a>(s: &'a Snapshot, start: &str) -> &'a str {
    s.text
        .lines()
        .find(|l| l.starts_with(start))
        .unwrap_or_else(|| panic!("no {start} in {}", s.source))
}

/// One window of the recording: before, after, the result file and the load command.
struct Window {
    before: Snapshot,
    after: Snapshot,
    result: BenchResult,
    load: LoadIntent,
}

fn window(case: &str, before: &str, after: &str, load: &str) -> Option<Window> {
    Some(Window {
        before: snap(&format!("{FIELD}/{case}/{before}.prom"))?,
        after: snap(&format!("{FIELD}/{case}/{after}.prom"))?,
        result: result(&format!("{FIELD}/{case}/{load}.json"))?,
        load: command(&format!("{FIELD}/{case}/{load}.cmd.txt"))?,
    })
}

impl Window {
    fn t16(&self, after: &Snapshot) -> CheckResult {
        let untimed = t16::Untimed {
            requests: 0,
            completed: self.result.completed,
        };
        t16::check(&self.before, after, &self.load, untimed, Engine::Vllm)
    }
    fn t17(&self, result: &BenchResult, after: &Snapshot) -> CheckResult {
        t17::check(Some(result), Some((&self.before, after)), Engine::Vllm)
    }
    fn t18(&self, result: &BenchResult, after: &Snapshot) -> CheckResult {
        t18::check(
            &self.load,
            Some(result),
            Some((&self.before, after)),
            Engine::Vllm,
        )
    }
}

#[test]
fn t16_fails_on_the_second_identical_seeded_load_and_passes_on_the_first() {
    let Some(first) = window("cache-twice", "before", "mid", "first") else {
        return;
    };
    let Some(second) = window("cache-twice", "mid", "after", "second") else {
        return;
    };
    let r = first.t16(&first.after);
    assert_eq!(r.status, Status::Pass, "{}", r.message);
    assert_eq!(
        r.message,
        "0.0% of prompt tokens came from the prefix cache (0 of 2,400); the random dataset's prompts were fresh"
    );
    let r = second.t16(&second.after);
    assert_eq!(r.status, Status::Fail, "{}", r.message);
    assert_eq!(
        r.message,
        "85.3% of prompt tokens came from the prefix cache (2,048 of 2,400): their prefill was skipped, so TTFT and throughput are not those of fresh prompts (random dataset, --seed 0)"
    );
    let e = r.evidence_json();
    assert_eq!(e["hit_tokens"], 2048.0);
    assert_eq!(e["prompt_tokens"], 2400.0);
    assert_eq!(e["prompts"], "fresh");
    // Mutation: the first load with 24 of its 2,400 prompt tokens hit (1.0%) fails.
    let hits = line_of(&first.after, "vllm:prefix_cache_hits_total{");
    let mutated = edited(&first.after, hits, &hits.replace(" 0.0", " 24.0"));
    assert_eq!(first.t16(&mutated).status, Status::Fail);
    // And the second, had its prompts shared a prefix on purpose, only notes the rate.
    let shared = t16::check(
        &second.before,
        &second.after,
        &intent_of_command("vllm bench serve --dataset-name random --random-prefix-len 256"),
        t16::Untimed::default(),
        Engine::Vllm,
    );
    assert_eq!(shared.status, Status::Pass, "{}", shared.message);
}

#[test]
fn t16_passes_on_prompts_shorter_than_one_block() {
    // 100-token prompts cannot fill one 128-token block: the same seed twice hits nothing.
    let Some(w) = window("cache-twice", "short2-before", "short2-after", "short2") else {
        return;
    };
    let r = w.t16(&w.after);
    assert_eq!(r.status, Status::Pass, "{}", r.message);
    assert_eq!(r.evidence_json()["hit_tokens"], 0.0);
}

#[test]
fn t17_fails_on_refused_prompts_and_passes_on_the_clean_load() {
    let Some(clean) = window("cache-twice", "before", "mid", "first") else {
        return;
    };
    let r = clean.t17(&clean.result, &clean.after);
    assert_eq!(r.status, Status::Pass, "{}", r.message);
    assert_eq!(
        r.message,
        "every request finished: 8 completed, none failed, aborted or refused"
    );
    let Some(over) = window("failed", "before", "mid", "overlong") else {
        return;
    };
    let r = over.t17(&over.result, &over.after);
    assert_eq!(r.status, Status::Fail, "{}", r.message);
    assert_eq!(
        r.message,
        "8 of 8 requests failed (the load tool counted 8 failed; the API server refused 8 × 4xx on /v1/completions); first error: Bad Request; no request succeeded, so the benchmark's figures describe no served request"
    );
    // Mutation: the clean load's server with one 4xx more on /v1/completions fails, even with
    // the client's result saying all succeeded.
    let after = &clean.after;
    let ok = line_of(after, "http_requests_total{handler=\"/v1/completions\"");
    let with_4xx = Snapshot::from_text(
        &format!(
            "{}\nhttp_requests_total{{handler=\"/v1/completions\",method=\"POST\",status=\"4xx\"}} 1.0\n",
            after.text.trim_end()
        ),
        &after.source,
    )
    .unwrap();
    assert!(ok.contains("2xx"));
    assert_eq!(clean.t17(&clean.result, &with_4xx).status, Status::Fail);
}

#[test]
fn t17_counts_the_survivors_of_a_mixed_load() {
    let Some(w) = window("failed", "mixed-before", "mixed-after", "mixed") else {
        return;
    };
    let r = w.t17(&w.result, &w.after);
    assert_eq!(r.status, Status::Fail);
    assert_eq!(
        r.message,
        "4 of 8 requests failed (the load tool counted 4 failed; the API server refused 4 × 4xx on /v1/completions); first error: Bad Request; latency and throughput are over the 4 that succeeded"
    );
    // Mutation: the result file and the server with no failure pass.
    let clean = BenchResult {
        failed: Some(0.0),
        ..w.result.clone()
    };
    let refused = line_of(
        &w.after,
        "http_requests_total{handler=\"/v1/completions\",method=\"POST\",status=\"4xx\"}",
    );
    let before_refused = line_of(
        &w.before,
        "http_requests_total{handler=\"/v1/completions\",method=\"POST\",status=\"4xx\"}",
    );
    let same = edited(&w.after, refused, before_refused);
    assert_eq!(w.t17(&clean, &same).status, Status::Pass);
}

#[test]
fn the_window_with_no_success_is_no_pass_for_t10_and_t15() {
    let Some(over) = window("failed", "before", "mid", "overlong") else {
        return;
    };
    let r = inferlint_core::checks::t15::check(
        &over.result,
        &over.before,
        &over.after,
        0,
        Engine::Vllm,
    );
    assert_eq!(r.status, Status::Unknown, "{}", r.message);
    assert_eq!(
        r.message,
        "the load tool completed no request: client and server have nothing to agree on (T17 says which requests failed)"
    );
}

#[test]
fn t18_passes_when_every_request_ran_to_its_length() {
    let Some(w) = window("cache-twice", "before", "mid", "first") else {
        return;
    };
    let r = w.t18(&w.result, &w.after);
    assert_eq!(r.status, Status::Pass, "{}", r.message);
    assert_eq!(r.message, "all 8 requests ran to the 16 tokens asked");
    // Mutation: one request more that ended at end-of-sequence: the load did not ask for
    // --ignore-eos, so it warns.
    let stop = line_of(
        &w.after,
        "vllm:request_success_total{engine=\"0\",finished_reason=\"stop\"",
    );
    let bumped = stop.replace(" 0.0", " 1.0");
    assert_ne!(stop, bumped, "{stop}");
    let mutated = edited(&w.after, stop, &bumped);
    let r = w.t18(&w.result, &mutated);
    assert_eq!(r.status, Status::Warn, "{}", r.message);
    assert!(
        r.message
            .starts_with("1 of 9 requests (11%) stopped at end-of-sequence"),
        "{}",
        r.message
    );
}

#[test]
fn t18_warns_on_a_custom_dataset_that_stops_at_end_of_sequence() {
    let Some(w) = window("eos", "before", "after", "natural") else {
        return;
    };
    let r = w.t18(&w.result, &w.after);
    assert_eq!(r.status, Status::Warn, "{}", r.message);
    assert_eq!(
        r.message,
        "7 of 8 requests (88%) stopped at end-of-sequence before the 200 tokens asked, median 46 tokens: tokens per second compares runs of different lengths; add --ignore-eos for outputs of the length asked"
    );
    let e = r.evidence_json();
    assert_eq!(
        (e["server_stop"].as_f64(), e["client_short"].as_u64()),
        (Some(7.0), Some(7))
    );
    // Mutation: the same stops under --ignore-eos mean the option never reached the server.
    let eos = intent_of_command(&format!(
        "{} --ignore-eos",
        evidence_text(&format!("{FIELD}/eos/natural.cmd.txt"))
            .unwrap()
            .trim()
    ));
    let r = t18::check(
        &eos,
        Some(&w.result),
        Some((&w.before, &w.after)),
        Engine::Vllm,
    );
    assert_eq!(r.status, Status::Fail, "{}", r.message);
    // Mutation: the 7 stops read as lengths pass.
    let stop = line_of(
        &w.after,
        "vllm:request_success_total{engine=\"0\",finished_reason=\"stop\"",
    );
    let length = line_of(
        &w.after,
        "vllm:request_success_total{engine=\"0\",finished_reason=\"length\"",
    );
    let swapped = edited(
        &edited(&w.after, stop, &stop.replace(" 7.0", " 0.0")),
        length,
        &length.replace(" 1.0", " 8.0"),
    );
    let all_long = BenchResult {
        output_lens: vec![200.0; 8],
        ..w.result.clone()
    };
    assert_eq!(w.t18(&all_long, &swapped).status, Status::Pass);
}

#[test]
fn the_report_puts_the_window_findings_first_in_what_limited_this_run() {
    let Some(w) = window("cache-twice", "mid", "after", "second") else {
        return;
    };
    let report = inferlint_report::Report::build(inferlint_report::Inputs {
        before: Some(w.before.clone()),
        after: Some(w.after.clone()),
        bench: Some(w.result.clone()),
        load: Some(w.load.clone()),
        ..Default::default()
    });
    let first = report.insights().first().expect("an insight");
    assert_eq!(first.key, "cached");
    assert!(
        first.text.starts_with(
            "85% of the prompt tokens (2,048 of 2,400) were served from the server's prefix cache"
        ),
        "{}",
        first.text
    );
    // Mutation: the first load's window, which hit nothing, has no such sentence.
    let Some(clean) = window("cache-twice", "before", "mid", "first") else {
        return;
    };
    let report = inferlint_report::Report::build(inferlint_report::Inputs {
        before: Some(clean.before.clone()),
        after: Some(clean.after.clone()),
        bench: Some(clean.result.clone()),
        load: Some(clean.load.clone()),
        ..Default::default()
    });
    assert!(report.insights().iter().all(|i| i.key != "cached"));
}

#[test]
fn t19_warns_on_ngram_speculation_over_random_prompts_and_passes_on_text() {
    let (Some(before), Some(after)) = (
        snap(&format!("{FIELD}/spec-ngram/before.prom")),
        snap(&format!("{FIELD}/spec-ngram/after.prom")),
    ) else {
        return;
    };
    let Some(boot) = evidence(&format!("{FIELD}/spec-ngram/boot.log")) else {
        return;
    };
    let facts = inferlint_core::bootlog::parse_file(&boot, None).unwrap();
    let Some(random) = command(&format!("{FIELD}/spec-ngram/load.cmd.txt")) else {
        return;
    };
    assert_eq!(
        inferlint_core::checks::t19::active(&before, &after, Some(&facts), Engine::Vllm),
        Some(true)
    );
    let r = t19::check(&before, &after, &random, Some(&facts), Engine::Vllm);
    assert_eq!(r.status, Status::Warn, "{}", r.message);
    assert_eq!(
        r.message,
        "speculative decoding (ngram) accepted 0 of 59 draft tokens (0.0%) on the random dataset's random tokens: acceptance on them says nothing of real text, so the speed measured here does not transfer to a real workload"
    );
    // The repetitive text's load: a custom dataset, which passes with its rate.
    let (Some(b2), Some(a2), Some(text)) = (
        snap(&format!("{FIELD}/spec-ngram/repetitive-before.prom")),
        snap(&format!("{FIELD}/spec-ngram/repetitive-after.prom")),
        command(&format!("{FIELD}/spec-ngram/repetitive.cmd.txt")),
    ) else {
        return;
    };
    let r = t19::check(&b2, &a2, &text, Some(&facts), Engine::Vllm);
    assert_eq!(r.status, Status::Pass, "{}", r.message);
    assert!(
        r.message
            .starts_with("speculative decoding (ngram) accepted 87 of 111 draft tokens (78.4%)"),
        "{}",
        r.message
    );
    // Mutation: a server that proposed no draft and has no speculative config: T19 is not due.
    let drafts = line_of(&after, "vllm:spec_decode_num_draft_tokens_total{");
    let none = edited(&after, drafts, &drafts.replace(" 59.0", " 0.0"));
    assert_eq!(
        inferlint_core::checks::t19::active(&before, &none, None, Engine::Vllm),
        Some(false)
    );
}

/// The CPU build logs no block size; its `cache_config_info` says 128. The report's cache
/// arithmetic takes the server's own number before vLLM's default of 16.
#[test]
fn the_report_computes_with_the_block_size_the_server_exports() {
    let Some(w) = window("cache-twice", "before", "mid", "first") else {
        return;
    };
    let Some(log) = evidence_text(&format!("{FIELD}/cache-twice/boot.log")) else {
        return;
    };
    assert!(w.after.text.contains("block_size=\"128\""));
    let inputs = |after: Snapshot| inferlint_report::Inputs {
        boot_logs: vec![inferlint_report::BootLog {
            label: "boot.log".into(),
            text: log.clone(),
        }],
        before: Some(w.before.clone()),
        after: Some(after),
        bench: Some(w.result.clone()),
        requested: Some(4),
        load: Some(w.load.clone()),
        ..Default::default()
    };
    let report = inferlint_report::Report::build(inputs(w.after.clone()));
    let need = report.cache_need().expect("the cache arithmetic");
    assert_eq!(need.block, 128, "{need:?}");
    // 300 prompt + 16 output tokens: 3 blocks of 128 each.
    assert_eq!(need.per_request_alloc, 384, "{need:?}");
    // Mutation: the label says 16, and the arithmetic follows it.
    let sixteen = edited(&w.after, ",block_size=\"128\"", ",block_size=\"16\"");
    let need = inferlint_report::Report::build(inputs(sixteen))
        .cache_need()
        .unwrap();
    assert_eq!((need.block, need.per_request_alloc), (16, 320));
}

/// The warm-up lines an analyzer reports after the ready line of `log` with `extra` appended.
fn warmup_lines(log: &str, extra: &[&str]) -> Vec<String> {
    let mut a = Analyzer::new(None);
    let mut out = Vec::new();
    for line in log.lines().chain(extra.iter().copied()) {
        for ev in a.feed_line(line) {
            if let BootEventKind::WarmupWork { line } = ev.kind {
                out.push(line);
            }
        }
    }
    out
}

#[test]
fn t20_passes_on_the_compiled_cpu_build_and_fails_on_a_compile_line_while_serving() {
    let Some(cold) = result(&format!("{FIELD}/warmup/cold.json")) else {
        return;
    };
    let Some(log) = evidence_text(&format!("{FIELD}/warmup/boot.log")) else {
        return;
    };
    let Some(gpu_log) = evidence_text("vllm-0.28/boot_pool_level_hi.log") else {
        return;
    };
    // The CPU build compiled during boot: nothing after the ready line is warm-up work, and the
    // first wave was not slower than the rest (batching dominates its TTFTs).
    let seen = warmup_lines(&log, &[]);
    assert_eq!(seen, Vec::<String>::new());
    let r = t20::check(Some(&cold), Some(&seen));
    assert_eq!(r.status, Status::Pass, "{}", r.message);
    assert_eq!(
        r.message,
        "the first 4 requests' median TTFT 7.2 s is 0.73× the rest's 10.0 s, and the server logged no warm-up work while the load ran"
    );
    // A GPU log's compile lines before its ready line are boot, not the load's.
    assert_eq!(warmup_lines(&gpu_log, &[]), Vec::<String>::new());
    // Mutation: one real compile line of the GPU log, printed after ready, fails.
    let compile = gpu_log
        .lines()
        .find(|l| l.contains("Compiling a graph for compile range"))
        .unwrap();
    let seen = warmup_lines(&log, &[compile]);
    assert_eq!(
        seen,
        vec!["Compiling a graph for compile range (1, 2048) takes 36.17 s".to_string()]
    );
    let r = t20::check(Some(&cold), Some(&seen));
    assert_eq!(r.status, Status::Fail, "{}", r.message);
    assert!(r.message.starts_with("the server did warm-up work while the load ran (1 line, first: \"Compiling a graph for compile range (1, 2048) takes 36.17 s\"): requests of the measured window waited for it; the first 4 requests' median TTFT"), "{}", r.message);
    // Two requests of the first wave at 120 s (a median of four moves only with two) put it
    // past both the ratio and the batching allowance of four 100-token prompts: a warning.
    let text = evidence_text(&format!("{FIELD}/warmup/cold.json")).unwrap();
    let slow = BenchResult::from_text(
        &text
            .replacen("7.237785574999634", "120.0", 1)
            .replacen("7.237615125999582", "120.0", 1),
        "cold.json",
    )
    .unwrap();
    let w = t20::check(Some(&slow), None);
    assert_eq!(w.status, Status::Warn, "{}", w.message);
}

#[test]
fn t21_fails_on_the_throttled_client_and_passes_on_the_control() {
    let case = |name: &str| {
        Some((
            result(&format!("{FIELD}/client-paced/{name}.json"))?,
            command(&format!("{FIELD}/client-paced/{name}.cmd.txt"))?,
        ))
    };
    let (Some((paced, load)), Some((control, control_load))) = (case("paced"), case("unthrottled"))
    else {
        return;
    };
    assert!(
        load.exact_schedule && load.request_rate == Some(100.0),
        "{load:?}"
    );
    let r = t21::check(&load, Some(&paced), None, None, None);
    assert_eq!(r.status, Status::Fail, "{}", r.message);
    assert_eq!(
        r.message,
        "the client sent 94.95 requests/s of the 100.00 asked (5.05% short): the load measured is not the one asked for"
    );
    assert_eq!(r.evidence_json()["bound_by"], "client");
    let ok = t21::check(&control_load, Some(&control), None, None, None);
    assert_eq!(ok.status, Status::Pass, "{}", ok.message);
    assert_eq!(
        ok.message,
        "the client kept up: sent 101.57 requests/s of the 100.00 asked"
    );
    // Mutation: the same sends against an asked rate of 94 (one number of the command) pass.
    let text = evidence_text(&format!("{FIELD}/client-paced/paced.cmd.txt")).unwrap();
    let slower = intent_of_command(
        text.trim()
            .replacen("--request-rate 100", "--request-rate 94", 1)
            .as_str(),
    );
    assert_eq!(
        t21::check(&slower, Some(&paced), None, None, None).status,
        Status::Pass
    );
    // And under a concurrency cap a late start is the server's pace: the rate is not judged.
    let capped = intent_of_command("vllm bench serve --request-rate 100 --max-concurrency 4");
    let mut with_cap = paced.clone();
    with_cap.max_concurrency = Some(4.0);
    assert_eq!(
        t21::check(&capped, Some(&with_cap), None, None, None).status,
        Status::Unknown
    );
}
