//! `inferlint reap`: tear down what earlier runs left behind — processes carrying an
//! `INFERLINT_RUN_ID` marker and `inferlint-*` cgroups whose owners (the supervisor and its
//! shepherd) are all dead. Every `run` does the same first.

use std::io::Write;

use inferlint_supervisor::ProcScanner;

use inferlint_host::reconcile::{reap_graces, reaped_line, reconcile};

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

pub fn run(args: Args) -> anyhow::Result<i32> {
    let mut out = std::io::stdout().lock();
    let scan = ProcScanner::system();
    if !scan.available() {
        anyhow::bail!("reap needs Linux: it finds earlier runs' processes in /proc");
    }
    let uid = (!args.all_users).then(inferlint_supervisor::sys::getuid);
    let done = reconcile(
        &scan,
        uid,
        args.run_id.as_deref(),
        args.dry_run,
        &reap_graces(args.grace),
    );
    if done.runs == 0 {
        let _ = writeln!(out, "nothing left behind by earlier runs");
        return Ok(0);
    }
    for l in &done.lines {
        let _ = writeln!(out, "{l}");
    }
    if args.dry_run {
        let _ = writeln!(out, "dry run: nothing was signalled");
    } else if !done.leftovers {
        let _ = writeln!(out, "{}", reaped_line(&done));
    }
    Ok(done.exit_code())
}
