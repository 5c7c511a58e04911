//! `inferlint run` end to end against the simulated vLLM on T22 (a data-parallel load pinned to
//! one engine with `X-data-parallel-rank`, as the recorded `field/dp2-balance` run), T23 (a
//! `--stream-interval` that sends several tokens a chunk), T25 (a CUDA-graph capture size
//! below the requests run at once), T26 (KV offloading that stores and never loads back) and
//! T27 (a simulated GPU at its power limit): the live output, results.json (and run.json's clock
//! readings), the report read back, and a bystander that outlives the run.

use crate::run_support;

use std::path::Path;
use std::time::Duration;

use run_support::{bin, json_file, message_of, run_with_limit, status_of, text, Bystander, World};
use serde_json::Value;

const LIMIT: Duration = Duration::from_secs(150);

fn turn() -> crate::serial::Turn {
    crate::serial::turn("runs")
}

/// The run's stdout and results.json.
fn run_in(w: &World, out: &Path, serve: &str, load: &[String]) -> (String, Value) {
    let argv: Vec<String> = ["--serve", serve, "--interval", "0.1"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    let o = run_with_limit(w.run_command_in(out, &argv, load), LIMIT);
    let stdout = text(&o.stdout);
    let results = out.join("results.json");
    assert!(
        results.exists(),
        "no results.json\n{stdout}\n{}",
        text(&o.stderr)
    );
    (stdout, json_file(&results))
}

/// `inferlint report RUN --json`.
fn report_json(dir: &Path) -> Value {
    let mut c = std::process::Command::new(bin());
    c.arg("report")
        .arg(dir)
        .arg("--json")
        .arg("-o")
        .arg(dir.join("again.html"));
    let out = run_with_limit(c, Duration::from_secs(60));
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", text(&out.stdout)))
}

#[test]
fn a_load_pinned_to_one_data_parallel_engine_warns_t22_and_a_balanced_one_passes() {
    let _t = turn();
    let w = World::new();
    let mut bystander = Bystander::start();
    let serve = w.sim_serve(
        "0.2",
        "--data-parallel-size 2 --max-num-seqs 4 --num-gpu-blocks-override 98 --block-size 16 --max-model-len 256 --tokens-per-s 400",
    );
    let base = "--max-concurrency 8 --num-prompts 16 --random-input-len 32 --random-output-len 32 --ignore-eos";
    let pinned = w.sim_bench(&format!("{base} --header X-data-parallel-rank=0"));
    let out = w.out();
    let (stdout, results) = run_in(&w, &out, &serve, &pinned);
    assert_eq!(
        status_of(&results, "T22").as_deref(),
        Some("warn"),
        "{stdout}"
    );
    let msg = message_of(&results, "T22").unwrap_or_default();
    assert!(
        msg.starts_with("engine 0 finished 16 of the 16 requests (100%; an even share is 50%)"),
        "{msg}"
    );
    assert!(
        stdout.contains("[T22] WARN  engine 0 finished 16"),
        "{stdout}"
    );
    assert!(stdout.contains("One engine carried the load"), "{stdout}");
    let back = report_json(&out);
    assert_eq!(status_of(&back, "T22").as_deref(), Some("warn"), "{back}");
    let page = std::fs::read_to_string(out.join("report.html")).unwrap();
    assert!(
        page.contains("id=\"fig-engines\""),
        "no per-engine running chart"
    );
    let even = w.sim_bench(base);
    let again = w.dir.path().join("even");
    let (stdout, results) = run_in(&w, &again, &serve, &even);
    assert_eq!(
        status_of(&results, "T22").as_deref(),
        Some("pass"),
        "{stdout}"
    );
    assert!(w.live_processes().is_empty(), "{:?}", w.live_processes());
    assert!(bystander.alive(), "the bystander died");
}

#[test]
fn a_stream_interval_warns_t23_with_its_cause_and_one_token_a_chunk_passes() {
    let _t = turn();
    let w = World::new();
    let mut bystander = Bystander::start();
    let base =
        "--num-gpu-blocks-override 98 --block-size 16 --max-model-len 256 --tokens-per-s 400";
    let serve = w.sim_serve("0.2", &format!("{base} --stream-interval 4"));
    let load = w.sim_bench(
        "--max-concurrency 4 --num-prompts 8 --random-input-len 20 --random-output-len 33 --ignore-eos --save-detailed",
    );
    let out = w.out();
    let (stdout, results) = run_in(&w, &out, &serve, &load);
    assert_eq!(
        status_of(&results, "T23").as_deref(),
        Some("warn"),
        "{stdout}"
    );
    // 33 tokens: the first alone, then 8 chunks of 4: 9 chunks a request, 72 in all. On a busy
    // machine the server sends what it fell behind on together, as vLLM's API server does, so
    // a few chunks may merge (never split).
    let msg = message_of(&results, "T23").unwrap_or_default();
    let t23 = results
        .as_array()
        .and_then(|a| a.iter().find(|r| r["tripwire"] == "T23"))
        .map(|r| r["evidence"].clone())
        .unwrap_or_default();
    let chunks = t23["chunks"].as_f64().unwrap_or(f64::NAN);
    assert!((60.0..=72.0).contains(&chunks), "{msg}");
    assert!(
        msg.starts_with(&format!(
            "{:.2} tokens per streamed chunk (264 tokens in {chunks} chunks over 8 requests, from a stream interval of 4 tokens)",
            264.0 / chunks
        )),
        "{msg}"
    );
    assert!(stdout.contains("ITL is per chunk"), "{stdout}");
    let back = report_json(&out);
    assert_eq!(status_of(&back, "T23").as_deref(), Some("warn"), "{back}");
    let plain = w.sim_serve("0.2", base);
    let again = w.dir.path().join("plain");
    let (stdout, results) = run_in(&w, &again, &plain, &load);
    assert_eq!(
        status_of(&results, "T23").as_deref(),
        Some("pass"),
        "{stdout}"
    );
    assert!(w.live_processes().is_empty(), "{:?}", w.live_processes());
    assert!(bystander.alive(), "the bystander died");
}

#[test]
fn batches_beyond_a_small_cuda_graph_capture_size_warn_t25() {
    let _t = turn();
    let w = World::new();
    let mut bystander = Bystander::start();
    let base = "--max-num-seqs 16 --num-gpu-blocks-override 98 --block-size 16 --max-model-len 256 --tokens-per-s 200";
    let serve = w.sim_serve("0.2", &format!("{base} --max-cudagraph-capture-size 4"));
    let load = w.sim_bench(
        "--max-concurrency 16 --num-prompts 32 --random-input-len 20 --random-output-len 40 --ignore-eos",
    );
    let out = w.out();
    let (stdout, results) = run_in(&w, &out, &serve, &load);
    assert_eq!(
        status_of(&results, "T25").as_deref(),
        Some("warn"),
        "{stdout}"
    );
    let msg = message_of(&results, "T25").unwrap_or_default();
    assert!(
        msg.contains("beyond the largest decode batch captured as a CUDA graph (4)"),
        "{msg}"
    );
    assert!(stdout.contains("[T25] WARN"), "{stdout}");
    let back = report_json(&out);
    assert_eq!(status_of(&back, "T25").as_deref(), Some("warn"), "{back}");
    // Graphs up to 32 cover the 16 run at once.
    let big = w.sim_serve("0.2", &format!("{base} --max-cudagraph-capture-size 32"));
    let again = w.dir.path().join("big");
    let (stdout, results) = run_in(&w, &again, &big, &load);
    assert_eq!(
        status_of(&results, "T25").as_deref(),
        Some("pass"),
        "{stdout}"
    );
    assert!(w.live_processes().is_empty(), "{:?}", w.live_processes());
    assert!(bystander.alive(), "the bystander died");
}

#[test]
fn kv_offloading_that_never_loads_back_warns_t26_and_one_that_loads_passes() {
    let _t = turn();
    let w = World::new();
    let mut bystander = Bystander::start();
    // 40 blocks of 16 tokens: the shared 256-token prefix is pushed out of the GPU's cache
    // every few requests and comes back from CPU memory (tests/fixtures/sim-kv-offload/).
    let base = "--max-model-len 512 --num-gpu-blocks-override 40 --kv-offloading-size 0.5 --tokens-per-s 100";
    let load = w.sim_bench(
        "--num-prompts 24 --random-prefix-len 256 --random-input-len 32 --random-output-len 16 --ignore-eos --max-concurrency 2 --seed 0",
    );
    let never = w.sim_serve("0.2", &format!("{base} --kv-offload-never-loads"));
    let out = w.out();
    let (stdout, results) = run_in(&w, &out, &never, &load);
    assert_eq!(
        status_of(&results, "T26").as_deref(),
        Some("warn"),
        "{stdout}"
    );
    let msg = message_of(&results, "T26").unwrap_or_default();
    assert!(
        msg.contains("loaded none of it back (the connector served 0 of the"),
        "{msg}"
    );
    assert!(stdout.contains("[T26] WARN"), "{stdout}");
    assert!(
        stdout.contains("- KV offloading never loaded back."),
        "{stdout}"
    );
    let back = report_json(&out);
    assert_eq!(status_of(&back, "T26").as_deref(), Some("warn"), "{back}");
    let loads = w.sim_serve("0.2", base);
    let again = w.dir.path().join("loads");
    let (stdout, results) = run_in(&w, &again, &loads, &load);
    assert_eq!(
        status_of(&results, "T26").as_deref(),
        Some("pass"),
        "{stdout}"
    );
    assert!(w.live_processes().is_empty(), "{:?}", w.live_processes());
    assert!(bystander.alive(), "the bystander died");
}

#[test]
fn a_power_capped_simulated_gpu_warns_t27_and_an_unthrottled_one_passes() {
    let _t = turn();
    let w = World::new();
    let mut bystander = Bystander::start();
    // 40 tokens at 50 a second: the load lasts about 3 s, three or four readings of the card.
    let load = w.sim_bench(
        "--max-concurrency 4 --num-prompts 8 --random-input-len 16 --random-output-len 40 --ignore-eos",
    );
    let capped = w.sim_serve("0.2", "--tokens-per-s 50 --gpu-throttle sw-power-cap");
    let out = w.out();
    let (stdout, results) = run_in(&w, &out, &capped, &load);
    assert_eq!(
        status_of(&results, "T27").as_deref(),
        Some("warn"),
        "{stdout}"
    );
    let msg = message_of(&results, "T27").unwrap_or_default();
    assert!(
        msg.starts_with("GPU 0 was throttled (SwPowerCap) on "),
        "{msg}"
    );
    assert!(
        msg.contains("its SM clock fell to 1580 MHz of 1980 MHz"),
        "{msg}"
    );
    assert!(stdout.contains("[T27] WARN"), "{stdout}");
    assert!(stdout.contains("- The GPU ran throttled."), "{stdout}");
    let run_json = run_support::json_file(&out.join("run.json"));
    assert!(
        run_json["during_load"]["gpu_clocks"]
            .as_array()
            .is_some_and(|a| !a.is_empty()),
        "{run_json}"
    );
    let back = report_json(&out);
    assert_eq!(status_of(&back, "T27").as_deref(), Some("warn"), "{back}");
    // The page draws the capped card's clocks, a marker at each capped reading.
    let page = std::fs::read_to_string(out.join("report.html")).unwrap();
    assert!(page.contains("id=\"fig-gpu-clocks\""), "no clocks chart");
    assert!(
        page.contains("GPU 0&#39;s clocks during the load")
            || page.contains("GPU 0's clocks during the load"),
        "no clocks title"
    );
    assert!(page.contains("Throttled readings"), "no throttle markers");
    // A new world: a simulated GPU without the throttle file.
    let w2 = World::new();
    let free = w2.sim_serve("0.2", "--tokens-per-s 50");
    let load2 = w2.sim_bench(
        "--max-concurrency 4 --num-prompts 8 --random-input-len 16 --random-output-len 40 --ignore-eos",
    );
    let again = w2.out();
    let (stdout, results) = run_in(&w2, &again, &free, &load2);
    assert_eq!(
        status_of(&results, "T27").as_deref(),
        Some("pass"),
        "{stdout}"
    );
    assert!(w.live_processes().is_empty(), "{:?}", w.live_processes());
    assert!(w2.live_processes().is_empty(), "{:?}", w2.live_processes());
    assert!(bystander.alive(), "the bystander died");
}
