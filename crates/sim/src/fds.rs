//! The fds the simulator's processes hand each other: the socket or death pipe passed as a
//! child's fd 3, close-on-exec for the rest, and the self-pipes that wake a poll() on a signal.

use std::io::Read;
use std::os::fd::{AsFd, RawFd};
use std::os::unix::net::UnixStream;

use nix::fcntl::{fcntl, FcntlArg, FdFlag};
use nix::poll::{PollFd, PollFlags};
use nix::sys::signal::Signal;

use crate::settings::CHANNEL_FD;

/// Self-pipes the signal handlers write to (one per signal, since a handler writes a fixed
/// byte), so poll() wakes on SIGTERM/SIGINT.
pub(crate) struct SignalPipe {
    pipes: Vec<(Signal, UnixStream)>,
}

impl SignalPipe {
    pub(crate) fn new(signals: &[Signal]) -> std::io::Result<SignalPipe> {
        let mut pipes = Vec::new();
        for &sig in signals {
            let (read, write) = UnixStream::pair()?;
            read.set_nonblocking(true)?;
            signal_hook::low_level::pipe::register(sig as i32, write)?;
            pipes.push((sig, read));
        }
        Ok(SignalPipe { pipes })
    }

    pub(crate) fn poll_fds(&self) -> Vec<PollFd<'_>> {
        self.pipes
            .iter()
            .map(|(_, r)| PollFd::new(r.as_fd(), PollFlags::POLLIN))
            .collect()
    }

    /// The first signal received since the last call, if any.
    pub(crate) fn take(&mut self) -> Option<Signal> {
        let mut buf = [0u8; 64];
        let mut got = None;
        for (sig, r) in &mut self.pipes {
            while let Ok(n) = r.read(&mut buf) {
                if n == 0 {
                    break;
                }
                got.get_or_insert(*sig);
            }
        }
        got
    }
}

/// Closes `fd` on exec, so no child started later inherits it.
pub(crate) fn set_cloexec(fd: impl AsFd) {
    if let Ok(bits) = fcntl(&fd, FcntlArg::F_GETFD) {
        let flags = FdFlag::from_bits_truncate(bits) | FdFlag::FD_CLOEXEC;
        let _ = fcntl(&fd, FcntlArg::F_SETFD(flags));
    }
}

/// Makes `fd` the child's fd 3 (inherited across exec) in a `pre_exec` hook.
///
/// # Safety
/// Runs between fork and exec: only async-signal-safe calls (dup2, fcntl).
pub(crate) unsafe fn pass_as_fd3(fd: RawFd) -> std::io::Result<()> {
    if fd == CHANNEL_FD {
        let flags = libc::fcntl(fd, libc::F_GETFD);
        if libc::fcntl(fd, libc::F_SETFD, flags & !libc::FD_CLOEXEC) == -1 {
            return Err(std::io::Error::last_os_error());
        }
    } else if libc::dup2(fd, CHANNEL_FD) == -1 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}
