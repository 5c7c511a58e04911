//! The shared-memory files a tree leaves behind. POSIX shared memory (`shm_open`, and Python's
//! `multiprocessing.shared_memory`, which vLLM's message queues between its API server, engine
//! cores and workers use) is a file in `/dev/shm` that outlives every process that had it: a
//! tree ended by SIGKILL never unlinks its segments, and on a shared node they hold RAM until the
//! next job fails to allocate (docs/design/processes.md#shared-memory).
//!
//! Which files are the tree's is read, never guessed from a name: those a live member maps
//! (`/proc/PID/maps`) or holds open (`/proc/PID/fd`) when the teardown begins. Once the tree is
//! gone, each is removed only if it is still there, belongs to this user, and no live process
//! maps or holds it. A file no member held when the teardown began (a segment its creator
//! unlinked, or one of a process that had already died) is not known to be the tree's, and stays.

use std::collections::BTreeSet;
use std::fs;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::procfs::ProcScanner;

/// Where POSIX shared memory lives on Linux.
pub const SHM_DIR: &str = "/dev/shm";

/// The `/dev/shm` files under `dir` that a `/proc/PID/maps` text names (not those already
/// unlinked, which the kernel marks ` (deleted)`).
pub fn paths_in_maps(maps: &str, dir: &Path) -> BTreeSet<PathBuf> {
    maps.lines()
        .filter_map(|line| {
            // address perms offset dev inode pathname: the path is the sixth field and may hold
            // spaces, so it is everything after the fifth.
            let path = line.splitn(6, char::is_whitespace).nth(5)?.trim_start();
            let path = Path::new(path);
            (path.starts_with(dir) && path != dir).then(|| path.to_path_buf())
        })
        .filter(|p| !p.to_string_lossy().ends_with(" (deleted)"))
        .collect()
}

/// The files under `dir` that process `pid` maps or holds open, as far as `/proc` lets this user
/// read (another user's process reads as none).
pub fn held_by(scan: &ProcScanner, pid: i32, dir: &Path) -> BTreeSet<PathBuf> {
    let proc_dir = scan.root().join(pid.to_string());
    let mut held = fs::read_to_string(proc_dir.join("maps"))
        .map(|m| paths_in_maps(&m, dir))
        .unwrap_or_default();
    if let Ok(fds) = fs::read_dir(proc_dir.join("fd")) {
        for fd in fds.flatten() {
            if let Ok(target) = fs::read_link(fd.path()) {
                if target.starts_with(dir) && target != dir {
                    held.insert(target);
                }
            }
        }
    }
    held
}

/// The files under `dir` that any of `pids` maps or holds open.
pub fn held_by_all(scan: &ProcScanner, pids: &[i32], dir: &Path) -> BTreeSet<PathBuf> {
    pids.iter().flat_map(|&p| held_by(scan, p, dir)).collect()
}

/// What became of the tree's shared-memory files after its teardown.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ShmCleanup {
    /// Removed: the tree's, still there, this user's, held by nobody alive.
    pub removed: Vec<String>,
    /// Left, each with why (`held by pid N`, `owned by uid N`, or the error removing it).
    pub kept: Vec<ShmKept>,
}

/// A file of the tree's that was not removed.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ShmKept {
    pub path: String,
    pub why: String,
}

impl ShmCleanup {
    /// Whether there was nothing to do.
    pub fn is_empty(&self) -> bool {
        self.removed.is_empty() && self.kept.is_empty()
    }
}

/// Removes the tree's files (`held`, read while its members lived) that are still there, belong
/// to `uid`, and that no live process in `scan` maps or holds. Called after the tree is gone.
pub fn remove_left(
    scan: &ProcScanner,
    held: &BTreeSet<PathBuf>,
    uid: u32,
    dir: &Path,
) -> ShmCleanup {
    let mut out = ShmCleanup::default();
    let left: Vec<&PathBuf> = held.iter().filter(|p| p.exists()).collect();
    if left.is_empty() {
        return out;
    }
    let still_held: Vec<(i32, BTreeSet<PathBuf>)> = scan
        .pids()
        .into_iter()
        .map(|pid| (pid, held_by(scan, pid, dir)))
        .filter(|(_, h)| !h.is_empty())
        .collect();
    for path in left {
        let shown = path.to_string_lossy().into_owned();
        let owner = fs::symlink_metadata(path).map(|m| m.uid());
        let why = match owner {
            Err(e) => Some(e.to_string()),
            Ok(o) if o != uid => Some(format!("owned by uid {o}")),
            Ok(_) => still_held
                .iter()
                .find(|(_, h)| h.contains(path))
                .map(|(pid, _)| format!("held by pid {pid}")),
        };
        match why {
            Some(why) => out.kept.push(ShmKept { path: shown, why }),
            None => match fs::remove_file(path) {
                Ok(()) => out.removed.push(shown),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => out.kept.push(ShmKept {
                    path: shown,
                    why: e.to_string(),
                }),
            },
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn maps_name_the_segments_not_the_unlinked_ones_nor_other_files() {
        let maps = "\
7f1c2a000000-7f1c2a400000 rw-s 00000000 00:1a 1234 /dev/shm/psm_5f2e9c1a
7f1c2b000000-7f1c2b001000 rw-s 00000000 00:1a 1235 /dev/shm/psm_77aa (deleted)
7f1c2c000000-7f1c2c021000 r-xp 00000000 fd:01 99 /usr/lib/x86_64-linux-gnu/libc.so.6
7f1c2d000000-7f1c2d100000 rw-s 00000000 00:1a 1236 /dev/shm/vllm offload 0.mmap
7ffd1c000000-7ffd1c021000 rw-p 00000000 00:00 0                          [stack]
7f1c2e000000-7f1c2e001000 rw-p 00000000 00:00 0
";
        let found: Vec<String> = paths_in_maps(maps, Path::new(SHM_DIR))
            .into_iter()
            .map(|p| p.to_string_lossy().into_owned())
            .collect();
        assert_eq!(
            found,
            ["/dev/shm/psm_5f2e9c1a", "/dev/shm/vllm offload 0.mmap"]
        );
    }

    /// A `/proc`-style root where pid 42 maps `held` and pid 43 holds nothing there.
    fn proc_root(held: &Path) -> tempfile::TempDir {
        let root = tempfile::tempdir().unwrap();
        for pid in ["42", "43"] {
            std::fs::create_dir_all(root.path().join(pid).join("fd")).unwrap();
        }
        std::fs::write(
            root.path().join("42/maps"),
            format!("7f00-7f10 rw-s 00000000 00:1a 7 {}\n", held.display()),
        )
        .unwrap();
        std::fs::write(root.path().join("43/maps"), "").unwrap();
        root
    }

    #[test]
    fn removes_the_trees_files_that_nobody_holds_and_keeps_the_rest() {
        let dir = tempfile::tempdir().unwrap();
        let file = |n: &str| {
            let p = dir.path().join(n);
            std::fs::write(&p, b"segment").unwrap();
            p
        };
        let (left, shared, bystander) = (file("psm_left"), file("psm_shared"), file("psm_other"));
        let gone = dir.path().join("psm_unlinked_by_its_creator");
        let procs = proc_root(&shared);
        let scan = ProcScanner::new(procs.path());
        let held: BTreeSet<PathBuf> = [left.clone(), shared.clone(), gone].into();
        let me = nix::unistd::getuid().as_raw();

        let out = remove_left(&scan, &held, me, dir.path());
        assert_eq!(out.removed, [left.to_string_lossy()]);
        assert_eq!(
            out.kept,
            [ShmKept {
                path: shared.to_string_lossy().into_owned(),
                why: "held by pid 42".into()
            }]
        );
        assert!(!left.exists() && shared.exists() && bystander.exists());

        // Another user's file, even one the tree held, stays.
        let out = remove_left(&scan, &[bystander.clone()].into(), me + 1, dir.path());
        assert!(out.removed.is_empty() && bystander.exists());
        assert_eq!(out.kept[0].why, format!("owned by uid {me}"));
    }
}
