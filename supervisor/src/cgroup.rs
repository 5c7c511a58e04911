//! The cgroup v2 backend: one child cgroup per run, created below our own cgroup when the
//! hierarchy is delegated to us (or we are root), so the whole tree — `setsid` and double-fork
//! escapees included — is one kernel-enforced handle. `cgroup.kill` (5.14+) empties it
//! atomically; older kernels get the freeze → kill each → thaw loop, as runc and systemd do.

use std::fs;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use nix::sys::signal::Signal;
use serde::{Deserialize, Serialize};

/// How to choose the backend (`--cgroup auto|require|off`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CgroupMode {
    /// A cgroup when one can be created here, else the process group.
    #[default]
    Auto,
    /// Fail when no cgroup can be created (e.g. `systemd-run --user --scope -p Delegate=yes`).
    Require,
    /// Never: process group, pidfds and the marker only.
    Off,
}

impl std::str::FromStr for CgroupMode {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "auto" => Ok(CgroupMode::Auto),
            "require" => Ok(CgroupMode::Require),
            "off" => Ok(CgroupMode::Off),
            _ => Err(format!("--cgroup must be auto, require or off, not '{s}'")),
        }
    }
}

impl std::fmt::Display for CgroupMode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            CgroupMode::Auto => "auto",
            CgroupMode::Require => "require",
            CgroupMode::Off => "off",
        })
    }
}

/// Why no cgroup could be used.
#[derive(Debug, thiserror::Error)]
pub enum CgroupError {
    #[error("no cgroup v2 hierarchy is mounted (see /proc/self/mountinfo)")]
    NoHierarchy,
    #[error("this process's cgroup v2 path is unknown (no 0:: line in /proc/self/cgroup)")]
    NoOwnPath,
    #[error("cannot create {path}: {source} (the cgroup is not delegated to this user)")]
    Create { path: PathBuf, source: io::Error },
    #[error("cannot move processes below {path}: {source} (no write access to its cgroup.procs)")]
    NotWritable { path: PathBuf, source: io::Error },
}

/// The cgroup2 mount point, from `/proc/self/mountinfo` (may be `/sys/fs/cgroup` or, on hybrid
/// hosts, `/sys/fs/cgroup/unified`).
pub fn mount_point() -> Option<PathBuf> {
    let info = fs::read_to_string("/proc/self/mountinfo").ok()?;
    parse_mountinfo_cgroup2(&info)
}

/// The cgroup2 mount point named in a mountinfo text.
pub fn parse_mountinfo_cgroup2(info: &str) -> Option<PathBuf> {
    for line in info.lines() {
        // `id parent maj:min root mountpoint opts [optional…] - fstype source superopts`
        let (left, right) = line.split_once(" - ")?;
        if right.split_whitespace().next() == Some("cgroup2") {
            return left.split_whitespace().nth(4).map(PathBuf::from);
        }
    }
    None
}

/// This process's cgroup v2 path (the `0::` line of `/proc/self/cgroup`), e.g. `/` or
/// `/user.slice/user-1000.slice/session-3.scope`.
pub fn own_path() -> Option<String> {
    let text = fs::read_to_string("/proc/self/cgroup").ok()?;
    text.lines()
        .find_map(|l| l.strip_prefix("0::"))
        .map(|p| p.trim().to_string())
}

/// A cgroup folder.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Cgroup {
    path: PathBuf,
}

impl Cgroup {
    /// Wraps an existing cgroup folder.
    pub fn at(path: impl Into<PathBuf>) -> Cgroup {
        Cgroup { path: path.into() }
    }

    /// Creates `<mount><own path>/<name>` and checks that processes can be moved into it.
    pub fn create(name: &str) -> Result<Cgroup, CgroupError> {
        let mount = mount_point().ok_or(CgroupError::NoHierarchy)?;
        let own = own_path().ok_or(CgroupError::NoOwnPath)?;
        let parent = mount.join(own.trim_start_matches('/'));
        // Moving a process from `parent` into a child needs write access to the common
        // ancestor's cgroup.procs, which is `parent` itself.
        let procs = parent.join("cgroup.procs");
        if let Err(source) = fs::OpenOptions::new().write(true).open(&procs) {
            return Err(CgroupError::NotWritable {
                path: parent,
                source,
            });
        }
        let path = parent.join(name);
        if let Err(source) = fs::create_dir(&path) {
            return Err(CgroupError::Create { path, source });
        }
        Ok(Cgroup { path })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Opens `cgroup.procs` for writing: the server writes `0` to it between fork and exec,
    /// so it and everything it starts are inside before any of its code runs.
    pub fn open_procs(&self) -> io::Result<fs::File> {
        fs::OpenOptions::new()
            .write(true)
            .open(self.path.join("cgroup.procs"))
    }

    /// The pids in the cgroup (empty when it is gone).
    pub fn procs(&self) -> Vec<i32> {
        fs::read_to_string(self.path.join("cgroup.procs"))
            .map(|t| t.lines().filter_map(|l| l.trim().parse().ok()).collect())
            .unwrap_or_default()
    }

    /// `populated` from `cgroup.events`; None when unreadable (e.g. removed).
    pub fn populated(&self) -> Option<bool> {
        let t = fs::read_to_string(self.path.join("cgroup.events")).ok()?;
        t.lines()
            .find_map(|l| l.strip_prefix("populated "))
            .map(|v| v.trim() == "1")
    }

    pub fn exists(&self) -> bool {
        self.path.is_dir()
    }

    /// Sends `sig` to every process in it (a snapshot of `cgroup.procs`).
    pub fn signal_all(&self, sig: Signal) -> Vec<i32> {
        let pids = self.procs();
        for &p in &pids {
            let _ = crate::sys::kill(p, sig);
        }
        pids
    }

    /// SIGKILLs everything inside: `cgroup.kill` when the kernel has it, else freeze, kill each
    /// listed process, thaw, repeated until empty (bounded by `budget`).
    pub fn kill_all(&self, budget: Duration) -> io::Result<()> {
        let kill = self.path.join("cgroup.kill");
        if kill.exists() {
            let mut f = fs::OpenOptions::new().write(true).open(&kill)?;
            return f.write_all(b"1");
        }
        let deadline = Instant::now() + budget;
        loop {
            let _ = self.set_frozen(true);
            let pids = self.procs();
            for &p in &pids {
                let _ = crate::sys::kill(p, Signal::SIGKILL);
            }
            let _ = self.set_frozen(false);
            if pids.is_empty() || Instant::now() >= deadline {
                return Ok(());
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    fn set_frozen(&self, frozen: bool) -> io::Result<()> {
        fs::write(
            self.path.join("cgroup.freeze"),
            if frozen { "1" } else { "0" },
        )
    }

    /// Removes the (empty) cgroup folder.
    pub fn remove(&self) -> io::Result<()> {
        fs::remove_dir(&self.path)
    }
}

/// Every cgroup folder whose name starts with `prefix` (a run's cgroups are named
/// [`crate::Names::cgroup_prefix`] + run id), below the cgroup2 mount (depth-limited walk).
pub fn find_prefixed(prefix: &str) -> Vec<Cgroup> {
    let Some(mount) = mount_point() else {
        return Vec::new();
    };
    let mut out = Vec::new();
    walk(&mount, prefix, 0, &mut out);
    out
}

fn walk(dir: &Path, prefix: &str, depth: usize, out: &mut Vec<Cgroup>) {
    if depth > 8 {
        return;
    }
    let Ok(rd) = fs::read_dir(dir) else {
        return;
    };
    for e in rd.flatten() {
        let Ok(ft) = e.file_type() else { continue };
        if !ft.is_dir() {
            continue;
        }
        let name = e.file_name();
        if name.to_string_lossy().starts_with(prefix) {
            out.push(Cgroup::at(e.path()));
        } else {
            walk(&e.path(), prefix, depth + 1, out);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_the_cgroup2_mount() {
        let info = "31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755\n\
                    32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu\n\
                    41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw\n";
        assert_eq!(
            parse_mountinfo_cgroup2(info),
            Some(PathBuf::from("/sys/fs/cgroup/unified"))
        );
        let pure =
            "29 23 0:26 / /sys/fs/cgroup rw,nosuid shared:4 - cgroup2 cgroup2 rw,nsdelegate\n";
        assert_eq!(
            parse_mountinfo_cgroup2(pure),
            Some(PathBuf::from("/sys/fs/cgroup"))
        );
        assert_eq!(
            parse_mountinfo_cgroup2("1 2 0:1 / / rw - ext4 /dev/sda rw\n"),
            None
        );
    }

    #[test]
    fn modes_parse() {
        assert_eq!("auto".parse::<CgroupMode>(), Ok(CgroupMode::Auto));
        assert_eq!("off".parse::<CgroupMode>(), Ok(CgroupMode::Off));
        assert!("yes".parse::<CgroupMode>().is_err());
        assert_eq!(CgroupMode::Require.to_string(), "require");
    }
}
