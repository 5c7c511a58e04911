//! The stop's fault cases on the simulated SGLang and TensorRT-LLM, each engine the same way:
//! Ctrl-C in the middle of the load (exit 130), SIGKILL of inferlint (the shepherd ends the
//! tree) and an orphaned worker that ignores SIGTERM in a session of its own (found outside the
//! server's process group and killed). Every case leaves 0 processes of the server — SGLang's
//! schedulers and detokenizer, TensorRT-LLM's `prte` and MPI ranks — while same-user processes
//! titled like other engines' live on (docs/design/processes.md#finding-server-processes).

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use super::turn;
use crate::run_support::{json_file, run_with_limit, status_of, text, World};

/// An engine the simulator speaks besides vLLM, as its fault tests need it.
#[derive(Clone, Copy, Debug)]
pub(super) enum Sim {
    Sglang,
    Trtllm,
}

impl Sim {
    /// The `--serve` command of the simulated server, with `extra` flags.
    pub(super) fn serve(self, w: &World, extra: &str) -> String {
        match self {
            Sim::Sglang => w.sim_serve(
                "0.3",
                &format!("--engine sglang --enable-metrics --tokens-per-s 100 {extra}"),
            ),
            Sim::Trtllm => super::trtllm::serve(
                w,
                super::trtllm::ITERATION_STATS,
                &format!("--tokens-per-s 100 {extra}"),
            ),
        }
    }

    /// A word of the command line of the engine's workers (its schedulers, its MPI ranks).
    fn worker(self) -> &'static str {
        match self {
            Sim::Sglang => "sglang::scheduler",
            Sim::Trtllm => "mpi4py.futures.server",
        }
    }
}

pub(super) fn command(w: &World, serve: &str, args: &[&str], load: &str) -> Command {
    let mut all: Vec<String> = vec!["--serve".into(), serve.into()];
    all.extend(args.iter().map(|s| s.to_string()));
    w.run_command(&all, &w.sim_bench(load))
}

/// Same-user processes that look like the engines' own (and an MPI server under no server).
pub(super) fn bystanders() -> Vec<Child> {
    [
        "exec -a sglang::scheduler_TP0 sleep 120",
        "exec -a 'vllm serve other-model' sleep 120",
        "exec -a 'python3 -R -m mpi4py.futures.server' sleep 120",
    ]
    .iter()
    .map(|c| {
        Command::new("bash")
            .args(["-c", c])
            .env_remove("INFERLINT_GPU")
            .spawn()
            .unwrap()
    })
    .collect()
}

pub(super) fn assert_bystanders_live(mut v: Vec<Child>) {
    for c in &mut v {
        assert!(
            c.try_wait().unwrap().is_none(),
            "a bystander was killed: {}",
            c.id()
        );
        let _ = c.kill();
        let _ = c.wait();
    }
}

pub(super) fn assert_nothing_left(w: &World) {
    let deadline = Instant::now() + Duration::from_secs(15);
    while !w.live_processes().is_empty() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(100));
    }
    assert!(
        w.live_processes().is_empty(),
        "left behind: {:?}",
        w.live_processes()
    );
}

/// Starts a long run and returns once its load has begun and the engine's workers are up.
fn start_and_wait_for_load(w: &World, sim: Sim, args: &[&str]) -> Child {
    let load = "--max-concurrency 4 --num-prompts 400 --random-input-len 32 --random-output-len 400 --ignore-eos";
    let mut cmd = command(w, &sim.serve(w, ""), args, load);
    cmd.stdout(Stdio::piped())
        .stderr(Stdio::null())
        .stdin(Stdio::null());
    let mut child = cmd.spawn().unwrap();
    let mut reader = BufReader::new(child.stdout.take().unwrap());
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut seen = Vec::new();
    loop {
        let mut l = String::new();
        if reader.read_line(&mut l).unwrap() == 0 || Instant::now() > deadline {
            break;
        }
        seen.push(l.clone());
        if l.starts_with("== load:") {
            break;
        }
    }
    assert!(seen.iter().any(|l| l.starts_with("== load:")), "{seen:?}");
    std::thread::spawn(move || {
        let mut sink = String::new();
        while reader.read_line(&mut sink).unwrap_or(0) > 0 {
            sink.clear();
        }
    });
    std::thread::sleep(Duration::from_millis(1500));
    assert!(
        w.live_processes()
            .iter()
            .any(|(_, c)| c.contains(sim.worker())),
        "{sim:?}: no {} while the load runs: {:?}",
        sim.worker(),
        w.live_processes()
    );
    child
}

fn ctrl_c_mid_load(sim: Sim) {
    let _t = turn();
    let w = World::new();
    let others = bystanders();
    let mut child = start_and_wait_for_load(&w, sim, &[]);
    unsafe {
        libc::kill(child.id() as i32, libc::SIGINT);
    }
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(130), "{sim:?}");
    let run = json_file(&w.out().join("run.json"));
    assert_eq!(run["exit_reason"], "interrupted", "{sim:?}");
    assert_nothing_left(&w);
    assert_bystanders_live(others);
}

fn sigkill_of_inferlint(sim: Sim) {
    let _t = turn();
    let w = World::new();
    let others = bystanders();
    let mut child = start_and_wait_for_load(&w, sim, &["--stop-grace", "5"]);
    unsafe {
        libc::kill(child.id() as i32, libc::SIGKILL);
    }
    let _ = child.wait();
    assert_nothing_left(&w);
    assert_bystanders_live(others);
}

fn an_orphaned_worker(sim: Sim) {
    let _t = turn();
    let w = World::new();
    let others = bystanders();
    let serve = sim.serve(
        &w,
        "--orphan-engine --escape setsid --engine-ignores-sigterm",
    );
    let load = "--num-prompts 4 --max-concurrency 2 --random-output-len 8";
    let out = run_with_limit(
        command(&w, &serve, &["--stop-grace", "2"], load),
        Duration::from_secs(150),
    );
    let stdout = format!("{}\n{}", text(&out.stdout), text(&out.stderr));
    let results = json_file(&w.out().join("results.json"));
    assert!(
        stdout.contains("outside the server's process group"),
        "{sim:?}: {stdout}"
    );
    assert!(stdout.contains(sim.worker()), "{sim:?}: {stdout}");
    assert_eq!(
        status_of(&results, "T2").as_deref(),
        Some("pass"),
        "{sim:?}: {results}"
    );
    assert_nothing_left(&w);
    assert_bystanders_live(others);
}

#[test]
fn ctrl_c_mid_load_stops_every_sglang_process() {
    ctrl_c_mid_load(Sim::Sglang);
}

#[test]
fn ctrl_c_mid_load_stops_every_trtllm_rank() {
    ctrl_c_mid_load(Sim::Trtllm);
}

#[test]
fn sigkill_of_inferlint_leaves_no_sglang_process() {
    sigkill_of_inferlint(Sim::Sglang);
}

#[test]
fn sigkill_of_inferlint_leaves_no_trtllm_rank() {
    sigkill_of_inferlint(Sim::Trtllm);
}

#[test]
fn an_orphaned_sglang_scheduler_is_found_and_killed() {
    an_orphaned_worker(Sim::Sglang);
}

#[test]
fn an_orphaned_trtllm_rank_is_found_and_killed() {
    an_orphaned_worker(Sim::Trtllm);
}
