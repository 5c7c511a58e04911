//! How the shepherd starts the server: the descriptors it inherits, the cgroup, and the
//! server's own process group, parent-death signal and environment.

use std::fs::{File, OpenOptions};
use std::os::fd::{FromRawFd, OwnedFd, RawFd};
use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};

use nix::sys::signal::{SigSet, SigmaskHow, Signal};

use super::ShepherdConfig;
use crate::cgroup::{Cgroup, CgroupMode};
use crate::procfs::ProcScanner;

/// Takes ownership of a descriptor the supervisor handed down by number (`--control-fd`,
/// `--drain-fd`); None when no such descriptor is open.
pub(super) fn inherited_fd(fd: RawFd) -> Option<OwnedFd> {
    // Called before the shepherd opens anything, and only for an open descriptor, so no
    // other owner of that number can exist in this process.
    std::fs::metadata(format!("/proc/self/fd/{fd}")).ok()?;
    // SAFETY: `fd` is open (checked just above) and was inherited across exec for this
    // shepherd alone; nothing else in this process has taken it, and each number is taken
    // once (ShepherdConfig::from_args refuses a number named twice, and 0–2), so the OwnedFd
    // is its only owner.
    Some(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// The run's cgroup, when wanted and possible, and its `cgroup.procs` opened for the server
/// to join; or why none is used. `Err` only under `--cgroup require`.
pub(super) struct RunCgroup {
    pub cgroup: Option<Cgroup>,
    pub procs: Option<File>,
    /// Why `--cgroup auto` fell back to the process group.
    pub note: Option<String>,
}

pub(super) fn prepare_cgroup(cfg: &ShepherdConfig, me: i32) -> Result<RunCgroup, String> {
    let none = |note: Option<String>| RunCgroup {
        cgroup: None,
        procs: None,
        note,
    };
    if cfg.cgroup == CgroupMode::Off {
        return Ok(none(None));
    }
    let name = format!(
        "{}{}.s{}",
        cfg.names.cgroup_prefix,
        crate::sanitize_run_id(&cfg.run_id),
        ProcScanner::system()
            .id_of(me)
            .map(|i| i.to_string().replace(':', "-"))
            .unwrap_or_else(|| me.to_string())
    );
    let cgroup = match Cgroup::create(&name) {
        Ok(c) => c,
        Err(e) if cfg.cgroup == CgroupMode::Require => {
            return Err(format!("--cgroup require: {e}"))
        }
        Err(e) => {
            return Ok(none(Some(format!(
                "no cgroup ({e}); using the process group"
            ))))
        }
    };
    match cgroup.open_procs() {
        Ok(procs) => Ok(RunCgroup {
            cgroup: Some(cgroup),
            procs: Some(procs),
            note: None,
        }),
        Err(_) => {
            let _ = cgroup.remove();
            Ok(none(Some(
                "no cgroup (cgroup.procs not writable); using the process group".into(),
            )))
        }
    }
}

/// Starts the server: its own process group, inside the cgroup from its first instruction,
/// SIGTERM when the shepherd dies, the run's marker and owners in its environment.
pub(super) fn start_server(
    cfg: &ShepherdConfig,
    me: i32,
    owners: &str,
    procs: Option<File>,
) -> std::io::Result<std::process::Child> {
    let mut cmd = Command::new(&cfg.command[0]);
    cmd.args(&cfg.command[1..])
        .env(&cfg.names.marker_env, &cfg.run_id)
        .env(&cfg.names.owners_env, owners)
        .stdin(Stdio::null())
        .stdout(Stdio::inherit())
        .stderr(Stdio::inherit())
        .process_group(0);
    if let Some(d) = &cfg.cwd {
        cmd.current_dir(d);
    }
    // SAFETY: the hook runs in the forked child before exec, where only async-signal-safe
    // calls may be made: write, prctl, getppid and pthread_sigmask are, and none of the calls
    // allocates. `procs` is owned by the hook, so its descriptor lives as long as the hook.
    unsafe {
        cmd.pre_exec(move || {
            if let Some(f) = &procs {
                // Join the cgroup before any of the server's code runs, so even its first
                // fork is inside.
                nix::unistd::write(f, b"0")?;
            }
            let _ = nix::sys::prctl::set_pdeathsig(Signal::SIGTERM);
            // The shepherd may have died before the prctl: then nobody would signal us.
            if nix::unistd::getppid().as_raw() != me {
                return Err(nix::errno::Errno::ESRCH.into());
            }
            // The shepherd blocks its stop signals for its signalfd; the server starts with
            // none blocked.
            let _ = nix::sys::signal::pthread_sigmask(
                SigmaskHow::SIG_SETMASK,
                Some(&SigSet::empty()),
                None,
            );
            Ok(())
        });
    }
    cmd.spawn()
}

/// Replaces fds 0–2 with /dev/null: the server's output pipes must reach end of file when
/// the server's tree is gone, whatever the shepherd still holds.
pub(super) fn release_stdio() {
    if let Ok(null) = OpenOptions::new().read(true).write(true).open("/dev/null") {
        let _ = nix::unistd::dup2_stdin(&null);
        let _ = nix::unistd::dup2_stdout(&null);
        let _ = nix::unistd::dup2_stderr(&null);
    }
}
