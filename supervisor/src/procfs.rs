//! The `/proc` scanner: every process with its parent, group, session, state, start time, owner,
//! name and argument vector, read from a `/proc`-style root (the real one, or a synthetic
//! folder in tests).
//!
//! Entries that vanish or cannot be read while scanning are skipped; non-numeric entries
//! (`self`, `sys`) are ignored. `stat` is parsed from the **last** `)`, because `comm` may hold
//! spaces and parentheses (`(VLLM::EngineCore)`). A synthetic `stat` may stop after the ppid:
//! missing later fields read as 0.

use std::collections::HashMap;
use std::fs;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

/// The fields of `/proc/PID/stat` the crate uses.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Stat {
    pub comm: String,
    /// `R`, `S`, `D`, `Z` (zombie), `T`, …
    pub state: char,
    pub ppid: i32,
    pub pgrp: i32,
    pub session: i32,
    /// Clock ticks since boot: with the pid, an identity that a recycled pid never repeats.
    pub starttime: u64,
    /// Fields 14–15: the process's own user and system time (not its reaped children's, which
    /// a reader summing a tree would count twice), in clock ticks (`sysconf(_SC_CLK_TCK)` a
    /// second).
    pub cpu_ticks: u64,
    /// Field 52, the wait status of a zombie (Linux 3.5+; None when the line stops earlier):
    /// how a process ended while its parent has not reaped it yet.
    pub exit_code: Option<i32>,
}

/// Parses a `stat` line: `pid (comm) S ppid pgrp session tty tpgid flags … starttime …`.
pub fn parse_stat(text: &str) -> Option<Stat> {
    let open = text.find('(')?;
    let close = text.rfind(')')?;
    if close < open {
        return None;
    }
    let comm = text[open + 1..close].to_string();
    let rest: Vec<&str> = text[close + 1..].split_whitespace().collect();
    let state = rest.first()?.chars().next()?;
    let ppid = rest.get(1)?.parse().ok()?;
    let num = |i: usize| rest.get(i).and_then(|s| s.parse::<i64>().ok()).unwrap_or(0);
    Some(Stat {
        comm,
        state,
        ppid,
        pgrp: num(2) as i32,
        session: num(3) as i32,
        // Field 22 of stat; index 19 after the state (field 3).
        starttime: num(19).max(0) as u64,
        // Fields 14–15 (utime, stime): indexes 11–12.
        cpu_ticks: (11..=12).map(|i| num(i).max(0) as u64).sum(),
        // Field 52; index 49 after the state.
        exit_code: rest.get(49).and_then(|s| s.parse().ok()),
    })
}

/// Splits a `cmdline` into arguments: NUL-separated, empty arguments dropped, each stripped of
/// surrounding whitespace (a renamed process pads `argv[0]` with spaces).
pub fn parse_cmdline(bytes: &[u8]) -> Vec<String> {
    bytes
        .split(|&b| b == 0)
        .map(|a| String::from_utf8_lossy(a).trim().to_string())
        .filter(|a| !a.is_empty())
        .collect()
}

/// One process.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ProcInfo {
    pub pid: i32,
    pub ppid: i32,
    pub pgrp: i32,
    pub session: i32,
    pub state: char,
    pub starttime: u64,
    /// The kernel's short name (`comm`, 15 bytes at most: `VLLM::EngineCor`).
    pub comm: String,
    pub argv: Vec<String>,
    /// Real user id (from `status`, else the owner of the `/proc/PID` entry).
    pub uid: Option<u32>,
}

impl ProcInfo {
    /// The space-joined argument vector, or `[comm]` when it is empty (kernel threads, zombies).
    pub fn cmdline(&self) -> String {
        if self.argv.is_empty() {
            format!("[{}]", self.comm)
        } else {
            self.argv.join(" ")
        }
    }

    pub fn is_zombie(&self) -> bool {
        self.state == 'Z' || self.state == 'X'
    }

    pub fn id(&self) -> ProcId {
        ProcId {
            pid: self.pid,
            starttime: self.starttime,
        }
    }
}

/// A process identity that survives pid reuse: the pid and its start time.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize,
)]
pub struct ProcId {
    pub pid: i32,
    pub starttime: u64,
}

impl std::fmt::Display for ProcId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}", self.pid, self.starttime)
    }
}

impl std::str::FromStr for ProcId {
    type Err = ();
    /// `pid:starttime`.
    fn from_str(s: &str) -> Result<Self, ()> {
        let (p, t) = s.split_once(':').ok_or(())?;
        Ok(ProcId {
            pid: p.trim().parse().map_err(|_| ())?,
            starttime: t.trim().parse().map_err(|_| ())?,
        })
    }
}

/// Reads processes from a `/proc`-style root.
#[derive(Clone, Debug)]
pub struct ProcScanner {
    root: PathBuf,
}

impl Default for ProcScanner {
    fn default() -> Self {
        Self::system()
    }
}

impl ProcScanner {
    /// The real `/proc`.
    pub fn system() -> Self {
        Self::new("/proc")
    }

    pub fn new(root: impl Into<PathBuf>) -> Self {
        ProcScanner { root: root.into() }
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Whether the root looks like a process table (it exists and is a folder).
    pub fn available(&self) -> bool {
        self.root.is_dir()
    }

    /// Every numeric entry, ascending.
    pub fn pids(&self) -> Vec<i32> {
        let Ok(rd) = fs::read_dir(&self.root) else {
            return Vec::new();
        };
        let mut pids: Vec<i32> = rd
            .filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
            .filter(|&p: &i32| p > 0)
            .collect();
        pids.sort_unstable();
        pids
    }

    /// Just the `stat` fields of one process (cheaper than [`ProcScanner::read`]).
    pub fn stat(&self, pid: i32) -> Option<Stat> {
        let text = fs::read_to_string(self.root.join(pid.to_string()).join("stat")).ok()?;
        parse_stat(&text)
    }

    /// One process, or None when it vanished or is unreadable.
    pub fn read(&self, pid: i32) -> Option<ProcInfo> {
        let dir = self.root.join(pid.to_string());
        let stat = self.stat(pid)?;
        let comm = fs::read_to_string(dir.join("comm"))
            .map(|c| c.trim_end_matches('\n').to_string())
            .unwrap_or(stat.comm);
        let argv = fs::read(dir.join("cmdline"))
            .map(|b| parse_cmdline(&b))
            .unwrap_or_default();
        let uid = read_uid(&dir);
        Some(ProcInfo {
            pid,
            ppid: stat.ppid,
            pgrp: stat.pgrp,
            session: stat.session,
            state: stat.state,
            starttime: stat.starttime,
            comm,
            argv,
            uid,
        })
    }

    /// Every readable process, ascending by pid.
    pub fn all(&self) -> Vec<ProcInfo> {
        self.pids()
            .into_iter()
            .filter_map(|p| self.read(p))
            .collect()
    }

    /// The value of one variable in the process's *initial* environment, if readable.
    pub fn environ_var(&self, pid: i32, name: &str) -> Option<String> {
        let bytes = fs::read(self.root.join(pid.to_string()).join("environ")).ok()?;
        environ_lookup(&bytes, name)
    }

    /// The process's pid namespace (the `ns/pid` link, e.g. `pid:[4026531836]`), if readable.
    pub fn pid_namespace(&self, pid: i32) -> Option<String> {
        let link = fs::read_link(self.root.join(pid.to_string()).join("ns/pid")).ok()?;
        Some(link.to_string_lossy().into_owned())
    }

    /// Whether the process `id` still exists, is not a zombie and has the same start time.
    pub fn is_alive(&self, id: ProcId) -> bool {
        match self.stat(id.pid) {
            Some(s) => s.starttime == id.starttime && s.state != 'Z' && s.state != 'X',
            None => false,
        }
    }

    /// The identity of a live pid (None when gone).
    pub fn id_of(&self, pid: i32) -> Option<ProcId> {
        let s = self.stat(pid)?;
        Some(ProcId {
            pid,
            starttime: s.starttime,
        })
    }

    /// `pid` and all its ancestors (walk of ppids up to 0), as read from this root.
    pub fn ancestors(&self, pid: i32) -> Vec<i32> {
        let mut out = vec![pid];
        let mut cur = pid;
        for _ in 0..4096 {
            match self.stat(cur) {
                Some(s) if s.ppid > 0 && !out.contains(&s.ppid) => {
                    out.push(s.ppid);
                    cur = s.ppid;
                }
                _ => break,
            }
        }
        out
    }
}

/// `pid` and its ancestors within a process list (no file reads).
pub fn ancestors_in(procs: &[ProcInfo], pid: i32) -> Vec<i32> {
    let parent: HashMap<i32, i32> = procs.iter().map(|p| (p.pid, p.ppid)).collect();
    let mut out = vec![pid];
    let mut cur = pid;
    while let Some(&pp) = parent.get(&cur) {
        if pp <= 0 || out.contains(&pp) {
            break;
        }
        out.push(pp);
        cur = pp;
    }
    out
}

/// Finds `NAME=value` in a NUL-separated environment block.
pub fn environ_lookup(bytes: &[u8], name: &str) -> Option<String> {
    let key = name.as_bytes();
    bytes.split(|&b| b == 0).find_map(|kv| {
        if kv.len() > key.len() && kv.starts_with(key) && kv[key.len()] == b'=' {
            Some(String::from_utf8_lossy(&kv[key.len() + 1..]).into_owned())
        } else {
            None
        }
    })
}

fn read_uid(dir: &Path) -> Option<u32> {
    if let Ok(status) = fs::read_to_string(dir.join("status")) {
        for line in status.lines() {
            if let Some(rest) = line.strip_prefix("Uid:") {
                if let Some(uid) = rest.split_whitespace().next().and_then(|u| u.parse().ok()) {
                    return Some(uid);
                }
            }
        }
    }
    fs::metadata(dir).ok().map(|m| m.uid())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_parses_from_the_last_paren() {
        let s = parse_stat(
            "201 (VLLM::EngineCore) S 200 200 200 0 -1 4194560 1 0 0 0 0 0 0 0 20 0 1 0 12345 0 0",
        )
        .unwrap();
        assert_eq!(s.comm, "VLLM::EngineCore");
        assert_eq!((s.state, s.ppid, s.pgrp, s.session), ('S', 200, 200, 200));
        assert_eq!(s.starttime, 12345);
        // utime 11, stime 5 (fields 14-15); cutime 3, cstime 1 are the children's.
        let s = parse_stat(
            "201 (python3) S 200 200 200 0 -1 4194560 1 0 0 0 11 5 3 1 20 0 1 0 12345 0 0",
        )
        .unwrap();
        assert_eq!(s.cpu_ticks, 16);
        let s = parse_stat("7 (a) b) (c) R 1 7 7").unwrap();
        assert_eq!(s.comm, "a) b) (c");
        assert_eq!((s.state, s.ppid, s.pgrp, s.starttime), ('R', 1, 7, 0));
        // Short synthetic lines: fields past the ppid read as 0.
        let s = parse_stat("100 (server) S 1").unwrap();
        assert_eq!((s.ppid, s.pgrp, s.starttime), (1, 0, 0));
        assert!(parse_stat("garbage").is_none());
        assert!(parse_stat("1 (x)").is_none());
    }

    #[test]
    fn cmdline_drops_empty_args_and_strips_padding() {
        assert_eq!(
            parse_cmdline(b"VLLM::EngineCore                \0\0"),
            vec!["VLLM::EngineCore"]
        );
        assert_eq!(
            parse_cmdline(b"server\0serve\0m\0"),
            vec!["server", "serve", "m"]
        );
        assert!(parse_cmdline(b"").is_empty());
    }

    #[test]
    fn environ_lookup_matches_whole_names() {
        let env = b"A=1\0TOOL_RUN_ID_X=no\0TOOL_RUN_ID=r1\0";
        assert_eq!(environ_lookup(env, "TOOL_RUN_ID").as_deref(), Some("r1"));
        assert_eq!(environ_lookup(env, "B"), None);
    }

    #[test]
    fn reads_this_process() {
        let scan = ProcScanner::system();
        let me = scan.read(std::process::id() as i32).unwrap();
        assert_eq!(me.pid, std::process::id() as i32);
        assert!(me.starttime > 0);
        assert!(!me.argv.is_empty());
        assert!(scan.is_alive(me.id()));
        let anc = scan.ancestors(me.pid);
        assert_eq!(anc[0], me.pid);
        assert!(anc.len() >= 2);
    }
}
