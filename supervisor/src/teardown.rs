//! The one staged teardown every path uses (docs/design/processes.md#the-staged-teardown): the
//! supervisor's stop, the shepherd's stop when the supervisor is gone, the supervisor's fallback
//! when the shepherd is gone, and reconciliation of earlier runs.
//!
//! 1. **polite** — SIGTERM to the leader only, so the server runs its own clean shutdown (vLLM
//!    stops its engine itself); output keeps draining meanwhile (the pumps run on their own).
//!    Ends when the tree is empty, when `after_leader` has passed since the leader exited
//!    (what is left then are orphans), or after `leader`.
//! 2. **group** — SIGTERM + SIGCONT to the process group and to every member of the census;
//!    wait `group`.
//! 3. **force** — `cgroup.kill` (or freeze/kill/thaw), SIGKILL to the group and to every member,
//!    repeated until a full census finds nothing (bounded by `force`).
//! 4. **verify** — a last census; whatever is left is reported with pid and command line.

use std::path::Path;
use std::time::{Duration, Instant};

use nix::sys::signal::Signal;
use serde::{Deserialize, Serialize};

use crate::shm::{self, ShmCleanup, SHM_DIR};
use crate::tree::{Member, Tree};
use crate::{ExitKind, StopMode};

/// Grace times of the staged teardown. The defaults (15 + 5 s, plus at most 2 s of force)
/// end well inside Slurm's default `KillWait` of 30 s.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Graces {
    /// Stage 1: how long the leader gets to shut its own tree down after SIGTERM.
    #[serde(with = "ms")]
    pub leader: Duration,
    /// Stage 1: once the leader has exited, how long the rest gets to follow by itself.
    #[serde(with = "ms")]
    pub after_leader: Duration,
    /// Stage 2: how long the whole tree gets after the group-wide SIGTERM.
    #[serde(with = "ms")]
    pub group: Duration,
    /// Stage 3: how long SIGKILL rounds are repeated before the rest is reported as left over.
    #[serde(with = "ms")]
    pub force: Duration,
}

impl Default for Graces {
    fn default() -> Self {
        Graces {
            leader: Duration::from_secs(15),
            after_leader: Duration::from_secs(2),
            group: Duration::from_secs(5),
            force: Duration::from_secs(5),
        }
    }
}

impl Graces {
    /// All stages scaled to fit `budget` (e.g. a site's `KillWait` minus a margin), keeping the
    /// default proportions.
    pub fn within(budget: Duration) -> Graces {
        let d = Graces::default();
        let total = d.leader + d.group + d.force;
        let f = budget.as_secs_f64() / total.as_secs_f64();
        let s = |x: Duration| x.mul_f64(f.min(1.0));
        Graces {
            leader: s(d.leader),
            after_leader: s(d.after_leader),
            group: s(d.group),
            force: s(d.force),
        }
    }

    /// The longest a teardown can take.
    pub fn total(&self) -> Duration {
        self.leader + self.group + self.force
    }
}

mod ms {
    use serde::{Deserialize, Deserializer, Serializer};
    use std::time::Duration;
    pub fn serialize<S: Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_u64(d.as_millis() as u64)
    }
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
        Ok(Duration::from_millis(u64::deserialize(d)?))
    }
}

/// The stages, in order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Stage {
    Polite,
    Group,
    Force,
    Verify,
}

/// What one stage did.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct StageRecord {
    pub stage: Stage,
    /// Milliseconds from the start of the teardown.
    pub at_ms: u64,
    /// Pids signalled in this stage (group-wide signals are not expanded).
    pub signalled: Vec<i32>,
}

/// A process that survived the teardown.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Leftover {
    pub pid: i32,
    pub cmdline: String,
}

/// The outcome of a teardown.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TeardownReport {
    /// Who ran it: `shepherd`, `shepherd (supervisor gone)`, `supervisor (shepherd gone)`, `reap`.
    pub actor: String,
    pub requested: StopMode,
    /// A force request arrived while a graceful teardown was running.
    pub escalated: bool,
    /// `cgroup PATH` or `process group N`.
    pub backend: String,
    pub stages: Vec<StageRecord>,
    /// Every pid signalled, ascending.
    pub signalled: Vec<i32>,
    /// The tree's live members when the teardown began (pid and command line): after a
    /// leader that died by itself, these are its orphans, named before they are gone.
    #[serde(default)]
    pub found: Vec<Leftover>,
    pub leftovers: Vec<Leftover>,
    pub elapsed_ms: u64,
    /// Whether the run's cgroup was removed (None without a cgroup).
    pub cgroup_removed: Option<bool>,
    /// How the leader ended, when we were its parent.
    pub leader_exit: Option<ExitKind>,
    /// Whether the output pipes reached end of file (filled in by the supervisor side; a pipe
    /// still open means some process outside the census holds it).
    pub pipes_at_eof: Option<bool>,
    /// The tree's `/dev/shm` files: those removed, and those left with why ([`crate::shm`]).
    #[serde(default, skip_serializing_if = "ShmCleanup::is_empty")]
    pub shm: ShmCleanup,
}

/// The exit status a program gives when a teardown left processes behind (distinct from the
/// verdict statuses 0/1/2 and from 130).
pub const LEFTOVER_EXIT_STATUS: i32 = 3;

impl TeardownReport {
    /// Nothing left and (when known) the pipes closed.
    pub fn is_clean(&self) -> bool {
        self.leftovers.is_empty() && self.pipes_at_eof != Some(false)
    }

    /// One line per leftover: `left over: pid=N  CMD`.
    pub fn leftover_lines(&self) -> Vec<String> {
        self.leftover_lines_with(|_| String::new())
    }

    /// As [`TeardownReport::leftover_lines`], each line ending with what `suffix` says of its
    /// leftover (a caller's own knowledge of the process, e.g. what it still holds).
    pub fn leftover_lines_with(&self, suffix: impl Fn(&Leftover) -> String) -> Vec<String> {
        self.leftovers
            .iter()
            .map(|l| {
                let cmd: String = l.cmdline.chars().take(100).collect();
                format!("left over: pid={:<8} {cmd}{}", l.pid, suffix(l))
            })
            .collect()
    }

    /// Everything the teardown left to say: [`TeardownReport::leftover_lines`], then
    /// [`TeardownReport::shm_lines`].
    pub fn lines(&self) -> Vec<String> {
        let mut lines = self.leftover_lines();
        lines.extend(self.shm_lines());
        lines
    }

    /// What became of the tree's `/dev/shm` files, one line each kind: `removed 2 shared-memory
    /// file(s) the tree left: /dev/shm/psm_1, /dev/shm/psm_2`, and one line per file kept.
    pub fn shm_lines(&self) -> Vec<String> {
        let mut lines = Vec::new();
        if !self.shm.removed.is_empty() {
            lines.push(format!(
                "removed {} shared-memory file(s) the tree left: {}",
                self.shm.removed.len(),
                self.shm.removed.join(", ")
            ));
        }
        for k in &self.shm.kept {
            lines.push(format!("left in place: {} ({})", k.path, k.why));
        }
        lines
    }
}

/// Asked between polls: Some(Force) escalates a graceful teardown.
pub type Interrupt<'a> = &'a mut dyn FnMut() -> Option<StopMode>;

/// Runs the staged teardown on `tree`.
pub fn teardown(
    tree: &mut Tree,
    mode: StopMode,
    graces: &Graces,
    actor: &str,
    interrupt: Interrupt<'_>,
) -> TeardownReport {
    let mut log = StageLog {
        t0: Instant::now(),
        stages: Vec::new(),
        signalled: Vec::new(),
        escalated: false,
    };
    let backend = match (&tree.cgroup, tree.pgid) {
        (Some(c), _) => format!("cgroup {}", c.path().display()),
        (None, Some(g)) => format!("process group {g}"),
        (None, None) => "marker scan".to_string(),
    };
    let found: Vec<Leftover> = tree
        .census()
        .iter()
        .filter(|m| !m.info.is_zombie())
        .map(leftover)
        .collect();
    let shm_dir = Path::new(SHM_DIR);
    let found_pids: Vec<i32> = found.iter().map(|l| l.pid).collect();
    let shm_held = shm::held_by_all(&tree.scan, &found_pids, shm_dir);

    let forced = mode == StopMode::Force || polite(tree, graces, interrupt, &mut log);
    if !forced {
        group(tree, graces, interrupt, &mut log);
    }
    force(tree, graces, &mut log);

    // Stage 4: verify.
    tree.reap_zombies();
    let left = tree.census();
    let leader_exit = tree.reap_leader();
    log.push(Stage::Verify, Vec::new());
    let cgroup_removed = remove_cgroup(tree, left.is_empty());
    log.signalled.sort_unstable();
    log.signalled.dedup();
    let shm = shm::remove_left(
        &tree.scan,
        &shm_held,
        nix::unistd::getuid().as_raw(),
        shm_dir,
    );
    TeardownReport {
        actor: actor.to_string(),
        requested: mode,
        escalated: log.escalated,
        backend,
        elapsed_ms: log.ms(),
        stages: log.stages,
        signalled: log.signalled,
        found,
        leftovers: left.iter().map(leftover).collect(),
        cgroup_removed,
        leader_exit,
        pipes_at_eof: None,
        shm,
    }
}

/// The stages a teardown has run so far and the pids it signalled, timed from its start.
struct StageLog {
    t0: Instant,
    stages: Vec<StageRecord>,
    signalled: Vec<i32>,
    escalated: bool,
}

impl StageLog {
    /// Milliseconds since the teardown began.
    fn ms(&self) -> u64 {
        self.t0.elapsed().as_millis() as u64
    }

    /// Records a stage that begins now and the pids it signalled.
    fn push(&mut self, stage: Stage, sent: Vec<i32>) {
        let at_ms = self.ms();
        self.signalled.extend(&sent);
        self.stages.push(StageRecord {
            stage,
            at_ms,
            signalled: sent,
        });
    }
}

/// A member of the tree as a teardown reports it.
fn leftover(m: &Member) -> Leftover {
    Leftover {
        pid: m.info.pid,
        cmdline: m.info.cmdline(),
    }
}

/// Stage 1: SIGTERM to the leader only, then wait for the tree to empty, for the rest to
/// outlive the leader by `after_leader`, or for `leader`. True when an interrupt escalated.
fn polite(tree: &mut Tree, graces: &Graces, interrupt: Interrupt<'_>, log: &mut StageLog) -> bool {
    let mut sent = Vec::new();
    if tree.leader_alive() {
        if let Some(l) = &tree.leader {
            if l.signal(&tree.scan, Signal::SIGTERM) {
                sent.push(l.pid());
            }
        }
    }
    if sent.is_empty() {
        return false;
    }
    log.push(Stage::Polite, sent);
    let deadline = Instant::now() + graces.leader;
    let mut leader_gone_at: Option<Instant> = None;
    let outcome = wait(tree, deadline, interrupt, |tree, empty| {
        if empty {
            return true;
        }
        if leader_gone_at.is_none() && !tree.leader_alive() {
            leader_gone_at = Some(Instant::now());
        }
        leader_gone_at.is_some_and(|t| t.elapsed() >= graces.after_leader)
    });
    if outcome == Waited::Escalated {
        log.escalated = true;
        return true;
    }
    false
}

/// Stage 2: SIGTERM and SIGCONT to the process group, the cgroup and every member, then wait
/// `group` for the tree to empty.
fn group(tree: &mut Tree, graces: &Graces, interrupt: Interrupt<'_>, log: &mut StageLog) {
    let members = tree.census();
    if members.is_empty() {
        return;
    }
    let mut sent = Vec::new();
    if let Some(g) = tree.group_signal_safe(&members) {
        let _ = crate::sys::killpg(g, Signal::SIGTERM);
        let _ = crate::sys::killpg(g, Signal::SIGCONT);
    }
    if let Some(c) = &tree.cgroup {
        c.signal_all(Signal::SIGTERM);
    }
    sent.extend(tree.signal_members(&members, Signal::SIGTERM));
    tree.signal_members(&members, Signal::SIGCONT);
    log.push(Stage::Group, sent);
    let deadline = Instant::now() + graces.group;
    if wait(tree, deadline, interrupt, |_, empty| empty) == Waited::Escalated {
        log.escalated = true;
    }
}

/// Stage 3: SIGKILL (and `cgroup.kill`), repeated until a full census finds nothing or `force`
/// has passed; recorded only when it signalled someone.
fn force(tree: &mut Tree, graces: &Graces, log: &mut StageLog) {
    let deadline = Instant::now() + graces.force;
    let mut record = StageRecord {
        stage: Stage::Force,
        at_ms: log.ms(),
        signalled: Vec::new(),
    };
    let mut pause = Duration::from_millis(1);
    loop {
        tree.reap_zombies();
        let members = tree.census();
        if members.is_empty() {
            break;
        }
        if let Some(c) = &tree.cgroup {
            let _ = c.kill_all(Duration::from_millis(200));
        }
        if let Some(g) = tree.group_signal_safe(&members) {
            let _ = crate::sys::killpg(g, Signal::SIGKILL);
        }
        for p in tree.signal_members(&members, Signal::SIGKILL) {
            if !record.signalled.contains(&p) {
                record.signalled.push(p);
            }
        }
        if Instant::now() >= deadline {
            break;
        }
        std::thread::sleep(pause);
        pause = (pause * 2).min(Duration::from_millis(20));
    }
    if !record.signalled.is_empty() {
        log.signalled.extend(&record.signalled);
        log.stages.push(record);
    }
}

/// Whether the tree's cgroup is gone after the teardown; None without a cgroup.
fn remove_cgroup(tree: &Tree, tree_empty: bool) -> Option<bool> {
    tree.cgroup.as_ref().map(|c| {
        if tree_empty {
            // The kernel may report the last exit a moment after the census sees it.
            for _ in 0..50 {
                if c.remove().is_ok() || !c.exists() {
                    return true;
                }
                std::thread::sleep(Duration::from_millis(2));
            }
        }
        !c.exists()
    })
}

#[derive(PartialEq, Eq)]
enum Waited {
    Done,
    Deadline,
    Escalated,
}

/// Polls the census (fast at first, then every 25 ms) until `done(tree, census_empty)`, the
/// deadline, or an escalation.
fn wait(
    tree: &mut Tree,
    deadline: Instant,
    interrupt: Interrupt<'_>,
    mut done: impl FnMut(&mut Tree, bool) -> bool,
) -> Waited {
    let mut pause = Duration::from_millis(1);
    loop {
        tree.reap_zombies();
        let empty = tree.census().is_empty();
        if done(tree, empty) {
            return Waited::Done;
        }
        if interrupt() == Some(StopMode::Force) {
            return Waited::Escalated;
        }
        let now = Instant::now();
        if now >= deadline {
            return Waited::Deadline;
        }
        std::thread::sleep(pause.min(deadline - now));
        pause = (pause * 2).min(Duration::from_millis(25));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn leftover_lines_carry_the_callers_words() {
        let leftover = |pid, cmdline: &str| Leftover {
            pid,
            cmdline: cmdline.into(),
        };
        let report = TeardownReport {
            actor: "reap".into(),
            requested: StopMode::Graceful,
            escalated: false,
            backend: "process group 7".into(),
            stages: Vec::new(),
            signalled: Vec::new(),
            found: Vec::new(),
            leftovers: vec![
                leftover(42, "server --port 8000"),
                leftover(7, &"x".repeat(120)),
            ],
            elapsed_ms: 0,
            cgroup_removed: None,
            leader_exit: None,
            pipes_at_eof: None,
            shm: ShmCleanup::default(),
        };
        let plain = report.leftover_lines();
        assert_eq!(plain[0], "left over: pid=42       server --port 8000");
        assert_eq!(
            plain[1],
            format!("left over: pid=7        {}", "x".repeat(100))
        );
        let told = report.leftover_lines_with(|l| {
            if l.pid == 42 {
                "  (holds 1 thing)".into()
            } else {
                String::new()
            }
        });
        assert_eq!(
            told[0],
            "left over: pid=42       server --port 8000  (holds 1 thing)"
        );
        assert_eq!(told[1], plain[1]);
    }
}
