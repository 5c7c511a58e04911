//! The processes a run starts (the server, the load), each under its own shepherd from
//! [`inferlint_supervisor`], seen from the async sequence: output as a stream of lines, the
//! exit as an event, a stop that ends the whole tree, and the teardown's report.
//!
//! The shepherd keeps the promise when inferlint itself dies: on SIGKILL of this process it
//! sees its control socket close and tears the tree down alone, still appending the raw output
//! to the run folder.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use inferlint_supervisor::cgroup::Cgroup;
use inferlint_supervisor::{
    ExitKind, Graces, LineReceiver, MemberExit, ProcScanner, ShepherdProgram, SpawnOptions,
    StopMode, Supervised, TeardownReport, Tree,
};
use nix::sys::signal::Signal;
use tokio::sync::{mpsc, watch};

/// How to start one supervised command.
#[derive(Clone, Debug)]
pub struct ProcOptions {
    /// The program that runs the shepherd (`inferlint shepherd`).
    pub shepherd: ShepherdProgram,
    /// Every byte of stdout and stderr goes here first (kept even after inferlint dies).
    pub raw_output: Option<PathBuf>,
    /// Where the shepherd writes its teardown report when it had to act alone.
    pub shepherd_report: Option<PathBuf>,
    pub graces: Graces,
}

/// The output lines of a started process.
pub struct Lines(Option<LineReceiver>);

impl Lines {
    /// The next line; None once the output has closed.
    pub async fn recv(&mut self) -> Option<String> {
        match self.0.as_mut() {
            Some(rx) => rx.recv().await.map(|l| l.text),
            None => None,
        }
    }

    /// A stream that never yields (for a process whose lines were taken).
    pub fn closed() -> Lines {
        Lines(None)
    }
}

/// A started process and its whole tree.
pub struct Proc {
    pub pid: i32,
    pgid: i32,
    pub lines: Lines,
    /// The tree's deaths as the shepherd reports them (see [`Proc::take_member_exits`]).
    member_exits: Option<mpsc::UnboundedReceiver<MemberExit>>,
    exit: watch::Receiver<Option<ExitKind>>,
    sup: Arc<Supervised>,
    watcher: tokio::task::JoinHandle<()>,
}

impl Proc {
    /// Starts `argv` under a shepherd: own process group (and cgroup when delegated), stdin
    /// from /dev/null, output piped.
    pub fn spawn(argv: &[String], opts: &ProcOptions) -> Result<Proc, String> {
        if argv.is_empty() {
            return Err("empty command".into());
        }
        let mut so = SpawnOptions::new(
            opts.shepherd.clone(),
            argv.iter().map(Into::into).collect(),
            inferlint_host::names::names(),
        );
        so.raw_output = opts.raw_output.clone();
        so.shepherd_report = opts.shepherd_report.clone();
        so.graces = opts.graces;
        let mut sup = Supervised::spawn(so).map_err(|e| e.to_string())?;
        let lines = Lines(sup.take_lines());
        let member_exits = sup.take_member_exits();
        let pid = sup.leader_pid();
        let pgid = sup.info().pgid;
        let sup = Arc::new(sup);
        let (tx, exit) = watch::channel(None);
        let s = sup.clone();
        let watcher = tokio::spawn(async move {
            let e = s.exited().await.unwrap_or(ExitKind::Code(-1));
            let _ = tx.send(Some(e));
        });
        Ok(Proc {
            pid,
            pgid,
            lines,
            member_exits,
            exit,
            sup,
            watcher,
        })
    }

    /// The deaths of the tree's members before its stop, as they happen (once; a member's
    /// arrives before the leader's exit shows in [`Proc::exit_watch`]).
    pub fn take_member_exits(&mut self) -> Option<mpsc::UnboundedReceiver<MemberExit>> {
        self.member_exits.take()
    }

    /// Every member death reported so far.
    pub fn member_exits(&self) -> Vec<MemberExit> {
        self.sup.member_exits()
    }

    /// The exit, if it has happened.
    pub fn exited(&self) -> Option<ExitKind> {
        *self.exit.borrow()
    }

    /// A receiver that sees the exit (for `select!`).
    pub fn exit_watch(&self) -> watch::Receiver<Option<ExitKind>> {
        self.exit.clone()
    }

    /// Waits for the exit.
    pub async fn wait(&self) -> ExitKind {
        wait_exit(self.exit.clone()).await
    }

    /// Sends a signal to the process group (e.g. SIGINT, so a load tool saves what it has).
    pub fn signal_group(&self, sig: Signal) {
        // A group that is gone gives ESRCH, ignored.
        let _ = inferlint_supervisor::sys::killpg(self.pgid, sig);
    }

    /// Asks for the staged teardown (returns at once; Force escalates a running one).
    pub fn stop(&self, mode: StopMode) {
        self.sup.stop(mode);
    }

    /// As [`Proc::stop`] with other grace times.
    pub fn stop_with(&self, mode: StopMode, graces: Graces) {
        self.sup.stop_with(mode, graces);
    }

    /// Waits for the teardown (however it was started) to end, and returns its report.
    pub async fn done(&self) -> TeardownReport {
        self.sup.done().await
    }

    /// The report, if the teardown is over.
    pub fn report(&self) -> Option<TeardownReport> {
        self.sup.report()
    }

    /// The live processes of this run's tree that are not in its process group (a `setsid`
    /// or double-fork escapee such as an engine that left its API server's group): found by
    /// the run's marker, cgroup or pidfds, they are what `kill -- -PGID` would miss.
    pub fn outside_group(&self) -> Vec<(i32, String)> {
        self.census()
            .into_iter()
            .filter(|(_, pgrp, _)| *pgrp != self.pgid)
            .map(|(pid, _, cmd)| (pid, cmd))
            .collect()
    }

    /// The identity and command line of the tree's live, non-zombie members (the shepherd
    /// left out).
    pub fn members(&self) -> Vec<(inferlint_supervisor::ProcId, String)> {
        self.tree()
            .census()
            .into_iter()
            .filter(|m| !m.info.is_zombie())
            .map(|m| (m.info.id(), m.info.cmdline()))
            .collect()
    }

    /// The tree's live members with their parent and argument vector (a sweep written as a
    /// loop finds its points among them).
    pub fn member_argvs(&self) -> Vec<crate::script_points::Member> {
        self.tree()
            .census()
            .into_iter()
            .filter(|m| !m.info.is_zombie())
            .map(|m| crate::script_points::Member {
                id: m.info.id(),
                ppid: m.info.ppid,
                argv: m.info.argv.clone(),
            })
            .collect()
    }

    fn tree(&self) -> Tree {
        let mut tree = Tree::new(ProcScanner::system());
        tree.marker = Some(self.sup.marker());
        tree.pgid = Some(self.pgid);
        tree.cgroup = self.sup.info().cgroup.as_ref().map(Cgroup::at);
        tree.protect.insert(self.sup.shepherd_pid());
        tree
    }

    /// `(pid, process group, command line)` of the tree's live, non-zombie members.
    fn census(&self) -> Vec<(i32, i32, String)> {
        self.tree()
            .census()
            .into_iter()
            .filter(|m| !m.info.is_zombie())
            .map(|m| (m.info.pid, m.info.pgrp, m.info.cmdline()))
            .collect()
    }

    /// Lines the consumer was too slow for.
    pub fn dropped_lines(&self) -> u64 {
        self.sup.dropped_lines()
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        self.watcher.abort();
    }
}

/// Waits until a watched exit is set.
pub async fn wait_exit(mut rx: watch::Receiver<Option<ExitKind>>) -> ExitKind {
    loop {
        if let Some(e) = *rx.borrow_and_update() {
            return e;
        }
        if rx.changed().await.is_err() {
            return rx.borrow().unwrap_or(ExitKind::Code(-1));
        }
    }
}

/// The shepherd program: this executable's hidden `shepherd` subcommand.
pub fn this_shepherd() -> std::io::Result<ShepherdProgram> {
    ShepherdProgram::this_exe("shepherd")
}

/// Grace times that fit a stop budget (Slurm's KillWait is 30 s by default).
pub fn graces_within(budget: Duration) -> Graces {
    Graces::within(budget)
}
