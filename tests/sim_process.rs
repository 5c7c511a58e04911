//! The simulated vLLM's process tree and how it ends: an API server with a renamed
//! `VLLM::EngineCore` child (and `VLLM::Worker_TP{n}` grandchildren), SIGTERM stopping all of
//! them, SIGKILL of the API server orphaning the engine only with `--orphan-engine`, and the
//! simulated GPU memory held exactly as long as the holder lives.

use crate::sim_support;

use std::time::Duration;

use sim_support::*;

#[test]
fn the_engine_is_renamed_like_setproctitle_does() {
    let sim = Sim::start(&[]);
    let engine = sim.engine_pid().expect("an engine process");
    assert_eq!(
        argv(engine),
        vec!["VLLM::EngineCore"],
        "cmdline is the title alone"
    );
    let raw = std::fs::read(format!("/proc/{engine}/cmdline")).unwrap();
    assert!(
        raw.starts_with(b"VLLM::EngineCore\0"),
        "NUL-padded title: {raw:?}"
    );
    assert_eq!(
        comm(engine),
        "VLLM::EngineCor",
        "comm is the first 15 bytes"
    );
    assert_eq!(ppid(engine), Some(sim.api_pid));
    assert_eq!(
        pgrp(engine),
        pgrp(sim.api_pid),
        "the engine stays in the API server's group"
    );
    // The API server keeps its own command line.
    assert_eq!(
        argv(sim.api_pid)[1..4],
        ["sim".to_string(), "serve".into(), "m".into()]
    );
}

#[test]
fn tensor_parallel_workers_are_children_of_the_engine() {
    let sim = Sim::builder().args(&["--tp", "2"]).gpu().start();
    let engine = sim.engine_pid().unwrap();
    // A worker exists before it renames itself (as setproctitle does, after its fork): wait for
    // both names, not only for the processes.
    assert!(eventually(Duration::from_secs(5), || {
        let ps = sim.processes();
        ps.len() == 4
            && ps
                .iter()
                .filter(|&&p| ppid(p) == Some(engine))
                .all(|&p| comm(p).starts_with("VLLM::Worker"))
    }));
    let mut workers: Vec<(String, String)> = sim
        .processes()
        .into_iter()
        .filter(|&p| ppid(p) == Some(engine))
        .map(|p| (argv(p).join(" "), comm(p)))
        .collect();
    workers.sort();
    assert_eq!(
        workers,
        vec![
            (
                "VLLM::Worker_TP0".to_string(),
                "VLLM::Worker_TP".to_string()
            ),
            (
                "VLLM::Worker_TP1".to_string(),
                "VLLM::Worker_TP".to_string()
            )
        ]
    );
    // With TP each worker holds its GPU's memory.
    let holders: Vec<u32> = sim.gpu_readings().into_iter().map(|(p, _)| p).collect();
    assert_eq!(holders.len(), 2);
    assert!(holders.iter().all(|p| ppid(*p) == Some(engine)));
}

#[test]
fn sigterm_to_the_api_server_leaves_no_process_and_frees_the_gpu() {
    let mut sim = Sim::builder().args(&["--tp", "2"]).gpu().start();
    assert!(eventually(Duration::from_secs(5), || sim.processes().len()
        == 4
        && sim.gpu_readings().len() == 2));
    let tree = sim.processes();
    sim.signal_api(libc::SIGTERM);
    let status = sim
        .wait_exit(Duration::from_secs(15))
        .expect("the API server exits after SIGTERM");
    assert_eq!(status.code(), Some(0));
    assert!(
        eventually(Duration::from_secs(5), || tree.iter().all(|&p| !alive(p))),
        "left: {:?}",
        sim.processes()
    );
    assert!(sim.gpu_readings().is_empty());
    let log = sim.log();
    for line in [
        "[shutdown] API server: shutdown triggered",
        "[shutdown] Process manager: send sigterm to process EngineCore",
        "[shutdown] EngineCore: trigger received signal=SIGTERM",
        "[shutdown] EngineCore: exiting busy loop",
        "[shutdown] Executor: waiting for worker exit count=2",
        "[shutdown] API server: shutting down FastAPI HTTP server",
        "INFO:     Application shutdown complete.",
    ] {
        assert!(log.contains(line), "missing {line:?} in:\n{log}");
    }
}

#[test]
fn an_engine_that_ignores_sigterm_is_force_killed() {
    let mut sim = Sim::start(&["--engine-ignores-sigterm", "--vllm-version", "0.30"]);
    let engine = sim.engine_pid().unwrap();
    sim.signal_api(libc::SIGTERM);
    assert_eq!(
        sim.wait_exit(Duration::from_secs(15))
            .and_then(|s| s.code()),
        Some(0)
    );
    assert!(eventually(Duration::from_secs(5), || !alive(engine)));
    let log = sim.log();
    assert!(
        log.contains(&format!(
            "[shutdown] Process manager: force killing remaining process EngineCore pid {engine}"
        )),
        "{log}"
    );
    assert!(
        log.contains("(APIServer pid=")
            && log.contains("[utils.py:657] [shutdown] Process manager: force killing"),
        "0.30's site: {log}"
    );
    assert!(
        !log.contains("[shutdown] EngineCore: trigger received"),
        "the engine ignored SIGTERM"
    );
}

#[test]
fn sigkill_of_the_api_server_orphans_the_engine_with_its_gpu_memory() {
    let mut sim = Sim::builder()
        .args(&["--orphan-engine", "--gpu-mib", "21768"])
        .gpu()
        .start();
    let engine = sim.engine_pid().unwrap();
    assert_eq!(sim.gpu_readings(), vec![(engine, 21768)]);
    sim.signal_api(libc::SIGKILL);
    sim.wait_exit(Duration::from_secs(5))
        .expect("the API server dies");
    // Exactly the engine is left, reparented, and still holds the memory.
    assert!(eventually(Duration::from_secs(2), || ppid(engine) != Some(sim.api_pid)));
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(sim.processes(), vec![engine]);
    assert_eq!(argv(engine), vec!["VLLM::EngineCore"]);
    assert_eq!(sim.gpu_readings(), vec![(engine, 21768)]);
    // Killing the orphan frees it.
    unsafe { libc::kill(engine as i32, libc::SIGKILL) };
    assert!(eventually(Duration::from_secs(5), || sim
        .gpu_readings()
        .is_empty()));
    assert!(sim.processes().is_empty());
}

#[test]
fn without_orphan_engine_the_engine_follows_a_sigkilled_api_server() {
    let mut sim = Sim::builder().gpu().start();
    let engine = sim.engine_pid().unwrap();
    assert_eq!(sim.gpu_readings().len(), 1);
    sim.signal_api(libc::SIGKILL);
    sim.wait_exit(Duration::from_secs(5))
        .expect("the API server dies");
    assert!(
        eventually(Duration::from_secs(5), || !alive(engine)),
        "the engine outlived its API server"
    );
    assert!(sim.gpu_readings().is_empty());
}

#[test]
fn escapes_leave_the_session_or_the_parent() {
    let sim = Sim::start(&["--escape", "setsid"]);
    let engine = sim.engine_pid().unwrap();
    assert_eq!(
        session(engine),
        Some(engine),
        "setsid: the engine leads its own session"
    );
    assert_ne!(pgrp(engine), pgrp(sim.api_pid));
    drop(sim);

    let mut sim = Sim::start(&["--escape", "double-fork"]);
    let engine = sim.engine_pid().unwrap();
    assert_ne!(
        ppid(engine),
        Some(sim.api_pid),
        "double-fork: the engine is not the API server's child"
    );
    // The API server still stops it on SIGTERM: it knows the engine's pid.
    sim.signal_api(libc::SIGTERM);
    assert_eq!(
        sim.wait_exit(Duration::from_secs(15))
            .and_then(|s| s.code()),
        Some(0)
    );
    assert!(eventually(Duration::from_secs(5), || !alive(engine)));
}

#[test]
fn an_engine_that_dies_on_the_first_request_ends_the_server_with_status_0() {
    let mut sim = Sim::start(&["--die-on-first-request"]);
    let (status, body) = post(
        &sim.url("/v1/completions"),
        r#"{"prompt": "a b", "max_tokens": 4}"#,
        &[],
    );
    assert_eq!(status, 500, "{body}");
    assert_eq!(json(&body)["error"]["code"], 500);
    let status = sim
        .wait_exit(Duration::from_secs(10))
        .expect("the API server exits after its engine died");
    assert_eq!(
        status.code(),
        Some(0),
        "vLLM exits 0 when its engine dies (real-vllm.md §8)"
    );
    let log = sim.log();
    let ready = log.find("Application startup complete.").unwrap();
    let fatal = log
        .find("torch.AcceleratorError: CUDA error: an illegal memory access was encountered")
        .expect("the root cause is printed");
    let dead = log
        .find("EngineDeadError")
        .expect("the API server reports the dead engine");
    assert!(ready < fatal && fatal < dead);
    assert!(sim.processes().is_empty());
}

#[test]
fn die_after_requests_serves_that_many_first() {
    let sim = Sim::start(&["--die-after-requests", "2", "--tokens-per-s", "1000"]);
    for _ in 0..2 {
        let (status, _) = post(
            &sim.url("/v1/completions"),
            r#"{"prompt": "a", "max_tokens": 2}"#,
            &[],
        );
        assert_eq!(status, 200);
    }
    let (status, _) = post(
        &sim.url("/v1/completions"),
        r#"{"prompt": "a", "max_tokens": 2}"#,
        &[],
    );
    assert_eq!(status, 500);
}

#[test]
fn boot_failures_print_their_signature_and_exit_non_zero() {
    for kind in inferlint_sim::config::FailKind::ALL {
        let mut sim = Sim::builder()
            .args(&["--fail-boot", kind.key()])
            .no_wait()
            .start();
        let status = sim
            .wait_exit(Duration::from_secs(15))
            .expect("a failed start exits");
        assert_eq!(status.code(), Some(1), "{kind:?}");
        let log = sim.log();
        assert!(!log.contains("Application startup complete"), "{kind:?}");
        assert!(
            log.contains("RuntimeError: Engine core initialization failed. See root cause above."),
            "{kind:?}: {log}"
        );
        let failure = inferlint_core::bootlog::classify_failure(&log)
            .unwrap_or_else(|| panic!("{kind:?}: no failure found in\n{log}"));
        assert_eq!(
            failure.kind.as_str(),
            kind.key(),
            "{kind:?}: {}",
            failure.summary()
        );
        assert_eq!(failure.phase.as_str(), "boot", "{}", failure.summary());
        assert!(sim.processes().is_empty(), "{kind:?} left processes");
    }
}

#[test]
fn a_pool_smaller_than_one_request_fails_like_vllm() {
    // vllm-0.32 CPU run: 4 blocks of 128 with max len 512 → refused (one block is the null block).
    let mut sim = Sim::builder()
        .args(&[
            "--num-gpu-blocks-override",
            "4",
            "--block-size",
            "128",
            "--max-model-len",
            "512",
        ])
        .no_wait()
        .start();
    assert_eq!(
        sim.wait_exit(Duration::from_secs(15))
            .and_then(|s| s.code()),
        Some(1)
    );
    let log = sim.log();
    assert!(
        log.contains("the estimated maximum model length is 384."),
        "{log}"
    );
    let failure = inferlint_core::bootlog::classify_failure(&log).unwrap();
    assert_eq!(failure.kind.as_str(), "kv_cache_too_small");
    // 5 blocks fit one request: it starts.
    let sim = Sim::start(&[
        "--num-gpu-blocks-override",
        "5",
        "--block-size",
        "128",
        "--max-model-len",
        "512",
    ]);
    assert!(sim.log().contains(
        "GPU KV cache size: 640 tokens, Maximum concurrency for 512 tokens per request: 1.25x"
    ));
}

#[test]
fn sigterm_during_boot_stops_everything() {
    let mut sim = Sim::builder()
        .args(&["--boot-secs", "20"])
        .no_wait()
        .start();
    assert!(
        eventually(Duration::from_secs(10), || sim.engine_pid().is_some()),
        "the engine starts booting"
    );
    let engine = sim.engine_pid().unwrap();
    sim.signal_api(libc::SIGTERM);
    assert_eq!(
        sim.wait_exit(Duration::from_secs(10))
            .and_then(|s| s.code()),
        Some(0)
    );
    assert!(eventually(Duration::from_secs(5), || !alive(engine)));
    assert!(!sim.log().contains("Application startup complete"));
    assert!(sim.processes().is_empty());
}
