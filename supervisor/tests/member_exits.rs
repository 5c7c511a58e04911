//! Every death in the tree is an event: a member killed from outside, one that exits by itself
//! and the leader itself are each reported once, with how they ended and their title, before
//! any teardown; a tree where nothing dies reports nothing (docs/supervision.md).

mod harness;

use std::ffi::OsString;
use std::time::{Duration, Instant};

use harness::{names, read_records, send, Recorded};
use inferlint_supervisor::{
    ExitKind, Graces, MemberExit, ShepherdProgram, SpawnOptions, StopMode, Supervised,
};
use nix::sys::signal::Signal;

fn quick() -> Graces {
    Graces {
        leader: Duration::from_millis(300),
        after_leader: Duration::from_millis(100),
        group: Duration::from_millis(300),
        force: Duration::from_secs(2),
    }
}

/// The `renamed` tree (leader → `VLLM::EngineCore` → `VLLM::Worker_TP0`, `_TP1`) under a
/// shepherd, once every process has recorded itself and a census has seen them all.
fn start(dir: &std::path::Path) -> (Supervised, Vec<Recorded>) {
    let record = dir.join("record");
    let mut opts = SpawnOptions::new(
        ShepherdProgram {
            program: env!("CARGO_BIN_EXE_inferlint-test-shepherd").into(),
            args: Vec::new(),
        },
        [
            env!("CARGO_BIN_EXE_inferlint-test-tree"),
            "--shape",
            "renamed",
            "--record",
        ]
        .iter()
        .map(OsString::from)
        .chain([record.clone().into_os_string()])
        .collect(),
        names(),
    );
    opts.graces = quick();
    opts.shepherd_log = Some(dir.join("shepherd.log"));
    let sup = Supervised::spawn(opts).expect("the tree starts");
    let deadline = Instant::now() + Duration::from_secs(10);
    while read_records(&record).len() < 4 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    let recs = read_records(&record);
    assert_eq!(recs.len(), 4, "the tree did not start");
    // Two censuses (500 ms apart) and the worker's retitle: every member is watched.
    std::thread::sleep(Duration::from_millis(1200));
    (sup, recs)
}

fn pid(recs: &[Recorded], role: &str) -> i32 {
    recs.iter().find(|r| r.role == role).unwrap().id.pid
}

/// Waits for `n` reported exits in all.
fn exits(sup: &Supervised, n: usize, limit: Duration) -> Vec<MemberExit> {
    let deadline = Instant::now() + limit;
    loop {
        let e = sup.member_exits();
        if e.len() >= n || Instant::now() >= deadline {
            return e;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

fn unix_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64
}

/// Seen through the pidfd in the shepherd's poll set, not at its next census (every 500 ms once
/// the tree is 10 s old):
/// two deaths both within 150 ms of their signal would be a 9 % chance for a census alone.
fn assert_noticed_at_once(e: &MemberExit, signalled_ms: u64) {
    let lag = e.at_unix_ms.saturating_sub(signalled_ms);
    println!("{} noticed {lag} ms after its signal", e.name());
    assert!(lag < 150, "{} noticed {lag} ms after its signal", e.name());
}

#[test]
fn deaths_are_reported_promptly_with_how_and_who() {
    let dir = tempfile::tempdir().unwrap();
    let (mut sup, recs) = start(dir.path());
    // Past the young tree's 100 ms censuses: from here one comes every 500 ms.
    std::thread::sleep(Duration::from_millis(9500));
    let mut rx = sup.take_member_exits().expect("the receiver, once");
    assert!(sup.take_member_exits().is_none());
    assert!(sup.member_exits().is_empty(), "nothing died yet");

    // The engine, killed from outside; it stays a zombie (its parent never waits for it).
    let engine = pid(&recs, "engine");
    let killed = unix_ms();
    send(engine, Signal::SIGKILL);
    let got = exits(&sup, 1, Duration::from_secs(3));
    assert_eq!(got.len(), 1, "{got:?}");
    let e = &got[0];
    assert_eq!(e.pid, engine);
    assert_eq!(e.name(), "VLLM::EngineCore");
    assert_eq!(e.status, Some(ExitKind::Signal(Signal::SIGKILL)));
    assert!(!e.leader && !e.oom_kill);
    assert!(
        e.parent
            .as_deref()
            .is_some_and(|p| p.ends_with("inferlint-test-tree")),
        "{e:?}"
    );
    assert!(!e.named_as_its_parent());
    assert_noticed_at_once(e, killed);
    assert_eq!(rx.try_recv().ok().as_ref(), Some(e));

    // A worker ending by itself: its exit code (0 on SIGTERM).
    let tp1 = pid(&recs, "tp1");
    let killed = unix_ms();
    send(tp1, Signal::SIGTERM);
    let got = exits(&sup, 2, Duration::from_secs(3));
    assert_eq!(got.len(), 2, "{got:?}");
    assert_eq!(got[1].pid, tp1);
    assert_eq!(got[1].name(), "VLLM::Worker_TP1");
    assert_eq!(got[1].status, Some(ExitKind::Code(0)));
    // Its parent, the engine, ended before it: named as it was last seen.
    assert_eq!(got[1].parent.as_deref(), Some("VLLM::EngineCore"));
    assert!(!got[1].named_as_its_parent());
    assert_noticed_at_once(&got[1], killed);

    // The leader: reported as a member too, before its exit.
    let leader = pid(&recs, "leader");
    send(leader, Signal::SIGKILL);
    let status = sup.wait_exit(Duration::from_secs(3));
    assert_eq!(status, Some(ExitKind::Signal(Signal::SIGKILL)));
    let got = sup.member_exits();
    let l = got.iter().find(|e| e.pid == leader).expect("the leader");
    assert!(l.leader);
    assert_eq!(l.status, Some(ExitKind::Signal(Signal::SIGKILL)));
    assert!(l.name().ends_with("inferlint-test-tree"), "{l:?}");

    // The teardown's own kills are no deaths: tp0 is stopped by it, and not reported.
    let report = sup.teardown(StopMode::Graceful);
    assert!(report.is_clean(), "{report:?}");
    let after = sup.member_exits();
    assert_eq!(after.len(), 3, "{after:?}");
    assert!(after.iter().all(|e| e.pid != pid(&recs, "tp0")));
}

#[test]
fn a_tree_where_nothing_dies_reports_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let (mut sup, _recs) = start(dir.path());
    std::thread::sleep(Duration::from_millis(600));
    let report = sup.teardown(StopMode::Graceful);
    assert!(report.is_clean(), "{report:?}");
    assert!(sup.member_exits().is_empty(), "{:?}", sup.member_exits());
}

/// A fork of a titled process carries its title until it execs (setproctitle's title lives in
/// the process's memory): its exit names the parent it copies, which a plain child's does not.
#[test]
fn a_fork_is_reported_under_its_parents_name() {
    let dir = tempfile::tempdir().unwrap();
    // `exec -a` titles the shell as vLLM titles its worker; `( … )` is a fork that runs no
    // program of its own, `sleep 1` inside it one that does.
    let script = "exec -a VLLM::Worker bash -c 'sleep 0.5; (sleep 1; exit 0); exec sleep 30'";
    let mut opts = SpawnOptions::new(
        ShepherdProgram {
            program: env!("CARGO_BIN_EXE_inferlint-test-shepherd").into(),
            args: Vec::new(),
        },
        ["bash", "-c", script].iter().map(OsString::from).collect(),
        names(),
    );
    opts.graces = quick();
    opts.shepherd_log = Some(dir.path().join("shepherd.log"));
    let mut sup = Supervised::spawn(opts).expect("the tree starts");
    let got = exits(&sup, 2, Duration::from_secs(10));
    let fork = got
        .iter()
        .find(|e| e.name() == "VLLM::Worker")
        .unwrap_or_else(|| panic!("the fork's exit: {got:?}"));
    assert_eq!(fork.status, Some(ExitKind::Code(0)));
    assert_eq!(fork.parent.as_deref(), Some("VLLM::Worker"));
    assert!(fork.named_as_its_parent());
    let sleep = got
        .iter()
        .find(|e| e.name() == "sleep")
        .unwrap_or_else(|| panic!("the sleep's exit: {got:?}"));
    assert_eq!(sleep.parent.as_deref(), Some("VLLM::Worker"));
    assert!(!sleep.named_as_its_parent());
    let report = sup.teardown(StopMode::Graceful);
    assert!(report.is_clean(), "{report:?}");
}
