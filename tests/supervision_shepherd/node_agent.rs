//! The node agent (`inferlint node -- CMD`, docs/design/nodes.md) on a tree shaped like one
//! node's part of a multi-node vLLM: a worker retitled `VLLM::Worker_DP1` and an API server
//! that left the process group (`setpgrp`, as vLLM's dp_supervisor does for `APIServer_DP<n>`).
//! Each way the agent's run can end — a stop command, stdin closed, stdout lost, the agent
//! SIGKILLed — leaves none of the tree alive, and a bystander titled `vllm serve m`, started by
//! the test, survives every one.

use std::io::{BufRead, BufReader, Write};
use std::os::unix::process::CommandExt;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use inferlint_supervisor::node_protocol::NodeEvent;
use inferlint_supervisor::{ProcId, ProcScanner};
use nix::sys::signal::Signal;

use super::{wait_gone, Reaper, BIN};

/// Three members: the worker, the escapee and the leader's own `wait`.
const TREE: &str = "exec -a VLLM::Worker_DP1 sleep 300 & echo pid $!; \
     perl -e 'setpgrp; exec {\"sleep\"} \"VLLM::APIServer_DP1\", 300' & echo pid $!; \
     echo pid $$; wait";

static NEXT: AtomicUsize = AtomicUsize::new(0);

/// A bystander with a server's command line, not started by the agent.
struct Bystander(Child, ProcId);

impl Bystander {
    fn start() -> Bystander {
        let child = Command::new("bash")
            .args(["-c", "exec -a 'vllm serve m' sleep 300"])
            .process_group(0)
            .spawn()
            .unwrap();
        let scan = ProcScanner::system();
        let id = scan.id_of(child.id() as i32).unwrap();
        Bystander(child, id)
    }

    fn assert_alive(&self) {
        assert!(
            ProcScanner::system().is_alive(self.1),
            "the bystander was hit"
        );
    }
}

impl Drop for Bystander {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A running agent and its events as they arrive.
struct Agent {
    run_id: String,
    child: Child,
    stdin: Option<ChildStdin>,
    events: mpsc::Receiver<(Instant, NodeEvent)>,
    seen: Vec<NodeEvent>,
    started_at: Instant,
}

impl Agent {
    fn start(cgroup: &str, script: &str) -> Agent {
        let started_at = Instant::now();
        // One marker per agent: a teardown ends every process that carries its marker.
        let run_id = format!("agent-{}-{}", std::process::id(), NEXT.fetch_add(1, SeqCst));
        let mut child = Command::new(BIN)
            .args(["node", "--run-id", &run_id])
            .args(["--grace-ms", "400,100,300,2000", "--cgroup", cgroup, "--"])
            .args(["bash", "-c", script])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap();
        let out = child.stdout.take().unwrap();
        let (tx, events) = mpsc::channel();
        std::thread::spawn(move || {
            for l in BufReader::new(out).lines().map_while(Result::ok) {
                let ev = NodeEvent::parse(&l).unwrap_or_else(|| panic!("not an event: {l}"));
                if tx.send((Instant::now(), ev)).is_err() {
                    return;
                }
            }
        });
        Agent {
            run_id,
            stdin: child.stdin.take(),
            child,
            events,
            seen: Vec::new(),
            started_at,
        }
    }

    /// The next event that `want` accepts (the others are kept in `seen`), and when it came.
    fn wait_for(&mut self, what: &str, want: impl Fn(&NodeEvent) -> bool) -> (Instant, NodeEvent) {
        let deadline = Instant::now() + Duration::from_secs(15);
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let (at, ev) = self
                .events
                .recv_timeout(left)
                .unwrap_or_else(|_| panic!("no {what} event; saw {:?}", self.seen));
            self.seen.push(ev.clone());
            if want(&ev) {
                return (at, ev);
            }
        }
    }

    /// The three pids the tree prints, worker first; the `started` event is checked on the way.
    fn tree(&mut self) -> Vec<ProcId> {
        let (at, ev) = self.wait_for("started", |e| matches!(e, NodeEvent::Started { .. }));
        let NodeEvent::Started { run_id, pid, .. } = ev else {
            unreachable!()
        };
        assert_eq!(run_id, self.run_id);
        assert_eq!(pid, self.child.id() as i32);
        eprintln!(
            "agent: start to the started event {} ms",
            (at - self.started_at).as_millis()
        );
        let scan = ProcScanner::system();
        let mut ids = Vec::new();
        while ids.len() < 3 {
            let (_, ev) = self.wait_for("output", |e| matches!(e, NodeEvent::Output { .. }));
            if let NodeEvent::Output { line, .. } = ev {
                if let Some(p) = line.strip_prefix("pid ") {
                    ids.push(scan.id_of(p.trim().parse().unwrap()).unwrap());
                }
            }
        }
        ids
    }

    fn send(&mut self, line: &str) {
        let stdin = self.stdin.as_mut().unwrap();
        stdin.write_all(line.as_bytes()).unwrap();
        stdin.write_all(b"\n").unwrap();
    }

    /// Waits for the teardown and done events: what was left, and the exit code `done` gave.
    fn finish(&mut self, since: Instant) -> (usize, i32) {
        let (_, ev) = self.wait_for("teardown", |e| matches!(e, NodeEvent::Teardown { .. }));
        let NodeEvent::Teardown { left, .. } = ev else {
            unreachable!()
        };
        let (at, ev) = self.wait_for("done", |e| matches!(e, NodeEvent::Done { .. }));
        let NodeEvent::Done { exit_code } = ev else {
            unreachable!()
        };
        eprintln!(
            "agent: stop to the done event {} ms",
            (at - since).as_millis()
        );
        let status = self.child.wait().unwrap();
        assert_eq!(status.code(), Some(exit_code), "exit status = done's code");
        (left, exit_code)
    }
}

impl Drop for Agent {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn member_exits(seen: &[NodeEvent]) -> Vec<(String, Option<String>)> {
    seen.iter()
        .filter_map(|e| match e {
            NodeEvent::MemberExited { title, signal, .. } => Some((title.clone(), signal.clone())),
            _ => None,
        })
        .collect()
}

#[test]
fn a_killed_worker_is_an_event_and_a_stop_ends_the_tree() {
    let by = Bystander::start();
    let mut agent = Agent::start("auto", TREE);
    let ids = agent.tree();
    let _reaper = Reaper(ids.clone());
    // The shepherd watches members it has seen in a census (every 100 ms while the tree is
    // young); a member dead before the first one is never seen.
    std::thread::sleep(Duration::from_millis(300));
    inferlint_supervisor::sys::kill(ids[0].pid, Signal::SIGKILL).unwrap();
    let (_, ev) = agent.wait_for("member_exited", |e| {
        matches!(e, NodeEvent::MemberExited { .. })
    });
    let NodeEvent::MemberExited {
        title,
        signal,
        exit,
        ..
    } = ev
    else {
        unreachable!()
    };
    assert_eq!(
        (title.as_str(), signal.as_deref(), exit.pid),
        ("VLLM::Worker_DP1", Some("SIGKILL"), ids[0].pid),
        "{ids:?} {:?}",
        agent.seen
    );
    let t0 = Instant::now();
    agent.send(r#"{"stop":"graceful"}"#);
    assert_eq!(agent.finish(t0), (0, 0));
    assert!(wait_gone(&ids, Duration::from_secs(2)), "the tree is gone");
    // The teardown's own kills are not deaths.
    assert_eq!(
        member_exits(&agent.seen),
        vec![("VLLM::Worker_DP1".to_string(), Some("SIGKILL".to_string()))]
    );
    by.assert_alive();
}

#[test]
fn stdin_closed_ends_the_tree_escapee_included() {
    let by = Bystander::start();
    // The process-group backend: the escapee is found by the marker it still carries.
    let mut agent = Agent::start("off", TREE);
    let ids = agent.tree();
    let _reaper = Reaper(ids.clone());
    let t0 = Instant::now();
    drop(agent.stdin.take());
    assert_eq!(agent.finish(t0), (0, 0));
    assert!(wait_gone(&ids, Duration::from_secs(2)), "the tree is gone");
    by.assert_alive();
}

#[test]
fn a_lost_stdout_ends_the_tree() {
    let by = Bystander::start();
    // The ticks make the agent write; once the reader is gone, the next write fails.
    let mut agent = Agent::start(
        "auto",
        &format!("(while :; do echo tick; sleep 0.1; done) & {TREE}"),
    );
    let ids = agent.tree();
    let _reaper = Reaper(ids.clone());
    // The reader goes away (the head's end of the stream): its thread ends at the next line
    // and closes the pipe.
    let (_, rx) = mpsc::channel();
    drop(std::mem::replace(&mut agent.events, rx));
    let status = wait_exit(&mut agent.child, Duration::from_secs(15));
    assert!(status.is_some(), "the agent ends");
    assert!(wait_gone(&ids, Duration::from_secs(2)), "the tree is gone");
    by.assert_alive();
}

#[test]
fn a_sigkilled_agent_leaves_the_teardown_to_its_shepherd() {
    let by = Bystander::start();
    let mut agent = Agent::start("off", TREE);
    let ids = agent.tree();
    let _reaper = Reaper(ids.clone());
    agent.child.kill().unwrap();
    let _ = agent.child.wait();
    // The shepherd's graceful teardown (graces 400 + 300 ms, then force).
    assert!(
        wait_gone(&ids, Duration::from_secs(5)),
        "the shepherd ends the tree"
    );
    by.assert_alive();
}

#[test]
fn a_force_command_and_a_command_that_cannot_start() {
    let by = Bystander::start();
    // A tree that ignores SIGTERM: only the force stage ends it.
    let mut agent = Agent::start("auto", &format!("trap '' TERM; {TREE}"));
    let ids = agent.tree();
    let _reaper = Reaper(ids.clone());
    let t0 = Instant::now();
    agent.send(r#"{"stop":"force"}"#);
    assert_eq!(agent.finish(t0), (0, 0));
    assert!(
        t0.elapsed() < Duration::from_millis(700),
        "no graces waited"
    );
    assert!(wait_gone(&ids, Duration::from_secs(2)));
    by.assert_alive();

    let out = Command::new(BIN)
        .args(["node", "--", "/nonexistent/program"])
        .stdin(Stdio::piped())
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(2), "{text}");
    let events: Vec<NodeEvent> = text.lines().filter_map(NodeEvent::parse).collect();
    assert!(
        matches!(events.first(), Some(NodeEvent::Failed { .. })),
        "{text}"
    );
    assert_eq!(events.last(), Some(&NodeEvent::Done { exit_code: 2 }));
}

fn wait_exit(child: &mut Child, limit: Duration) -> Option<std::process::ExitStatus> {
    let t0 = Instant::now();
    while t0.elapsed() < limit {
        if let Ok(Some(s)) = child.try_wait() {
            return Some(s);
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    None
}
