//! Race-free handles on processes: a pidfd when the kernel has them (5.3+), else the
//! `(pid, start time)` identity re-checked before every signal.
//!
//! A pidfd never refers to a recycled pid. It must be opened while the pid is still the right
//! process, so [`Tracked::open`] reads the start time *after* opening and drops the handle when
//! it does not match what the caller saw.

use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::sync::atomic::{AtomicU8, Ordering};

use nix::sys::signal::Signal;

use crate::procfs::{ProcId, ProcScanner};
use crate::sys;

const NOT_PROBED: u8 = 0;
const AVAILABLE: u8 = 1;
/// The kernel has none (ENOSYS).
const UNAVAILABLE: u8 = 2;
/// The caller switched them off ([`switch_off`]).
const SWITCHED_OFF: u8 = 3;

static PIDFD_STATE: AtomicU8 = AtomicU8::new(NOT_PROBED);

/// Turns pidfds off for the rest of this process: every handle is the `(pid, start time)`
/// identity instead (a product's switch, for tests of that fallback). A shepherd started by
/// [`crate::Supervised::spawn`] afterwards is switched off too.
pub fn switch_off() {
    PIDFD_STATE.store(SWITCHED_OFF, Ordering::Relaxed);
}

/// Whether [`switch_off`] was called.
pub fn switched_off() -> bool {
    PIDFD_STATE.load(Ordering::Relaxed) == SWITCHED_OFF
}

/// Whether this kernel (and configuration) gives pidfds.
pub fn pidfds_available() -> bool {
    match PIDFD_STATE.load(Ordering::Relaxed) {
        AVAILABLE => true,
        UNAVAILABLE | SWITCHED_OFF => false,
        _ => {
            let ok = match sys::pidfd_open(sys::getpid()) {
                Ok(_) => true,
                Err(e) => e.raw_os_error() != Some(libc::ENOSYS),
            };
            let probed = if ok { AVAILABLE } else { UNAVAILABLE };
            // A switch_off() meanwhile wins over the probe.
            match PIDFD_STATE.compare_exchange(
                NOT_PROBED,
                probed,
                Ordering::Relaxed,
                Ordering::Relaxed,
            ) {
                Ok(_) => ok,
                Err(now) => now == AVAILABLE,
            }
        }
    }
}

/// A process we may signal: its identity and, when available, a pidfd.
#[derive(Debug)]
pub struct Tracked {
    pub id: ProcId,
    fd: Option<OwnedFd>,
}

impl Tracked {
    /// Opens a handle on `id` if that exact process (same start time) is still there.
    pub fn open(scan: &ProcScanner, id: ProcId) -> Option<Tracked> {
        let fd = if pidfds_available() {
            sys::pidfd_open(id.pid).ok()
        } else {
            None
        };
        // Verify after opening: if the pid was recycled in between, the start time differs.
        let now = scan.stat(id.pid)?;
        if now.starttime != id.starttime {
            return None;
        }
        Some(Tracked { id, fd })
    }

    /// Opens a handle on whatever process `pid` is now.
    pub fn open_pid(scan: &ProcScanner, pid: i32) -> Option<Tracked> {
        let id = scan.id_of(pid)?;
        Self::open(scan, id)
    }

    pub fn pid(&self) -> i32 {
        self.id.pid
    }

    pub fn has_pidfd(&self) -> bool {
        self.fd.is_some()
    }

    /// Sends `sig`. Returns false when the process is gone (or was never ours to signal).
    pub fn signal(&self, scan: &ProcScanner, sig: Signal) -> bool {
        match &self.fd {
            Some(fd) => sys::pidfd_send_signal(fd, sig).is_ok(),
            None => {
                // Fallback identity: re-check the start time right before the kill.
                if scan.stat(self.id.pid).map(|s| s.starttime) != Some(self.id.starttime) {
                    return false;
                }
                sys::kill(self.id.pid, sig).is_ok()
            }
        }
    }

    /// The pidfd, for a poll set (it polls readable once the process has exited).
    pub fn pidfd(&self) -> Option<BorrowedFd<'_>> {
        self.fd.as_ref().map(|f| f.as_fd())
    }

    /// How the process ended, once a parent has reaped it (`PIDFD_INFO_EXIT`, 6.15+); None
    /// while it runs or is a zombie, without a pidfd, and on older kernels.
    pub fn exit_status(&self) -> Option<crate::ExitKind> {
        self.pidfd().and_then(sys::pidfd_exit_status)
    }

    /// Whether the process still runs (a zombie has exited: it holds nothing but its pid).
    pub fn is_alive(&self, scan: &ProcScanner) -> bool {
        if let Some(fd) = &self.fd {
            // A pidfd polls readable once the process has exited (zombie or reaped).
            if sys::poll_readable(&[fd.as_fd()], Some(std::time::Duration::ZERO))[0] {
                return false;
            }
        }
        scan.is_alive(self.id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tracks_and_signals_a_child() {
        let scan = ProcScanner::system();
        let mut child = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .unwrap();
        let t = Tracked::open_pid(&scan, child.id() as i32).unwrap();
        assert!(t.is_alive(&scan));
        assert!(t.signal(&scan, Signal::SIGKILL));
        child.wait().unwrap();
        assert!(!t.is_alive(&scan));
        assert!(!t.signal(&scan, Signal::SIGKILL));
    }

    /// The kernel release as (major, minor).
    fn kernel() -> (u32, u32) {
        let r = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default();
        let mut it = r
            .split(|c: char| !c.is_ascii_digit())
            .map(|n| n.parse().unwrap_or(0));
        (it.next().unwrap_or(0), it.next().unwrap_or(0))
    }

    #[test]
    // The child is reaped by `sys::reap` below, after its zombie has been looked at.
    #[allow(clippy::zombie_processes)]
    fn how_a_process_ended_is_read_as_zombie_and_after_reaping() {
        let scan = ProcScanner::system();
        let child = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .unwrap();
        let pid = child.id() as i32;
        let t = Tracked::open_pid(&scan, pid).unwrap();
        assert_eq!(t.exit_status(), None, "it runs");
        assert_eq!(scan.stat(pid).unwrap().exit_code, Some(0));
        assert!(t.signal(&scan, Signal::SIGKILL));
        while t.is_alive(&scan) {
            std::thread::sleep(std::time::Duration::from_millis(2));
        }
        // A zombie: /proc still says how it ended; the pidfd does not yet.
        let st = scan.stat(pid).unwrap();
        assert_eq!(st.state, 'Z');
        assert_eq!(st.exit_code, Some(libc::SIGKILL));
        assert_eq!(t.exit_status(), None);
        assert!(matches!(sys::reap(pid), sys::Reaped::Exited(_, _)));
        // Reaped: only PIDFD_INFO_EXIT (6.15+) still knows.
        let expected = (kernel() >= (6, 15)).then_some(crate::ExitKind::Signal(Signal::SIGKILL));
        assert_eq!(t.exit_status(), expected, "kernel {:?}", kernel());
    }

    #[test]
    fn refuses_a_wrong_start_time() {
        let scan = ProcScanner::system();
        let me = scan.id_of(sys::getpid()).unwrap();
        let wrong = ProcId {
            pid: me.pid,
            starttime: me.starttime + 1,
        };
        assert!(Tracked::open(&scan, wrong).is_none());
    }
}
