//! `inferlint demo`: the README's main-job command, on a machine with nothing but the binary.

use crate::run_support;

use std::time::{Duration, Instant};

use run_support::{inferlint, json_file, message_of, status_of, text};

#[test]
fn demo_tells_the_whole_story_in_under_a_minute() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("demo");
    let t0 = Instant::now();
    let o = inferlint(
        &["demo", "-o", out.to_str().unwrap()],
        &[("INFERLINT_GPU", "nvml")],
        Duration::from_secs(150),
    );
    let took = t0.elapsed();
    let stdout = text(&o.stdout);
    assert_eq!(o.status.code(), Some(0), "{stdout}\n{}", text(&o.stderr));
    assert!(took < Duration::from_secs(60), "the demo took {took:?}");
    let r = json_file(&out.join("results.json"));
    // Requested 32, about 10 ran.
    let t8 = message_of(&r, "T8").unwrap();
    assert!(
        t8.starts_with("requested 32 concurrent, server never ran more than "),
        "{t8}"
    );
    let peak: u64 = t8.rsplit(' ').next().unwrap().parse().unwrap();
    assert!((8..=14).contains(&peak), "{t8}");
    // Preemptions the server never logged.
    assert_eq!(status_of(&r, "T1").as_deref(), Some("fail"));
    let boot = std::fs::read_to_string(out.join("boot.log")).unwrap();
    assert!(
        !boot.to_lowercase().contains("preempt"),
        "the log mentions preemption"
    );
    // The ceiling fell as outputs grew.
    assert_eq!(status_of(&r, "T9").as_deref(), Some("warn"));
    // 784-token blocks and the null block.
    assert!(message_of(&r, "T5").unwrap().contains("784 tokens"));
    assert_eq!(
        message_of(&r, "T14").as_deref(),
        Some("gauge denominator is 42 = num_gpu_blocks (43) - 1 null block")
    );
    // The engine that left its server's process group was found by the teardown, and the
    // (simulated) card reads clear after it.
    assert!(
        stdout.contains("found outside the server's process group"),
        "{stdout}"
    );
    assert!(stdout.contains("VLLM::EngineCore"), "{stdout}");
    assert_eq!(status_of(&r, "T2").as_deref(), Some("pass"));
    assert!(out.join("report.html").exists());
    assert!(stdout.contains("That was the demo."));
}

#[test]
fn the_window_demo_shows_warm_up_and_short_outputs() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("demo");
    let o = inferlint(
        &["demo", "--window", "-o", out.to_str().unwrap()],
        &[("INFERLINT_GPU", "nvml")],
        Duration::from_secs(150),
    );
    let stdout = text(&o.stdout);
    assert_eq!(o.status.code(), Some(0), "{stdout}\n{}", text(&o.stderr));
    let r = json_file(&out.join("results.json"));
    // The load's 16 at once is a batch size the probe never ran: it compiled during the load.
    assert_eq!(status_of(&r, "T20").as_deref(), Some("fail"), "{stdout}");
    assert!(
        stdout.contains("into the load: the server is warming up (\"Compiling a graph"),
        "{stdout}"
    );
    // The model ended every answer at 60 tokens of the 200 asked.
    assert_eq!(status_of(&r, "T18").as_deref(), Some("warn"), "{stdout}");
    let t18 = message_of(&r, "T18").unwrap();
    assert!(t18.contains("48 of 48"), "{t18}");
    assert!(stdout.contains("inferlint explain T18 T20"), "{stdout}");
}

/// `demo --sweep`: a sweep's story: the later points served from the cache the first filled
/// (each naming it) and the knee where the server runs fewer than asked, in sweep.json and the
/// table.
#[test]
fn the_sweep_demo_shows_an_inherited_cache_and_the_knee() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("demo");
    let o = inferlint(
        &["demo", "--sweep", "-o", out.to_str().unwrap()],
        &[("INFERLINT_GPU", "nvml")],
        Duration::from_secs(180),
    );
    let stdout = text(&o.stdout);
    assert_eq!(o.status.code(), Some(0), "{stdout}\n{}", text(&o.stderr));
    let sweep = json_file(&out.join("sweep.json"));
    let kinds: Vec<(String, u64)> = sweep["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            (
                f["kind"].as_str().unwrap().to_string(),
                f["point"].as_u64().unwrap(),
            )
        })
        .collect();
    assert!(kinds.contains(&("inherited_cache".into(), 2)), "{kinds:?}");
    assert!(kinds.contains(&("inherited_cache".into(), 3)), "{kinds:?}");
    assert_eq!(sweep["knee"], 3, "{kinds:?}");
    assert!(
        stdout.contains("== point 3 of 3: --max-concurrency 16"),
        "{stdout}"
    );
    assert!(stdout.contains("inferlint explain T16 T8"), "{stdout}");
}

/// `demo --engine sglang`: SGLang's story on its simulator (retractions, fewer running than
/// asked, an escaped scheduler found by the teardown).
#[test]
fn the_sglang_demo_retracts_and_its_scheduler_is_found() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("demo");
    let o = inferlint(
        &["demo", "--engine", "sglang", "-o", out.to_str().unwrap()],
        &[("INFERLINT_GPU", "nvml")],
        Duration::from_secs(150),
    );
    let stdout = text(&o.stdout);
    assert_eq!(o.status.code(), Some(0), "{stdout}\n{}", text(&o.stderr));
    assert!(
        stdout.contains("a simulated SGLang on a simulated GPU"),
        "{stdout}"
    );
    let r = json_file(&out.join("results.json"));
    assert_eq!(status_of(&r, "T1").as_deref(), Some("fail"), "{stdout}");
    assert!(message_of(&r, "T1").unwrap().contains("retractions"));
    assert_eq!(status_of(&r, "T8").as_deref(), Some("fail"), "{stdout}");
    assert_eq!(status_of(&r, "T14").as_deref(), Some("not_applicable"));
    assert_eq!(status_of(&r, "T15").as_deref(), Some("pass"), "{stdout}");
    assert!(
        stdout.contains("found outside the server's process group")
            && stdout.contains("sglang::scheduler_TP0"),
        "{stdout}"
    );
    assert_eq!(status_of(&r, "T2").as_deref(), Some("pass"));
    let run = json_file(&out.join("run.json"));
    assert_eq!(run["engine"], "sglang");
    assert!(run["result_file"]
        .as_str()
        .unwrap()
        .ends_with("bench.jsonl"));
    assert!(stdout.contains("inferlint explain T1 T8 T2"), "{stdout}");
}

/// `demo --engine trtllm`: TensorRT-LLM's story (no iteration stats, so T8 and T9 cannot tell;
/// an escaped MPI rank found by the teardown).
#[test]
fn the_trtllm_demo_misses_its_gauges_and_its_rank_is_found() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("demo");
    let o = inferlint(
        &["demo", "--engine", "trtllm", "-o", out.to_str().unwrap()],
        &[("INFERLINT_GPU", "nvml")],
        Duration::from_secs(150),
    );
    let stdout = text(&o.stdout);
    assert_eq!(o.status.code(), Some(0), "{stdout}\n{}", text(&o.stderr));
    let r = json_file(&out.join("results.json"));
    for t in ["T8", "T9"] {
        assert_eq!(
            status_of(&r, t).as_deref(),
            Some("unknown"),
            "{t}: {stdout}"
        );
        assert!(message_of(&r, t)
            .unwrap()
            .contains("'enable_iter_perf_stats: true'"));
    }
    assert_eq!(status_of(&r, "T15").as_deref(), Some("pass"), "{stdout}");
    assert!(
        stdout.contains("found outside the server's process group")
            && stdout.contains("mpi4py.futures.server"),
        "{stdout}"
    );
    assert_eq!(status_of(&r, "T2").as_deref(), Some("pass"));
    let run = json_file(&out.join("run.json"));
    assert_eq!(run["engine"], "trtllm");
    assert_eq!(run["engine_version"], "1.3.0rc29");
    assert!(out.join("report.html").exists());
}
