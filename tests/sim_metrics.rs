//! The simulator judged by inferlint's own readers and checks: its /metrics has the families,
//! labels and types of the real release (the engines' published samples, the recorded
//! evidence), its boot log parses with nothing unparsed, its preemption counter equals the preemptions it performed,
//! its usage gauge counts out of num_gpu_blocks − 1 (T14), and T9's ceiling is the block
//! arithmetic it was configured with.

use crate::sim_support;

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use inferlint_core::prom::Metrics;
use inferlint_core::series::{Series, SeriesHeader, SeriesSample};
use inferlint_core::snapshot::Snapshot;
use inferlint_core::{Engine, Status};
use sim_support::*;

/// `(family, type)` from the `# TYPE` lines, in order.
fn types(text: &str) -> Vec<(String, String)> {
    text.lines()
        .filter_map(|l| l.strip_prefix("# TYPE "))
        .map(|l| {
            let (n, t) = l.split_once(' ').unwrap();
            (n.to_string(), t.to_string())
        })
        .collect()
}

/// `# HELP` texts by family.
fn helps(text: &str) -> std::collections::BTreeMap<String, String> {
    text.lines()
        .filter_map(|l| l.strip_prefix("# HELP "))
        .map(|l| {
            let (n, h) = l.split_once(' ').unwrap_or((l, ""));
            (n.to_string(), h.to_string())
        })
        .collect()
}

/// Every `vllm:` sample as `name{labels}` with the deployment-specific values (model name,
/// engine index, every cache_config_info value) blanked.
fn vllm_signatures(m: &Metrics) -> BTreeSet<String> {
    m.samples()
        .iter()
        .filter(|s| s.name.starts_with("vllm:"))
        .map(|s| {
            let labels: Vec<String> = s
                .labels
                .iter()
                .map(|(k, v)| {
                    let blank =
                        k == "model_name" || k == "engine" || s.name == "vllm:cache_config_info";
                    format!("{k}={}", if blank { "*" } else { v })
                })
                .collect();
            format!("{}{{{}}}", s.name, labels.join(","))
        })
        .collect()
}

/// The label names each non-vLLM sample name carries (Python, process and HTTP collectors).
fn other_label_keys(m: &Metrics) -> std::collections::BTreeMap<String, BTreeSet<Vec<String>>> {
    let mut out: std::collections::BTreeMap<String, BTreeSet<Vec<String>>> = Default::default();
    for s in m.samples().iter().filter(|s| !s.name.starts_with("vllm:")) {
        out.entry(s.name.clone())
            .or_default()
            .insert(s.labels.iter().map(|(k, _)| k.clone()).collect());
    }
    out
}

/// The simulator's exposition after one /v1/models and one completion request (the requests
/// the reference scrapes had seen), compared with a reference exposition of the same release.
fn assert_same_exposition(args: &[&str], reference: &str, what: &str) {
    let sim = Sim::start(args);
    assert_eq!(get(&sim.url("/v1/models")).0, 200);
    let (s, _) = post(
        &sim.url("/v1/completions"),
        r#"{"prompt": "a b c", "max_tokens": 3}"#,
        &[],
    );
    assert_eq!(s, 200);
    let (text, m) = metrics(&sim);
    let reference_m = Metrics::parse(reference).expect("the reference parses");
    assert_eq!(
        helps(&text),
        helps(reference),
        "HELP texts differ from {what}"
    );
    assert_eq!(
        types(&text),
        types(reference),
        "families and types differ from {what}"
    );
    let (ours, theirs) = (vllm_signatures(&m), vllm_signatures(&reference_m));
    let missing: Vec<_> = theirs.difference(&ours).collect();
    let extra: Vec<_> = ours.difference(&theirs).collect();
    assert!(
        missing.is_empty() && extra.is_empty(),
        "vs {what}: missing {missing:#?}\nextra {extra:#?}"
    );
    let (ours, theirs) = (other_label_keys(&m), other_label_keys(&reference_m));
    assert_eq!(
        ours, theirs,
        "Python, process and HTTP samples differ from {what}"
    );
    for name in [
        "python_gc_objects_collected_total",
        "process_start_time_seconds",
        "http_request_duration_highr_seconds_bucket",
    ] {
        assert!(m.has(name), "{name} missing");
    }
    for s in m.samples().iter().filter(|s| s.name.starts_with("vllm:")) {
        let mut keys: Vec<&str> = s.labels.iter().map(|(k, _)| k.as_str()).collect();
        let sorted = {
            let mut k = keys.clone();
            k.sort_unstable();
            k
        };
        assert_eq!(keys, sorted, "labels are sorted in {}", s.name);
        keys.clear();
    }
    assert_eq!(m.engine(), Some(Engine::Vllm));
}

#[test]
fn exposition_033_matches_the_engine_sample() {
    let reference =
        inferlint_core::testkit::engine_sample("vllm-0.33.0-metrics-single-api-server.prom");
    assert_same_exposition(
        &["--vllm-version", "0.33"],
        &reference,
        "engine-samples 0.33.0",
    );
}

#[test]
fn exposition_028_matches_the_recorded_scrape() {
    let Some(reference) = inferlint_core::testkit::evidence_text("vllm-0.28/live/raw_metrics.prom")
    else {
        return;
    };
    assert_same_exposition(
        &[
            "--vllm-version",
            "0.28",
            "--hybrid",
            "--max-model-len",
            "16384",
        ],
        &reference,
        "vllm-0.28/live",
    );
}

#[test]
fn exposition_030_matches_the_recorded_scrape() {
    let path = inferlint_core::evidence_or_skip!("vllm-0.30/capped/after.snapshot.json");
    let reference = Snapshot::load(&path).expect("evidence loads").text;
    assert_same_exposition(
        &[
            "--vllm-version",
            "0.30",
            "--hybrid",
            "--max-model-len",
            "16384",
        ],
        &reference,
        "vllm-0.30/capped",
    );
}

#[test]
fn boot_logs_parse_fully_with_the_configured_pool() {
    for (release, version) in [("0.28", "0.28.0"), ("0.30", "0.30.0"), ("0.33", "0.33.0")] {
        let sim = Sim::start(&[
            "--vllm-version",
            release,
            "--hybrid",
            "--num-gpu-blocks-override",
            "43",
            "--max-model-len",
            "16384",
            "--served-model-name",
            "qwen38",
            "--max-num-seqs",
            "32",
        ]);
        let facts = inferlint_core::bootlog::parse_text(&sim.log(), None);
        assert_eq!(facts.vllm_version.as_deref(), Some(version), "{release}");
        assert!(facts.ready, "{release}");
        assert!(facts.unparsed.is_empty(), "{release}: {:?}", facts.unparsed);
        assert_eq!(facts.attention_block_size, Some(784), "{release}");
        // 43 blocks of 784, one request of 16,384 tokens needs 21: 43/21 × 16,384.
        assert_eq!(
            facts.kv_pool_tokens,
            Some((43.0_f64 / 21.0 * 16384.0) as u64),
            "{release}"
        );
        assert_eq!(facts.max_concurrency_request_len, Some(16384));
        assert_eq!(facts.selected_backends, vec!["FLASH_ATTN".to_string()]);
        assert_eq!(facts.cudagraphs, Some(true), "{release}");
        assert!(
            facts.processes.contains_key("APIServer") && facts.processes.contains_key("EngineCore"),
            "{release}: {:?}",
            facts.processes
        );
        let args = facts.non_default_args.as_ref().expect("non-default args");
        assert_eq!(args.get("max_num_seqs"), Some(&serde_json::json!(32)));
        assert!(
            inferlint_core::bootlog::classify_failure(&sim.log()).is_none(),
            "{release}"
        );
    }
    let sim = Sim::start(&["--enforce-eager", "--attention-backend", "TRITON_ATTN"]);
    let facts = inferlint_core::bootlog::parse_text(&sim.log(), None);
    assert_eq!(facts.cudagraphs, Some(false));
    assert_eq!(facts.requested_backend.as_deref(), Some("TRITON_ATTN"));
    assert_eq!(facts.selected_backends, vec!["TRITON_ATTN".to_string()]);
    assert!(facts.unparsed.is_empty(), "{:?}", facts.unparsed);
}

/// Scrapes /metrics every 10 ms on a thread until stopped; the samples as a series.
struct Recorder {
    stop: Arc<AtomicBool>,
    handle: std::thread::JoinHandle<(Vec<SeriesSample>, Vec<String>)>,
}

impl Recorder {
    fn start(sim: &Sim) -> Recorder {
        let url = sim.url("/metrics");
        let stop = Arc::new(AtomicBool::new(false));
        let s = stop.clone();
        let handle = std::thread::spawn(move || {
            block_on(async move {
                let client = reqwest::Client::new();
                let (mut samples, mut texts) = (Vec::new(), Vec::new());
                while !s.load(Ordering::SeqCst) && samples.len() < 20_000 {
                    if let Ok(r) = client.get(&url).send().await {
                        let text = r.text().await.unwrap_or_default();
                        if let Ok(m) = Metrics::parse(&text) {
                            samples.push(SeriesSample::from_metrics(
                                &m,
                                Engine::Vllm,
                                samples.len() as f64 * 0.01,
                                None,
                            ));
                            texts.push(text);
                        }
                    }
                    tokio::time::sleep(Duration::from_millis(10)).await;
                }
                (samples, texts)
            })
        });
        Recorder { stop, handle }
    }

    fn finish(self) -> (Series, Vec<String>) {
        self.stop.store(true, Ordering::SeqCst);
        let (samples, texts) = self.handle.join().unwrap();
        let header = SeriesHeader {
            url: "sim".into(),
            interval_s: 0.01,
            engine: Some(Engine::Vllm),
        };
        (Series::from_samples(header, samples), texts)
    }
}

/// The recording tests read the gauge at a fixed rate while a burst runs; on two cores, four of
/// them at once starve each other's recorders of readings, so they take turns.
fn one_recording_at_a_time() -> crate::serial::Turn {
    crate::serial::turn("sim-recording")
}

fn snapshot(sim: &Sim, name: &str) -> Snapshot {
    let (text, _) = metrics(sim);
    Snapshot::from_text(&text, name).unwrap()
}

#[test]
fn the_preemption_counter_equals_the_preemptions_performed() {
    let _turn = one_recording_at_a_time();
    let dir = tempfile::tempdir().unwrap();
    let log_path = dir.path().join("preemptions.jsonl");
    // 10 usable blocks of 16 tokens; 8 requests of 30 + 60 tokens cannot all fit.
    let sim = Sim::builder()
        .args(&[
            "--num-gpu-blocks-override",
            "11",
            "--block-size",
            "16",
            "--max-model-len",
            "160",
            "--tokens-per-s",
            "400",
        ])
        .env("INFERLINT_SIM_PREEMPTION_LOG", log_path.to_str().unwrap())
        .env("VLLM_LOG_STATS_INTERVAL", "0.2")
        .start();
    let before = snapshot(&sim, "before");
    let bodies = burst(&sim, 8, 30, 60);
    assert!(
        bodies
            .iter()
            .all(|b| b.contains("\"completion_tokens\":60")),
        "every request finished: {bodies:?}"
    );
    let after = snapshot(&sim, "after");
    let performed = std::fs::read_to_string(&log_path)
        .unwrap_or_default()
        .lines()
        .count();
    assert!(performed > 0, "the workload must preempt");
    let counter = |s: &Snapshot| s.metrics.total("vllm:num_preemptions_total").unwrap();
    assert_eq!(counter(&after) - counter(&before), performed as f64);
    // T1 reads the same number, and the log says nothing about it (vLLM V1 logs no preemption).
    let t1 = inferlint_core::checks::t1::check(&before, &after, None, None, Engine::Vllm);
    assert_eq!(t1.status, Status::Fail);
    assert_eq!(
        t1.message,
        format!("{performed} preemptions during the run")
    );
    assert!(
        !sim.log().to_lowercase().contains("preempt"),
        "vLLM 0.28 logs no preemption"
    );
    // Every request's tokens arrived exactly once, preempted or not.
    let gen = |s: &Snapshot| s.metrics.total("vllm:generation_tokens_total").unwrap();
    assert_eq!(gen(&after) - gen(&before), 8.0 * 60.0);
    let hist = |s: &Snapshot| s.metrics.total("vllm:request_num_preemptions_sum");
    assert_eq!(
        hist(&after),
        None,
        "0.28 has no per-request preemption histogram"
    );
}

#[test]
fn the_usage_gauge_counts_out_of_num_gpu_blocks_minus_one() {
    let _turn = one_recording_at_a_time();
    // 43 blocks (42 usable) of 16 tokens; prompts of 5 to 60 words hold 1 to 4 blocks, so the
    // readings take many values k/42, odd k included.
    let sim = Sim::start(&[
        "--num-gpu-blocks-override",
        "43",
        "--block-size",
        "16",
        "--max-model-len",
        "640",
        "--tokens-per-s",
        "50",
    ]);
    let rec = Recorder::start(&sim);
    let requests: Vec<(usize, u32)> = (0..40)
        .map(|i| (5 + (i * 13 % 56), 3 + (i * 7 % 10) as u32))
        .collect();
    let bodies = burst_of(&sim, &requests);
    assert!(
        bodies
            .iter()
            .all(|b| b.contains("\"finish_reason\":\"length\"")),
        "{bodies:?}"
    );
    let (series, texts) = rec.finish();
    let after = Snapshot::from_text(texts.last().unwrap(), "after").unwrap();
    // Our own arithmetic first: every reading is a whole number of blocks out of 42.
    let readings = series.usage_readings();
    assert!(readings.len() >= 10, "too few readings: {}", readings.len());
    for u in &readings {
        let k = u * 42.0;
        assert!(
            (k - k.round()).abs() < 1e-9 && (1.0..=42.0).contains(&k.round()),
            "usage {u} is not k/42"
        );
    }
    assert!(
        readings.iter().any(|u| (u * 42.0).round() as u64 % 2 == 1),
        "an odd block count was seen"
    );
    // T14 infers the 42 usable blocks from the readings.
    let t14 = inferlint_core::checks::t14::check(&series, &after, Engine::Vllm);
    assert_eq!(t14.status, Status::Pass, "{}", t14.message);
    assert_eq!(
        t14.message,
        "gauge denominator is 42 = num_gpu_blocks (43) - 1 null block"
    );
    assert_eq!(inferlint_core::checks::t14::usable_blocks(&t14), Some(42));
}

#[test]
fn t9s_ceiling_is_the_configured_block_arithmetic() {
    let _turn = one_recording_at_a_time();
    // 50-token prompts with 5 to 14 output tokens hold 4 of the 42 usable blocks for their
    // whole life (at most 63 tokens), so 10 fit: 40/42 in use at saturation.
    let sim = Sim::start(&[
        "--num-gpu-blocks-override",
        "43",
        "--block-size",
        "16",
        "--max-model-len",
        "640",
        "--tokens-per-s",
        "50",
    ]);
    let rec = Recorder::start(&sim);
    let requests: Vec<(usize, u32)> = (0..32).map(|i| (50, 5 + (i * 7 % 10) as u32)).collect();
    let bodies = burst_of(&sim, &requests);
    assert!(
        bodies
            .iter()
            .all(|b| b.contains("\"finish_reason\":\"length\"")),
        "{bodies:?}"
    );
    let (series, _) = rec.finish();
    let busy: Vec<&SeriesSample> = series.busy().collect();
    assert!(busy.len() >= 10, "too few busy samples: {}", busy.len());
    for s in &busy {
        let (u, r) = (s.kv_usage().unwrap(), s.running().unwrap());
        assert_eq!(
            (u * 42.0).round(),
            r * 4.0,
            "{r} running requests hold 4 blocks each"
        );
    }
    assert_eq!(series.peak_running(), Some(10.0));
    let t9 = inferlint_core::checks::t9::check(&series, Some(42), None, Engine::Vllm);
    assert_eq!(t9.status, Status::Pass, "{}", t9.message);
    assert_eq!(t9.evidence_json()["ceiling_min"], 10, "42 // 4");
    assert_eq!(t9.evidence_json()["ceiling_max"], 10);
    assert_eq!(t9.evidence_json()["basis"], "saturated");
    let t8 = inferlint_core::checks::t8::check(&series, 32, None, Engine::Vllm);
    assert_eq!(t8.status, Status::Fail);
    assert!(
        t8.message
            .starts_with("requested 32 concurrent, server never ran more than 10"),
        "{}",
        t8.message
    );
}

#[test]
fn the_ceiling_falls_as_outputs_grow_with_784_token_blocks() {
    let _turn = one_recording_at_a_time();
    // The demo's story: 42 usable blocks of 784; prompts of 2,400 tokens hold 4 blocks (10 fit);
    // after 737 output tokens they need a fifth (8 fit), so requests are preempted silently.
    let sim = Sim::start(&[
        "--hybrid",
        "--num-gpu-blocks-override",
        "43",
        "--max-model-len",
        "16384",
        "--tokens-per-s",
        "1500",
        "--served-model-name",
        "qwen38",
    ]);
    let rec = Recorder::start(&sim);
    // Prompts of 2,353 to 2,400 tokens all hold 4 blocks, but cross into a fifth at different
    // steps: the mixed counts in between (odd ones among them) last long enough to be scraped
    // on a loaded machine, so the readings pin 42 rather than a divisor such as 21.
    let requests: Vec<(usize, u32)> = (0..32).map(|i| (2353 + i * 17 % 48, 1000)).collect();
    let bodies = burst_of(&sim, &requests);
    assert!(bodies
        .iter()
        .all(|b| b.contains("\"completion_tokens\":1000")));
    let (series, texts) = rec.finish();
    let after = Snapshot::from_text(texts.last().unwrap(), "after").unwrap();
    let t14 = inferlint_core::checks::t14::check(&series, &after, Engine::Vllm);
    let held: BTreeSet<u64> = series
        .usage_readings()
        .iter()
        .map(|u| (u * 42.0).round() as u64)
        .collect();
    assert_eq!(
        t14.status,
        Status::Pass,
        "{}; blocks held at the scrapes: {held:?}",
        t14.message
    );
    let t9 = inferlint_core::checks::t9::check(
        &series,
        inferlint_core::checks::t14::usable_blocks(&t14),
        None,
        Engine::Vllm,
    );
    assert_eq!(t9.status, Status::Warn, "{}", t9.message);
    assert_eq!(t9.evidence_json()["ceiling_max"], 10, "42 // 4");
    assert_eq!(t9.evidence_json()["ceiling_min"], 8, "42 // 5");
    assert!(series.samples.last().unwrap().preemptions().unwrap() > 0.0);
    assert_eq!(series.peak_running(), Some(10.0));
}

/// The n-gram drafter's families against the real speculative server's scrape
/// (`vllm-0.32-cpu/field/spec-ngram/after.prom`): the same names, types, HELP texts and labels,
/// registered first among vLLM's, one `position` child per draft token; a server without
/// `--speculative-config` has none of them. A periodic prompt's drafts are accepted.
#[test]
fn speculative_families_match_the_recorded_scrape() {
    let path = inferlint_core::evidence_or_skip!("vllm-0.32-cpu/field/spec-ngram/after.prom");
    let reference = std::fs::read_to_string(path).unwrap();
    let spec = r#"{"method": "ngram", "num_speculative_tokens": 3, "prompt_lookup_max": 3, "prompt_lookup_min": 1}"#;
    let sim = Sim::start(&["--speculative-config", spec]);
    let body = format!(
        r#"{{"prompt": "{}", "max_tokens": 32, "ignore_eos": true}}"#,
        ["a b c d e f g"; 10].join(" ")
    );
    assert_eq!(post(&sim.url("/v1/completions"), &body, &[]).0, 200);
    let (text, m) = metrics(&sim);
    let only = |t: &str| -> Vec<(String, String)> {
        types(t)
            .into_iter()
            .filter(|(n, _)| n.starts_with("vllm:spec_decode"))
            .collect()
    };
    assert_eq!(only(&text), only(&reference));
    let spec_helps = |t: &str| -> Vec<(String, String)> {
        helps(t)
            .into_iter()
            .filter(|(n, _)| n.starts_with("vllm:spec_decode"))
            .collect()
    };
    assert_eq!(spec_helps(&text), spec_helps(&reference));
    let first_vllm = |t: &str| types(t).into_iter().find(|(n, _)| n.starts_with("vllm:"));
    assert_eq!(first_vllm(&text), first_vllm(&reference));
    let reference_m = Metrics::parse(&reference).unwrap();
    let signatures = |m: &Metrics| -> BTreeSet<String> {
        vllm_signatures(m)
            .into_iter()
            .filter(|s| s.starts_with("vllm:spec_decode"))
            .collect()
    };
    assert_eq!(signatures(&m), signatures(&reference_m));
    let total = |name: &str| m.total(name).unwrap();
    let (drafted, accepted) = (
        total("vllm:spec_decode_num_draft_tokens_total"),
        total("vllm:spec_decode_num_accepted_tokens_total"),
    );
    assert!(
        accepted > 0.6 * drafted && accepted < 32.0,
        "{drafted} drafted, {accepted} accepted"
    );
    let plain = Sim::start(&[]);
    let (text, _) = metrics(&plain);
    assert!(!text.contains("spec_decode"));
}
