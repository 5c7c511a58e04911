//! `inferlint run` supervising a simulated data-parallel vLLM (`sim serve --data-parallel-size
//! 2`: two `VLLM::EngineCore_DP<i>` with a pool of their own each, a `VLLM::DPCoordinator`,
//! per-engine labelled series): the recording keeps each engine, T8 is judged on the sum, T9
//! and T14 per engine pool, T1 sums the engines' preemptions, the live line shows each engine,
//! and nothing is left. The same files with one number changed flip T8 and T14.

use crate::run_support;

use std::process::Command;
use std::time::Duration;

use inferlint_core::series::Series;
use inferlint_core::snapshot::Snapshot;
use run_support::{bin, json_file, message_of, run_with_limit, status_of, text, World};

const LIMIT: Duration = Duration::from_secs(150);

/// Two engines of 4 sequences and 11 blocks of 128 tokens (10 usable): 4 fresh requests of 32
/// tokens take 4 blocks, but outputs of 300 tokens need 3 blocks each, so each engine preempts
/// (and its gauge passes through many tenths, enough for T14 to trust its denominator).
const SERVE: &str = "--data-parallel-size 2 --max-num-seqs 4 --num-gpu-blocks-override 11 --block-size 128 --max-model-len 512 --tokens-per-s 60";
const LOAD: &str = "--num-prompts 24 --max-concurrency 12 --random-input-len 32 --random-output-len 300 --ignore-eos";

fn series_cli(args: &[&str]) -> (i32, String) {
    let mut cmd = Command::new(bin());
    cmd.arg("series").args(args).env_remove("INFERLINT_ENGINE");
    let out = run_with_limit(cmd, Duration::from_secs(60));
    (out.status.code().unwrap_or(-1), text(&out.stdout))
}

#[test]
fn a_data_parallel_run_is_judged_per_engine() {
    let w = World::new();
    let serve = w.sim_serve("0.5", SERVE);
    let args: Vec<String> = ["--serve", &serve, "--status-every", "1"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    let out = run_with_limit(w.run_command(&args, &w.sim_bench(LOAD)), LIMIT);
    let (code, stdout) = (out.status.code().unwrap_or(-1), text(&out.stdout));
    assert_eq!(code, 1, "{stdout}\n{}", text(&out.stderr));
    let results = json_file(&w.out().join("results.json"));
    let run = w.out();

    // The recording has both engines' gauges; the server's running is their sum.
    let series = Series::load(&run.join("run.series.jsonl")).unwrap();
    assert_eq!(series.engine_ids(), ["0", "1"]);
    assert_eq!(series.peak_running(), Some(8.0), "4 on each engine at most");

    // T8 on the sum, with the per-engine cap named.
    assert_eq!(
        status_of(&results, "T8").as_deref(),
        Some("fail"),
        "{results}"
    );
    assert_eq!(
        message_of(&results, "T8").unwrap(),
        "requested 12 concurrent, server never ran more than 8; the server runs at most 8 at once (--max-num-seqs 4 on each of its 2 engines)"
    );
    // T14 per pool: 22 blocks reported in all, 11 per engine, 10 usable.
    assert_eq!(
        status_of(&results, "T14").as_deref(),
        Some("pass"),
        "{results}"
    );
    assert_eq!(
        message_of(&results, "T14").unwrap(),
        "each of 2 engines: gauge denominator is 10 = num_gpu_blocks (11) - 1 null block (the vllm:cache_config_info label says 22: the sum over the 2 engines)"
    );
    // T9 per pool, decided: the requests outgrow one block.
    let t9 = status_of(&results, "T9").unwrap();
    assert!(t9 == "warn" || t9 == "pass", "{results}");
    assert!(
        message_of(&results, "T9").unwrap().contains("engine"),
        "{results}"
    );
    // T1: both engines' preemption counters, summed.
    let before = Snapshot::load(&run.join("before.snapshot.json")).unwrap();
    let after = Snapshot::load(&run.join("after.snapshot.json")).unwrap();
    let per_engine = |s: &Snapshot, e: &str| {
        s.metrics
            .total_where("vllm:num_preemptions_total", &[("engine", e)])
            .unwrap()
    };
    let moved: Vec<f64> = ["0", "1"]
        .iter()
        .map(|e| per_engine(&after, e) - per_engine(&before, e))
        .collect();
    assert!(
        moved.iter().all(|m| *m > 0.0),
        "each engine preempts: {moved:?}"
    );
    assert_eq!(
        message_of(&results, "T1").unwrap(),
        format!("{} preemptions during the run", moved[0] + moved[1])
    );
    // The live line shows each engine's share.
    assert!(
        stdout.lines().any(|l| l.contains("running 8/12 (4+4)")),
        "{stdout}"
    );
    assert!(w.live_processes().is_empty(), "{:?}", w.live_processes());

    // The same files through `inferlint series`, and one number changed each way.
    let rec = run.join("run.series.jsonl").display().to_string();
    let after_p = run.join("after.snapshot.json").display().to_string();
    let (code, text_out) = series_cli(&[&rec, "--snapshot", &after_p, "--requested", "8"]);
    assert!(
        text_out.contains("[ T8] PASS  reached 8 running (requested 8)"),
        "{text_out}"
    );
    assert!(
        text_out.contains("[T14] PASS  each of 2 engines"),
        "{text_out}"
    );
    assert!((0..=1).contains(&code), "{text_out}");
    let doc = std::fs::read_to_string(&after_p).unwrap();
    assert_eq!(
        doc.matches("num_gpu_blocks=\\\"22\\\"").count(),
        2,
        "{doc:.300}"
    );
    let wrong = w.dir.path().join("after-24.snapshot.json");
    std::fs::write(
        &wrong,
        doc.replace("num_gpu_blocks=\\\"22\\\"", "num_gpu_blocks=\\\"24\\\""),
    )
    .unwrap();
    let (code, text_out) = series_cli(&[&rec, "--snapshot", wrong.to_str().unwrap()]);
    assert_eq!(code, 1, "{text_out}");
    assert!(
        text_out.contains("[T14] TRIPWIRE-FAILED  each of 2 engines: gauge denominator is 10, expected num_gpu_blocks - 1 = 11;"),
        "{text_out}"
    );
}
