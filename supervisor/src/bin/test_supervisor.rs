//! Test-only: a minimal supervisor built on the crate's API, standing in for `inferlint run`
//! in the fault matrix. It starts a command under a shepherd, waits for a line `ready…`,
//! writes a status file, and then ends as told:
//!
//! * `--end normal` — graceful teardown at once, exit 0 (3 if anything was left);
//! * `--end error` — returns an error: the dropped handle tears down, exit 2;
//! * `--end wait` — waits for signals (the crate's policy: SIGINT once graceful, twice force,
//!   three times exit at once; SIGTERM/SIGHUP graceful; SIGQUIT force) or for the server to
//!   end, writing a status line every 50 ms to stderr (which may be a vanished terminal).
//!
//! Usage: `inferlint-test-supervisor --shepherd PATH --status FILE [--cgroup MODE]
//! [--grace-ms L,A,G,F] [--end normal|error|wait] [--report FILE] [--raw FILE]
//! [--shepherd-log FILE] [--no-subreaper] -- COMMAND…`

#![forbid(unsafe_code)]

#[path = "shared/mod.rs"]
mod shared;

use std::ffi::OsString;
use std::path::PathBuf;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use inferlint_supervisor::signals::say;
use inferlint_supervisor::{
    become_subreaper, CgroupMode, Graces, ShepherdProgram, SignalMux, SpawnOptions, StopMode,
    StopRequest, Supervised, TeardownReport, LEFTOVER_EXIT_STATUS,
};
use nix::sys::signal::Signal;

struct Opts {
    shepherd: PathBuf,
    status: PathBuf,
    cgroup: CgroupMode,
    graces: Graces,
    end: String,
    report: Option<PathBuf>,
    raw: Option<PathBuf>,
    shepherd_log: Option<PathBuf>,
    subreaper: bool,
    command: Vec<OsString>,
}

fn parse() -> Result<Opts, String> {
    let mut o = Opts {
        shepherd: PathBuf::new(),
        status: PathBuf::new(),
        cgroup: CgroupMode::Auto,
        graces: Graces::default(),
        end: "wait".into(),
        report: None,
        raw: None,
        shepherd_log: None,
        subreaper: true,
        command: Vec::new(),
    };
    let mut it = std::env::args_os().skip(1);
    while let Some(k) = it.next() {
        let k = k.to_string_lossy().into_owned();
        if k == "--" {
            o.command = it.collect();
            break;
        }
        if k == "--no-subreaper" {
            o.subreaper = false;
            continue;
        }
        let v = it.next().ok_or(format!("{k} needs a value"))?;
        let s = v.to_string_lossy().into_owned();
        match k.as_str() {
            "--shepherd" => o.shepherd = v.into(),
            "--status" => o.status = v.into(),
            "--cgroup" => o.cgroup = s.parse()?,
            "--grace-ms" => {
                let n: Vec<u64> = s.split(',').filter_map(|x| x.parse().ok()).collect();
                if n.len() != 4 {
                    return Err("--grace-ms needs 4 numbers".into());
                }
                let d = Duration::from_millis;
                o.graces = Graces {
                    leader: d(n[0]),
                    after_leader: d(n[1]),
                    group: d(n[2]),
                    force: d(n[3]),
                };
            }
            "--end" => o.end = s,
            "--report" => o.report = Some(v.into()),
            "--raw" => o.raw = Some(v.into()),
            "--shepherd-log" => o.shepherd_log = Some(v.into()),
            _ => return Err(format!("unknown option {k}")),
        }
    }
    if o.command.is_empty() {
        return Err("no command after --".into());
    }
    Ok(o)
}

fn write_status(o: &Opts, server: &Supervised, phase: &str) {
    let i = server.info();
    let text = serde_json::json!({
        "phase": phase,
        "supervisor": std::process::id(),
        "shepherd": i.shepherd_pid,
        "leader": i.leader.pid,
        "pgid": i.pgid,
        "run_id": i.run_id,
        "cgroup": i.cgroup,
        "cgroup_note": i.cgroup_note,
        "backend": i.backend(),
    });
    let tmp = o.status.with_extension("tmp");
    let _ = std::fs::write(&tmp, text.to_string());
    let _ = std::fs::rename(&tmp, &o.status);
}

fn finish(o: &Opts, report: &TeardownReport) -> i32 {
    if let Some(p) = &o.report {
        let _ = std::fs::write(p, serde_json::to_string_pretty(report).unwrap_or_default());
    }
    for l in report.leftover_lines() {
        say(&l);
    }
    say(&format!(
        "teardown by {} in {} ms",
        report.actor, report.elapsed_ms
    ));
    if report.is_clean() {
        0
    } else {
        LEFTOVER_EXIT_STATUS
    }
}

fn main() {
    let o = match parse() {
        Ok(o) => o,
        Err(e) => {
            say(&format!("inferlint-test-supervisor: {e}"));
            std::process::exit(2);
        }
    };
    std::process::exit(match run(&o) {
        Ok(code) => code,
        Err(e) => {
            say(&format!("inferlint-test-supervisor: {e}"));
            2
        }
    });
}

fn run(o: &Opts) -> Result<i32, String> {
    shared::honour_no_pidfd_env();
    if o.subreaper {
        become_subreaper().map_err(|e| e.to_string())?;
    }
    let (tx, rx) = mpsc::channel::<StopRequest>();
    // Installed before the server starts, so no signal can kill us with the default action.
    let _mux = SignalMux::install(move |req| {
        let _ = tx.send(req);
    })
    .map_err(|e| e.to_string())?;

    let mut opts = SpawnOptions::new(
        ShepherdProgram {
            program: o.shepherd.clone(),
            args: Vec::new(),
        },
        o.command.clone(),
        shared::names(),
    );
    opts.cgroup = o.cgroup;
    opts.graces = o.graces;
    opts.raw_output = o.raw.clone();
    opts.shepherd_log = o.shepherd_log.clone();
    opts.shepherd_report = o.report.as_ref().map(|p| p.with_extension("shepherd.json"));
    let mut server = Supervised::spawn(opts).map_err(|e| e.to_string())?;
    let mut lines = server.take_lines().ok_or("no lines")?;
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        if let Some(l) = lines.try_recv() {
            if l.text.starts_with("ready") {
                break;
            }
            continue;
        }
        if Instant::now() >= deadline {
            return Err("the command never printed 'ready'".into());
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    // Keep draining the line channel so nothing piles up (the pumps never block anyway).
    std::thread::spawn(move || while lines.blocking_recv().is_some() {});
    write_status(o, &server, "ready");

    match o.end.as_str() {
        "normal" => {
            let report = server.teardown(StopMode::Graceful);
            Ok(finish(o, &report))
        }
        "error" => {
            // An error path: the handle is dropped without an explicit stop.
            let _dropped = server;
            Err("simulated error after the server was ready".into())
        }
        _ => {
            let mut code = 0;
            let mut tick = Instant::now();
            let report = loop {
                if let Some(r) = server.wait_done(Duration::from_millis(5)) {
                    break r;
                }
                while let Ok(req) = rx.try_recv() {
                    let (mode, sig) = match req {
                        StopRequest::Graceful(s) => (StopMode::Graceful, s),
                        StopRequest::Force(s) => (StopMode::Force, s),
                        StopRequest::ExitNow => (StopMode::Force, Signal::SIGINT),
                    };
                    code = 128 + sig as i32;
                    say(&format!("stopping ({mode:?})"));
                    server.stop(mode);
                }
                if tick.elapsed() >= Duration::from_millis(50) {
                    tick = Instant::now();
                    say("waiting");
                }
            };
            let report = server.teardown(report.requested);
            let c = finish(o, &report);
            Ok(if c != 0 { c } else { code })
        }
    }
}
