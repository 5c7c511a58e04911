//! The supervisor's side of the control socket: what the shepherd reports, kept in one shared
//! state, and the fallback teardown run from here when the shepherd dies without finishing.

use std::os::fd::OwnedFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use super::SpawnedInfo;
use crate::cgroup::Cgroup;
use crate::member_exit::MemberExit;
use crate::names::Names;
use crate::output::PumpStats;
use crate::pidfd::Tracked;
use crate::procfs::{ProcId, ProcScanner};
use crate::protocol::{Decoder, Event};
use crate::teardown::{self, Graces, TeardownReport};
use crate::tree::{Adoption, Tree};
use crate::{sys, ExitKind, StopMode};

#[derive(Default)]
pub(super) struct State {
    pub exit: Option<ExitKind>,
    pub report: Option<TeardownReport>,
    pub shepherd_exit: Option<std::process::ExitStatus>,
    pub members: Vec<ProcId>,
    /// Members that ended before the teardown, in the order the shepherd saw them.
    pub member_exits: Vec<MemberExit>,
    pub requested: Option<(StopMode, Graces)>,
    pub done: bool,
}

pub(super) struct Shared {
    pub state: Mutex<State>,
    pub cond: Condvar,
    pub notify: tokio::sync::Notify,
    pub force: AtomicBool,
    pub stats: Arc<PumpStats>,
    pub exits_tx: tokio::sync::mpsc::UnboundedSender<MemberExit>,
}

impl Shared {
    pub fn new(
        stats: Arc<PumpStats>,
        exits_tx: tokio::sync::mpsc::UnboundedSender<MemberExit>,
    ) -> Shared {
        Shared {
            state: Mutex::new(State::default()),
            cond: Condvar::new(),
            notify: tokio::sync::Notify::new(),
            force: AtomicBool::new(false),
            stats,
            exits_tx,
        }
    }

    pub fn update(&self, f: impl FnOnce(&mut State)) {
        let mut st = self.state.lock().unwrap_or_else(|e| e.into_inner());
        f(&mut st);
        drop(st);
        self.cond.notify_all();
        self.notify.notify_waiters();
    }

    pub fn wait_for<T>(
        &self,
        timeout: Duration,
        mut f: impl FnMut(&State) -> Option<T>,
    ) -> Option<T> {
        let deadline = Instant::now() + timeout;
        let mut st = self.state.lock().unwrap_or_else(|e| e.into_inner());
        loop {
            if let Some(v) = f(&st) {
                return Some(v);
            }
            let now = Instant::now();
            if now >= deadline {
                return None;
            }
            st = self
                .cond
                .wait_timeout(st, deadline - now)
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
    }

    pub async fn wait_async<T>(&self, mut f: impl FnMut(&State) -> Option<T>) -> T {
        loop {
            let notified = self.notify.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            {
                let st = self.state.lock().unwrap_or_else(|e| e.into_inner());
                if let Some(v) = f(&st) {
                    return v;
                }
            }
            notified.await;
        }
    }
}

/// Shepherd pids started by this process (never adopted as orphans by a fallback teardown).
/// The lock is held from before a shepherd is forked until its pid is recorded.
pub(super) static SHEPHERDS: Mutex<Vec<i32>> = Mutex::new(Vec::new());

/// Marks a child of this process as never part of any run's tree. A supervisor that is a
/// subreaper and starts session leaders of its own (outside [`super::Supervised::spawn`])
/// registers them, so a fallback teardown never mistakes them for a dead shepherd's orphans.
pub fn exclude_from_adoption(pid: i32) {
    SHEPHERDS
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .push(pid);
}

fn is_excluded(pid: i32) -> bool {
    SHEPHERDS
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .contains(&pid)
}

/// The report of a teardown nobody ran (no shepherd report, no fallback).
pub(super) fn no_report(info: &SpawnedInfo) -> TeardownReport {
    TeardownReport {
        actor: "nobody".into(),
        requested: StopMode::Graceful,
        escalated: false,
        backend: info.backend(),
        stages: Vec::new(),
        signalled: Vec::new(),
        found: Vec::new(),
        leftovers: Vec::new(),
        elapsed_ms: 0,
        cgroup_removed: None,
        leader_exit: None,
        pipes_at_eof: None,
        shm: crate::shm::ShmCleanup::default(),
    }
}

/// What the control thread works with.
pub(super) struct ControlLoop {
    pub sock: OwnedFd,
    pub decoder: Decoder,
    /// Events read before the thread started (after the shepherd's first report).
    pub pending: Vec<Event>,
    pub child: std::process::Child,
    pub shared: Arc<Shared>,
    pub info: SpawnedInfo,
    pub names: Names,
    pub leader: Option<Tracked>,
    pub graces: Graces,
}

impl ControlLoop {
    /// Records the shepherd's reports until its socket closes; then, if it died without a
    /// report, tears the tree down from here; then waits briefly for end of file on the pipes.
    pub fn run(mut self) {
        for ev in std::mem::take(&mut self.pending) {
            handle(ev, &self.shared);
        }
        self.read_until_closed();
        let status = self.child.wait().ok();
        self.shared.update(|s| s.shepherd_exit = status);
        let have_report = self
            .shared
            .state
            .lock()
            .map(|s| s.report.is_some())
            .unwrap_or(false);
        if !have_report {
            // The shepherd died without finishing: tear down what it ran, from here.
            let report = self.fallback_teardown();
            self.shared.update(|s| s.report = Some(report));
        }
        // End of file on the pipes is part of the verification (a short wait, as nextest's
        // leak check does).
        let eof = self.shared.stats.wait_eof(Duration::from_millis(200));
        self.shared.update(|s| {
            if let Some(r) = &mut s.report {
                r.pipes_at_eof = Some(eof);
            }
            s.done = true;
        });
    }

    fn read_until_closed(&mut self) {
        let mut buf = vec![0u8; 64 * 1024];
        loop {
            match sys::read_fd(&self.sock, &mut buf) {
                Ok(0) | Err(_) => break,
                Ok(n) => {
                    for ev in self.decoder.feed::<Event>(&buf[..n]) {
                        handle(ev, &self.shared);
                    }
                }
            }
        }
    }

    /// The staged teardown on what the shepherd reported: process group, session, cgroup,
    /// marker, the leader's and every member's pidfd, and (as a subreaper) its orphans.
    fn fallback_teardown(&mut self) -> TeardownReport {
        let (mode, graces) = self
            .shared
            .state
            .lock()
            .ok()
            .and_then(|s| s.requested)
            .unwrap_or((StopMode::Graceful, self.graces));
        let members = self
            .shared
            .state
            .lock()
            .map(|s| s.members.clone())
            .unwrap_or_default();
        let info = &self.info;
        let mut tree = Tree::new(ProcScanner::system());
        tree.marker = Some(self.names.marker(&info.run_id));
        tree.leader = self.leader.take();
        tree.pgid = Some(info.pgid);
        // Every process still in the dead shepherd's session came from it.
        tree.session = (info.session == info.shepherd_pid).then_some(info.session);
        tree.cgroup = info.cgroup.as_ref().map(Cgroup::at);
        // Orphans come to us only if we are a subreaper.
        if sys::is_child_subreaper() {
            tree.adoption = Adoption::Orphans {
                excluded: is_excluded,
            };
        }
        for id in &members {
            tree.track(*id);
        }
        let force = &self.shared.force;
        let mut interrupt = || force.load(Ordering::Acquire).then_some(StopMode::Force);
        teardown::teardown(
            &mut tree,
            mode,
            &graces,
            "supervisor (shepherd gone)",
            &mut interrupt,
        )
    }
}

fn handle(ev: Event, shared: &Shared) {
    match ev {
        Event::Exited { status } => shared.update(|s| s.exit = Some(status)),
        Event::Members { ids } => shared.update(|s| s.members.extend(ids)),
        Event::MemberExited { exit } => {
            shared.update(|s| s.member_exits.push(exit.clone()));
            let _ = shared.exits_tx.send(exit);
        }
        Event::TeardownDone { report } => shared.update(|s| s.report = Some(report)),
        _ => {}
    }
}
