//! `inferlint run` supervising a server on a REAL Ray 2.60 cluster (docs/orchestration.md#ray):
//! the `--serve` command is tests/ray/cluster.sh — a head `ray start --head`, a worker node `ray
//! start --address`, each with ports and a temp dir of its own, then tests/ray/ray_server.py as
//! the driver, with actors shaped like vLLM 0.32's Ray executor (`RayWorkerProc`, one per node,
//! and a detached actor holding a child in a session of its own) — loaded by `inferlint sim
//! bench`. However the run ends, no process of that cluster is left: no `ray start`,
//! gcs_server, raylet, dashboard, agent, worker, actor, detached actor or its child. A bystander
//! Ray cluster the test starts itself (not under the run, its own ports and temp dir) survives
//! every case; the test then stops it.
//!
//! Ray comes from .ci/ray.sh (`INFERLINT_RAY_VENV`, else the cache folder's venv). Without it
//! each test says so and passes, except under CI=true, where it fails. The cases boot a real
//! cluster each (20-80 s a case on a shared 2-core machine, the bystander ~10 s more): the
//! normal stop runs by default (45-95 s recorded), the other three are ignored; `cargo test
//! --test run_ray -- --include-ignored --test-threads=1 --nocapture` runs them all and prints
//! each case's time and leftovers.

#[path = "run_ray/cluster.rs"]
mod cluster;
mod run_support;
mod serial;

use std::process::Stdio;
use std::time::{Duration, Instant};

use cluster::{Bystander, Env};
use run_support::{json_file, World};

/// One Ray cluster at a time: two would starve each other on a small machine.
const LIMIT: Duration = Duration::from_secs(400);

/// One supervised run at a time (two cores), in this binary and beside it.
fn turn() -> crate::serial::Turn {
    crate::serial::turn("ray")
}

/// How a case ends the run.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Ending {
    /// The load ends, the run stops the server.
    Normal,
    /// SIGKILL of inferlint while the load runs (the shepherd tears down).
    KillInferlint,
    /// SIGKILL of the server process (the Ray driver) while the load runs.
    ServerDiesFirst,
}

/// One run on a Ray cluster of its own.
struct Case {
    world: World,
    ray: Env,
    mode: &'static str,
}

impl Case {
    fn new(venv: &std::path::Path, mode: &'static str) -> Case {
        Case {
            world: World::new(),
            ray: Env::new(venv),
            mode,
        }
    }

    fn serve(&self) -> String {
        format!(
            "bash {} --port {}",
            shlex::try_quote(&cluster::script().display().to_string()).unwrap(),
            self.world.port
        )
    }

    fn load(&self, prompts: u32, tokens: u32) -> Vec<String> {
        self.world.sim_bench(&format!(
            "--max-concurrency 2 --num-prompts {prompts} --random-input-len 8 \
             --random-output-len {tokens} --ignore-eos"
        ))
    }

    /// Starts the run; a thread collects its output and says when the load has begun.
    fn start(&self, load: &[String]) -> run_support::Watched {
        let args: Vec<String> = [
            "--serve",
            &self.serve(),
            "--ready-timeout",
            "240",
            "--stop-grace",
            "10",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        let mut cmd = self.world.run_command(&args, load);
        cmd.envs(self.ray.vars(self.mode))
            .stderr(Stdio::piped())
            .stdin(Stdio::null());
        run_support::spawn_watching_load(cmd)
    }

    /// The pids the server printed: its actors, the detached actor and that actor's child.
    fn printed_pids(&self) -> Vec<i32> {
        let log = std::fs::read_to_string(self.world.out().join("boot.log")).unwrap_or_default();
        let mut pids = Vec::new();
        for line in log.lines() {
            for word in line.split([' ', '(', ')']) {
                if let Some(n) = word.strip_prefix("pid=") {
                    pids.extend(n.parse::<i32>());
                }
            }
        }
        pids
    }

    /// The driver (the server process the run started): the pid it printed.
    fn driver(&self) -> i32 {
        let log = std::fs::read_to_string(self.world.out().join("boot.log")).unwrap_or_default();
        log.lines()
            .find_map(|l| l.split("(APIServer pid=").nth(1))
            .and_then(|rest| rest.split(')').next())
            .and_then(|p| p.parse().ok())
            .expect("the Ray server printed its pid")
    }
}

fn alive(pid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| !s.contains(") Z "))
}

/// What one case left and how long it took, for the report line.
struct Outcome {
    code: Option<i32>,
    secs: f64,
    stdout: String,
}

/// Runs one case to its end and checks that nothing of its cluster is left. The bystander
/// must be alive afterwards.
fn run_case(venv: &std::path::Path, mode: &'static str, ending: Ending, b: &Bystander) -> Outcome {
    let c = Case::new(venv, mode);
    let t0 = Instant::now();
    let load = match ending {
        Ending::Normal => c.load(12, 48),
        _ => c.load(2000, 64),
    };
    let (mut child, began, rest) = c.start(&load);
    let mut seen = Vec::new();
    if ending != Ending::Normal {
        if began.recv_timeout(Duration::from_secs(300)).is_err() {
            let _ = child.kill();
            let _ = child.wait();
            panic!(
                "{mode}/{ending:?}: the load did not start:\n{}",
                rest.join().unwrap()
            );
        }
        seen = c.ray.census();
        let kinds: Vec<&str> = seen.iter().map(|(_, cmd)| cluster::kind(cmd)).collect();
        for k in [
            "gcs_server",
            "raylet",
            "dashboard",
            "actor",
            "detached actor",
            "detached actor's child",
        ] {
            assert!(
                kinds.contains(&k),
                "{mode}/{ending:?}: no {k} while the load runs: {seen:?}"
            );
        }
        let target = match ending {
            Ending::KillInferlint => child.id() as i32,
            _ => c.driver(),
        };
        // SAFETY: inferlint, or the driver the run started for this test.
        unsafe {
            libc::kill(target, libc::SIGKILL);
        }
    }
    let deadline = Instant::now() + LIMIT;
    let code = loop {
        if let Some(st) = child.try_wait().unwrap() {
            break st.code();
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{mode}/{ending:?}: the run did not end in {LIMIT:?}");
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    let stdout = rest.join().unwrap();
    let mut stderr = String::new();
    if let Some(mut e) = child.stderr.take() {
        let _ = std::io::Read::read_to_string(&mut e, &mut stderr);
    }
    // After SIGKILL of inferlint the shepherd tears down alone: give it its graces.
    let left = c.ray.wait_empty(Duration::from_secs(match ending {
        Ending::KillInferlint => 60,
        _ => 3,
    }));
    let secs = t0.elapsed().as_secs_f64();
    let printed = c.printed_pids();
    let printed_alive: Vec<i32> = printed.iter().copied().filter(|p| alive(*p)).collect();
    let leftovers: Vec<String> = left
        .iter()
        .map(|(p, cmd)| {
            format!(
                "{} pid {p}: {}",
                cluster::kind(cmd),
                &cmd[..cmd.len().min(100)]
            )
        })
        .collect();
    println!(
        "ray case: mode={mode} ending={ending:?} exit={code:?} secs={secs:.1} seen={} left={} printed_alive={}",
        seen.len(),
        left.len(),
        printed_alive.len()
    );
    assert!(
        left.is_empty() && printed_alive.is_empty(),
        "{mode}/{ending:?}: left {leftovers:#?}, printed pids alive {printed_alive:?}\n{stdout}\n{stderr}"
    );
    assert!(!stderr.contains("panicked"), "{stderr}");
    b.assert_alive(&format!("{mode}/{ending:?}"));
    if ending != Ending::KillInferlint {
        let run = json_file(&c.world.out().join("run.json"));
        assert_eq!(run["state"], "finished", "{run}\n{stdout}");
    }
    Outcome { code, secs, stdout }
}

#[test]
fn a_normal_stop_leaves_no_ray_process() {
    let Some(venv) = cluster::venv() else { return };
    let _t = turn();
    let b = Bystander::start(&venv);
    let o = run_case(&venv, "block", Ending::Normal, &b);
    assert!(o.stdout.contains("== load:"), "{}", o.stdout);
    assert!(
        matches!(o.code, Some(0..=2)),
        "exit {:?}:\n{}",
        o.code,
        o.stdout
    );
    let left = b.stop();
    assert!(
        left.is_empty(),
        "the test's own bystander did not stop: {left:?}"
    );
    println!("ray: normal stop {:.1} s", o.secs);
}

#[test]
#[ignore = "boots three real Ray clusters: 69-281 s recorded on a shared 2-core machine"]
fn sigkill_daemonized_and_a_dead_server_leave_no_ray_process() {
    let Some(venv) = cluster::venv() else { return };
    let _t = turn();
    let b = Bystander::start(&venv);
    let kill = run_case(&venv, "block", Ending::KillInferlint, &b);
    assert_eq!(kill.code, None, "inferlint was SIGKILLed");
    let daemon = run_case(&venv, "daemon", Ending::Normal, &b);
    assert!(daemon.stdout.contains("== load:"), "{}", daemon.stdout);
    let dead = run_case(&venv, "block", Ending::ServerDiesFirst, &b);
    assert_eq!(
        dead.code,
        Some(1),
        "a dead server fails the run:\n{}",
        dead.stdout
    );
    let left = b.stop();
    assert!(
        left.is_empty(),
        "the test's own bystander did not stop: {left:?}"
    );
    println!(
        "ray: SIGKILL {:.1} s, daemonized {:.1} s, server dies first {:.1} s",
        kill.secs, daemon.secs, dead.secs
    );
}
