//! The node agent: the supervisor of one node's part of a run that spans nodes
//! (docs/design/nodes.md). It starts the part under a shepherd exactly as a one-node
//! supervisor does ([`Supervised::spawn`], child subreaper, cgroup when delegated, the marker
//! variable, [`SignalMux`]), reports what happens as [`NodeEvent`] lines on its stdout, and
//! takes [`NodeCommand`] lines on its stdin.
//!
//! Whatever ends the stream ends the part: end of file on stdin (the run that started it is
//! gone, even by SIGKILL, or its launcher is), a stdout that can no longer be written, SIGTERM,
//! SIGINT or SIGHUP each start the graceful teardown, forced after the graces. If the agent
//! itself is SIGKILLed, its shepherd sees its control socket close and tears the tree down
//! alone, as it does for any supervisor.

use std::ffi::OsString;
use std::io::{BufRead, Stdout};
use std::os::fd::AsFd;
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use nix::poll::{PollFd, PollFlags, PollTimeout};

use crate::node_protocol::{EventWriter, NodeCommand, NodeEvent};
use crate::output::Stream;
use crate::signals::{SignalMux, StopRequest};
use crate::teardown::{Graces, TeardownReport, LEFTOVER_EXIT_STATUS};
use crate::{
    become_subreaper, CgroupMode, Names, ShepherdProgram, SpawnOptions, StopMode, Supervised,
};

/// The exit status when the command could not be started (as for a usage error).
pub const FAILED_EXIT_STATUS: i32 = 2;

/// How often the agent looks at the command's state and its stdout between events.
const TICK: Duration = Duration::from_millis(5);

/// What the agent's caller judges on its node once the teardown is over (the binary: T2 on the
/// node's GPUs); its value goes to the run as a `checked` event of phase `stop`.
#[derive(Clone)]
pub struct AfterTeardown(pub Arc<dyn Fn(&TeardownReport) -> serde_json::Value + Send + Sync>);

impl std::fmt::Debug for AfterTeardown {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("AfterTeardown(..)")
    }
}

/// What the agent's caller judges on its node before the command starts (the binary: the T2
/// gate on the node's GPUs): the result, which goes to the run as a `checked` event of phase
/// `gate`, and why the command must not start, when it must not.
#[derive(Clone)]
pub struct BeforeStart(pub Arc<dyn Fn() -> (serde_json::Value, Option<String>) + Send + Sync>);

impl std::fmt::Debug for BeforeStart {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("BeforeStart(..)")
    }
}

/// What the agent starts and how.
#[derive(Clone, Debug)]
pub struct AgentOptions {
    pub shepherd: ShepherdProgram,
    pub names: Names,
    pub command: Vec<OsString>,
    /// The marker value of this node's part; a fresh one when None.
    pub run_id: Option<String>,
    /// Extra environment for the command (e.g. the node's GPUs).
    pub env: Vec<(OsString, OsString)>,
    pub graces: Graces,
    pub cgroup: CgroupMode,
    /// Judged before the command starts; a refusal is the agent's `failed`.
    pub before_start: Option<BeforeStart>,
    /// Judged after the teardown, before `done`.
    pub after_teardown: Option<AfterTeardown>,
}

/// Why the agent stops.
enum Stop {
    Asked(StopMode),
    Signal(StopRequest),
    /// Stdin closed or stdout lost: the run is gone.
    StreamLost,
}

type Out = Arc<Mutex<EventWriter<Stdout>>>;

/// Sends one event; on a lost stream tells the main loop (once is enough, it stops anyway).
fn emit(out: &Out, tx: &mpsc::Sender<Stop>, ev: &NodeEvent) {
    let mut w = out.lock().unwrap_or_else(|e| e.into_inner());
    let was_lost = w.is_lost();
    if w.send(ev).is_err() && !was_lost {
        let _ = tx.send(Stop::StreamLost);
    }
}

/// Runs the agent until its command's tree is gone; returns the exit status: 0 when nothing
/// was left (128 + the signal when a signal stopped it), [`LEFTOVER_EXIT_STATUS`] when
/// something was, [`FAILED_EXIT_STATUS`] when the command could not be started.
pub fn run(opts: AgentOptions) -> i32 {
    let out: Out = Arc::new(Mutex::new(EventWriter::new(std::io::stdout())));
    let (tx, rx) = mpsc::channel::<Stop>();
    let fail = |error: String| {
        emit(&out, &tx, &NodeEvent::Failed { error });
        emit(
            &out,
            &tx,
            &NodeEvent::Done {
                exit_code: FAILED_EXIT_STATUS,
            },
        );
        FAILED_EXIT_STATUS
    };
    if let Err(e) = become_subreaper() {
        return fail(format!("cannot become a child subreaper: {e}"));
    }
    let sig_tx = tx.clone();
    // Installed before the command starts, so no signal can kill us with the default action.
    let mux = SignalMux::install(move |req| {
        let _ = sig_tx.send(Stop::Signal(req));
    });
    let _mux = match mux {
        Ok(m) => m,
        Err(e) => return fail(format!("cannot install signal handlers: {e}")),
    };
    if let Some(gate) = &opts.before_start {
        let (result, refused) = (gate.0)();
        emit(
            &out,
            &tx,
            &NodeEvent::Checked {
                phase: "gate".into(),
                result,
            },
        );
        if let Some(why) = refused {
            return fail(why);
        }
    }
    let graces = opts.graces;
    let mut so = SpawnOptions::new(opts.shepherd, opts.command, opts.names);
    so.run_id = opts.run_id;
    so.env = opts.env;
    so.graces = graces;
    so.cgroup = opts.cgroup;
    let mut sup = match Supervised::spawn(so) {
        Ok(s) => s,
        Err(e) => return fail(e.to_string()),
    };
    emit(&out, &tx, &started(&sup));
    let pump = spawn_output_pump(&mut sup, out.clone(), tx.clone());
    spawn_stdin_reader(tx.clone());

    let (mode, signal) = watch(&mut sup, &out, &tx, &rx);
    let report = stop(&mut sup, mode, graces, &rx);
    // The output's last lines come before the teardown event (the pipes are at end of file
    // once the tree is gone; a pipe held by a survivor is waited for a moment only).
    if let Some(done) = pump {
        let _ = done.recv_timeout(Duration::from_secs(1));
    }
    let clean = report.is_clean();
    // The teardown's report goes first: the judgement may wait for readings.
    let judged = opts.after_teardown.map(|judge| (judge, report.clone()));
    emit(&out, &tx, &NodeEvent::teardown(report));
    if let Some((judge, report)) = judged {
        let result = (judge.0)(&report);
        emit(
            &out,
            &tx,
            &NodeEvent::Checked {
                phase: "stop".into(),
                result,
            },
        );
    }
    let exit_code = match (clean, signal) {
        (false, _) => LEFTOVER_EXIT_STATUS,
        (true, Some(sig)) => 128 + sig,
        (true, None) => 0,
    };
    emit(&out, &tx, &NodeEvent::Done { exit_code });
    exit_code
}

fn started(sup: &Supervised) -> NodeEvent {
    let hostname = nix::unistd::gethostname()
        .map(|h| h.to_string_lossy().into_owned())
        .unwrap_or_default();
    NodeEvent::Started {
        hostname,
        pid: crate::sys::getpid(),
        leader_pid: sup.leader_pid(),
        run_id: sup.run_id().to_string(),
        backend: sup.info().backend(),
    }
}

/// Forwards the command's lines as `output` events; the returned channel closes when the
/// output is at end of file.
fn spawn_output_pump(
    sup: &mut Supervised,
    out: Out,
    tx: mpsc::Sender<Stop>,
) -> Option<mpsc::Receiver<()>> {
    let mut lines = sup.take_lines()?;
    let (done_tx, done_rx) = mpsc::channel::<()>();
    std::thread::spawn(move || {
        let _done = done_tx;
        // Keeps reading after the stream is lost, so the command never blocks on its pipes.
        while let Some(l) = lines.blocking_recv() {
            let stream = match l.stream {
                Stream::Stdout => "stdout",
                Stream::Stderr => "stderr",
            };
            let ev = NodeEvent::Output {
                stream: stream.into(),
                line: l.text,
            };
            emit(&out, &tx, &ev);
        }
    });
    Some(done_rx)
}

/// Reads commands from stdin; end of file (or a read error) is the run gone.
fn spawn_stdin_reader(tx: mpsc::Sender<Stop>) {
    std::thread::spawn(move || {
        let stdin = std::io::stdin();
        for line in stdin.lock().lines() {
            let Ok(line) = line else { break };
            if let Some(NodeCommand::Stop(mode)) = NodeCommand::parse(&line) {
                if tx.send(Stop::Asked(mode)).is_err() {
                    return;
                }
            }
        }
        let _ = tx.send(Stop::StreamLost);
    });
}

/// Whether the reader of our stdout has gone (a pipe whose read end closed polls POLLERR).
fn stdout_gone() -> bool {
    let stdout = std::io::stdout();
    let mut fds = [PollFd::new(stdout.as_fd(), PollFlags::empty())];
    match nix::poll::poll(&mut fds, PollTimeout::ZERO) {
        Ok(n) if n > 0 => fds[0]
            .revents()
            .is_some_and(|r| r.intersects(PollFlags::POLLERR | PollFlags::POLLHUP)),
        _ => false,
    }
}

/// Reports deaths and the leader's exit until something asks for the stop; returns how to
/// stop and the signal that asked, if one did.
fn watch(
    sup: &mut Supervised,
    out: &Out,
    tx: &mpsc::Sender<Stop>,
    rx: &mpsc::Receiver<Stop>,
) -> (StopMode, Option<i32>) {
    let mut deaths = sup.take_member_exits();
    let mut last_check = Instant::now();
    loop {
        // Deaths first: the leader's comes before its exit, as the crate delivers them.
        if let Some(d) = deaths.as_mut() {
            while let Ok(exit) = d.try_recv() {
                emit(out, tx, &NodeEvent::member_exited(exit));
            }
        }
        if let Some(status) = sup.exit_status() {
            emit(out, tx, &NodeEvent::Exited { status });
            return (StopMode::Graceful, None);
        }
        match rx.recv_timeout(TICK) {
            Ok(Stop::Asked(mode)) => return (mode, None),
            Ok(Stop::StreamLost) => return (StopMode::Graceful, None),
            Ok(Stop::Signal(req)) => return from_signal(req),
            Err(mpsc::RecvTimeoutError::Timeout) => {}
            Err(mpsc::RecvTimeoutError::Disconnected) => return (StopMode::Graceful, None),
        }
        if last_check.elapsed() >= Duration::from_millis(50) {
            last_check = Instant::now();
            if stdout_gone() {
                return (StopMode::Graceful, None);
            }
        }
    }
}

fn from_signal(req: StopRequest) -> (StopMode, Option<i32>) {
    match req {
        StopRequest::Graceful(s) => (StopMode::Graceful, Some(s as i32)),
        StopRequest::Force(s) => (StopMode::Force, Some(s as i32)),
        StopRequest::ExitNow => (StopMode::Force, Some(libc::SIGINT)),
    }
}

/// Runs the teardown, escalating to force when asked again meanwhile (a `force` command, a
/// second Ctrl-C); the crate itself forces after the graces.
fn stop(
    sup: &mut Supervised,
    mode: StopMode,
    graces: Graces,
    rx: &mpsc::Receiver<Stop>,
) -> crate::TeardownReport {
    sup.stop(mode);
    let deadline = Instant::now() + graces.total() + Duration::from_secs(2);
    while Instant::now() < deadline {
        if sup.wait_done(TICK).is_some() {
            break;
        }
        while let Ok(s) = rx.try_recv() {
            let forced = match s {
                Stop::Asked(m) => m == StopMode::Force,
                Stop::Signal(r) => from_signal(r).0 == StopMode::Force,
                Stop::StreamLost => false,
            };
            if forced {
                sup.stop(StopMode::Force);
            }
        }
    }
    sup.teardown(mode)
}
