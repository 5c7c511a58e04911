//! The real-vLLM lane, multi-process servers (issue 16): `--tensor-parallel-size 3
//! --distributed-executor-backend mp` (API server → `VLLM::EngineCore` → `VLLM::Worker_TP0..2`)
//! and `--data-parallel-size 2` (`VLLM::DPCoordinator`, `VLLM::EngineCore_DP0/1`,
//! `VLLM::APIServer_0/1`, one `VLLM::Worker` per engine) under `inferlint run`. TP must divide
//! the model's 9 attention heads, hence 3. Each process holds ~1-2 GB: one test at a time.
//!
//! Run one with `REAL_VLLM_PROFILE=debug bash .ci/real-vllm.sh multiproc::NAME`.

use std::path::Path;
use std::time::Duration;

use super::files::{args, boot_log_tail, json, result, wait_running};
use super::{assert_port_free, Install, Launch, Seen};

/// A whole run: two boots' worth of processes on two cores.
const RUN_LIMIT: Duration = Duration::from_secs(1200);
const UNTIL_LOAD: Duration = Duration::from_secs(900);

/// `vllm serve` with `extra` flags, eager, 512-token context, as [`Install::serve`] without its
/// block count and sequence cap.
fn serve(inst: &Install, port: u16, extra: &str) -> String {
    format!(
        "{} serve {} --served-model-name {} --host 127.0.0.1 --port {port} --max-model-len 512 --dtype bfloat16 --enforce-eager {extra}",
        inst.vllm.display(),
        inst.model.display(),
        super::install::MODEL,
    )
}

/// Data parallel 2 as in `vllm-0.32-cpu/dp2`: 4 sequences and 6 blocks (5 usable) per engine.
fn serve_dp2(inst: &Install, port: u16) -> String {
    serve(
        inst,
        port,
        "--max-num-seqs 4 --num-gpu-blocks-override 6 --data-parallel-size 2",
    )
}

fn serve_tp3(inst: &Install, port: u16) -> String {
    serve(
        inst,
        port,
        "--max-num-seqs 8 --tensor-parallel-size 3 --distributed-executor-backend mp",
    )
}

/// `vllm bench serve`: `n` prompts of 32 tokens, `out` generated each, all at once. On a busy
/// two-core machine a real engine decodes at 2-5 tokens/s, so the runs that go to their end
/// keep outputs short; the ones killed mid-load only need the load to be under way.
fn bench(inst: &Install, port: u16, n: u32, out: u32) -> Vec<String> {
    let mut v = inst.bench(port, 32, out);
    for (flag, value) in [("--num-prompts", n), ("--max-concurrency", n)] {
        let i = v
            .iter()
            .position(|a| a == flag)
            .expect("bench has the flag");
        v[i + 1] = value.to_string();
    }
    v
}

/// The run's vLLM processes by title (cmdline), e.g. `VLLM::Worker_TP1`.
fn titled(alive: &[Seen]) -> Vec<&Seen> {
    alive
        .iter()
        .filter(|p| p.cmdline.starts_with("VLLM::"))
        .collect()
}

fn assert_titles(alive: &[Seen], want: &[&str]) {
    let titles: Vec<&str> = titled(alive).iter().map(|p| p.cmdline.as_str()).collect();
    for w in want {
        assert!(
            titles.iter().filter(|t| *t == w).count() >= 1,
            "no {w} among {titles:?}"
        );
    }
}

fn start(name: &str, serve: &str, load: &[String], flags: &[&str]) -> Launch {
    Launch::start(name, &args(Path::new("run"), serve, flags, load))
}

/// (d) TP=3 under `run`: the three workers are the run's, the checks decide, the stop leaves
/// nothing.
// Seven minutes on a busy two-core machine for what the orphan test below also shows (the TP=3
// tree booted, served and stopped): run by hand with `-- --ignored`, not in every CI run.
#[test]
#[ignore = "long; TP=3 runs in CI through tp3_sigkill_of_the_api_server_names_every_orphan"]
fn tp3_run_is_supervised_to_the_end() {
    let _t = super::turn();
    let Some(inst) = Install::find("tp3_run_is_supervised_to_the_end") else {
        return;
    };
    let port = 8021;
    assert_port_free(port);
    let launch = start(
        "tp3",
        &serve_tp3(&inst, port),
        &bench(&inst, port, 8, 24),
        &[],
    );
    launch.wait_line("== load:", UNTIL_LOAD);
    wait_running(&launch, 1.0, Duration::from_secs(300));
    assert_titles(
        &launch.census(),
        &[
            "VLLM::EngineCore",
            "VLLM::Worker_TP0",
            "VLLM::Worker_TP1",
            "VLLM::Worker_TP2",
        ],
    );
    let code = launch.wait(RUN_LIMIT);
    let out = launch.out();
    let results = json(&out.join("results.json"));
    println!(
        "timings tp3: {:.1} s in all",
        launch.started.elapsed().as_secs_f64()
    );
    // 0, 1 or 2 (a check that could not tell, e.g. T14 with few distinct readings), never a
    // leftover (3) or a crash.
    assert!(
        (0..=2).contains(&code),
        "{}\n{}",
        launch.output(),
        boot_log_tail(&launch, 40)
    );
    for t in ["T8", "T9"] {
        let r = result(&results, t);
        assert_ne!(r["status"], "unknown", "{t} must decide on TP=3: {r}");
    }
    match launch.wait_nothing_left(Duration::from_secs(30)) {
        Ok(_) => {}
        Err(left) => panic!("alive after the run: {left:#?}"),
    }
    assert_port_free(port);
}

/// (e) DP=2 under `run`: each engine's gauges are recorded, T8 (on the sum) and T9 (per
/// engine pool) decide where inferlint 0.3 said "can't tell".
#[test]
fn dp2_run_decides_t8_and_t9_per_engine() {
    let _t = super::turn();
    let Some(inst) = Install::find("dp2_run_decides_t8_and_t9_per_engine") else {
        return;
    };
    let port = 8022;
    assert_port_free(port);
    let launch = start(
        "dp2",
        &serve_dp2(&inst, port),
        &bench(&inst, port, 10, 32),
        &[],
    );
    launch.wait_line("== load:", UNTIL_LOAD);
    wait_running(&launch, 2.0, Duration::from_secs(300));
    assert_titles(
        &launch.census(),
        &[
            "VLLM::DPCoordinator",
            "VLLM::EngineCore_DP0",
            "VLLM::EngineCore_DP1",
            "VLLM::Worker",
        ],
    );
    let code = launch.wait(RUN_LIMIT);
    let out = launch.out();
    let results = json(&out.join("results.json"));
    println!(
        "timings dp2: {:.1} s in all",
        launch.started.elapsed().as_secs_f64()
    );
    // 0, 1 or 2 (a check that could not tell, e.g. T14 with few distinct readings), never a
    // leftover (3) or a crash.
    assert!(
        (0..=2).contains(&code),
        "{}\n{}",
        launch.output(),
        boot_log_tail(&launch, 40)
    );
    // The recording keeps both engines.
    let series = inferlint_core::series::Series::load(&out.join("run.series.jsonl")).unwrap();
    assert_eq!(series.engine_ids(), ["0", "1"], "{}", series.source);
    let t8 = result(&results, "T8");
    assert!(t8["status"] == "pass" || t8["status"] == "fail", "{t8}");
    assert_eq!(t8["evidence"]["engines"], 2, "{t8}");
    if t8["status"] == "fail" && t8["evidence"]["peak_running"] == 8.0 {
        assert!(
            t8["message"]
                .as_str()
                .unwrap()
                .ends_with("(--max-num-seqs 4 on each of its 2 engines)"),
            "{t8}"
        );
    }
    let t9 = result(&results, "T9");
    assert!(t9["status"] == "pass" || t9["status"] == "warn", "{t9}");
    assert!(t9["evidence"]["engines"]["1"].is_object(), "{t9}");
    let t14 = result(&results, "T14");
    println!("dp2 T14: {t14}");
    assert_ne!(t14["status"], "fail", "{t14}");
    match launch.wait_nothing_left(Duration::from_secs(30)) {
        Ok(_) => {}
        Err(left) => panic!("alive after the run: {left:#?}"),
    }
    assert_port_free(port);
}

/// (f) SIGKILL of inferlint mid-load on DP=2: its shepherd stops the coordinator, both
/// engines, both API servers and both workers.
#[test]
fn dp2_sigkill_of_inferlint_mid_load_leaves_no_process() {
    let _t = super::turn();
    let Some(inst) = Install::find("dp2_sigkill_of_inferlint_mid_load_leaves_no_process") else {
        return;
    };
    let port = 8023;
    assert_port_free(port);
    let launch = start(
        "dp2-sigkill",
        &serve_dp2(&inst, port),
        &bench(&inst, port, 12, 96),
        &["--no-gpu-check"],
    );
    launch.wait_line("== load:", UNTIL_LOAD);
    wait_running(&launch, 2.0, Duration::from_secs(300));
    let before = launch.census();
    assert_titles(
        &before,
        &[
            "VLLM::DPCoordinator",
            "VLLM::EngineCore_DP0",
            "VLLM::EngineCore_DP1",
        ],
    );
    launch.signal(libc::SIGKILL);
    let code = launch.wait(Duration::from_secs(30));
    assert_eq!(code, 128 + libc::SIGKILL, "{}", launch.output());
    match launch.wait_nothing_left(Duration::from_secs(90)) {
        Ok(t) => println!(
            "timings dp2-sigkill: {} processes, all gone {:.1} s after SIGKILL of inferlint",
            before.len(),
            t.as_secs_f64()
        ),
        Err(left) => panic!("alive 90 s after SIGKILL of inferlint: {left:#?}"),
    }
    assert_port_free(port);
}

/// (g) SIGKILL of the API server mid-load on TP=3 (`vllm-0.32-cpu/tp3`: the engine and its
/// three workers live on, reparented): inferlint's lines name every orphan by pid, and its stop
/// clears them.
#[test]
fn tp3_sigkill_of_the_api_server_names_every_orphan() {
    let _t = super::turn();
    let Some(inst) = Install::find("tp3_sigkill_of_the_api_server_names_every_orphan") else {
        return;
    };
    let port = 8024;
    assert_port_free(port);
    let launch = start(
        "tp3-orphans",
        &serve_tp3(&inst, port),
        &bench(&inst, port, 8, 96),
        &["--no-gpu-check"],
    );
    launch.wait_line("== load:", UNTIL_LOAD);
    wait_running(&launch, 1.0, Duration::from_secs(300));
    let alive = launch.census();
    let api = alive
        .iter()
        .find(|p| p.comm == "vllm" && p.cmdline.contains(&format!("--port {port}")))
        .expect("the API server is alive")
        .clone();
    let orphans: Vec<Seen> = titled(&alive).into_iter().cloned().collect();
    assert!(orphans.len() >= 4, "engine and 3 workers: {orphans:#?}");
    // SAFETY: a pid found among this run's processes.
    unsafe {
        libc::kill(api.pid, libc::SIGKILL);
    }
    let code = launch.wait(RUN_LIMIT);
    let stdout = launch.output();
    println!(
        "timings tp3-orphans: {:.1} s in all",
        launch.started.elapsed().as_secs_f64()
    );
    assert!((1..=3).contains(&code), "exit {code}:\n{stdout}");
    // Each orphan is named by the stop, with a pid and its title. The lane runs inferlint in a
    // PID namespace of its own, so the pid printed is that namespace's, not the one seen here:
    // the title (argv[0], one per process of the tree) is what both sides share.
    let named: Vec<&str> = stdout
        .lines()
        .filter(|l| l.starts_with("left by the server's exit (killed by SIGKILL): pid="))
        .collect();
    for o in &orphans {
        let title = o.cmdline.split_whitespace().next().unwrap_or("");
        assert!(
            named
                .iter()
                .any(|l| l.contains(&format!(" {title} (stopped)"))),
            "orphan {o} not named:\n{stdout}"
        );
    }
    match launch.wait_nothing_left(Duration::from_secs(30)) {
        Ok(_) => {}
        Err(left) => panic!("alive after the stop: {left:#?}"),
    }
    assert_port_free(port);
}
