//! Who holds memory on a card: the driver's pid attributed to a process of this machine, its
//! user and its command (docs/supervision.md, "Which GPUs a run judges").
//!
//! The driver's pid may be a pid of this pid namespace, the host's pid while we run in a
//! container, or a container's own pid while we run on the host; drivers differ and have
//! changed. So a pid is taken as ours only when `/proc/PID` exists and (where we may look)
//! holds an NVIDIA device open; otherwise a process whose `NSpid` line ends in that pid (a
//! process of a nested namespace, seen from here) is looked for; failing both it is "a process
//! outside this pid namespace".

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use inferlint_supervisor::procfs::ProcScanner;

use super::{command_of, parse_nspid, GpuHolder, RawProc};

/// Attributes driver pids to processes under a `/proc`-style root, caching what repeats.
pub struct Attributor {
    root: PathBuf,
    check_device_fds: bool,
    users: HashMap<u32, Option<String>>,
    /// `(pid here, innermost pid)` of every process in a nested namespace, read once.
    nested: Option<Vec<(u32, u32)>>,
}

impl Attributor {
    /// `check_device_fds`: whether a process must hold an NVIDIA device open to be taken as the
    /// driver's pid (real GPUs; the simulated one opens no device).
    pub fn new(root: &Path, check_device_fds: bool) -> Attributor {
        Attributor {
            root: root.to_path_buf(),
            check_device_fds,
            users: HashMap::new(),
            nested: None,
        }
    }

    pub fn attribute(&mut self, raw: &RawProc) -> GpuHolder {
        let here = if self.is_holder_here(raw.pid) {
            Some(raw.pid)
        } else {
            self.nested_pid(raw.pid)
        };
        let Some(pid) = here else {
            return GpuHolder {
                gpu: raw.gpu,
                pid: raw.pid,
                used_mib: raw.used_mib,
                uid: None,
                user: None,
                command: raw.name.clone(),
                visible: false,
            };
        };
        let scan = ProcScanner::new(&self.root);
        let info = scan.read(pid as i32);
        let uid = info.as_ref().and_then(|p| p.uid);
        let command = info
            .as_ref()
            .and_then(|p| command_of(&p.argv, &p.comm))
            .or_else(|| raw.name.clone());
        GpuHolder {
            gpu: raw.gpu,
            pid,
            used_mib: raw.used_mib,
            uid,
            user: uid.and_then(|u| self.user(u)),
            command,
            visible: true,
        }
    }

    fn user(&mut self, uid: u32) -> Option<String> {
        user_name_cached(&mut self.users, uid)
    }

    /// `/proc/PID` exists here and, where its fds are readable, one of them is an NVIDIA device
    /// (`/dev/nvidia*`, or `/dev/dxg` under WSL). A same-numbered process without one is
    /// another namespace's pid that happens to exist here too.
    fn is_holder_here(&self, pid: u32) -> bool {
        let dir = self.root.join(pid.to_string());
        if !dir.join("stat").exists() {
            return false;
        }
        if !self.check_device_fds {
            return true;
        }
        let Ok(fds) = std::fs::read_dir(dir.join("fd")) else {
            return true; // another user's process: cannot tell, take the driver's word
        };
        let mut any = false;
        for fd in fds.flatten() {
            any = true;
            if let Ok(target) = std::fs::read_link(fd.path()) {
                let t = target.to_string_lossy();
                if t.starts_with("/dev/nvidia") || t == "/dev/dxg" {
                    return true;
                }
            }
        }
        // A process with no fd at all (exiting) cannot be checked either.
        !any
    }

    /// The pid here of the one process of a nested namespace whose own pid is `pid`.
    fn nested_pid(&mut self, pid: u32) -> Option<u32> {
        let root = self.root.clone();
        let nested = self.nested.get_or_insert_with(|| {
            ProcScanner::new(&root)
                .pids()
                .into_iter()
                .filter_map(|p| {
                    let status =
                        std::fs::read_to_string(root.join(p.to_string()).join("status")).ok()?;
                    let ns = parse_nspid(&status);
                    let here = ns.last().filter(|_| ns.len() >= 2)?;
                    Some((p as u32, *here))
                })
                .collect()
        });
        let hits: Vec<u32> = nested
            .iter()
            .filter(|(_, inner)| *inner == pid)
            .map(|(here, _)| *here)
            .collect();
        match hits.as_slice() {
            [one] => Some(*one),
            _ => None, // none, or several containers with that pid: cannot tell which
        }
    }
}

/// The user name of `uid` from the password database, looked up once per uid: a node's
/// processes belong to a handful of users, and each lookup may read files or ask NSS.
pub(crate) fn user_name_cached(
    cache: &mut HashMap<u32, Option<String>>,
    uid: u32,
) -> Option<String> {
    cache
        .entry(uid)
        .or_insert_with(|| {
            nix::unistd::User::from_uid(nix::unistd::Uid::from_raw(uid))
                .ok()
                .flatten()
                .map(|u| u.name)
        })
        .clone()
}
