//! Peak memory of a command, as the kernel accounts it, for the benches that hold targets on it.
//!
//! `getrusage(RUSAGE_CHILDREN)` in the bench itself would be wrong: a child forked (or vforked)
//! from a process holding hundreds of MB starts with that process's memory in its accounting
//! (exec records the old address space's high-water mark), so a bench that generated a day of
//! samples would charge them to the command it measures. The command is therefore started by a
//! small copy of the bench program (the same executable, re-run in the measurer role before it
//! loads anything), whose only child is the command.

use std::process::{Command, Output};

const ROLE_ENV: &str = "INFERLINT_BENCH_MEASURER";
const PEAK_LINE: &str = "inferlint-bench-peak-rss-kib ";

/// In the measurer role, runs the command given as this program's arguments, passes its
/// output through, reports its peak RSS on stderr and exits with its status. Otherwise returns.
/// Call it first in `main`.
pub fn measurer_role() {
    if std::env::var_os(ROLE_ENV).is_none() {
        return;
    }
    let mut args = std::env::args_os().skip(1);
    let program = args.next().expect("the command to measure");
    let status = Command::new(program)
        .args(args)
        .env_remove(ROLE_ENV)
        .status()
        .expect("the measured command runs");
    // SAFETY: getrusage only writes the struct it is given.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    let rc = unsafe { libc::getrusage(libc::RUSAGE_CHILDREN, &mut usage) };
    assert_eq!(rc, 0, "getrusage");
    eprintln!("{PEAK_LINE}{}", usage.ru_maxrss);
    std::process::exit(status.code().unwrap_or(128));
}

/// Runs `program args`, returning its output (the peak line taken out of stderr) and its own
/// peak resident set in MiB.
pub fn run_measured(program: &str, args: &[std::ffi::OsString]) -> (Output, f64) {
    let me = std::env::current_exe().expect("the bench's own program");
    let mut out = Command::new(me)
        .env(ROLE_ENV, "1")
        .arg(program)
        .args(args)
        .output()
        .expect("the measurer runs");
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    let mut kib = None;
    let mut rest = String::new();
    for line in stderr.lines() {
        match line.strip_prefix(PEAK_LINE) {
            Some(n) => kib = n.trim().parse::<f64>().ok(),
            None => {
                rest.push_str(line);
                rest.push('\n');
            }
        }
    }
    out.stderr = rest.into_bytes();
    let kib = kib.unwrap_or_else(|| panic!("no peak reported: {stderr}"));
    (out, kib / 1024.0)
}
