//! The evidence readers on the recorded evidence (docs/design/formats.md, docs/design/evidence.md)
//! and on damaged input.

use std::path::{Path, PathBuf};

use inferlint_core::bench::{self, untimed_requests};
use inferlint_core::prom::{Metrics, PromError};
use inferlint_core::series::{Readings, Series, SeriesHeader, SeriesSample};
use inferlint_core::snapshot::Snapshot;
use inferlint_core::testkit::{evidence, evidence_dir, evidence_text};
use inferlint_core::{evidence_or_skip, Engine};

fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let p = entry.unwrap().path();
        if p.is_dir() {
            walk(&p, out);
        } else {
            out.push(p);
        }
    }
}

fn evidence_files(pred: impl Fn(&str) -> bool) -> Option<Vec<PathBuf>> {
    let dir = evidence_dir()?;
    let mut all = Vec::new();
    walk(&dir, &mut all);
    let mut files: Vec<PathBuf> = all
        .into_iter()
        .filter(|p| pred(&p.file_name().unwrap().to_string_lossy()))
        .collect();
    files.sort();
    Some(files)
}

fn approx(a: f64, b: f64, tol: f64) -> bool {
    (a - b).abs() <= tol
}

// ---- every recorded file loads ----

#[test]
fn every_recorded_prom_and_snapshot_loads() {
    let Some(files) = evidence_files(|n| n.ends_with(".prom") || n.ends_with(".snapshot.json"))
    else {
        return;
    };
    assert!(
        files.len() >= 30,
        "expected the recorded snapshots, found {}",
        files.len()
    );
    for f in &files {
        let s = Snapshot::load(f).unwrap_or_else(|e| panic!("{e}"));
        // llama.cpp writes 15 unlabelled series and nothing else (no Python collectors).
        let least = if f.to_string_lossy().contains("llamacpp-") {
            15
        } else {
            101
        };
        assert!(
            s.metrics.len() >= least,
            "{}: only {} samples",
            f.display(),
            s.metrics.len()
        );
        assert!(s.metrics.engine().is_some(), "{}: no engine", f.display());
        let bare = f.extension().is_some_and(|e| e == "prom");
        assert_eq!(s.has_clock(), !bare, "{}", f.display());
        assert_eq!(
            s.t_mono_ns.is_some(),
            !bare && !f.to_string_lossy().contains("preempted_")
        );
    }
}

#[test]
fn every_recorded_series_loads_cleanly() {
    let Some(files) = evidence_files(|n| n.ends_with(".series.jsonl")) else {
        return;
    };
    assert!(files.len() >= 10);
    for f in &files {
        let s = Series::load(f).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(s.skipped_lines, 0, "{}", f.display());
        assert!(!s.samples.is_empty(), "{}", f.display());
        let folder = f.to_string_lossy();
        // GuideLLM's recordings are of the simulated SGLang, its own sweep's of the simulated
        // vLLM (guidellm-0.8/README.md).
        let expected = if folder.contains("guidellm-0.8/sweep-sim") {
            Some(Engine::Vllm)
        } else if folder.contains("sglang-0.5") || folder.contains("guidellm-0.8") {
            Some(Engine::Sglang)
        } else if folder.contains("trtllm-1.3") {
            Some(Engine::Trtllm)
        } else if folder.contains("llamacpp-") {
            Some(Engine::Llamacpp)
        } else if folder.contains("vllm-0.32-cpu/sweep") {
            // Recorded since the recorder writes the engine for vLLM too.
            Some(Engine::Vllm)
        } else {
            None // older vLLM recordings have no engine key: read as vLLM's
        };
        assert_eq!(s.engine(), expected, "{}", f.display());
        if expected == Some(Engine::Trtllm) {
            assert!(s.samples.iter().all(|x| x.preemptions().is_none()));
            let with_gauges = !folder.contains("no-iter-stats");
            assert_eq!(s.samples.iter().all(|x| x.paused().is_some()), with_gauges);
        }
    }
}

#[test]
fn every_recorded_result_file_loads() {
    let Some(files) =
        evidence_files(|n| n == "bench.json" || n == "bench.jsonl" || n.ends_with("-result.json"))
    else {
        return;
    };
    assert!(files.len() >= 9);
    for f in &files {
        let r = bench::load(f).unwrap_or_else(|e| panic!("{e}"));
        assert!(r.completed.is_some_and(|c| c > 0.0), "{}", f.display());
        assert!(r.total_output_tokens.is_some(), "{}", f.display());
        assert_eq!(r.path, f.display().to_string());
    }
}

// ---- pinned values ----

#[test]
fn live_raw_metrics_parse_fully() {
    let Some(text) = evidence_text("vllm-0.28/live/raw_metrics.prom") else {
        return;
    };
    let m = Metrics::parse(&text).unwrap();
    let sample_lines = text
        .lines()
        .filter(|l| !l.trim().is_empty() && !l.starts_with('#'))
        .count();
    assert_eq!(m.len(), sample_lines);
    assert_eq!(m.len(), 430);
    assert!(m.has("python_gc_objects_collected_total"));
    assert_eq!(
        m.total("python_gc_objects_collected_total"),
        Some(16825.0 + 4052.0 + 584.0)
    );
    assert_eq!(
        m.info_label("vllm:cache_config_info", "num_gpu_blocks"),
        Some("43")
    );
    assert_eq!(m.total("vllm:num_preemptions_total"), Some(22.0));
    assert_eq!(m.engine(), Some(Engine::Vllm));
    // Histograms: the +Inf bucket equals _count; _created stamps are samples of their own.
    let inf = m.total_where("vllm:e2e_request_latency_seconds_bucket", &[("le", "+Inf")]);
    assert!(inf.is_some());
    assert_eq!(inf, m.total("vllm:e2e_request_latency_seconds_count"));
    assert!(m.has("vllm:e2e_request_latency_seconds_created"));
    assert!(m.created_stamps().count() > 10);
    // Labels come out sorted.
    for s in m.samples() {
        assert!(s.labels.windows(2).all(|w| w[0].0 <= w[1].0), "{s:?}");
    }
}

#[test]
fn preempted_prom_counters() {
    let before = Snapshot::load(&evidence_or_skip!(
        "vllm-0.28/metrics/preempted_before.prom"
    ))
    .unwrap();
    let after =
        Snapshot::load(&evidence_or_skip!("vllm-0.28/metrics/preempted_after.prom")).unwrap();
    assert_eq!(
        before.metrics.total("vllm:num_preemptions_total"),
        Some(106.0)
    );
    assert_eq!(
        after.metrics.total("vllm:num_preemptions_total"),
        Some(166.0)
    );
    assert!(after.metrics.len() > 300);
    assert_eq!(after.metrics.len(), 364);
    assert_eq!(before.url, "file:preempted_before.prom");
    assert!(before.t_wall.is_nan());
    assert_eq!(before.t_mono_ns, None);
    // The reconstructed file lists labels out of order: they are sorted on reading.
    let info = before
        .metrics
        .info_labels("vllm:cache_config_info")
        .unwrap();
    assert_eq!(info[0].0, "_block_size_resolved");
    assert_eq!(
        before
            .metrics
            .info_label("vllm:cache_config_info", "num_gpu_blocks"),
        Some("53")
    );
}

#[test]
fn recorded_snapshot_documents_keep_their_clocks() {
    let s = Snapshot::load(&evidence_or_skip!("vllm-0.28/live/before.snapshot.json")).unwrap();
    assert_eq!(s.url, "http://127.0.0.1:8000/metrics");
    assert_eq!(s.t_wall, 1790470252.0746152);
    assert_eq!(s.t_mono_ns, Some(208487639164));
    assert_eq!(s.latency_s, Some(0.009452929));
    assert!(s.has_clock());
    let trt = Snapshot::load(&evidence_or_skip!(
        "trtllm-1.3/qwen3-8b/after.snapshot.json"
    ))
    .unwrap();
    assert!(trt.url.ends_with("/prometheus/metrics"));
    assert_eq!(trt.engine(), Some(Engine::Trtllm));
    let sgl = Snapshot::load(&evidence_or_skip!("sglang-0.5/capped/after.snapshot.json")).unwrap();
    assert_eq!(sgl.engine(), Some(Engine::Sglang));
    assert_eq!(
        sgl.metrics.total("sglang:num_retracted_requests_total"),
        None
    );
    assert!(sgl.metrics.has("sglang:num_retracted_reqs"));
}

#[test]
fn save_and_load_round_trip_a_recorded_snapshot() {
    let path = evidence_or_skip!("vllm-0.28/live/after.snapshot.json");
    let s = Snapshot::load(&path).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("nested/folder/after.snapshot.json");
    s.save(&out).unwrap();
    let back = Snapshot::load(&out).unwrap();
    assert_eq!(back.url, s.url);
    assert_eq!(back.t_wall, s.t_wall);
    assert_eq!(back.t_mono_ns, s.t_mono_ns);
    assert_eq!(back.latency_s, s.latency_s);
    assert_eq!(back.text, s.text);
    assert_eq!(back.metrics.len(), s.metrics.len());
    // Same document, byte for byte, as the recorder wrote it.
    assert_eq!(
        std::fs::read_to_string(&out).unwrap(),
        std::fs::read_to_string(&path).unwrap()
    );
}

#[test]
fn live_series_pins() {
    let s = Series::load(&evidence_or_skip!("vllm-0.28/live/run.series.jsonl")).unwrap();
    assert_eq!(s.samples.len(), 365);
    assert_eq!(s.header.interval_s, 0.25);
    assert_eq!(s.header.url, "http://127.0.0.1:8000");
    assert_eq!(s.engine(), None);
    assert_eq!(s.peak_running(), Some(10.0));
    let first = s.samples.first().unwrap().preemptions().unwrap();
    let last = s.samples.last().unwrap().preemptions().unwrap();
    assert_eq!(last - first, 22.0);
    assert!(s.busy().count() > 0);
    assert!(s.usage_readings().iter().all(|&u| u > 0.0));
}

#[test]
fn older_series_with_a_note_and_null_clock() {
    let s = Series::load(&evidence_or_skip!("vllm-0.28/series/ladder.series.jsonl")).unwrap();
    assert_eq!(s.header.interval_s, 0.5);
    assert_eq!(s.samples[0].t_mono_ns(), None);
    assert_eq!(s.peak_running(), Some(4.0));
}

#[test]
fn xray_bench_json_pins() {
    let r = bench::load(&evidence_or_skip!("vllm-0.28/xray/bench.json")).unwrap();
    assert_eq!(r.completed, Some(32.0));
    assert_eq!(r.failed, Some(0.0));
    assert_eq!(r.total_output_tokens, Some(32000.0));
    assert_eq!(r.max_concurrency, Some(32.0));
    assert!(approx(r.duration.unwrap(), 95.15, 0.005));
    assert!(approx(r.output_throughput.unwrap(), 336.30, 0.005));
    assert!(approx(r.median_ttft_ms.unwrap(), 28891.9, 0.05));
    assert!(approx(r.p99_ttft_ms.unwrap(), 73447.8, 0.05));
    assert!(approx(r.mean_tpot_ms.unwrap(), 25.14, 0.005));
    assert_eq!(r.backend.as_deref(), Some("openai"));
    assert_eq!(r.num_prompts, Some(32.0));
}

#[test]
fn capped_bench_counts_failed_requests() {
    let r = bench::load(&evidence_or_skip!("vllm-0.30/capped/bench.json")).unwrap();
    assert_eq!(r.completed, Some(16.0));
    assert_eq!(r.failed, Some(16.0));
}

#[test]
fn sglang_own_client_jsonl_reads_the_last_line() {
    let path = evidence_or_skip!("sglang-0.5/qwen3-8b-own-client/bench.jsonl");
    let r = bench::load(&path).unwrap();
    assert_eq!(r.completed, Some(32.0));
    assert_eq!(r.total_output_tokens, Some(32000.0));
    assert!(approx(r.duration.unwrap(), 23.837, 0.001));
    assert!(approx(r.output_throughput.unwrap(), 1342.43, 0.005));
    assert_eq!(r.max_concurrency, Some(32.0));
    // An earlier run in the same file is not the latest one.
    let text = std::fs::read_to_string(&path).unwrap();
    let earlier = text
        .trim_end()
        .replace("\"completed\": 32,", "\"completed\": 99,");
    let both = format!("{earlier}\n{text}");
    let r = bench::BenchResult::from_text(&both, "two.jsonl").unwrap();
    assert_eq!(r.completed, Some(32.0));
    let r = bench::BenchResult::from_text(&format!("{text}\n{earlier}\n"), "two.jsonl").unwrap();
    assert_eq!(r.completed, Some(99.0));
}

#[test]
fn load_logs_untimed_requests() {
    let sgl = evidence_text("sglang-0.5/qwen3-8b-own-client/load.log");
    let trt = evidence_text("trtllm-1.3/no-iter-stats/load.log");
    let (Some(sgl), Some(trt)) = (sgl, trt) else {
        return;
    };
    assert_eq!(untimed_requests(&sgl), 1);
    assert_eq!(untimed_requests(&trt), 1);
    assert_eq!(untimed_requests("Skipping endpoint ready check.\n"), 0);
    assert_eq!(
        untimed_requests("Initial test run completed.\nWarming up with 3 requests...\n"),
        4
    );
    assert_eq!(untimed_requests("Warmup completed with 1 sequences.\n"), 1);
}

// ---- parser cases (docs/design/evidence.md#parsers-and-arithmetic) ----

#[test]
fn parser_scenarios() {
    let m = Metrics::parse(
        "# HELP c A counter\n# TYPE c counter\nc{k=\"a\"} 3\nc{k=\"b\"} 2 1712345678000\n\
         g{e=\"0\"} 0.5\ng{e=\"1\"} 0.25\n\
         x_info{v=\"a\\\"b,c=d\"} 1\nn NaN\nh_bucket{le=\"1.0\"} 1\nh_bucket{le=\"+Inf\"} 4\n",
    )
    .unwrap();
    assert_eq!(m.total("absent"), None);
    assert_eq!(m.total("c"), Some(5.0));
    assert!(matches!(
        m.single("g"),
        Err(PromError::NotSingle { count: 2, .. })
    ));
    assert_eq!(m.info_labels("x_info").unwrap()[0].1, "a\"b,c=d");
    assert!(m.total("n").unwrap().is_nan());
    assert_eq!(m.series("h_bucket", &[("le", "+Inf")])[0].value, 4.0);
    let e = Metrics::parse("c 1\nc{k=\"a\" 2\n").unwrap_err();
    assert_eq!(e.to_string(), "line 2: malformed label set: {k=\"a\" 2");
    let e = Metrics::parse("c 1\nnot a sample\n").unwrap_err();
    assert_eq!(
        e.to_string(),
        "line 2: not a Prometheus sample: not a sample"
    );
}

#[test]
fn multiprocess_exposition() {
    // prometheus_client's MultiProcessCollector: no _created, _sum first, pid labels on gauges.
    let text = "# HELP vllm:e2e_request_latency_seconds h\n\
        # TYPE vllm:e2e_request_latency_seconds histogram\n\
        vllm:e2e_request_latency_seconds_sum{engine=\"0\",model_name=\"m\"} 12.5\n\
        vllm:e2e_request_latency_seconds_bucket{engine=\"0\",le=\"0.3\",model_name=\"m\"} 0.0\n\
        vllm:e2e_request_latency_seconds_bucket{engine=\"0\",le=\"+Inf\",model_name=\"m\"} 3.0\n\
        vllm:e2e_request_latency_seconds_count{engine=\"0\",model_name=\"m\"} 3.0\n\
        vllm:num_requests_running{engine=\"0\",model_name=\"m\",pid=\"101\"} 2.0\n\
        vllm:num_requests_running{engine=\"0\",model_name=\"m\",pid=\"102\"} 1.0\n";
    let m = Metrics::parse(text).unwrap();
    assert_eq!(m.total("vllm:e2e_request_latency_seconds_sum"), Some(12.5));
    assert_eq!(m.total("vllm:e2e_request_latency_seconds_count"), Some(3.0));
    assert_eq!(m.total("vllm:num_requests_running"), Some(3.0));
    assert_eq!(m.created_stamps().count(), 0);
}

// ---- bad input: a clear error naming the file, never a panic ----

fn temp_file(dir: &tempfile::TempDir, name: &str, bytes: &[u8]) -> PathBuf {
    let p = dir.path().join(name);
    std::fs::write(&p, bytes).unwrap();
    p
}

const BINARY: &[u8] = &[
    0x7f, b'E', b'L', b'F', 2, 1, 1, 0, 0, 0, 0xff, 0xfe, 0x00, 0x10,
];

#[test]
fn bad_snapshots_are_errors_naming_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let full = match evidence("vllm-0.28/live/before.snapshot.json") {
        Some(p) => std::fs::read(p).unwrap(),
        None => b"{\"schema\": \"inferlint.snapshot/1\", \"url\": \"u\", \"text\": \"a 1\\n\"}\n"
            .to_vec(),
    };
    let truncated = temp_file(&dir, "trunc.snapshot.json", &full[..full.len() / 2]);
    let e = Snapshot::load(&truncated).unwrap_err().to_string();
    assert!(
        e.starts_with(&format!("{}: line ", truncated.display())),
        "{e}"
    );
    assert!(e.contains("not valid JSON"), "{e}");

    let binary = temp_file(&dir, "bin.snapshot.json", BINARY);
    let e = Snapshot::load(&binary).unwrap_err().to_string();
    assert!(
        e.starts_with(&binary.display().to_string()) && e.contains("binary"),
        "{e}"
    );

    let empty = temp_file(&dir, "empty.prom", b"");
    let e = Snapshot::load(&empty).unwrap_err().to_string();
    assert_eq!(e, format!("{}: the file is empty", empty.display()));

    let series = temp_file(
        &dir,
        "s.json",
        b"{\"schema\": \"inferlint.series/1\", \"url\": \"u\"}\n",
    );
    let e = Snapshot::load(&series).unwrap_err().to_string();
    assert_eq!(
        e,
        format!(
            "{}: not an inferlint.snapshot/1 document (schema='inferlint.series/1')",
            series.display()
        )
    );

    let log = temp_file(&dir, "boot.prom", b"INFO 09-30 starting the server\n");
    let e = Snapshot::load(&log).unwrap_err().to_string();
    assert_eq!(
        e,
        format!(
            "{}: line 1: not a Prometheus sample: INFO 09-30 starting the server",
            log.display()
        )
    );

    let missing = dir.path().join("missing.prom");
    let e = Snapshot::load(&missing).unwrap_err().to_string();
    assert!(e.starts_with(&missing.display().to_string()), "{e}");
}

#[test]
fn damaged_recorded_series_still_loads() {
    let path = evidence_or_skip!("vllm-0.28/live/run.series.jsonl");
    let text = std::fs::read_to_string(&path).unwrap();
    let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
    let n = lines.len() - 1;
    // A corrupt middle line, and a last line cut off as a killed recorder leaves it.
    lines[100] = lines[100][..20].to_string() + "\u{0}garbage";
    let last = lines.last_mut().unwrap();
    last.truncate(last.len() / 2);
    let dir = tempfile::tempdir().unwrap();
    let p = temp_file(
        &dir,
        "killed.series.jsonl",
        lines.join("\n").replace('\u{0}', "#").as_bytes(),
    );
    let s = Series::load(&p).unwrap();
    assert_eq!(s.skipped_lines, 2);
    assert_eq!(s.samples.len(), n - 2);
}

#[test]
fn not_a_series_is_an_error_naming_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let headerless = temp_file(
        &dir,
        "h.series.jsonl",
        b"{\"t_wall\": 1.0, \"running\": 2.0}\n{\"t_wall\": 2.0}\n",
    );
    let e = Series::load(&headerless).unwrap_err().to_string();
    assert!(
        e.starts_with(&format!(
            "{}: not an inferlint.series/1 recording",
            headerless.display()
        )),
        "{e}"
    );
    let binary = temp_file(&dir, "b.series.jsonl", BINARY);
    let e = Series::load(&binary).unwrap_err().to_string();
    assert!(e.starts_with(&binary.display().to_string()), "{e}");
    let empty = temp_file(&dir, "e.series.jsonl", b"\n\n");
    let e = Series::load(&empty).unwrap_err().to_string();
    assert_eq!(e, format!("{}: the file is empty", empty.display()));
    if let Some(snap) = evidence("vllm-0.28/live/before.snapshot.json") {
        let e = Series::load(&snap).unwrap_err().to_string();
        assert!(
            e.starts_with(&format!(
                "{}: not an inferlint.series/1 recording",
                snap.display()
            )),
            "{e}"
        );
    }
}

#[test]
fn bad_result_files_are_errors_naming_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let log = temp_file(
        &dir,
        "bench.json",
        b"============ Serving Benchmark Result ============\nSuccessful requests: 32\n",
    );
    let e = bench::load(&log).unwrap_err().to_string();
    assert!(
        e.starts_with(&format!("{}: line 1, column", log.display())),
        "{e}"
    );
    let binary = temp_file(&dir, "b.json", BINARY);
    assert!(bench::load(&binary)
        .unwrap_err()
        .to_string()
        .contains("binary"));
    let empty = temp_file(&dir, "e.json", b"");
    assert!(bench::load(&empty)
        .unwrap_err()
        .to_string()
        .ends_with("the file is empty"));
    // A result without `completed` loads: T15 then says it can't tell.
    let partial = temp_file(&dir, "p.json", b"{\"total_output_tokens\": 32000}");
    let r = bench::load(&partial).unwrap();
    assert_eq!(r.completed, None);
    assert_eq!(r.total_output_tokens, Some(32000.0));
    if let Some(p) = evidence("vllm-0.28/xray/bench.json") {
        let text = std::fs::read_to_string(p).unwrap();
        let cut = temp_file(&dir, "cut.json", &text.as_bytes()[..text.len() / 2]);
        let e = bench::load(&cut).unwrap_err().to_string();
        assert!(
            e.starts_with(&format!("{}: line 1, column", cut.display())),
            "{e}"
        );
    }
}

// ---- series built from samples ----

#[test]
fn synthetic_series_queries() {
    let header = SeriesHeader {
        url: "u".into(),
        interval_s: 0.25,
        engine: Some(Engine::Vllm),
    };
    let row = |running: Option<f64>, kv: Option<f64>| {
        SeriesSample::from(Readings {
            t_wall: 1.0,
            running,
            kv_usage: kv,
            ..Readings::default()
        })
    };
    let s = Series::from_samples(
        header,
        vec![
            row(None, None),
            row(Some(3.0), Some(0.0)),
            row(Some(2.0), Some(0.25)),
            row(Some(0.0), Some(0.5)),
        ],
    );
    assert_eq!(s.peak_running(), Some(3.0));
    assert_eq!(s.busy().count(), 1);
    assert_eq!(s.usage_readings(), vec![0.25, 0.5]);
    let empty = Series::from_samples(s.header.clone(), vec![row(None, None)]);
    assert_eq!(empty.peak_running(), None);
}

// ---- no input makes a reader panic ----

mod never_panics {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2000))]

        #[test]
        fn prom_parser_takes_any_text(s in "[a-z_:{}\",=\\\\ \t\r\n#0-9.+eE-]{0,120}") {
            if let Ok(m) = Metrics::parse(&s) {
                for sample in m.samples() {
                    prop_assert!(sample.labels.windows(2).all(|w| w[0].0 <= w[1].0));
                    let _ = m.total(&sample.name);
                    let _ = m.single(&sample.name);
                }
            }
        }

        #[test]
        fn written_samples_read_back(
            name in "[a-zA-Z_:][a-zA-Z0-9_:]{0,20}",
            labels in proptest::collection::btree_map("[a-zA-Z_][a-zA-Z0-9_]{0,8}", "[ -~\n]{0,12}", 0..5),
            value in proptest::num::f64::ANY,
        ) {
            let escaped: Vec<String> = labels
                .iter()
                .map(|(k, v)| {
                    let v = v.replace('\\', "\\\\").replace('"', "\\\"").replace('\n', "\\n");
                    format!("{k}=\"{v}\"")
                })
                .collect();
            let line = format!("# TYPE {name} gauge\n{name}{{{}}} {value:?} 1712345678000\n", escaped.join(","));
            let m = Metrics::parse(&line).unwrap();
            prop_assert_eq!(m.len(), 1);
            let s = &m.samples()[0];
            prop_assert_eq!(&s.name, &name);
            let got: Vec<(String, String)> = s.labels.clone();
            let want: Vec<(String, String)> = labels.into_iter().collect();
            prop_assert_eq!(got, want);
            prop_assert!(s.value == value || (s.value.is_nan() && value.is_nan()));
        }

        #[test]
        fn prom_parser_takes_any_unicode(s in any::<String>()) {
            let _ = Metrics::parse(&s);
        }

        #[test]
        fn readers_take_any_bytes(bytes in proptest::collection::vec(any::<u8>(), 0..200)) {
            let text = String::from_utf8_lossy(&bytes);
            let _ = Snapshot::from_text(&text, "fuzz");
            let _ = Series::from_text(&text, "fuzz");
            let _ = bench::BenchResult::from_text(&text, "fuzz");
        }

        #[test]
        fn readers_take_json_like_text(s in "[{}\\[\\]\",:0-9a-zNIf \n]{0,100}") {
            let _ = Snapshot::from_text(&s, "fuzz");
            let _ = Series::from_text(&format!("{{\"schema\": \"inferlint.series/1\", \"interval_s\": 1}}\n{s}"), "fuzz");
            let _ = bench::BenchResult::from_text(&s, "fuzz");
            let _ = untimed_requests(&s);
        }
    }
}

#[path = "readers/sglang_client.rs"]
mod sglang_client;

#[path = "readers/guidellm.rs"]
mod guidellm;
