//! The simulator's multi-process servers: `--data-parallel-size N` (a `VLLM::DPCoordinator` and
//! one `VLLM::EngineCore_DP<i>` per rank, each with its own pool and simulated GPU, series
//! labelled per engine as the real `vllm-0.32-cpu/dp2` scrapes show) and `--tensor-parallel-size
//! N` (one simulated GPU per worker).

use crate::sim_support;

use std::collections::BTreeMap;
use std::time::Duration;

use inferlint_sim::gpu::Holding;
use sim_support::*;

/// pid → GPU index of every live holder of simulated GPU memory.
fn gpus_held(sim: &Sim) -> BTreeMap<u32, u32> {
    let live: Vec<u32> = sim.gpu_readings().into_iter().map(|(p, _)| p).collect();
    let dir = sim.gpu_dir.as_ref().unwrap().path();
    std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .filter_map(|e| {
            let h: Holding = serde_json::from_slice(&std::fs::read(e.path()).ok()?).ok()?;
            live.contains(&h.pid).then_some((h.pid, h.gpu))
        })
        .collect()
}

fn titles(sim: &Sim) -> Vec<(String, u32)> {
    let mut v: Vec<(String, u32)> = sim
        .processes()
        .into_iter()
        .filter(|&p| p != sim.api_pid)
        .map(|p| (argv(p).join(" "), ppid(p).unwrap_or(0)))
        .collect();
    v.sort();
    v
}

#[test]
fn data_parallel_engines_are_children_of_the_api_server_each_on_its_gpu() {
    let sim = Sim::builder()
        .args(&["--data-parallel-size", "2"])
        .gpu()
        .start();
    assert!(eventually(Duration::from_secs(5), || sim.processes().len() == 4));
    let api = sim.api_pid;
    let expected = vec![
        ("VLLM::DPCoordinator".to_string(), api),
        ("VLLM::EngineCore_DP0".to_string(), api),
        ("VLLM::EngineCore_DP1".to_string(), api),
    ];
    // The coordinator is not waited for by readiness: it may still be retitling itself.
    eventually(Duration::from_secs(5), || titles(&sim) == expected);
    assert_eq!(titles(&sim), expected);
    for p in sim.processes() {
        assert_eq!(
            pgrp(p),
            pgrp(api),
            "one process group: {}",
            argv(p).join(" ")
        );
    }
    // Each engine (TP 1) holds a GPU of its own; the coordinator holds none.
    let held = gpus_held(&sim);
    let mut gpus: Vec<u32> = held.values().copied().collect();
    gpus.sort_unstable();
    assert_eq!(gpus, [0, 1], "{held:?}");
    for pid in held.keys() {
        assert!(argv(*pid)[0].starts_with("VLLM::EngineCore_DP"));
    }
    let log = sim.log();
    assert!(log.contains("(EngineCore_DP1 pid="), "{log}");
    assert!(log.contains("'data_parallel_size': 2"), "{log}");
}

#[test]
fn data_parallel_with_tensor_parallel_gives_one_gpu_per_worker() {
    let sim = Sim::builder()
        .args(&["--data-parallel-size", "2", "--tensor-parallel-size", "2"])
        .gpu()
        .start();
    assert!(eventually(Duration::from_secs(5), || sim.processes().len()
        == 8
        && sim.gpu_readings().len() == 4));
    let workers: Vec<String> = titles(&sim)
        .into_iter()
        .map(|(t, _)| t)
        .filter(|t| t.starts_with("VLLM::Worker"))
        .collect();
    assert_eq!(
        workers,
        [
            "VLLM::Worker_DP0_TP0",
            "VLLM::Worker_DP0_TP1",
            "VLLM::Worker_DP1_TP0",
            "VLLM::Worker_DP1_TP1"
        ]
    );
    // GPU = dp rank · tp + tp rank: four workers, four GPUs, each worker the child of its engine.
    let held = gpus_held(&sim);
    for (pid, gpu) in &held {
        let title = argv(*pid)[0].clone();
        let dp: u32 = title["VLLM::Worker_DP".len()..][..1].parse().unwrap();
        let tp: u32 = title["VLLM::Worker_DP0_TP".len()..].parse().unwrap();
        assert_eq!(*gpu, dp * 2 + tp, "{title}");
        let parent = argv(ppid(*pid).unwrap())[0].clone();
        assert_eq!(parent, format!("VLLM::EngineCore_DP{dp}"));
    }
    assert_eq!(held.len(), 4);
}

#[test]
fn tensor_parallel_workers_each_hold_their_own_gpu() {
    let sim = Sim::builder()
        .args(&["--tensor-parallel-size", "3"])
        .gpu()
        .start();
    assert!(eventually(Duration::from_secs(5), || sim
        .gpu_readings()
        .len()
        == 3));
    let mut gpus: Vec<u32> = gpus_held(&sim).values().copied().collect();
    gpus.sort_unstable();
    assert_eq!(gpus, [0, 1, 2]);
}

#[test]
fn data_parallel_metrics_are_labelled_per_engine_like_the_real_scrapes() {
    let sim = Sim::builder()
        .args(&[
            "--data-parallel-size",
            "2",
            "--max-num-seqs",
            "4",
            "--num-gpu-blocks-override",
            "6",
            "--block-size",
            "128",
            "--max-model-len",
            "512",
            "--tokens-per-s",
            "20",
            "--vllm-version",
            "0.33",
        ])
        .start();
    // Idle: the scheduler gauges have TYPE lines and no sample; counters exist per engine.
    let (text, m) = metrics(&sim);
    for g in [
        "vllm:num_requests_running",
        "vllm:num_requests_waiting",
        "vllm:kv_cache_usage_perc",
    ] {
        assert!(text.contains(&format!("# TYPE {g} gauge\n")), "{g}");
        assert!(
            !m.has(g),
            "{g} must have no sample before the first request"
        );
    }
    for e in ["0", "1"] {
        assert_eq!(
            m.total_where("vllm:generation_tokens_total", &[("engine", e)]),
            Some(0.0)
        );
    }
    // Multiprocess mode: no creation stamps, no Python or process collectors.
    assert!(!text.contains("_created"));
    assert!(!text.contains("python_gc") && !text.contains("process_resident"));
    // cache_config_info once per engine, num_gpu_blocks the sum over the engines.
    let info = m.series("vllm:cache_config_info", &[]);
    assert_eq!(info.len(), 2);
    for s in &info {
        assert_eq!(s.label("num_gpu_blocks"), Some("12"));
        assert_eq!(s.label("num_gpu_blocks_override"), Some("6"));
    }
    // 12 requests at once: 6 to each engine, 4 running and 2 waiting on each, as recorded.
    let url = sim.url("/v1/completions");
    let handle = std::thread::spawn(move || {
        let body = r#"{"prompt": "one two three", "max_tokens": 60, "ignore_eos": true}"#;
        let threads: Vec<_> = (0..12)
            .map(|_| {
                let url = url.clone();
                std::thread::spawn(move || post(&url, body, &[]))
            })
            .collect();
        threads
            .into_iter()
            .map(|t| t.join().unwrap().0)
            .collect::<Vec<u16>>()
    });
    assert!(eventually(Duration::from_secs(10), || {
        let (_, m) = metrics(&sim);
        ["0", "1"].iter().all(|e| {
            m.total_where("vllm:num_requests_running", &[("engine", e)]) == Some(4.0)
                && m.total_where("vllm:num_requests_waiting", &[("engine", e)]) == Some(2.0)
        })
    }));
    let (_, m) = metrics(&sim);
    for e in ["0", "1"] {
        let u = m
            .series("vllm:kv_cache_usage_perc", &[("engine", e)])
            .first()
            .map(|s| s.value)
            .unwrap();
        assert!((u - 0.8).abs() < 1e-9, "4 of 5 usable blocks, got {u}");
    }
    // The recorder reads it as two engines.
    let row = inferlint_core::series::SeriesSample::from_metrics(
        &m,
        inferlint_core::Engine::Vllm,
        1.0,
        None,
    );
    assert_eq!(
        (row.running(), row.waiting(), row.kv_usage()),
        (Some(8.0), Some(4.0), None)
    );
    assert_eq!(row.per_engine().len(), 2);
    assert!(handle.join().unwrap().iter().all(|s| *s == 200));
}

#[test]
fn sigkill_of_the_api_server_ends_the_coordinator_and_the_engines() {
    let mut sim = Sim::builder()
        .args(&["--data-parallel-size", "2"])
        .gpu()
        .start();
    assert!(eventually(Duration::from_secs(5), || sim.processes().len() == 4));
    let tree = sim.processes();
    sim.signal_api(libc::SIGKILL);
    let _ = sim.wait_exit(Duration::from_secs(5));
    assert!(
        eventually(Duration::from_secs(5), || tree.iter().all(|&p| !alive(p))),
        "left: {:?}",
        titles(&sim)
    );
    assert!(sim.gpu_readings().is_empty());
}

#[test]
fn sigterm_stops_every_engine_as_vllms_process_manager_does() {
    let mut sim = Sim::builder()
        .args(&["--data-parallel-size", "2", "--engine-ignores-sigterm"])
        .gpu()
        .start();
    assert!(eventually(Duration::from_secs(5), || sim.processes().len() == 4));
    let tree = sim.processes();
    sim.signal_api(libc::SIGTERM);
    assert_eq!(
        sim.wait_exit(Duration::from_secs(15))
            .and_then(|s| s.code()),
        Some(0)
    );
    assert!(eventually(Duration::from_secs(5), || tree
        .iter()
        .all(|&p| !alive(p))));
    let log = sim.log();
    for e in ["EngineCore_DP0", "EngineCore_DP1"] {
        assert!(
            log.contains(&format!(
                "[shutdown] Process manager: send sigterm to process {e}"
            )),
            "{log}"
        );
        assert!(
            log.contains(&format!(
                "[shutdown] Process manager: force killing remaining process {e} pid"
            )),
            "{log}"
        );
    }
    assert!(
        log.contains("force killing remaining processes count=2"),
        "{log}"
    );
}
