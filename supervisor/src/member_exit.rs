//! Deaths in the tree: which member ended, how, and whether the OOM killer did it
//! (docs/supervision.md, "Every death is an event").
//!
//! The shepherd watches every member it has seen in a census through its pidfd (in the same
//! `poll` as its control socket), so an exit is noticed at once, not at the next census. How
//! the member ended comes from whatever the kernel still knows:
//!
//! 1. a child the shepherd reaped itself (the leader, orphans adopted as subreaper): `waitid`;
//! 2. a zombie whose parent has not reaped it yet: field 52 of `/proc/PID/stat` (its wait
//!    status, readable by the same user);
//! 3. a process its own parent already reaped: `PIDFD_GET_INFO` with `PIDFD_INFO_EXIT` (6.15+);
//! 4. else "status unknown" (an older kernel after the parent reaped it).
//!
//! An OOM kill is named only when the member died by SIGKILL **and** the `oom_kill` counter of
//! the memory cgroup it lived in rose since it was first seen there (the counter is
//! cgroup-wide, so each rise is claimed by one death only). The counter is cgroup v2's
//! `memory.events` or, on hosts whose memory controller is still on cgroup v1, the `oom_kill`
//! line of `memory.oom_control`; which one is read from the member's `/proc/PID/cgroup`, so a
//! member moved into another cgroup while it runs is followed there.
//!
//! The crate reports members and how they ended; what a death means to an inference server,
//! and how it is worded, is the caller's business.

use std::collections::{HashMap, HashSet};
use std::os::fd::BorrowedFd;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::procfs::{ProcId, ProcInfo, ProcScanner};
use crate::tree::Tree;
use nix::sys::signal::Signal;

use crate::ExitKind;

/// At most this many arguments of a member's command line travel with its exit (the name is
/// the first; the rest only tell an interpreter's script apart).
const ARGV_KEPT: usize = 4;
/// Each of them cut to this many bytes.
const ARG_BYTES: usize = 200;

/// One member of the tree that ended while the shepherd watched.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct MemberExit {
    pub pid: i32,
    pub starttime: u64,
    /// The first arguments of its command line when last seen alive: a retitled process
    /// (`VLLM::EngineCore`) shows its title as `argv[0]`.
    pub argv: Vec<String>,
    /// Its `comm` (15 bytes at most).
    pub comm: String,
    /// It was the leader (the command the shepherd started).
    pub leader: bool,
    /// How it ended; None when the kernel could no longer tell.
    pub status: Option<ExitKind>,
    /// Killed by the OOM killer: SIGKILL while its memory cgroup's `oom_kill` count rose.
    pub oom_kill: bool,
    /// When the shepherd saw it gone, in milliseconds since the Unix epoch.
    pub at_unix_ms: u64,
    /// The name ([`MemberExit::name`]) of its parent when last seen, where the parent was a
    /// member too.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent: Option<String>,
}

impl MemberExit {
    pub fn id(&self) -> ProcId {
        ProcId {
            pid: self.pid,
            starttime: self.starttime,
        }
    }

    /// A process known only from outside its tree (a node agent seen gone through its stream):
    /// `pid` and its names, ended now as `status` tells, its start time unknown (0).
    pub fn seen_gone(
        pid: i32,
        argv: Vec<String>,
        comm: &str,
        leader: bool,
        status: Option<ExitKind>,
    ) -> MemberExit {
        MemberExit {
            pid,
            starttime: 0,
            argv,
            comm: comm.to_string(),
            leader,
            status,
            oom_kill: false,
            at_unix_ms: unix_ms(),
            parent: None,
        }
    }

    /// `argv[0]` (a process title survives there; `comm` is cut at 15 bytes), else `comm`.
    pub fn name(&self) -> &str {
        self.argv
            .first()
            .map(String::as_str)
            .filter(|a| !a.is_empty())
            .unwrap_or(&self.comm)
    }

    /// It carries its parent's name: a fork that has not (yet) run a program of its own. A
    /// title set by setproctitle lives in the process's memory, so a child forked to run a
    /// helper shows its parent's title until it execs; one that ends in that gap, or never
    /// execs, is the parent's helper, not the titled process itself.
    pub fn named_as_its_parent(&self) -> bool {
        self.parent.as_deref() == Some(self.name())
    }
}

/// The `oom_kill` count in a `memory.events` (v2) or `memory.oom_control` (v1) text.
pub fn parse_oom_kill(text: &str) -> Option<u64> {
    text.lines().find_map(|l| {
        let mut it = l.split_whitespace();
        (it.next() == Some("oom_kill"))
            .then(|| it.next()?.parse().ok())
            .flatten()
    })
}

/// Where the memory controller's hierarchies are mounted.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MemoryMounts {
    /// The cgroup2 mount (its `memory.events` exist only where the controller is enabled).
    pub v2: Option<PathBuf>,
    /// A cgroup v1 hierarchy carrying the memory controller: (root within it, mount point).
    pub v1: Option<(String, PathBuf)>,
}

impl MemoryMounts {
    /// From `/proc/self/mountinfo`.
    pub fn system() -> MemoryMounts {
        std::fs::read_to_string("/proc/self/mountinfo")
            .map(|t| MemoryMounts::parse(&t))
            .unwrap_or_default()
    }

    /// From a mountinfo text: `id parent maj:min root mountpoint opts [optional…] - fstype
    /// source superopts`.
    pub fn parse(info: &str) -> MemoryMounts {
        let mut m = MemoryMounts::default();
        for line in info.lines() {
            let Some((left, right)) = line.split_once(" - ") else {
                continue;
            };
            let l: Vec<&str> = left.split_whitespace().collect();
            let r: Vec<&str> = right.split_whitespace().collect();
            let (Some(root), Some(mount)) = (l.get(3), l.get(4)) else {
                continue;
            };
            match r.first() {
                Some(&"cgroup2") if m.v2.is_none() => m.v2 = Some(PathBuf::from(mount)),
                Some(&"cgroup")
                    if m.v1.is_none()
                        && r.get(2)
                            .is_some_and(|o| o.split(',').any(|x| x == "memory")) =>
                {
                    m.v1 = Some((root.to_string(), PathBuf::from(mount)));
                }
                _ => {}
            }
        }
        m
    }

    /// The OOM counter file for a process whose `/proc/PID/cgroup` reads `text`: the v1 memory
    /// hierarchy's `memory.oom_control` when the controller is there, else v2's
    /// `memory.events`; None when neither file exists (no memory controller at all).
    pub fn counter_for(&self, text: &str) -> Option<PathBuf> {
        let mut v2_path = None;
        for line in text.lines() {
            let mut parts = line.splitn(3, ':');
            let (_, ctrls, path) = (parts.next(), parts.next()?, parts.next()?);
            if ctrls.is_empty() {
                v2_path = Some(path.trim().to_string());
            } else if ctrls.split(',').any(|c| c == "memory") {
                if let Some((root, mount)) = &self.v1 {
                    let f = under(mount, root, path.trim()).join("memory.oom_control");
                    if f.exists() {
                        return Some(f);
                    }
                }
            }
        }
        // A v2 cgroup without the controller (the run's own, below a limited one) is charged
        // to its nearest ancestor that has it, whose hierarchical memory.events counts the
        // kills; the root has none.
        let mount = self.v2.as_ref()?;
        let mut dir = under(mount, "/", &v2_path?);
        while dir != *mount && dir.starts_with(mount) {
            let f = dir.join("memory.events");
            if f.exists() {
                return Some(f);
            }
            if !dir.pop() {
                break;
            }
        }
        None
    }
}

/// Whether a `/proc/PID/cgroup` text puts the process in the root of its memory hierarchy
/// (the v1 `memory` line's path, else the v2 one, is `/`).
fn in_root_memory_cgroup(text: &str) -> bool {
    let mut v2 = None;
    for line in text.lines() {
        let mut parts = line.splitn(3, ':');
        let (Some(_), Some(ctrls), Some(path)) = (parts.next(), parts.next(), parts.next()) else {
            continue;
        };
        if ctrls.split(',').any(|c| c == "memory") {
            return path.trim() == "/";
        }
        if ctrls.is_empty() {
            v2 = Some(path.trim() == "/");
        }
    }
    v2.unwrap_or(false)
}

/// A cgroup path (as `/proc/PID/cgroup` writes it) under a mount whose root is `root`.
fn under(mount: &Path, root: &str, path: &str) -> PathBuf {
    let rel = if root == "/" {
        path
    } else {
        path.strip_prefix(root).unwrap_or(path)
    };
    mount.join(rel.trim_start_matches('/'))
}

fn read_counter(path: &Path) -> Option<u64> {
    parse_oom_kill(&std::fs::read_to_string(path).ok()?)
}

#[derive(Debug)]
struct Known {
    argv: Vec<String>,
    comm: String,
    ppid: i32,
    leader: bool,
    /// The OOM counters of every memory cgroup it was seen in (a member may be moved).
    oom: Vec<PathBuf>,
}

/// The shepherd's watch over its members' deaths.
#[derive(Debug)]
pub struct MemberWatch {
    scan: ProcScanner,
    mounts: MemoryMounts,
    known: HashMap<ProcId, Known>,
    ended: HashSet<ProcId>,
    /// The last name of each member that ended, by pid: a child may outlive its parent.
    ended_names: HashMap<i32, String>,
    /// Statuses the shepherd reaped itself (pid → status), kept until their death is reported.
    reaped: HashMap<i32, ExitKind>,
    /// Per OOM counter file: the count already explained (its value when first seen, plus
    /// every kill claimed by a death since).
    claimed: HashMap<PathBuf, u64>,
}

impl MemberWatch {
    pub fn new(scan: ProcScanner) -> MemberWatch {
        MemberWatch {
            scan,
            mounts: MemoryMounts::system(),
            known: HashMap::new(),
            ended: HashSet::new(),
            ended_names: HashMap::new(),
            reaped: HashMap::new(),
            claimed: HashMap::new(),
        }
    }

    /// As [`MemberWatch::new`], with other mount points (tests).
    pub fn with_mounts(scan: ProcScanner, mounts: MemoryMounts) -> MemberWatch {
        MemberWatch {
            mounts,
            ..MemberWatch::new(scan)
        }
    }

    /// Starts (or keeps) watching a member: its name, and the cgroup whose OOM counter tells
    /// whether the OOM killer took it. Called with every census, since a process may retitle
    /// itself or move to another cgroup after it started.
    pub fn observe(&mut self, info: &ProcInfo, leader: bool) {
        let id = info.id();
        if self.ended.contains(&id) {
            return;
        }
        let text =
            std::fs::read_to_string(self.scan.root().join(info.pid.to_string()).join("cgroup"))
                .unwrap_or_default();
        // An exiting task is moved to the root cgroup before it turns zombie (the OOM killer's
        // victim takes a while to exit): never follow a member from its cgroup to the root.
        let oom = self.mounts.counter_for(&text);
        let to_root = in_root_memory_cgroup(&text);
        if let Some(path) = &oom {
            if !self.claimed.contains_key(path) {
                if let Some(v) = read_counter(path) {
                    self.claimed.insert(path.clone(), v);
                }
            }
        }
        let argv: Vec<String> = info
            .argv
            .iter()
            .take(ARGV_KEPT)
            .map(|a| cut(a, ARG_BYTES))
            .collect();
        let entry = self.known.entry(id).or_insert_with(|| Known {
            argv: Vec::new(),
            comm: String::new(),
            ppid: info.ppid,
            leader,
            oom: Vec::new(),
        });
        // A zombie or a kernel thread reads as an empty command line: keep the last one seen.
        if !argv.is_empty() {
            entry.argv = argv;
        }
        if !info.comm.is_empty() {
            entry.comm = info.comm.clone();
        }
        // A zombie's parent is still its own (a reaper adopts it only once its parent ends):
        // keep the first one seen, which started it.
        if entry.ppid <= 0 {
            entry.ppid = info.ppid;
        }
        entry.leader |= leader;
        if let Some(path) = oom {
            if (entry.oom.is_empty() || !to_root) && !entry.oom.contains(&path) {
                entry.oom.push(path);
            }
        }
    }

    /// Statuses of children just reaped (by [`Tree::reap_zombies`]).
    pub fn note_reaped(&mut self, reaped: &[(i32, ExitKind)]) {
        for &(pid, kind) in reaped {
            if self.known.keys().any(|id| id.pid == pid) {
                self.reaped.insert(pid, kind);
            }
        }
    }

    /// How many members are watched and not yet ended.
    pub fn watching(&self) -> usize {
        self.known.len()
    }

    /// The pidfds to add to a poll set: those of members still thought alive (a dead one's
    /// stays readable, so it leaves the set once reported).
    pub fn fds<'t>(&self, tree: &'t Tree) -> Vec<BorrowedFd<'t>> {
        self.known
            .keys()
            .filter_map(|id| handle(tree, *id).and_then(|t| t.pidfd()))
            .collect()
    }

    /// Every watched member that has ended since the last call, with how it ended.
    pub fn check(&mut self, tree: &Tree) -> Vec<MemberExit> {
        let dead: Vec<ProcId> = self
            .known
            .keys()
            .copied()
            .filter(|id| match handle(tree, *id) {
                Some(t) => !t.is_alive(&self.scan),
                None => !self.scan.is_alive(*id),
            })
            .collect();
        // Seen dead together, the leader goes last: its exit is usually the consequence of
        // another's (vLLM's API server exits after its engine).
        let mut dead = dead;
        dead.sort_by_key(|id| (self.known.get(id).is_some_and(|k| k.leader), id.pid));
        let now = unix_ms();
        // Parents are named before any of the dead leaves `known`: a parent and its fork may
        // be seen gone together.
        let parents: Vec<Option<String>> = dead.iter().map(|id| self.parent_name(*id)).collect();
        let mut out = Vec::new();
        for (id, parent) in dead.into_iter().zip(parents) {
            let Some(k) = self.known.remove(&id) else {
                continue;
            };
            self.ended.insert(id);
            self.ended_names.insert(id.pid, known_name(&k));
            let status = self.status_of(tree, id, k.leader);
            let oom_kill = status == Some(ExitKind::Signal(Signal::SIGKILL))
                && k.oom.iter().any(|p| self.claim_oom_kill(p));
            out.push(MemberExit {
                pid: id.pid,
                starttime: id.starttime,
                argv: k.argv,
                comm: k.comm,
                leader: k.leader,
                status,
                oom_kill,
                at_unix_ms: now,
                parent,
            });
        }
        out
    }

    /// The name of `id`'s parent as last seen, where the parent is (or was) a watched member.
    fn parent_name(&self, id: ProcId) -> Option<String> {
        let ppid = self.known.get(&id)?.ppid;
        if ppid <= 0 {
            return None;
        }
        match self.known.iter().find(|(p, _)| p.pid == ppid) {
            Some((_, parent)) => Some(known_name(parent)),
            None => self.ended_names.get(&ppid).cloned(),
        }
    }

    fn status_of(&mut self, tree: &Tree, id: ProcId, leader: bool) -> Option<ExitKind> {
        if let Some(k) = self.reaped.remove(&id.pid) {
            return Some(k);
        }
        if leader && tree.leader_is_child && tree.leader_pid() == Some(id.pid) {
            if let Some(k) = crate::sys::has_exited_unreaped(id.pid) {
                return Some(k);
            }
        }
        if let Some(st) = self.scan.stat(id.pid) {
            if st.starttime == id.starttime && st.state == 'Z' {
                if let Some(code) = st.exit_code {
                    return Some(ExitKind::from_wait_status(code));
                }
            }
        }
        handle(tree, id).and_then(|t| t.exit_status())
    }

    /// Whether the counter rose past what earlier deaths explained; if so, this death takes one.
    fn claim_oom_kill(&mut self, path: &Path) -> bool {
        let Some(now) = read_counter(path) else {
            return false;
        };
        let seen = self.claimed.entry(path.to_path_buf()).or_insert(now);
        if now > *seen {
            *seen += 1;
            true
        } else {
            false
        }
    }
}

/// A member's name as [`MemberExit::name`] gives it.
fn known_name(k: &Known) -> String {
    match k.argv.first() {
        Some(a) if !a.is_empty() => a.clone(),
        _ => k.comm.clone(),
    }
}

fn handle(tree: &Tree, id: ProcId) -> Option<&crate::pidfd::Tracked> {
    match &tree.leader {
        Some(l) if l.id == id => Some(l),
        _ => tree.tracked.get(&id),
    }
}

fn cut(s: &str, max: usize) -> String {
    if s.len() <= max {
        return s.to_string();
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    s[..end].to_string()
}

fn unix_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn oom_kill_counts_parse_in_both_formats() {
        let v2 = "low 0\nhigh 0\nmax 12\noom 3\noom_kill 2\noom_group_kill 0\n";
        assert_eq!(parse_oom_kill(v2), Some(2));
        let v1 = "oom_kill_disable 0\nunder_oom 0\noom_kill 7\n";
        assert_eq!(parse_oom_kill(v1), Some(7));
        // `oom_kill_disable` and `oom_group_kill` are other keys.
        assert_eq!(
            parse_oom_kill("oom_kill_disable 1\noom_group_kill 4\n"),
            None
        );
        assert_eq!(parse_oom_kill(""), None);
    }

    /// The mountinfo of this project's hybrid build host: v2 without controllers at
    /// `/sys/fs/cgroup/unified`, the memory controller on v1.
    const HYBRID: &str = "\
30 24 0:26 / /sys/fs/cgroup/unified rw,nosuid,nodev,noexec,relatime shared:5 - cgroup2 cgroup2 rw,nsdelegate
33 29 0:29 / /sys/fs/cgroup/memory rw,nosuid,nodev,noexec,relatime shared:12 - cgroup cgroup rw,memory
34 29 0:30 / /sys/fs/cgroup/pids rw,nosuid,nodev,noexec,relatime shared:13 - cgroup cgroup rw,pids
";

    #[test]
    fn mounts_find_the_memory_controller_on_either_version() {
        let m = MemoryMounts::parse(HYBRID);
        assert_eq!(m.v2, Some(PathBuf::from("/sys/fs/cgroup/unified")));
        assert_eq!(
            m.v1,
            Some(("/".to_string(), PathBuf::from("/sys/fs/cgroup/memory")))
        );
        let pure = "25 1 0:22 / /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n";
        let m = MemoryMounts::parse(pure);
        assert_eq!(m.v2, Some(PathBuf::from("/sys/fs/cgroup")));
        assert_eq!(m.v1, None);
    }

    #[test]
    fn the_counter_file_follows_the_controller() {
        let tmp = tempfile::tempdir().unwrap();
        let v1 = tmp.path().join("memory");
        let v2 = tmp.path().join("unified");
        std::fs::create_dir_all(v1.join("jobs/a")).unwrap();
        std::fs::create_dir_all(v2.join("run/x")).unwrap();
        std::fs::write(v1.join("jobs/a/memory.oom_control"), "oom_kill 0\n").unwrap();
        let m = MemoryMounts {
            v2: Some(v2.clone()),
            v1: Some(("/".into(), v1.clone())),
        };
        let hybrid = "4:memory:/jobs/a\n1:cpu:/\n0::/run/x\n";
        assert_eq!(
            m.counter_for(hybrid),
            Some(v1.join("jobs/a/memory.oom_control"))
        );
        // v2 without the memory controller has no memory.events: no counter at all.
        let v2_only = MemoryMounts {
            v2: Some(v2.clone()),
            v1: None,
        };
        assert_eq!(v2_only.counter_for(hybrid), None);
        // The run's cgroup below a limited one: the limited one counts its kills.
        std::fs::write(v2.join("run/memory.events"), "oom_kill 1\n").unwrap();
        assert_eq!(
            v2_only.counter_for("0::/run/x\n"),
            Some(v2.join("run/memory.events"))
        );
        std::fs::write(v2.join("run/x/memory.events"), "oom_kill 1\n").unwrap();
        assert_eq!(
            v2_only.counter_for("0::/run/x\n"),
            Some(v2.join("run/x/memory.events"))
        );
        // A v1 mount whose root is not the hierarchy's (a container) strips that root.
        let inner = MemoryMounts {
            v2: None,
            v1: Some(("/jobs".into(), v1.join("jobs"))),
        };
        assert_eq!(
            inner.counter_for("4:memory:/jobs/a\n"),
            Some(v1.join("jobs/a/memory.oom_control"))
        );
    }

    #[test]
    fn an_exiting_member_seen_in_the_root_keeps_its_cgroup() {
        assert!(in_root_memory_cgroup("4:memory:/\n0::/\n"));
        assert!(!in_root_memory_cgroup("4:memory:/jobs/a\n0::/\n"));
        assert!(in_root_memory_cgroup("0::/\n"));
        assert!(!in_root_memory_cgroup("0::/run/x\n"));
        let tmp = tempfile::tempdir().unwrap();
        let v1 = tmp.path().to_path_buf();
        std::fs::create_dir_all(v1.join("jobs/a")).unwrap();
        std::fs::write(v1.join("memory.oom_control"), "oom_kill 0\n").unwrap();
        std::fs::write(v1.join("jobs/a/memory.oom_control"), "oom_kill 0\n").unwrap();
        // A synthetic /proc with one process whose cgroup file the test rewrites.
        let proc_root = tmp.path().join("proc");
        std::fs::create_dir_all(proc_root.join("7")).unwrap();
        let mounts = MemoryMounts {
            v2: None,
            v1: Some(("/".into(), v1.clone())),
        };
        let mut w = MemberWatch::with_mounts(ProcScanner::new(&proc_root), mounts);
        let info = ProcInfo {
            pid: 7,
            ppid: 1,
            pgrp: 7,
            session: 7,
            state: 'R',
            starttime: 9,
            comm: "VLLM::EngineCor".into(),
            argv: vec!["VLLM::EngineCore".into()],
            uid: None,
        };
        let id = info.id();
        std::fs::write(proc_root.join("7/cgroup"), "4:memory:/jobs/a\n").unwrap();
        w.observe(&info, false);
        std::fs::write(proc_root.join("7/cgroup"), "4:memory:/\n").unwrap();
        w.observe(&info, false);
        assert_eq!(w.known[&id].oom, vec![v1.join("jobs/a/memory.oom_control")]);
    }

    #[test]
    fn each_rise_of_the_counter_is_claimed_once() {
        let tmp = tempfile::tempdir().unwrap();
        let f = tmp.path().join("memory.events");
        std::fs::write(&f, "oom_kill 5\n").unwrap();
        let mut w = MemberWatch::with_mounts(ProcScanner::system(), MemoryMounts::default());
        w.claimed.insert(f.clone(), 5);
        assert!(!w.claim_oom_kill(&f), "no rise, no OOM kill");
        std::fs::write(&f, "oom_kill 6\n").unwrap();
        assert!(w.claim_oom_kill(&f));
        assert!(!w.claim_oom_kill(&f), "one kill explains one death");
    }

    #[test]
    fn names_prefer_the_title() {
        let mut e = MemberExit {
            pid: 1,
            starttime: 2,
            argv: vec!["VLLM::EngineCore".into()],
            comm: "VLLM::EngineCor".into(),
            leader: false,
            status: None,
            oom_kill: false,
            at_unix_ms: 0,
            parent: None,
        };
        assert_eq!(e.name(), "VLLM::EngineCore");
        e.argv.clear();
        assert_eq!(e.name(), "VLLM::EngineCor");
        assert_eq!(cut("ééé", 3), "é");
    }
}
