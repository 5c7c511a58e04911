//! The Linux calls the crate needs, in the shape it uses them: safe calls of `nix`, and of
//! `rustix` where `nix` 0.30 has none (pidfds) or cannot report every ending (its wait
//! statuses have no room for a real-time signal). The one `ioctl` neither wraps is here too.

use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
use std::time::Duration;

use nix::errno::Errno;
use nix::fcntl::{fcntl, FcntlArg, OFlag};
use nix::poll::{PollFd, PollFlags, PollTimeout};
use nix::sys::signal::Signal;
use nix::sys::socket::{AddressFamily, MsgFlags, SockFlag, SockType};
use nix::unistd::Pid;

use crate::ExitKind;

/// `pidfd_open(pid, 0)`. `ENOSYS` on kernels before 5.3; `ESRCH` when the pid is gone.
pub fn pidfd_open(pid: i32) -> io::Result<OwnedFd> {
    let pid = rustix::process::Pid::from_raw(pid).ok_or(io::Error::from(Errno::EINVAL))?;
    Ok(rustix::process::pidfd_open(
        pid,
        rustix::process::PidfdFlags::empty(),
    )?)
}

/// `pidfd_send_signal(fd, sig, NULL, 0)`.
pub fn pidfd_send_signal(fd: impl AsFd, sig: Signal) -> io::Result<()> {
    let sig = rustix::process::Signal::from_named_raw(sig as i32)
        .ok_or(io::Error::from(Errno::EINVAL))?;
    Ok(rustix::process::pidfd_send_signal(fd, sig)?)
}

/// `kill(pid, sig)`. Refuses pid ≤ 0, which would mean "my own group" or "everyone" (a pid
/// read as 0 from another namespace's `cgroup.procs` must not become that).
pub fn kill(pid: i32, sig: Signal) -> io::Result<()> {
    if pid <= 0 {
        return Err(Errno::EINVAL.into());
    }
    Ok(nix::sys::signal::kill(Pid::from_raw(pid), sig)?)
}

/// `killpg(pgid, sig)`. Refuses pgid ≤ 1, which would mean "my own group" or "everyone".
pub fn killpg(pgid: i32, sig: Signal) -> io::Result<()> {
    if pgid <= 1 {
        return Err(Errno::EINVAL.into());
    }
    Ok(nix::sys::signal::killpg(Pid::from_raw(pgid), sig)?)
}

/// Makes this process a child subreaper: orphans below it are reparented to it, not to PID 1.
pub fn set_child_subreaper() -> io::Result<()> {
    Ok(nix::sys::prctl::set_child_subreaper(true)?)
}

/// Whether this process is a child subreaper.
pub fn is_child_subreaper() -> bool {
    nix::sys::prctl::get_child_subreaper().unwrap_or(false)
}

/// Names the calling thread (what `ps` and `/proc/PID/comm` show; 15 bytes at most, the rest
/// is cut; a name with a NUL byte is ignored).
pub fn set_thread_name(name: &str) {
    let bytes = &name.as_bytes()[..name.len().min(15)];
    if let Ok(c) = std::ffi::CString::new(bytes) {
        let _ = nix::sys::prctl::set_name(&c);
    }
}

pub fn getpid() -> i32 {
    nix::unistd::getpid().as_raw()
}

pub fn getppid() -> i32 {
    nix::unistd::getppid().as_raw()
}

pub fn getuid() -> u32 {
    nix::unistd::getuid().as_raw()
}

/// The result of reaping one child.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reaped {
    /// No child of that description has exited yet.
    NotYet,
    /// No such child (never ours, or already reaped).
    NoChild,
    Exited(i32, ExitKind),
}

/// `waitpid(pid, WNOHANG)` for one child.
pub fn reap(pid: i32) -> Reaped {
    use rustix::process::{waitpid, Pid as RPid, WaitOptions};
    let Some(p) = RPid::from_raw(pid) else {
        return Reaped::NoChild;
    };
    match waitpid(Some(p), WaitOptions::NOHANG) {
        Ok(None) => Reaped::NotYet,
        Ok(Some((p, status))) => Reaped::Exited(
            p.as_raw_nonzero().get(),
            ExitKind::from_wait_status(status.as_raw()),
        ),
        Err(_) => Reaped::NoChild,
    }
}

/// Whether `pid` (our child) has exited, without reaping it (`waitid(WNOWAIT)`), so its pid —
/// and therefore its process group id — cannot be reused while we still signal the group.
pub fn has_exited_unreaped(pid: i32) -> Option<ExitKind> {
    use rustix::process::{waitid, Pid as RPid, WaitId, WaitIdOptions};
    let p = RPid::from_raw(pid)?;
    let opts = WaitIdOptions::EXITED | WaitIdOptions::NOHANG | WaitIdOptions::NOWAIT;
    let status = waitid(WaitId::Pid(p), opts).ok()??;
    match (status.exit_status(), status.terminating_signal()) {
        (Some(code), _) => Some(ExitKind::Code(code)),
        (None, Some(sig)) => Some(ExitKind::from_signal_number(sig)),
        (None, None) => None,
    }
}

/// A `pipe2(O_CLOEXEC)` pair (read, write).
pub fn pipe() -> io::Result<(OwnedFd, OwnedFd)> {
    Ok(nix::unistd::pipe2(OFlag::O_CLOEXEC)?)
}

/// Grows a pipe's buffer to the first of `sizes` the kernel grants (best effort; above
/// `/proc/sys/fs/pipe-max-size` needs privilege): a bigger buffer absorbs scheduling hiccups
/// of the reader.
pub fn grow_pipe(fd: impl AsFd, sizes: &[i32]) -> Option<i32> {
    let fd = fd.as_fd();
    sizes
        .iter()
        .copied()
        .find(|&bytes| fcntl(fd, FcntlArg::F_SETPIPE_SZ(bytes)).is_ok())
}

/// A `socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC)`.
pub fn socketpair() -> io::Result<(OwnedFd, OwnedFd)> {
    Ok(nix::sys::socket::socketpair(
        AddressFamily::Unix,
        SockType::Stream,
        None,
        SockFlag::SOCK_CLOEXEC,
    )?)
}

/// Sets or clears `O_NONBLOCK`.
pub fn set_nonblocking(fd: impl AsFd, on: bool) -> io::Result<()> {
    let fd = fd.as_fd();
    let mut flags = OFlag::from_bits_retain(fcntl(fd, FcntlArg::F_GETFL)?);
    flags.set(OFlag::O_NONBLOCK, on);
    fcntl(fd, FcntlArg::F_SETFL(flags))?;
    Ok(())
}

/// Marks a descriptor close-on-exec.
pub fn set_cloexec(fd: impl AsFd) -> io::Result<()> {
    fcntl(fd, FcntlArg::F_SETFD(nix::fcntl::FdFlag::FD_CLOEXEC))?;
    Ok(())
}

/// `poll` on a set of descriptors for readability; returns which ones are ready (readable, hung
/// up or in error). `EINTR` counts as "nothing ready".
pub fn poll_readable(fds: &[BorrowedFd<'_>], timeout: Option<Duration>) -> Vec<bool> {
    let mut pfds: Vec<PollFd> = fds
        .iter()
        .map(|&fd| PollFd::new(fd, PollFlags::POLLIN))
        .collect();
    let timeout = match timeout {
        None => PollTimeout::NONE,
        Some(d) => PollTimeout::try_from(d).unwrap_or(PollTimeout::MAX),
    };
    match nix::poll::poll(&mut pfds, timeout) {
        Ok(n) if n > 0 => pfds
            .iter()
            .map(|p| p.revents().is_some_and(|r| !r.is_empty()))
            .collect(),
        _ => vec![false; fds.len()],
    }
}

/// Writes all of `buf` to a descriptor, retrying on `EINTR`/`EAGAIN` (polling for space).
pub fn write_all_fd(fd: impl AsFd, mut buf: &[u8]) -> io::Result<()> {
    let fd = fd.as_fd();
    while !buf.is_empty() {
        match nix::unistd::write(fd, buf) {
            Ok(n) => buf = &buf[n..],
            Err(Errno::EINTR) => {}
            Err(Errno::EAGAIN) => {
                let mut p = [PollFd::new(fd, PollFlags::POLLOUT)];
                let _ = nix::poll::poll(&mut p, PollTimeout::from(100u8));
            }
            Err(e) => return Err(e.into()),
        }
    }
    Ok(())
}

/// Writes all of `buf` to a socket with `MSG_NOSIGNAL`: a peer that is gone gives `EPIPE`,
/// never a SIGPIPE that would kill a process whose handler was not set.
pub fn send_all(fd: impl AsFd, mut buf: &[u8]) -> io::Result<()> {
    let fd = fd.as_fd().as_raw_fd();
    while !buf.is_empty() {
        match nix::sys::socket::send(fd, buf, MsgFlags::MSG_NOSIGNAL) {
            Ok(n) => buf = &buf[n..],
            Err(Errno::EINTR) => {}
            Err(e) => return Err(e.into()),
        }
    }
    Ok(())
}

/// Reads once from a descriptor; `Ok(0)` is end of file. `EINTR` is retried.
pub fn read_fd(fd: impl AsFd, buf: &mut [u8]) -> io::Result<usize> {
    let fd = fd.as_fd();
    loop {
        match nix::unistd::read(fd, buf) {
            Err(Errno::EINTR) => {}
            r => return Ok(r?),
        }
    }
}

/// Clock ticks per second (`CLK_TCK`), the unit of `/proc/PID/stat` start times.
pub fn clock_ticks() -> u64 {
    use nix::unistd::{sysconf, SysconfVar};
    match sysconf(SysconfVar::CLK_TCK) {
        Ok(Some(t)) if t > 0 => t as u64,
        _ => 100,
    }
}

/// A signal's conventional name (`SIGTERM`), or `signal N` for those the crate's messages
/// have always given by number.
pub fn signal_name(sig: Signal) -> String {
    signal_number_name(sig as i32)
}

/// As [`signal_name`], for a signal number (one [`Signal`] does not name prints as
/// `signal N`).
pub fn signal_number_name(sig: i32) -> String {
    use Signal::*;
    let named = [
        SIGHUP, SIGINT, SIGQUIT, SIGKILL, SIGTERM, SIGCONT, SIGSTOP, SIGCHLD, SIGPIPE, SIGUSR1,
        SIGUSR2, SIGSEGV, SIGABRT,
    ];
    match Signal::try_from(sig) {
        Ok(s) if named.contains(&s) => s.as_str().to_string(),
        _ => format!("signal {sig}"),
    }
}

mod pidfd_ioctl {
    /// `struct pidfd_info` of `<linux/pidfd.h>`, its first version (64 bytes, `exit_code`
    /// last).
    #[repr(C)]
    #[derive(Default)]
    pub struct PidfdInfo {
        pub mask: u64,
        pub cgroupid: u64,
        pub pid: u32,
        pub tgid: u32,
        pub ppid: u32,
        pub ruid: u32,
        pub rgid: u32,
        pub euid: u32,
        pub egid: u32,
        pub suid: u32,
        pub sgid: u32,
        pub fsuid: u32,
        pub fsgid: u32,
        pub exit_code: i32,
    }

    pub const PIDFD_INFO_EXIT: u64 = 1 << 3;
    const _: () = assert!(std::mem::size_of::<PidfdInfo>() == 64);

    nix::ioctl_readwrite!(
        /// `PIDFD_GET_INFO`: `_IOWR(PIDFS_IOCTL_MAGIC = 0xFF, 11, struct pidfd_info)`. The
        /// kernel takes the struct's size from the request number, so the 64-byte first
        /// version works on every kernel that has the call.
        ///
        /// # Safety
        /// `data` must point to a live `PidfdInfo`.
        pidfd_get_info,
        0xFF,
        11,
        PidfdInfo
    );
}

/// How the process behind a pidfd ended, from `PIDFD_GET_INFO` with `PIDFD_INFO_EXIT`: the
/// kernel fills it in only once the process has been *reaped* (by any parent), and only on
/// 6.15+ kernels; None otherwise (still running, a zombie, an older kernel).
pub fn pidfd_exit_status(fd: BorrowedFd<'_>) -> Option<ExitKind> {
    use pidfd_ioctl::{pidfd_get_info, PidfdInfo, PIDFD_INFO_EXIT};
    let mut info = PidfdInfo {
        mask: PIDFD_INFO_EXIT,
        ..PidfdInfo::default()
    };
    // SAFETY: `info` is a live, writable `PidfdInfo` for the whole call, and the request
    // number encodes its size, so the kernel writes no more than it holds; a descriptor that
    // is not a pidfd, or a kernel without the call, fails with an error instead.
    let r = unsafe { pidfd_get_info(fd.as_raw_fd(), &mut info) };
    if r.is_err() || info.mask & PIDFD_INFO_EXIT == 0 {
        return None;
    }
    Some(ExitKind::from_wait_status(info.exit_code))
}
