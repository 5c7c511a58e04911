//! The stop in attach mode (`--url`, no `--serve`): the server to stop is the process listening
//! on the URL's port and its descendants ([`inferlint_host::listener`]), those found when the run
//! began and still the same processes now (pid and start time). When it cannot be found, the run
//! says so and stops nothing; inferlint's own ancestors are never targets (docs/supervision.md,
//! "Sharing the node").

use std::collections::HashSet;
use std::path::Path;
use std::time::{Duration, Instant};

use inferlint_supervisor::{ProcId, Tracked};
use nix::sys::signal::Signal;

use super::Run;
use inferlint_host::listener::{self, Found};
use inferlint_host::procs::{ancestors_in, ProcInfo, ProcScanner};

/// How often the targets are looked at while they stop.
const POLL: Duration = Duration::from_millis(100);
/// How long SIGKILLed targets get to disappear.
const AFTER_KILL: Duration = Duration::from_secs(5);

impl Run {
    /// Attach mode: which processes serve the URL (the listener on its port and everything
    /// below it), said once; the stop ends those processes ([`Run::stop_attached`]).
    pub(super) async fn name_attached_server(&mut self) {
        let url = self.url.clone();
        let found =
            tokio::task::spawn_blocking(move || listener::find(Path::new("/proc"), &url)).await;
        let line = match found {
            Ok(listener::Found::Tree(t)) => {
                let cmdline = t[0].cmdline();
                let cmd = inferlint_core::fmt::first_chars(&cmdline, 100);
                self.record.attached_server = t.iter().map(|p| p.pid).collect();
                let fate = if self.inputs.keep_server {
                    "--keep-server: the run leaves them running"
                } else {
                    "the run stops them when it ends"
                };
                format!(
                    "== the server at {}: pid={} {cmd} (and {} processes below it; {fate})",
                    self.url,
                    t[0].pid,
                    t.len() - 1
                )
            }
            Ok(listener::Found::NotFound(why)) => {
                format!(
                    "note: cannot tell which processes serve {}: {why}; the run will stop nothing",
                    self.url
                )
            }
            Err(e) => format!("note: cannot tell which processes serve {}: {e}", self.url),
        };
        self.line(&line);
    }

    /// Step 12 in attach mode: SIGTERM the attached server's processes, SIGKILL what is left
    /// after the grace, and say what was done.
    pub(super) async fn stop_attached(&mut self) {
        if self.serve_argv.is_some() {
            return;
        }
        self.sink.clear_status();
        if self.inputs.keep_server {
            self.line("== the attached server is left running (--keep-server)");
            return;
        }
        self.line("== stop the attached server");
        let started: Vec<i32> = self.record.attached_server.clone();
        if started.is_empty() {
            self.line(&format!(
                "nothing stopped: the processes serving {} were not found when the run began",
                self.url
            ));
            return;
        }
        let url = self.url.clone();
        let grace = self.inputs.stop_grace;
        let lines = tokio::task::spawn_blocking(move || stop(&url, &started, grace))
            .await
            .unwrap_or_else(|e| vec![format!("nothing stopped: the stop failed ({e})")]);
        for l in lines {
            self.line(&l);
        }
    }
}

/// The processes to stop: found at the URL now, among those found when the run began, never
/// inferlint or its ancestors.
pub fn targets(now: &[ProcInfo], started: &[i32], protected: &[i32]) -> Vec<ProcInfo> {
    let started: HashSet<i32> = started.iter().copied().collect();
    let protected: HashSet<i32> = protected.iter().copied().collect();
    now.iter()
        .filter(|p| started.contains(&p.pid) && !protected.contains(&p.pid))
        .cloned()
        .collect()
}

fn stop(url: &str, started: &[i32], grace: Duration) -> Vec<String> {
    let scan = ProcScanner::system();
    let tree = match listener::find(Path::new("/proc"), url) {
        Found::Tree(t) => t,
        Found::NotFound(why) => return vec![format!("nothing stopped: {why}")],
    };
    let all = scan.all();
    let protected = ancestors_in(&all, std::process::id() as i32);
    // A listener that is inferlint's own ancestor (a test harness, a wrapper serving the port)
    // has inferlint, and whatever else it started, below it: nothing of that tree is stopped.
    if protected.contains(&tree[0].pid) {
        return vec![format!(
            "nothing stopped: the server at {url} (pid {}) is inferlint's own ancestor",
            tree[0].pid
        )];
    }
    let targets = targets(&tree, started, &protected);
    if targets.is_empty() {
        return vec![format!(
            "nothing stopped: no process serving {url} now is one found when the run began (or it is inferlint's own ancestor)"
        )];
    }
    let tracked: Vec<(ProcInfo, Tracked)> = targets
        .into_iter()
        .filter_map(|p| {
            let id = ProcId {
                pid: p.pid,
                starttime: p.starttime,
            };
            Tracked::open(&scan, id).map(|t| (p, t))
        })
        .collect();
    let mut lines: Vec<String> = tracked
        .iter()
        .map(|(p, _)| {
            let cmdline = p.cmdline();
            let cmd = inferlint_core::fmt::first_chars(&cmdline, 100);
            format!("target  pid={:<8} {cmd}", p.pid)
        })
        .collect();
    let t0 = Instant::now();
    let mut signalled = 0;
    for (_, t) in &tracked {
        if t.signal(&scan, Signal::SIGTERM) {
            signalled += 1;
        }
    }
    let alive = |ts: &[(ProcInfo, Tracked)]| ts.iter().filter(|(_, t)| t.is_alive(&scan)).count();
    while alive(&tracked) > 0 && t0.elapsed() < grace {
        std::thread::sleep(POLL);
    }
    let mut killed = 0;
    for (_, t) in &tracked {
        if t.is_alive(&scan) && t.signal(&scan, Signal::SIGKILL) {
            killed += 1;
        }
    }
    let kill_at = Instant::now();
    while alive(&tracked) > 0 && kill_at.elapsed() < AFTER_KILL {
        std::thread::sleep(POLL);
    }
    let left = alive(&tracked);
    lines.push(format!(
        "stopped: {signalled} process(es) signalled (SIGTERM), {killed} killed (SIGKILL), in {:.1} s; {left} left",
        t0.elapsed().as_secs_f64()
    ));
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    fn proc(pid: i32) -> ProcInfo {
        ProcInfo {
            pid,
            ..ProcInfo::default()
        }
    }

    #[test]
    fn only_what_was_found_at_the_start_and_is_no_ancestor() {
        let now = vec![proc(10), proc(11), proc(12)];
        let got: Vec<i32> = targets(&now, &[10, 11, 99], &[11])
            .iter()
            .map(|p| p.pid)
            .collect();
        assert_eq!(got, vec![10]);
        assert!(targets(&now, &[], &[]).is_empty());
    }
}
