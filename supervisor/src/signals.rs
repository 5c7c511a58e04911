//! The supervisor's signal policy, in one place.
//!
//! | signal | request |
//! |---|---|
//! | SIGINT (first) | graceful stop |
//! | SIGINT after any stop request | force |
//! | SIGINT (third) | exit at once (status 130): the shepherd sees end of file and finishes the teardown |
//! | SIGTERM, SIGHUP | graceful stop |
//! | SIGQUIT | force |
//!
//! The server lives in the shepherd's session, so a terminal's Ctrl-C, Ctrl-\ and hang-up reach
//! only the supervisor, which turns them into one stop request: the server receives exactly one
//! signal from the teardown, never a second copy from the terminal.
//!
//! After SIGHUP the terminal is gone: `println!` would panic on `EIO`, so everything the
//! supervisor prints during a teardown goes through [`say`], which ignores write errors.

use std::io::Write;

use nix::sys::signal::Signal;
use signal_hook::iterator::{Handle, Signals};

/// What a signal asks the supervisor to do.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StopRequest {
    /// Stop gracefully (staged teardown from stage 1). Carries the signal.
    Graceful(Signal),
    /// Skip to the forced stage.
    Force(Signal),
    /// Exit now; the shepherd finishes the job.
    ExitNow,
}

/// Turns a sequence of signals into requests (pure; the policy above).
#[derive(Debug, Default)]
pub struct Policy {
    sigints: u32,
    stopping: bool,
}

impl Policy {
    pub fn on_signal(&mut self, sig: Signal) -> Option<StopRequest> {
        let req = match sig {
            Signal::SIGINT => {
                self.sigints += 1;
                if self.sigints >= 3 {
                    StopRequest::ExitNow
                } else if self.stopping {
                    StopRequest::Force(sig)
                } else {
                    StopRequest::Graceful(sig)
                }
            }
            Signal::SIGTERM | Signal::SIGHUP => StopRequest::Graceful(sig),
            Signal::SIGQUIT => StopRequest::Force(sig),
            _ => return None,
        };
        self.stopping = true;
        Some(req)
    }
}

/// Installed handlers for SIGINT, SIGTERM, SIGHUP and SIGQUIT, delivering requests to a
/// callback on a dedicated thread. Dropping it restores nothing (the process is ending).
pub struct SignalMux {
    handle: Handle,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl SignalMux {
    /// Installs the handlers. `on_request` runs on the mux's thread; on [`StopRequest::ExitNow`]
    /// the mux exits the process with status 130 right after the callback returns.
    pub fn install(
        mut on_request: impl FnMut(StopRequest) + Send + 'static,
    ) -> std::io::Result<SignalMux> {
        let handled = [
            Signal::SIGINT,
            Signal::SIGTERM,
            Signal::SIGHUP,
            Signal::SIGQUIT,
        ];
        let mut signals = Signals::new(handled.map(|s| s as i32))?;
        let handle = signals.handle();
        let thread = std::thread::Builder::new()
            .name("signal-mux".into())
            .spawn(move || {
                let mut policy = Policy::default();
                for sig in signals.forever().filter_map(|s| Signal::try_from(s).ok()) {
                    if let Some(req) = policy.on_signal(sig) {
                        on_request(req);
                        if req == StopRequest::ExitNow {
                            // At once, whatever the other threads are doing: the shepherd
                            // finishes the teardown once we are gone. (std's exit runs no
                            // destructors and flushes stdout only if no thread holds it.)
                            std::process::exit(130);
                        }
                    }
                }
            })?;
        Ok(SignalMux {
            handle,
            thread: Some(thread),
        })
    }

    /// Stops listening.
    pub fn close(mut self) {
        self.handle.close();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// Writes a line to stderr, ignoring errors (a vanished terminal gives `EIO`, a closed pipe
/// `EPIPE`; neither may stop a teardown).
pub fn say(line: &str) {
    let mut err = std::io::stderr().lock();
    let _ = writeln!(err, "{line}");
}

/// As [`say`], to stdout.
pub fn say_out(line: &str) {
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{line}");
    let _ = out.flush();
}

#[cfg(test)]
mod tests {
    use super::*;

    use Signal::{SIGHUP, SIGINT, SIGQUIT, SIGTERM};

    #[test]
    fn policy_escalates_sigint() {
        let mut p = Policy::default();
        assert_eq!(p.on_signal(SIGINT), Some(StopRequest::Graceful(SIGINT)));
        assert_eq!(p.on_signal(SIGINT), Some(StopRequest::Force(SIGINT)));
        assert_eq!(p.on_signal(SIGINT), Some(StopRequest::ExitNow));
    }

    #[test]
    fn term_and_hup_are_graceful_quit_forces() {
        let mut p = Policy::default();
        assert_eq!(p.on_signal(SIGTERM), Some(StopRequest::Graceful(SIGTERM)));
        assert_eq!(p.on_signal(SIGHUP), Some(StopRequest::Graceful(SIGHUP)));
        // A Ctrl-C after a SIGTERM: the user is impatient.
        assert_eq!(p.on_signal(SIGINT), Some(StopRequest::Force(SIGINT)));
        let mut p = Policy::default();
        assert_eq!(p.on_signal(SIGQUIT), Some(StopRequest::Force(SIGQUIT)));
        assert_eq!(p.on_signal(Signal::SIGUSR1), None);
    }
}
