//! `inferlint reap`: tear down what earlier runs left behind — processes carrying an
//! `INFERLINT_RUN_ID` marker and `inferlint-*` cgroups whose owners (the supervisor and its
//! shepherd) are all dead. Every `run` does the same first.

use std::io::Write;
use std::time::Duration;

use inferlint_supervisor::reap;
use inferlint_supervisor::{Graces, ProcScanner, LEFTOVER_EXIT_STATUS};

#[derive(clap::Args, Debug)]
pub struct Args {
    /// List what earlier runs left; stop nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// Also other users' leftovers (by default only your own).
    #[arg(long)]
    pub all_users: bool,
    /// Only this run (its id is the `INFERLINT_RUN_ID` value).
    #[arg(long)]
    pub run_id: Option<String>,
    /// Seconds the leftovers get after SIGTERM before SIGKILL.
    #[arg(long, default_value_t = 5.0)]
    pub grace: f64,
}

/// The graces of a reap: no leader to ask politely, so straight to the group-wide SIGTERM.
pub fn reap_graces(grace_s: f64) -> Graces {
    Graces {
        leader: Duration::ZERO,
        after_leader: Duration::ZERO,
        group: Duration::from_secs_f64(grace_s.max(0.0)),
        force: Duration::from_secs(5),
    }
}

pub fn run(args: Args) -> anyhow::Result<i32> {
    let mut out = std::io::stdout().lock();
    let scan = ProcScanner::system();
    if !scan.available() {
        anyhow::bail!("reap needs Linux: it finds earlier runs' processes in /proc");
    }
    let uid = (!args.all_users).then(inferlint_supervisor::sys::getuid);
    let mut stale = reap::find_stale(&scan, uid);
    if let Some(id) = &args.run_id {
        stale.retain(|r| &r.run_id == id);
    }
    if stale.is_empty() {
        let _ = writeln!(out, "nothing left behind by earlier runs");
        return Ok(0);
    }
    let mut code = 0;
    let mut total = 0;
    for run in &stale {
        let cg = run
            .cgroup
            .as_ref()
            .map(|c| format!(", cgroup {}", c.path().display()))
            .unwrap_or_default();
        let n = run.processes.len();
        let noun = if n == 1 { "process" } else { "processes" };
        let _ = writeln!(
            out,
            "stale run {} (its owners are gone): {n} {noun}{cg}",
            run.run_id
        );
        for p in &run.processes {
            let cmd: String = p.cmdline().chars().take(100).collect();
            let _ = writeln!(out, "  pid={:<8} {cmd}", p.pid);
        }
        total += n;
        if args.dry_run {
            continue;
        }
        let mut report = reap::reap(run, &reap_graces(args.grace));
        if !report.leftovers.is_empty() {
            let held = crate::gpu::mib_by_pid(&crate::gpu::source_from_env());
            report.annotate_gpu(|pid| held.get(&(pid as u32)).copied());
        }
        for l in report.leftover_lines() {
            let _ = writeln!(out, "{l}");
        }
        if !report.leftovers.is_empty() {
            code = LEFTOVER_EXIT_STATUS;
        }
    }
    if args.dry_run {
        let _ = writeln!(out, "dry run: nothing was signalled");
    } else if code == 0 {
        let runs = stale.len();
        let _ = writeln!(
            out,
            "reaped {total} process{} of {runs} earlier run{}",
            if total == 1 { "" } else { "es" },
            if runs == 1 { "" } else { "s" }
        );
    }
    Ok(code)
}
