//! Reconciliation with earlier runs (`inferlint reap`, and the first thing every `run` does):
//! processes carrying an `INFERLINT_RUN_ID` marker and `inferlint-*` cgroups whose owners (the
//! supervisor and its shepherd) are all dead are listed and torn down.

use std::collections::BTreeMap;
use std::time::Duration;

use inferlint_supervisor::reap::{self, StaleRun};
use inferlint_supervisor::{Graces, ProcScanner, LEFTOVER_EXIT_STATUS};

/// The graces of a reap: no leader to ask politely, so straight to the group-wide SIGTERM.
pub fn reap_graces(grace_s: f64) -> Graces {
    Graces {
        leader: Duration::ZERO,
        after_leader: Duration::ZERO,
        group: Duration::from_secs_f64(grace_s.max(0.0)),
        force: Duration::from_secs(5),
    }
}

/// What a reconciliation found and did, as the lines it prints.
#[derive(Debug, Default)]
pub struct Reconciled {
    pub lines: Vec<String>,
    /// Earlier runs found with processes still alive.
    pub runs: usize,
    /// Their processes.
    pub processes: usize,
    /// Whether something survived its teardown (listed in `lines`).
    pub leftovers: bool,
}

impl Reconciled {
    /// `reap`'s exit status: the supervisor's leftover status when something survived.
    pub fn exit_code(&self) -> i32 {
        if self.leftovers {
            LEFTOVER_EXIT_STATUS
        } else {
            0
        }
    }
}

/// Finds what earlier runs left behind (only `uid`'s, when given; only `run_id`, when given)
/// and, unless `dry_run`, tears each stale run down with `graces`.
pub fn reconcile(
    scan: &ProcScanner,
    uid: Option<u32>,
    run_id: Option<&str>,
    dry_run: bool,
    graces: &Graces,
) -> Reconciled {
    let mut stale: Vec<StaleRun> = reap::find_stale(scan, &crate::names::names(), uid);
    if let Some(id) = run_id {
        stale.retain(|r| r.run_id == id);
    }
    let mut done = Reconciled::default();
    for run in &stale {
        if run.processes.is_empty() {
            // Only an empty cgroup is left (a teardown that could not remove it): removed
            // without a word, since nothing was running. Not a young one: a live run's cgroup
            // is empty for a moment while its shepherd starts the server, and an empty cgroup
            // says nothing of the pid namespace its owners live in.
            let old = run
                .cgroup
                .as_ref()
                .is_some_and(|c| older_than(c.path(), EMPTY_CGROUP_AGE));
            if !dry_run && old {
                reap::reap(run, graces);
            }
            continue;
        }
        done.runs += 1;
        let cg = run
            .cgroup
            .as_ref()
            .map(|c| format!(", cgroup {}", c.path().display()))
            .unwrap_or_default();
        let n = run.processes.len();
        let noun = if n == 1 { "process" } else { "processes" };
        done.lines.push(format!(
            "stale run {} (its owners are gone): {n} {noun}{cg}",
            run.run_id
        ));
        for p in &run.processes {
            let cmdline = p.cmdline();
            let cmd = inferlint_core::fmt::first_chars(&cmdline, 100);
            done.lines.push(format!("  pid={:<8} {cmd}", p.pid));
        }
        done.processes += n;
        if dry_run {
            continue;
        }
        let report = reap::reap(run, graces);
        let mut held = BTreeMap::new();
        if !report.leftovers.is_empty() {
            held = crate::gpu::mib_by_pid(&crate::gpu::source_from_env());
            done.leftovers = true;
        }
        done.lines
            .extend(report.leftover_lines_with(|l| gpu_words(&held, l.pid)));
    }
    done
}

/// `  (G MiB of GPU memory)` after a leftover's line, when the GPU reader attributes memory to
/// it; nothing otherwise.
fn gpu_words(held: &BTreeMap<u32, u64>, pid: i32) -> String {
    held.get(&(pid as u32))
        .map(|m| format!("  ({m} MiB of GPU memory)"))
        .unwrap_or_default()
}

/// How old an empty cgroup of a stale run must be before it is removed.
const EMPTY_CGROUP_AGE: Duration = Duration::from_secs(60);

/// Whether the folder was last changed more than `age` ago (false when that cannot be read).
fn older_than(path: &std::path::Path, age: Duration) -> bool {
    std::fs::metadata(path)
        .and_then(|m| m.modified())
        .ok()
        .and_then(|t| t.elapsed().ok())
        .is_some_and(|e| e > age)
}

/// The closing line of a reconciliation that stopped something, e.g.
/// `reaped 2 processes of 1 earlier run`.
pub fn reaped_line(done: &Reconciled) -> String {
    format!(
        "reaped {} process{} of {} earlier run{}",
        done.processes,
        if done.processes == 1 { "" } else { "es" },
        done.runs,
        if done.runs == 1 { "" } else { "s" }
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_leftover_holding_gpu_memory_says_how_much() {
        let held = BTreeMap::from([(42, 1024)]);
        assert_eq!(gpu_words(&held, 42), "  (1024 MiB of GPU memory)");
        assert_eq!(gpu_words(&held, 43), "");
    }

    #[test]
    fn only_an_old_folder_is_older_than_its_age() {
        let d = tempfile::tempdir().unwrap();
        assert!(!older_than(d.path(), EMPTY_CGROUP_AGE));
        std::thread::sleep(Duration::from_millis(20));
        assert!(older_than(d.path(), Duration::from_millis(5)));
        assert!(!older_than(
            std::path::Path::new("/nonexistent/inferlint"),
            Duration::ZERO
        ));
    }
}
