//! The product's own shepherd (`inferlint shepherd`) driven through the supervisor crate's API,
//! as `inferlint run` drives it: output lines, exit notification, graceful and forced stops,
//! a server whose engine outlives it, a SIGKILLed shepherd, and `inferlint reap`.

use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use inferlint_supervisor::{
    CgroupMode, ExitKind, Graces, ProcId, ProcScanner, ShepherdProgram, SpawnOptions, StopMode,
    Supervised,
};

#[path = "supervision_shepherd/node_agent.rs"]
mod node_agent;

const BIN: &str = env!("CARGO_BIN_EXE_inferlint");

fn graces() -> Graces {
    Graces {
        leader: Duration::from_millis(400),
        after_leader: Duration::from_millis(100),
        group: Duration::from_millis(300),
        force: Duration::from_secs(2),
    }
}

fn opts(script: &str) -> SpawnOptions {
    let mut o = SpawnOptions::new(
        ShepherdProgram {
            program: BIN.into(),
            args: vec!["shepherd".into()],
        },
        vec!["bash".into(), "-c".into(), script.into()],
        inferlint_host::names::names(),
    );
    o.graces = graces();
    o.cgroup = CgroupMode::Off;
    o
}

/// Kills by identity whatever a failed test left.
struct Reaper(Vec<ProcId>);
impl Drop for Reaper {
    fn drop(&mut self) {
        let scan = ProcScanner::system();
        for id in &self.0 {
            if let Some(t) = inferlint_supervisor::Tracked::open(&scan, *id) {
                t.signal(&scan, nix::sys::signal::Signal::SIGKILL);
            }
        }
    }
}

fn wait_gone(ids: &[ProcId], limit: Duration) -> bool {
    let scan = ProcScanner::system();
    let t0 = Instant::now();
    while t0.elapsed() < limit {
        if ids.iter().all(|i| !scan.is_alive(*i)) {
            return true;
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    false
}

/// Pids a script printed as `pid N` lines.
fn read_pids(lines: &mut inferlint_supervisor::LineReceiver, n: usize) -> Vec<ProcId> {
    read_pids_and_lines(lines, n).0
}

/// As [`read_pids`], keeping the other lines read meanwhile.
fn read_pids_and_lines(
    lines: &mut inferlint_supervisor::LineReceiver,
    n: usize,
) -> (Vec<ProcId>, Vec<inferlint_supervisor::OutputLine>) {
    let scan = ProcScanner::system();
    let mut others = Vec::new();
    let mut out = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(10);
    while out.len() < n && Instant::now() < deadline {
        match lines.try_recv() {
            Some(l) => match l.text.strip_prefix("pid ") {
                Some(p) => {
                    if let Some(id) = p.trim().parse().ok().and_then(|p| scan.id_of(p)) {
                        out.push(id);
                    }
                }
                None => others.push(l),
            },
            None => std::thread::sleep(Duration::from_millis(2)),
        }
    }
    assert_eq!(out.len(), n, "the script did not print its pids");
    (out, others)
}

#[test]
fn a_cooperative_tree_stops_gracefully_and_its_output_arrives() {
    let dir = tempfile::tempdir().unwrap();
    let mut o = opts(
        "trap 'kill $c; wait $c; exit 0' TERM; sleep 60 & c=$!; echo pid $$; echo pid $c; \
         printf ' 10%%|#\\r 50%%|##\\r100%%|###\\n'; echo to-stderr >&2; wait",
    );
    o.raw_output = Some(dir.path().join("boot.log"));
    let mut s = Supervised::spawn(o).unwrap();
    let mut lines = s.take_lines().unwrap();
    let (ids, early) = read_pids_and_lines(&mut lines, 2);
    let _reaper = Reaper(ids.clone());
    assert_eq!(ids[0].pid, s.leader_pid());
    let mut got: Vec<_> = early.into_iter().map(|l| (l.stream, l.text)).collect();
    let deadline = Instant::now() + Duration::from_secs(5);
    while got.len() < 4 && Instant::now() < deadline {
        match lines.try_recv() {
            Some(l) => got.push((l.stream, l.text)),
            None => std::thread::sleep(Duration::from_millis(2)),
        }
    }
    use inferlint_supervisor::Stream;
    assert!(
        got.contains(&(Stream::Stdout, " 10%|#".to_string())),
        "{got:?}"
    );
    assert!(
        got.contains(&(Stream::Stdout, "100%|###".to_string())),
        "{got:?}"
    );
    assert!(
        got.contains(&(Stream::Stderr, "to-stderr".to_string())),
        "{got:?}"
    );
    let report = s.teardown(StopMode::Graceful);
    assert!(report.is_clean(), "{report:?}");
    assert_eq!(report.actor, "shepherd");
    assert_eq!(report.pipes_at_eof, Some(true));
    assert_eq!(
        report.signalled,
        vec![ids[0].pid],
        "only the leader needed a signal"
    );
    assert!(wait_gone(&ids, Duration::from_secs(1)));
    let raw = std::fs::read_to_string(dir.path().join("boot.log")).unwrap();
    assert!(
        raw.contains("to-stderr") && raw.contains("\r 50%|##\r"),
        "{raw:?}"
    );
}

#[test]
fn force_escalates_a_stop_that_sigterm_cannot_finish() {
    let mut s = Supervised::spawn(opts(
        "trap '' TERM; sleep 60 & echo pid $$; echo pid $!; while :; do sleep 1; done",
    ))
    .unwrap();
    let mut lines = s.take_lines().unwrap();
    let ids = read_pids(&mut lines, 2);
    let _reaper = Reaper(ids.clone());
    let mut slow = graces();
    slow.leader = Duration::from_secs(20);
    s.stop_with(StopMode::Graceful, slow);
    std::thread::sleep(Duration::from_millis(100));
    let t0 = Instant::now();
    s.stop(StopMode::Force);
    let report = s.wait_done(Duration::from_secs(5)).expect("done");
    assert!(t0.elapsed() < Duration::from_secs(2), "{:?}", t0.elapsed());
    assert!(report.escalated, "{report:?}");
    assert!(report.leftovers.is_empty());
    assert!(wait_gone(&ids, Duration::from_secs(1)));
}

#[test]
fn an_engine_outliving_its_server_is_stopped_when_the_server_exits() {
    let mut s = Supervised::spawn(opts(
        "bash -c 'exec -a VLLM::EngineCore sleep 60' & echo pid $!; echo pid $$; sleep 0.3; exit 3",
    ))
    .unwrap();
    let mut lines = s.take_lines().unwrap();
    let ids = read_pids(&mut lines, 2);
    let _reaper = Reaper(ids.clone());
    assert_eq!(s.wait_exit(Duration::from_secs(5)), Some(ExitKind::Code(3)));
    let report = s
        .wait_done(Duration::from_secs(5))
        .expect("the shepherd tore down");
    assert_eq!(report.leader_exit, Some(ExitKind::Code(3)));
    assert!(report.signalled.contains(&ids[0].pid), "{report:?}");
    assert!(report.leftovers.is_empty());
    assert!(wait_gone(&ids, Duration::from_secs(1)));
}

#[test]
fn a_killed_shepherd_leaves_the_teardown_to_the_supervisor() {
    // (This process is no subreaper: the tree is found by group, session, pidfd and marker.
    // Adoption by a subreaper supervisor is tested in the supervisor crate.)
    let mut s = Supervised::spawn(opts(
        "trap '' TERM; bash -c 'trap \"\" TERM; exec -a VLLM::EngineCore sleep 60' & echo pid $$; echo pid $!; \
         while :; do sleep 1; done",
    ))
    .unwrap();
    let mut lines = s.take_lines().unwrap();
    let ids = read_pids(&mut lines, 2);
    let _reaper = Reaper(ids.clone());
    inferlint_supervisor::sys::kill(s.shepherd_pid(), nix::sys::signal::Signal::SIGKILL).unwrap();
    let report = s
        .wait_done(Duration::from_secs(8))
        .expect("fallback teardown");
    assert_eq!(report.actor, "supervisor (shepherd gone)");
    assert!(report.leftovers.is_empty(), "{report:?}");
    assert!(wait_gone(&ids, Duration::from_secs(1)));
}

#[test]
fn a_command_that_cannot_start_is_an_error() {
    let mut o = opts("");
    o.command = vec!["/nonexistent/vllm".into(), "serve".into()];
    let err = Supervised::spawn(o).unwrap_err();
    assert!(
        err.to_string().contains("cannot start /nonexistent/vllm"),
        "{err}"
    );
}

/// Stale runs are global to the user: the tests that make or reap them take turns.
/// An earlier run whose owners are both dead: a shepherd owned by a process that cannot exist,
/// killed after its server (a renamed `VLLM::EngineCore` that ignores SIGTERM) started.
/// The listing of a stale run of one engine process, as `reap` and `run` print it.
fn assert_lists_the_stale_engine(out: &str, run_id: &str, engine: ProcId) {
    assert!(
        out.contains(&format!(
            "stale run {run_id} (its owners are gone): 1 process"
        )),
        "{out}"
    );
    assert!(
        out.contains(&format!("  pid={:<8} VLLM::EngineCore", engine.pid)),
        "{out}"
    );
}

fn stale_run(run_id: &str) -> (ProcId, Reaper) {
    let mut shep = Command::new(BIN)
        .args([
            "shepherd",
            "--run-id",
            run_id,
            "--owner",
            "999999:1",
            "--cgroup",
            "off",
            "--grace-ms",
            "300,100,300,2000",
            "--",
            "bash",
            "-c",
            "trap '' TERM; exec -a VLLM::EngineCore sleep 60",
        ])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .process_group(0)
        .spawn()
        .unwrap();
    let scan = ProcScanner::system();
    let deadline = Instant::now() + Duration::from_secs(5);
    let engine = loop {
        // Marked, and past its `trap '' TERM` (it has exec'd under its new name).
        let found = scan.pids().into_iter().find(|&p| {
            scan.environ_var(p, inferlint_host::names::RUN_ID_ENV)
                .as_deref()
                == Some(run_id)
                && scan
                    .read(p)
                    .is_some_and(|i| i.argv.first().is_some_and(|a| a == "VLLM::EngineCore"))
        });
        if let Some(p) = found {
            if let Some(id) = scan.id_of(p) {
                break id;
            }
        }
        assert!(
            Instant::now() < deadline,
            "the marked process never appeared"
        );
        std::thread::sleep(Duration::from_millis(5));
    };
    // Both owners gone: the supervisor never existed, the shepherd is killed.
    shep.kill().unwrap();
    shep.wait().unwrap();
    std::thread::sleep(Duration::from_millis(100));
    assert!(scan.is_alive(engine), "it ignores the parent-death SIGTERM");
    (engine, Reaper(vec![engine]))
}

#[test]
fn reap_tears_down_a_run_whose_owners_are_dead() {
    let _turn = crate::serial::turn("stale-runs");
    let run_id = format!("reaptest-{}", std::process::id());
    let (engine, _reaper) = stale_run(&run_id);
    let scan = ProcScanner::system();

    let dry = Command::new(BIN)
        .args(["reap", "--run-id", &run_id, "--dry-run"])
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&dry.stdout);
    assert_eq!(dry.status.code(), Some(0), "{out}");
    assert_lists_the_stale_engine(&out, &run_id, engine);
    assert!(scan.is_alive(engine));

    let real = Command::new(BIN)
        .args(["reap", "--run-id", &run_id, "--grace", "0.2"])
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&real.stdout);
    assert_eq!(real.status.code(), Some(0), "{out}");
    assert!(out.contains("reaped 1 process of 1 earlier run"), "{out}");
    assert!(wait_gone(&[engine], Duration::from_secs(2)));

    let again = Command::new(BIN)
        .args(["reap", "--run-id", &run_id])
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&again.stdout),
        "nothing left behind by earlier runs\n"
    );
}

#[test]
fn every_run_first_reaps_what_earlier_runs_left() {
    let _turn = crate::serial::turn("stale-runs");
    let run_id = format!("runreap-{}", std::process::id());
    let (engine, _reaper) = stale_run(&run_id);
    let dir = tempfile::tempdir().unwrap();
    // The server exits at once: only what `run` does before it matters here.
    let out = Command::new(BIN)
        .args(["run", "--no-gpu-check", "--serve", "sh -c 'exit 3'", "-o"])
        .arg(dir.path().join("run"))
        .args(["--", "true"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let lines: Vec<&str> = stdout.lines().collect();
    let header = lines
        .iter()
        .position(|l| *l == "== earlier runs left processes behind")
        .unwrap_or_else(|| panic!("no reconciliation:\n{stdout}"));
    let start = lines
        .iter()
        .position(|l| l.starts_with("== start the server"))
        .unwrap_or_else(|| panic!("no start:\n{stdout}"));
    assert!(header < start, "reaped before the server starts:\n{stdout}");
    assert_lists_the_stale_engine(&stdout, &run_id, engine);
    assert!(
        stdout.contains("reaped 1 process of 1 earlier run"),
        "{stdout}"
    );
    assert!(wait_gone(&[engine], Duration::from_secs(2)));
}
