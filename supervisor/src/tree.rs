//! What a run owns and how its processes are found: the census.
//!
//! No single mechanism sees every process a server can start
//! (docs/design/processes.md#finding-every-member), so one census pass over `/proc` takes the
//! union of: the run's cgroup, its process group, the shepherd's session, children adopted by
//! the subreaper, every process already tracked by pidfd, and the run's marker variable in the
//! initial environment. The caller, its ancestors and any pid it protects are never members.

use std::collections::{HashMap, HashSet};

use nix::sys::signal::Signal;

use crate::cgroup::Cgroup;
use crate::names::Marker;
use crate::pidfd::Tracked;
use crate::procfs::{ProcId, ProcInfo, ProcScanner};
use crate::sys;

/// Why a process counts as part of the tree (the first reason found).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Why {
    Leader,
    Cgroup,
    Group,
    Session,
    Adopted,
    Tracked,
    Marker,
}

/// One live member of the tree.
#[derive(Clone, Debug)]
pub struct Member {
    pub info: ProcInfo,
    pub why: Why,
}

/// Which children of the calling process belong to the tree.
#[derive(Clone, Debug, Default)]
pub enum Adoption {
    /// None (attach mode, reconciliation).
    #[default]
    None,
    /// Every child (the shepherd: it only ever started the server, so anything reparented to it
    /// came from the server's tree).
    AllChildren,
    /// Children outside our own session that we did not start (the supervisor after a shepherd
    /// died: the shepherd's orphans are reparented to it, its own helpers are in its session).
    /// `excluded` says which children are our own (other shepherds); it is asked at the moment
    /// of the decision, so a shepherd started during the teardown is never taken.
    Orphans { excluded: fn(i32) -> bool },
}

/// The handles on one run's processes.
#[derive(Debug)]
pub struct Tree {
    pub scan: ProcScanner,
    /// The variable and value every process of the run carries (Jenkins' ProcessTreeKiller
    /// idea).
    pub marker: Option<Marker>,
    pub leader: Option<Tracked>,
    /// The leader is our child and is kept unreaped until the teardown ends, so its pid — and
    /// the process group id — cannot be recycled while we signal the group.
    pub leader_is_child: bool,
    pub pgid: Option<i32>,
    /// A session whose every member is ours (the shepherd's own session).
    pub session: Option<i32>,
    pub cgroup: Option<Cgroup>,
    pub adoption: Adoption,
    pub tracked: HashMap<ProcId, Tracked>,
    pub protect: HashSet<i32>,
    me: i32,
    my_session: i32,
}

impl Tree {
    /// An empty tree that protects the caller and its ancestors.
    pub fn new(scan: ProcScanner) -> Tree {
        let me = sys::getpid();
        let protect: HashSet<i32> = scan.ancestors(me).into_iter().collect();
        let my_session = scan.stat(me).map(|s| s.session).unwrap_or(0);
        Tree {
            scan,
            marker: None,
            leader: None,
            leader_is_child: false,
            pgid: None,
            session: None,
            cgroup: None,
            adoption: Adoption::None,
            tracked: HashMap::new(),
            protect,
            me,
            my_session,
        }
    }

    /// The leader's pid, if there is one.
    pub fn leader_pid(&self) -> Option<i32> {
        self.leader.as_ref().map(|l| l.pid())
    }

    /// Whether the leader still runs.
    pub fn leader_alive(&self) -> bool {
        self.leader.as_ref().is_some_and(|l| l.is_alive(&self.scan))
    }

    /// Adds an identity to track (e.g. one reported by a shepherd).
    pub fn track(&mut self, id: ProcId) {
        if self.protect.contains(&id.pid) || self.tracked.contains_key(&id) {
            return;
        }
        if let Some(t) = Tracked::open(&self.scan, id) {
            self.tracked.insert(id, t);
        }
    }

    /// One pass over the process table: every live member, by pid.
    pub fn census(&mut self) -> Vec<Member> {
        let in_cgroup: HashSet<i32> = self
            .cgroup
            .as_ref()
            .map(|c| c.procs().into_iter().collect())
            .unwrap_or_default();
        let leader_id = self.leader.as_ref().map(|l| l.id);
        let mut out = Vec::new();
        for pid in self.scan.pids() {
            if self.protect.contains(&pid) {
                continue;
            }
            let Some(st) = self.scan.stat(pid) else {
                continue;
            };
            if st.state == 'Z' || st.state == 'X' {
                continue;
            }
            let id = ProcId {
                pid,
                starttime: st.starttime,
            };
            let why = if Some(id) == leader_id {
                Some(Why::Leader)
            } else if in_cgroup.contains(&pid) {
                Some(Why::Cgroup)
            } else if self.pgid.is_some_and(|g| g > 1 && st.pgrp == g) {
                Some(Why::Group)
            } else if self.session.is_some_and(|s| s > 1 && st.session == s) {
                Some(Why::Session)
            } else if st.ppid == self.me && self.adopts(pid, st.session) {
                Some(Why::Adopted)
            } else if self.tracked.contains_key(&id) {
                Some(Why::Tracked)
            } else if self.has_marker(pid) {
                Some(Why::Marker)
            } else {
                None
            };
            let Some(why) = why else { continue };
            let Some(mut info) = self.scan.read(pid) else {
                continue;
            };
            if info.starttime != st.starttime {
                continue; // recycled between the two reads
            }
            info.state = st.state;
            if !self.tracked.contains_key(&id) {
                if let Some(t) = Tracked::open(&self.scan, id) {
                    self.tracked.insert(id, t);
                }
            }
            out.push(Member { info, why });
        }
        out
    }

    fn adopts(&self, pid: i32, session: i32) -> bool {
        match &self.adoption {
            Adoption::None => false,
            Adoption::AllChildren => true,
            Adoption::Orphans { excluded } => !excluded(pid) && session != self.my_session,
        }
    }

    fn has_marker(&self, pid: i32) -> bool {
        match &self.marker {
            Some(m) => self.scan.environ_var(pid, &m.env).as_deref() == Some(m.run_id.as_str()),
            None => false,
        }
    }

    /// Whether signalling the process group is safe now: the group id cannot have been
    /// recycled while the leader is our unreaped child or a member of the group was just seen.
    pub fn group_signal_safe(&self, members: &[Member]) -> Option<i32> {
        let g = self.pgid.filter(|&g| g > 1)?;
        if self.protect.contains(&g) {
            return None;
        }
        if self.leader_is_child || members.iter().any(|m| m.info.pgrp == g) {
            Some(g)
        } else {
            None
        }
    }

    /// Sends `sig` to every member (by pidfd) and returns the pids signalled.
    pub fn signal_members(&self, members: &[Member], sig: Signal) -> Vec<i32> {
        let mut sent = Vec::new();
        for m in members {
            let id = m.info.id();
            let ok = match self.tracked.get(&id) {
                Some(t) => t.signal(&self.scan, sig),
                None => Tracked::open(&self.scan, id).is_some_and(|t| t.signal(&self.scan, sig)),
            };
            if ok {
                sent.push(m.info.pid);
            }
        }
        sent
    }

    /// Reaps exited children that belong to us (never the leader while `leader_is_child`) and
    /// returns how each ended (the census of deaths needs it: once reaped, only a 6.15+ kernel
    /// could still tell).
    pub fn reap_zombies(&mut self) -> Vec<(i32, crate::ExitKind)> {
        let mut reaped = Vec::new();
        if matches!(self.adoption, Adoption::None) && !self.leader_is_child {
            return reaped;
        }
        let leader = self.leader_pid();
        for pid in self.scan.pids() {
            if Some(pid) == leader && self.leader_is_child {
                continue;
            }
            let Some(st) = self.scan.stat(pid) else {
                continue;
            };
            if st.ppid != self.me || st.state != 'Z' {
                continue;
            }
            let ours = match &self.adoption {
                Adoption::None => false,
                Adoption::AllChildren => true,
                Adoption::Orphans { excluded } => !excluded(pid) && st.session != self.my_session,
            };
            if ours {
                if let sys::Reaped::Exited(pid, kind) = sys::reap(pid) {
                    reaped.push((pid, kind));
                }
            }
        }
        reaped
    }

    /// Reaps the leader (at the end of a teardown) and returns how it ended, if it was ours.
    pub fn reap_leader(&mut self) -> Option<crate::ExitKind> {
        if !self.leader_is_child {
            return None;
        }
        let pid = self.leader_pid()?;
        match sys::reap(pid) {
            sys::Reaped::Exited(_, kind) => {
                self.leader_is_child = false;
                Some(kind)
            }
            sys::Reaped::NoChild => {
                self.leader_is_child = false;
                None
            }
            sys::Reaped::NotYet => None,
        }
    }
}
