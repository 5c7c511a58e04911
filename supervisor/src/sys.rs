//! Thin, safe wrappers over the Linux calls the crate needs and `nix` 0.30 lacks (pidfds,
//! `PR_SET_*` by number, `F_SETPIPE_SZ`), plus small helpers used everywhere.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::time::Duration;

/// `pidfd_open(pid, 0)`. `ENOSYS` on kernels before 5.3; `ESRCH` when the pid is gone.
pub fn pidfd_open(pid: i32) -> io::Result<OwnedFd> {
    // SAFETY: a plain syscall; the returned descriptor is new and owned by us.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: the kernel returned a fresh descriptor.
    Ok(unsafe { OwnedFd::from_raw_fd(fd as RawFd) })
}

/// `pidfd_send_signal(fd, sig, NULL, 0)`.
pub fn pidfd_send_signal(fd: &OwnedFd, sig: i32) -> io::Result<()> {
    // SAFETY: a plain syscall on a descriptor we own.
    let r = unsafe {
        libc::syscall(
            libc::SYS_pidfd_send_signal,
            fd.as_raw_fd(),
            sig,
            std::ptr::null::<libc::siginfo_t>(),
            0,
        )
    };
    if r < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// `kill(pid, sig)`.
pub fn kill(pid: i32, sig: i32) -> io::Result<()> {
    // SAFETY: kill has no memory effects.
    if unsafe { libc::kill(pid, sig) } < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// `killpg(pgid, sig)`. Refuses pgid ≤ 1, which would mean "my own group" or "everyone".
pub fn killpg(pgid: i32, sig: i32) -> io::Result<()> {
    if pgid <= 1 {
        return Err(io::Error::from_raw_os_error(libc::EINVAL));
    }
    // SAFETY: killpg has no memory effects.
    if unsafe { libc::killpg(pgid, sig) } < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Makes this process a child subreaper: orphans below it are reparented to it, not to PID 1.
pub fn set_child_subreaper() -> io::Result<()> {
    // SAFETY: prctl with integer arguments.
    if unsafe { libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) } < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Names the calling thread (what `ps` and `/proc/PID/comm` show; 15 bytes at most).
pub fn set_thread_name(name: &str) {
    let mut buf = [0u8; 16];
    let n = name.len().min(15);
    buf[..n].copy_from_slice(&name.as_bytes()[..n]);
    // SAFETY: buf is NUL-terminated and outlives the call.
    unsafe { libc::prctl(libc::PR_SET_NAME, buf.as_ptr() as libc::c_ulong, 0, 0, 0) };
}

pub fn getpid() -> i32 {
    // SAFETY: always succeeds.
    unsafe { libc::getpid() }
}

pub fn getppid() -> i32 {
    // SAFETY: always succeeds.
    unsafe { libc::getppid() }
}

pub fn getuid() -> u32 {
    // SAFETY: always succeeds.
    unsafe { libc::getuid() }
}

/// The result of reaping one child.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reaped {
    /// No child of that description has exited yet.
    NotYet,
    /// No such child (never ours, or already reaped).
    NoChild,
    Exited(i32, crate::ExitKind),
}

/// `waitpid(pid, WNOHANG)`; `pid = -1` for any child.
pub fn reap(pid: i32) -> Reaped {
    let mut status = 0;
    // SAFETY: status is a valid out-pointer.
    let r = unsafe { libc::waitpid(pid, &mut status, libc::WNOHANG) };
    match r {
        0 => Reaped::NotYet,
        r if r < 0 => Reaped::NoChild,
        r => Reaped::Exited(r, crate::ExitKind::from_wait_status(status)),
    }
}

/// Whether `pid` (our child) has exited, without reaping it (`waitid(WNOWAIT)`), so its pid —
/// and therefore its process group id — cannot be reused while we still signal the group.
pub fn has_exited_unreaped(pid: i32) -> Option<crate::ExitKind> {
    // SAFETY: info is zeroed and written by the kernel.
    let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
    let r = unsafe {
        libc::waitid(
            libc::P_PID,
            pid as libc::id_t,
            &mut info,
            libc::WEXITED | libc::WNOHANG | libc::WNOWAIT,
        )
    };
    if r < 0 {
        return None;
    }
    // SAFETY: si_pid/si_status are valid for SIGCHLD-type infos filled by waitid.
    let (si_pid, si_status, code) = unsafe { (info.si_pid(), info.si_status(), info.si_code) };
    if si_pid == 0 {
        return None;
    }
    Some(match code {
        libc::CLD_EXITED => crate::ExitKind::Code(si_status),
        _ => crate::ExitKind::Signal(si_status),
    })
}

/// A `pipe2(O_CLOEXEC)` pair (read, write).
pub fn pipe() -> io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0; 2];
    // SAFETY: fds is a valid 2-element array.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: both descriptors are fresh.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

/// Grows a pipe's buffer to the first of `sizes` the kernel grants (best effort; above
/// `/proc/sys/fs/pipe-max-size` needs privilege): a bigger buffer absorbs scheduling hiccups
/// of the reader.
pub fn grow_pipe(fd: &OwnedFd, sizes: &[i32]) -> Option<i32> {
    sizes.iter().copied().find(|&bytes| {
        // SAFETY: fcntl on a descriptor we own.
        unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_SETPIPE_SZ, bytes) >= 0 }
    })
}

/// A `socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC)`.
pub fn socketpair() -> io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0; 2];
    // SAFETY: fds is a valid 2-element array.
    let r = unsafe {
        libc::socketpair(
            libc::AF_UNIX,
            libc::SOCK_STREAM | libc::SOCK_CLOEXEC,
            0,
            fds.as_mut_ptr(),
        )
    };
    if r < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: both descriptors are fresh.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

/// Sets or clears `O_NONBLOCK`.
pub fn set_nonblocking(fd: RawFd, on: bool) -> io::Result<()> {
    // SAFETY: fcntl on a caller-provided descriptor.
    let flags = unsafe { libc::fcntl(fd, libc::F_GETFL) };
    if flags < 0 {
        return Err(io::Error::last_os_error());
    }
    let flags = if on {
        flags | libc::O_NONBLOCK
    } else {
        flags & !libc::O_NONBLOCK
    };
    // SAFETY: as above.
    if unsafe { libc::fcntl(fd, libc::F_SETFL, flags) } < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// `poll` on a set of descriptors for readability; returns which ones are ready (readable, hung
/// up or in error). `EINTR` counts as "nothing ready".
pub fn poll_readable(fds: &[RawFd], timeout: Option<Duration>) -> Vec<bool> {
    let mut pfds: Vec<libc::pollfd> = fds
        .iter()
        .map(|&fd| libc::pollfd {
            fd,
            events: libc::POLLIN,
            revents: 0,
        })
        .collect();
    let ms = timeout.map_or(-1, |d| d.as_millis().min(i32::MAX as u128) as i32);
    // SAFETY: pfds is a valid array of pfds.len() entries.
    let r = unsafe { libc::poll(pfds.as_mut_ptr(), pfds.len() as libc::nfds_t, ms) };
    if r <= 0 {
        return vec![false; fds.len()];
    }
    pfds.iter().map(|p| p.revents != 0).collect()
}

/// Writes all of `buf` to a raw descriptor, retrying on `EINTR`/`EAGAIN` (polling for space).
pub fn write_all_fd(fd: RawFd, mut buf: &[u8]) -> io::Result<()> {
    while !buf.is_empty() {
        // SAFETY: buf is valid for buf.len() bytes.
        let n = unsafe { libc::write(fd, buf.as_ptr().cast(), buf.len()) };
        if n < 0 {
            let e = io::Error::last_os_error();
            match e.raw_os_error() {
                Some(libc::EINTR) => continue,
                Some(libc::EAGAIN) => {
                    let mut p = libc::pollfd {
                        fd,
                        events: libc::POLLOUT,
                        revents: 0,
                    };
                    // SAFETY: one valid pollfd.
                    unsafe { libc::poll(&mut p, 1, 100) };
                    continue;
                }
                _ => return Err(e),
            }
        }
        buf = &buf[n as usize..];
    }
    Ok(())
}

/// Writes all of `buf` to a socket with `MSG_NOSIGNAL`: a peer that is gone gives `EPIPE`,
/// never a SIGPIPE that would kill a process whose handler was not set.
pub fn send_all(fd: RawFd, mut buf: &[u8]) -> io::Result<()> {
    while !buf.is_empty() {
        // SAFETY: buf is valid for buf.len() bytes.
        let n = unsafe { libc::send(fd, buf.as_ptr().cast(), buf.len(), libc::MSG_NOSIGNAL) };
        if n < 0 {
            let e = io::Error::last_os_error();
            if e.raw_os_error() == Some(libc::EINTR) {
                continue;
            }
            return Err(e);
        }
        buf = &buf[n as usize..];
    }
    Ok(())
}

/// Reads once from a raw descriptor; `Ok(0)` is end of file. `EINTR` is retried.
pub fn read_fd(fd: RawFd, buf: &mut [u8]) -> io::Result<usize> {
    loop {
        // SAFETY: buf is valid for buf.len() bytes.
        let n = unsafe { libc::read(fd, buf.as_mut_ptr().cast(), buf.len()) };
        if n >= 0 {
            return Ok(n as usize);
        }
        let e = io::Error::last_os_error();
        if e.raw_os_error() != Some(libc::EINTR) {
            return Err(e);
        }
    }
}

/// Clock ticks per second (`CLK_TCK`), the unit of `/proc/PID/stat` start times.
pub fn clock_ticks() -> u64 {
    // SAFETY: sysconf has no memory effects.
    let t = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    if t > 0 {
        t as u64
    } else {
        100
    }
}

/// A signal's conventional name (`SIGTERM`), or its number.
pub fn signal_name(sig: i32) -> String {
    let name = match sig {
        libc::SIGHUP => "SIGHUP",
        libc::SIGINT => "SIGINT",
        libc::SIGQUIT => "SIGQUIT",
        libc::SIGKILL => "SIGKILL",
        libc::SIGTERM => "SIGTERM",
        libc::SIGCONT => "SIGCONT",
        libc::SIGSTOP => "SIGSTOP",
        libc::SIGCHLD => "SIGCHLD",
        libc::SIGPIPE => "SIGPIPE",
        libc::SIGUSR1 => "SIGUSR1",
        libc::SIGUSR2 => "SIGUSR2",
        libc::SIGSEGV => "SIGSEGV",
        libc::SIGABRT => "SIGABRT",
        _ => return format!("signal {sig}"),
    };
    name.to_string()
}

/// `struct pidfd_info` of `<linux/pidfd.h>`, its first version (64 bytes, `exit_code` last).
#[repr(C)]
#[derive(Default)]
struct PidfdInfo {
    mask: u64,
    cgroupid: u64,
    pid: u32,
    tgid: u32,
    ppid: u32,
    ruid: u32,
    rgid: u32,
    euid: u32,
    egid: u32,
    suid: u32,
    sgid: u32,
    fsuid: u32,
    fsgid: u32,
    exit_code: i32,
}

const PIDFD_INFO_EXIT: u64 = 1 << 3;
/// `_IOWR(PIDFS_IOCTL_MAGIC = 0xFF, 11, struct pidfd_info)`; the kernel takes the struct's
/// size from the request number, so the 64-byte first version works on every kernel that has
/// the call.
const PIDFD_GET_INFO: libc::c_ulong = (3 << 30) | (64 << 16) | (0xFF << 8) | 11;

/// How the process behind a pidfd ended, from `PIDFD_GET_INFO` with `PIDFD_INFO_EXIT`: the
/// kernel fills it in only once the process has been *reaped* (by any parent), and only on
/// 6.15+ kernels; None otherwise (still running, a zombie, an older kernel).
pub fn pidfd_exit_status(fd: RawFd) -> Option<crate::ExitKind> {
    const _: () = assert!(std::mem::size_of::<PidfdInfo>() == 64);
    let mut info = PidfdInfo {
        mask: PIDFD_INFO_EXIT,
        ..PidfdInfo::default()
    };
    // SAFETY: the ioctl writes at most size_of::<PidfdInfo>() bytes (encoded in the request)
    // into `info`, which lives across the call; an unknown request fails with ENOTTY.
    let r = unsafe { libc::ioctl(fd, PIDFD_GET_INFO as _, &mut info as *mut PidfdInfo) };
    if r < 0 || info.mask & PIDFD_INFO_EXIT == 0 {
        return None;
    }
    Some(crate::ExitKind::from_wait_status(info.exit_code))
}
