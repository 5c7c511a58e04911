//! What wakes the shepherd besides its census: the control socket, its own signals, and —
//! once the supervisor is gone — the server's output, which it keeps draining.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::path::PathBuf;
use std::time::{Duration, Instant};

use nix::errno::Errno;
use nix::sys::signal::Signal;
use nix::sys::signalfd::SignalFd;

use super::Log;
use crate::protocol::{Decoder, Request};
use crate::teardown::Graces;
use crate::{sys, StopMode};

/// A stop the shepherd was asked for: how, with which graces, and by whom.
pub(super) type StopOrder = (StopMode, Graces, String);

/// The shepherd's wake-up sources.
pub(super) struct Wakers {
    pub control: Option<OwnedFd>,
    pub sigfd: Option<SignalFd>,
    pub decoder: Decoder,
    pub supervisor_gone: bool,
    pub drain_file: Option<File>,
    pub drain_to: Option<PathBuf>,
    pub sigints: u32,
    /// Graces for a teardown the shepherd starts on a signal.
    pub graces: Graces,
}

impl Wakers {
    /// The descriptors to wait on (control socket, signalfd).
    pub fn fds(&self) -> Vec<BorrowedFd<'_>> {
        let control = self.control.as_ref().map(|c| c.as_fd());
        let sigfd = self.sigfd.as_ref().map(|s| s.as_fd());
        control.into_iter().chain(sigfd).collect()
    }

    /// Reads whatever is ready without blocking: control messages, signals, and (once the
    /// supervisor is gone) the server's output. Returns the stop asked for, if any.
    pub fn poll(&mut self, drains: &mut [OwnedFd], log: &mut Log) -> Option<StopOrder> {
        let mut request = self.read_control(log);
        self.read_signals(&mut request);
        if self.supervisor_gone {
            self.drain(drains);
        }
        request
    }

    fn read_control(&mut self, log: &mut Log) -> Option<StopOrder> {
        let c = self.control.as_ref()?;
        if !sys::poll_readable(&[c.as_fd()], Some(Duration::ZERO))[0] {
            return None;
        }
        let mut buf = [0u8; 4096];
        let mut request = None;
        match sys::read_fd(c, &mut buf) {
            Ok(0) | Err(_) => {
                log.say("control socket closed: the supervisor is gone");
                self.control = None;
                self.supervisor_gone = true;
            }
            Ok(n) => {
                for req in self.decoder.feed::<Request>(&buf[..n]) {
                    let Request::Stop { mode, graces } = req;
                    request = Some((mode, graces, "shepherd".to_string()));
                }
            }
        }
        request
    }

    fn read_signals(&mut self, request: &mut Option<StopOrder>) {
        let Some(sfd) = &self.sigfd else { return };
        while let Ok(Some(info)) = sfd.read_signal() {
            let Ok(sig) = Signal::try_from(info.ssi_signo as i32) else {
                continue;
            };
            match sig {
                Signal::SIGQUIT => *request = Some(forced(sig, self.graces)),
                Signal::SIGINT if self.sigints >= 1 => {
                    *request = Some(forced(sig, self.graces));
                }
                Signal::SIGINT | Signal::SIGTERM | Signal::SIGHUP => {
                    if sig == Signal::SIGINT {
                        self.sigints += 1;
                    }
                    if request.is_none() {
                        *request = Some((
                            StopMode::Graceful,
                            self.graces,
                            format!("shepherd ({})", sys::signal_name(sig)),
                        ));
                    }
                }
                _ => {}
            }
        }
    }

    /// Moves what the pipes hold into the drain file (non-blocking); whether any pipe is
    /// still open.
    fn drain(&mut self, drains: &mut [OwnedFd]) -> bool {
        if self.drain_file.is_none() {
            self.drain_file = self
                .drain_to
                .as_ref()
                .and_then(|p| OpenOptions::new().create(true).append(true).open(p).ok());
        }
        let mut open = false;
        let mut buf = vec![0u8; 65536];
        for fd in drains.iter() {
            let _ = sys::set_nonblocking(fd, true);
            loop {
                match nix::unistd::read(fd, &mut buf) {
                    Ok(0) => break,
                    Ok(n) => {
                        if let Some(f) = &mut self.drain_file {
                            let _ = f.write_all(&buf[..n]);
                        }
                    }
                    Err(Errno::EINTR) => {}
                    Err(_) => {
                        open = true; // EAGAIN: still open, nothing to read now
                        break;
                    }
                }
            }
        }
        open
    }

    pub fn drain_until_eof(&mut self, drains: &mut [OwnedFd], budget: Duration) {
        let deadline = Instant::now() + budget;
        while self.drain(drains) && Instant::now() < deadline {
            let fds: Vec<BorrowedFd<'_>> = drains.iter().map(|f| f.as_fd()).collect();
            sys::poll_readable(&fds, Some(Duration::from_millis(20)));
        }
    }
}

fn forced(sig: Signal, graces: Graces) -> StopOrder {
    (
        StopMode::Force,
        graces,
        format!("shepherd ({})", sys::signal_name(sig)),
    )
}
