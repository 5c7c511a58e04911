//! Deaths in the server's tree (docs/supervision.md, "Every death is an event"): the shepherd
//! reports each member that ends before the stop; this module decides what such an end means
//! for an inference server, prints it at once (`! 3.2s into the load: VLLM::EngineCore (pid
//! 4711) was killed by SIGKILL`), keeps it for `run.json` and T7, and says when the server can
//! no longer serve.
//!
//! What counts:
//! * the leader (the `--serve` command) ending, however: nothing answers any more;
//! * a retitled server process (`VLLM::EngineCore`, `VLLM::Worker_TP0`, `VLLM::DPCoordinator`,
//!   `sglang::scheduler_TP0`, `ray::…`: setproctitle's `PREFIX::name`) ending, however: vLLM
//!   restarts neither engines nor workers; a dead engine fails every request with
//!   `EngineDeadError` and its API server exits (the recorded experiment in
//!   docs/supervision.md), a dead worker shuts its executor down (`Worker proc … died
//!   unexpectedly`). Either one means the server is broken;
//! * any other member killed by a signal (a crash, the OOM killer): a failure of the server's
//!   tree, though the server may still answer;
//! * not: any other member exiting with a code. Servers run short-lived helpers (a compiler for
//!   a JIT kernel, `git`, `which`) whose exit codes are their own business. A fork that still
//!   carries its parent's title is such a helper too: Python's `subprocess` forks the titled
//!   worker and only then execs `lscpu` or a compiler, so a helper that ends before the next
//!   census was only ever seen as `VLLM::Worker` (recorded on the real DP=2 vLLM, whose boot
//!   printed `VLLM::Worker (pid 194) exited with code 0` while both workers lived on).

use std::path::Path;
use std::sync::{Arc, Mutex};
use std::task::Poll;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use inferlint_supervisor::{ExitKind, MemberExit};
use tokio::sync::{mpsc, watch};

use super::live::{elapsed, Sink};

/// Where the run was when a member died: the words of its line, and its key in `run.json`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Phase {
    /// From the start until the server is ready.
    Boot,
    /// Ready, between the steps that use it.
    Ready,
    Probe,
    Load,
    AfterLoad,
}

impl Phase {
    pub fn words(self) -> &'static str {
        match self {
            Phase::Boot => "into the boot",
            Phase::Ready => "after ready",
            Phase::Probe => "into the probe",
            Phase::Load => "into the load",
            Phase::AfterLoad => "after the load",
        }
    }

    pub fn key(self) -> &'static str {
        match self {
            Phase::Boot => inferlint_core::checks::t7_deaths::BOOT_PHASE,
            Phase::Ready => "ready",
            Phase::Probe => "probe",
            Phase::Load => "load",
            Phase::AfterLoad => "after_load",
        }
    }
}

pub use inferlint_core::checks::t7_deaths::Death;

/// Whether an end matters, and if so whether the server is broken by it.
pub fn judge(exit: &MemberExit) -> Option<bool> {
    if exit.leader || (is_server_title(exit.name()) && !exit.named_as_its_parent()) {
        return Some(true);
    }
    match exit.status {
        Some(ExitKind::Signal(_) | ExitKind::OtherSignal(_)) => Some(false),
        _ if exit.oom_kill => Some(false),
        _ => None,
    }
}

/// setproctitle's `PREFIX::name` (vLLM, SGLang, Ray), not a path.
fn is_server_title(name: &str) -> bool {
    match name.split_once("::") {
        Some((prefix, rest)) => {
            !prefix.is_empty() && !rest.is_empty() && !prefix.contains('/') && !name.contains(' ')
        }
        None => false,
    }
}

/// The name a person knows the process by: its title, else its program; for an interpreter
/// the script or module it runs (`python3 /venv/bin/vllm serve` is `vllm`).
pub fn display_name(exit: &MemberExit) -> String {
    let first = exit.name();
    if is_server_title(first) {
        return first.to_string();
    }
    let base = |s: &str| {
        Path::new(s)
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| s.to_string())
    };
    let prog = base(first);
    if prog.starts_with("python") {
        match exit.argv.get(1).map(String::as_str) {
            Some("-m") => {
                if let Some(m) = exit.argv.get(2) {
                    return m.clone();
                }
            }
            Some(a) if !a.starts_with('-') => return base(a),
            _ => {}
        }
    }
    prog
}

/// `was killed by SIGKILL`, `exited with code 1`, `was killed by the OOM killer (SIGKILL)`.
pub fn how(exit: &MemberExit) -> String {
    match exit.status {
        Some(ExitKind::Code(c)) => format!("exited with code {c}"),
        Some(k) => {
            let signal = k.signal_name().unwrap_or_default();
            if exit.oom_kill {
                format!("was killed by the OOM killer ({signal})")
            } else {
                format!("was killed by {signal}")
            }
        }
        None => "exited (how, the kernel could no longer tell)".to_string(),
    }
}

/// `VLLM::EngineCore (pid 4711) was killed by SIGKILL`; the leader is `the server (vllm, pid
/// 4700) exited with code 0`.
pub fn describe(exit: &MemberExit) -> String {
    describe_on(None, exit)
}

/// As [`describe`], on a node of a run that spans nodes: `node 1: VLLM::Worker_DP1 (pid 123)
/// was killed by SIGKILL`; a node's leader is its part of the server (`node 1: the server's
/// part (vllm, pid 4700) exited with code 0`).
pub fn describe_on(node: Option<u32>, exit: &MemberExit) -> String {
    let name = display_name(exit);
    match (node, exit.leader) {
        (None, true) => format!("the server ({name}, pid {}) {}", exit.pid, how(exit)),
        (None, false) => format!("{name} (pid {}) {}", exit.pid, how(exit)),
        (Some(k), true) => format!(
            "node {k}: the server's part ({name}, pid {}) {}",
            exit.pid,
            how(exit)
        ),
        (Some(k), false) => format!("node {k}: {name} (pid {}) {}", exit.pid, how(exit)),
    }
}

struct Inner {
    rx: mpsc::UnboundedReceiver<MemberExit>,
    /// The deaths on the other nodes of a run that spans nodes, each node's own stream.
    nodes: Vec<(u32, mpsc::UnboundedReceiver<MemberExit>)>,
    /// The watching task, woken when a node's stream is added.
    waker: Option<std::task::Waker>,
    sink: Arc<dyn Sink>,
    phase: Phase,
    since: SystemTime,
    stopped: bool,
    leader_reported: bool,
    deaths: Vec<Death>,
    broken: watch::Sender<Option<String>>,
}

impl Inner {
    fn handle(&mut self, node: Option<u32>, exit: MemberExit) {
        if exit.leader && node.is_none() {
            self.leader_reported = true;
        }
        if self.stopped {
            return;
        }
        let Some(breaks) = judge(&exit) else {
            return;
        };
        let since_ms = self
            .since
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_millis() as u64)
            .unwrap_or(0);
        let at = Duration::from_millis(exit.at_unix_ms.saturating_sub(since_ms));
        let what = describe_on(node, &exit);
        let when = format!("{} {}", elapsed(at), self.phase.words());
        let line = format!("{when}: {what}");
        self.sink.alert(&line);
        let (exit_code, signal) = match exit.status {
            Some(ExitKind::Code(c)) => (Some(c), None),
            Some(k) => (None, k.signal_name()),
            None => (None, None),
        };
        let death = Death {
            node,
            pid: exit.pid,
            name: display_name(&exit),
            phase: self.phase.key(),
            at_s: (at.as_secs_f64() * 10.0).round() / 10.0,
            exit_code,
            signal,
            oom_kill: exit.oom_kill,
            leader: exit.leader,
            server_broken: breaks,
            summary: format!("{what} {when}"),
            line,
            at_unix_ms: exit.at_unix_ms,
        };
        if breaks && self.broken.borrow().is_none() {
            let _ = self.broken.send(Some(death.summary.clone()));
        }
        self.deaths.push(death);
    }

    fn drain(&mut self) {
        while let Ok(e) = self.rx.try_recv() {
            self.handle(None, e);
        }
        let mut got = Vec::new();
        for (k, rx) in &mut self.nodes {
            while let Ok(e) = rx.try_recv() {
                got.push((*k, e));
            }
        }
        got.sort_by_key(|(_, e)| e.at_unix_ms);
        for (k, e) in got {
            self.handle(Some(k), e);
        }
    }

    /// Handles what is ready on every stream; Ready once all of them are closed.
    fn poll_all(&mut self, cx: &mut std::task::Context<'_>) -> Poll<()> {
        self.waker = Some(cx.waker().clone());
        let mut open = false;
        loop {
            match self.rx.poll_recv(cx) {
                Poll::Ready(Some(e)) => self.handle(None, e),
                Poll::Ready(None) => break,
                Poll::Pending => {
                    open = true;
                    break;
                }
            }
        }
        let mut got = Vec::new();
        for (k, rx) in &mut self.nodes {
            loop {
                match rx.poll_recv(cx) {
                    Poll::Ready(Some(e)) => got.push((*k, e)),
                    Poll::Ready(None) => break,
                    Poll::Pending => {
                        open = true;
                        break;
                    }
                }
            }
        }
        for (k, e) in got {
            self.handle(Some(k), e);
        }
        if open {
            Poll::Pending
        } else {
            Poll::Ready(())
        }
    }
}

/// The watch over one server's deaths: prints them as they come, in the run's current phase.
pub struct DeathWatch {
    inner: Arc<Mutex<Inner>>,
    broken: watch::Receiver<Option<String>>,
    task: tokio::task::JoinHandle<()>,
}

impl DeathWatch {
    /// Starts watching (in [`Phase::Boot`], from now).
    pub fn start(rx: mpsc::UnboundedReceiver<MemberExit>, sink: Arc<dyn Sink>) -> DeathWatch {
        let (tx, broken) = watch::channel(None);
        let inner = Arc::new(Mutex::new(Inner {
            rx,
            nodes: Vec::new(),
            waker: None,
            sink,
            phase: Phase::Boot,
            since: SystemTime::now(),
            stopped: false,
            leader_reported: false,
            deaths: Vec::new(),
            broken: tx,
        }));
        let i = inner.clone();
        // Each death is handled under the lock as it arrives, so `drain_now` (from the run's
        // own steps) and this task never handle one twice or out of order.
        let task = tokio::spawn(async move {
            std::future::poll_fn(|cx| i.lock().unwrap_or_else(|e| e.into_inner()).poll_all(cx))
                .await
        });
        DeathWatch {
            inner,
            broken,
            task,
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Watches the deaths on node `node` too (a part of the server started there), printed and
    /// judged with the head's, in the same phases.
    pub fn add_node(&self, node: u32, rx: mpsc::UnboundedReceiver<MemberExit>) {
        let mut g = self.lock();
        g.nodes.push((node, rx));
        if let Some(w) = g.waker.take() {
            w.wake();
        }
    }

    /// The run moves on to `phase`; its deaths are timed from now.
    pub fn set_phase(&self, phase: Phase) {
        let mut g = self.lock();
        g.drain();
        g.phase = phase;
        g.since = SystemTime::now();
    }

    /// Handles every death already reported (the leader's arrives before its exit does).
    pub fn drain_now(&self) {
        self.lock().drain();
    }

    /// The run stops the server now: what ends from here on is the teardown's doing.
    pub fn stop(&self) {
        let mut g = self.lock();
        g.drain();
        g.stopped = true;
    }

    /// Whether the leader's end was reported (and so printed, if before the stop).
    pub fn leader_reported(&self) -> bool {
        self.lock().leader_reported
    }

    pub fn deaths(&self) -> Vec<Death> {
        self.lock().deaths.clone()
    }

    /// The first death that broke the server, once there is one.
    pub fn broken(&self) -> Option<String> {
        self.broken.borrow().clone()
    }

    /// A receiver that turns `Some` when the server can no longer serve.
    pub fn broken_watch(&self) -> watch::Receiver<Option<String>> {
        self.broken.clone()
    }
}

impl Drop for DeathWatch {
    fn drop(&mut self) {
        self.task.abort();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::live::Collect;

    fn exit(argv: &[&str], leader: bool, status: Option<ExitKind>, oom: bool) -> MemberExit {
        MemberExit {
            pid: 4711,
            starttime: 1,
            argv: argv.iter().map(|s| s.to_string()).collect(),
            comm: "x".into(),
            leader,
            status,
            oom_kill: oom,
            at_unix_ms: 0,
            parent: None,
        }
    }

    const KILL: Option<ExitKind> = Some(ExitKind::Signal(nix::sys::signal::Signal::SIGKILL));

    #[test]
    fn the_lines_say_who_and_how() {
        let e = exit(&["VLLM::EngineCore"], false, KILL, false);
        assert_eq!(
            describe(&e),
            "VLLM::EngineCore (pid 4711) was killed by SIGKILL"
        );
        let e = exit(&["VLLM::EngineCore"], false, KILL, true);
        assert_eq!(
            describe(&e),
            "VLLM::EngineCore (pid 4711) was killed by the OOM killer (SIGKILL)"
        );
        let e = exit(
            &["/venv/bin/python3", "/venv/bin/vllm", "serve"],
            true,
            Some(ExitKind::Code(1)),
            false,
        );
        assert_eq!(
            describe(&e),
            "the server (vllm, pid 4711) exited with code 1"
        );
        let e = exit(
            &["python3", "-m", "sglang.launch_server"],
            true,
            None,
            false,
        );
        assert_eq!(
            describe(&e),
            "the server (sglang.launch_server, pid 4711) exited (how, the kernel could no longer tell)"
        );
    }

    #[tokio::test]
    async fn a_death_on_another_node_is_named_by_its_node() {
        let (_head_tx, rx) = mpsc::unbounded_channel();
        let sink = Arc::new(Collect::default());
        let w = DeathWatch::start(rx, sink.clone());
        let (tx1, rx1) = mpsc::unbounded_channel();
        w.add_node(1, rx1);
        w.set_phase(Phase::Load);
        let mut e = exit(&["VLLM::Worker_DP1"], false, KILL, false);
        e.at_unix_ms = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap()
            .as_millis() as u64;
        tx1.send(e).unwrap();
        // The watching task handles it by itself (woken by the new stream).
        for _ in 0..200 {
            if !w.deaths().is_empty() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        let d = w.deaths();
        assert_eq!(d.len(), 1);
        assert_eq!(d[0].node, Some(1));
        assert!(
            d[0].summary
                .starts_with("node 1: VLLM::Worker_DP1 (pid 4711) was killed by SIGKILL"),
            "{}",
            d[0].summary
        );
        assert!(!w.leader_reported());
        let lead = exit(&["vllm"], true, Some(ExitKind::Code(0)), false);
        assert_eq!(
            describe_on(Some(2), &lead),
            "node 2: the server's part (vllm, pid 4711) exited with code 0"
        );
    }

    #[test]
    fn what_counts_as_a_death() {
        // Server processes, however they end; the server is broken.
        assert_eq!(
            judge(&exit(&["vllm"], true, Some(ExitKind::Code(0)), false)),
            Some(true)
        );
        for title in [
            "VLLM::EngineCore_DP1",
            "VLLM::Worker_PP1_TP0",
            "sglang::scheduler_TP0",
        ] {
            assert_eq!(
                judge(&exit(&[title], false, Some(ExitKind::Code(0)), false)),
                Some(true)
            );
        }
        // Other members: a signal is a crash, a code is a helper's business.
        assert_eq!(judge(&exit(&["python3"], false, KILL, false)), Some(false));
        assert_eq!(
            judge(&exit(&["gcc"], false, Some(ExitKind::Code(1)), false)),
            None
        );
        assert_eq!(
            judge(&exit(
                &["/usr/bin/x::y"],
                false,
                Some(ExitKind::Code(0)),
                false
            )),
            None
        );
    }

    #[test]
    fn a_fork_under_its_parents_title_is_the_parents_helper() {
        // The real DP=2 vLLM's boot: a child of a worker, seen only between its fork and its
        // exec, ends with code 0 while both workers serve on.
        let mut fork = exit(&["VLLM::Worker"], false, Some(ExitKind::Code(0)), false);
        fork.parent = Some("VLLM::Worker".into());
        assert_eq!(judge(&fork), None);
        fork.status = KILL;
        assert_eq!(judge(&fork), Some(false), "killed, it is still a crash");
        // The worker itself: its parent is the engine, under another title.
        let mut worker = exit(&["VLLM::Worker"], false, Some(ExitKind::Code(0)), false);
        worker.parent = Some("VLLM::EngineCore_DP1".into());
        assert_eq!(judge(&worker), Some(true));
        worker.parent = None;
        assert_eq!(judge(&worker), Some(true), "a parent unknown is no fork");
    }

    #[tokio::test]
    async fn deaths_are_timed_in_their_phase_and_none_after_the_stop() {
        let (tx, rx) = mpsc::unbounded_channel();
        let sink = Arc::new(Collect::default());
        let w = DeathWatch::start(rx, sink.clone());
        w.set_phase(Phase::Load);
        let start = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap()
            .as_millis() as u64;
        let mut e = exit(&["VLLM::EngineCore"], false, KILL, false);
        e.at_unix_ms = start + 3200;
        // A helper's exit code is no death: nothing printed.
        tx.send(exit(&["git"], false, Some(ExitKind::Code(128)), false))
            .unwrap();
        tx.send(e.clone()).unwrap();
        w.drain_now();
        assert_eq!(
            sink.alerts(),
            vec!["3.2s into the load: VLLM::EngineCore (pid 4711) was killed by SIGKILL"]
        );
        let d = w.deaths();
        assert_eq!(d.len(), 1);
        assert!(d[0].server_broken && d[0].after_ready());
        assert_eq!(d[0].signal.as_deref(), Some("SIGKILL"));
        assert_eq!(
            w.broken().as_deref(),
            Some("VLLM::EngineCore (pid 4711) was killed by SIGKILL 3.2s into the load")
        );
        // T7 judges it, unless the run had been interrupted before it.
        assert_eq!(inferlint_core::checks::t7_deaths::judged(&d, None).len(), 1);
        assert_eq!(
            inferlint_core::checks::t7_deaths::judged(&d, Some(start + 3201)).len(),
            1
        );
        assert!(inferlint_core::checks::t7_deaths::judged(&d, Some(start + 3200)).is_empty());
        let mut boot = d[0].clone();
        boot.phase = Phase::Boot.key();
        assert!(
            inferlint_core::checks::t7_deaths::judged(&[boot], None).is_empty(),
            "the boot is T12's"
        );
        w.stop();
        tx.send(exit(&["VLLM::Worker_TP0"], false, KILL, false))
            .unwrap();
        w.drain_now();
        assert_eq!(w.deaths().len(), 1, "the teardown's kills are no deaths");
    }
}
