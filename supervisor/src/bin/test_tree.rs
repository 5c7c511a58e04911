//! Test-only: a fake server process tree with a chosen shape, for the fault matrix.
//!
//! `inferlint-test-tree --shape SHAPE --record FILE [--signals FILE]` starts as the leader and
//! builds the tree by re-executing itself with `--role`. Every process appends
//! `pid starttime role` to the record file; every signal received is appended to the signals
//! file as `pid role SIGNAME`. The leader prints `ready` once the whole tree is recorded.
//!
//! Shapes:
//! * `cooperative` — leader → worker → helper; SIGTERM is passed down and waited for.
//! * `ignore-term` — the same tree; everyone ignores SIGTERM, SIGINT and SIGHUP.
//! * `setsid` — leader → escapee in its own session; the leader exits on SIGTERM without it.
//! * `double-fork` — leader → daemonizer → daemon (setsid; daemonizer exits at once).
//! * `renamed` — leader → `VLLM::EngineCore` → `VLLM::Worker_TP0`, `VLLM::Worker_TP1`; the
//!   leader exits on SIGTERM without stopping its engine, which outlives it (vLLM#55510).
//! * `cleared-env` — leader → intermediate started with an empty environment and no output
//!   pipes → ghost (setsid, double fork): no marker, no group, no session tie.
//!
//! With `INFERLINT_TEST_SHM=PREFIX` every process creates the file `PREFIX-ROLE` (a stand-in for a
//! `/dev/shm` segment) and holds it open until it ends, never removing it, as a SIGKILLed vLLM
//! leaves its segments; with `INFERLINT_TEST_SHM_SHARED=PATH` the leader also holds that file
//! (someone else's, which the tree only shares).

#![forbid(unsafe_code)]

use std::io::Write;
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use nix::sys::signal::Signal;
use signal_hook::consts::{SIGHUP, SIGINT, SIGQUIT, SIGTERM};
use signal_hook::iterator::Signals;

struct Opts {
    shape: String,
    role: String,
    record: PathBuf,
    signals: Option<PathBuf>,
    chatter_ms: u64,
}

fn parse() -> Opts {
    let mut o = Opts {
        shape: "cooperative".into(),
        role: "leader".into(),
        record: PathBuf::from("/dev/null"),
        signals: None,
        chatter_ms: 0,
    };
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut i = 0;
    while i < args.len() {
        let v = args.get(i + 1).cloned().unwrap_or_default();
        match args[i].as_str() {
            "--shape" => o.shape = v,
            "--role" => o.role = v,
            "--record" => o.record = v.into(),
            "--signals" => o.signals = Some(v.into()),
            "--chatter-ms" => o.chatter_ms = v.parse().unwrap_or(0),
            _ => {}
        }
        i += 2;
    }
    o
}

fn append(path: &PathBuf, line: &str) {
    if let Ok(mut f) = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
    {
        let _ = f.write_all(format!("{line}\n").as_bytes());
    }
}

fn starttime() -> u64 {
    inferlint_supervisor::ProcScanner::system()
        .id_of(std::process::id() as i32)
        .map(|i| i.starttime)
        .unwrap_or(0)
}

fn child(o: &Opts, role: &str, argv0: Option<&str>) -> Command {
    let mut c = Command::new("/proc/self/exe");
    if let Some(a) = argv0 {
        c.arg0(a);
    }
    c.args(["--shape", &o.shape, "--role", role, "--record"])
        .arg(&o.record);
    if let Some(s) = &o.signals {
        c.arg("--signals").arg(s);
    }
    c
}

fn expected(shape: &str) -> usize {
    match shape {
        "setsid" => 2,
        "renamed" => 4,
        _ => 3,
    }
}

fn wait_recorded(o: &Opts, n: usize) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while Instant::now() < deadline {
        let count = std::fs::read_to_string(&o.record)
            .map(|t| t.lines().count())
            .unwrap_or(0);
        if count >= n {
            return;
        }
        std::thread::sleep(Duration::from_millis(2));
    }
}

/// Roles that start in a session of their own (an escapee of their parent's group and
/// session), as a daemon does.
fn leaves_session(role: &str) -> bool {
    matches!(role, "escapee" | "daemon" | "ghost")
}

/// Starts a child that this process never waits for: it exits next, leaving the child an
/// orphan (the second fork of a double fork).
#[allow(clippy::zombie_processes)]
fn start_orphan(o: &Opts, role: &str) {
    child(o, role, None).spawn().expect("spawn");
}

/// The files this process holds open for the rest of its life (see the module's doc).
fn hold_shm(role: &str) -> Vec<std::fs::File> {
    let mut held = Vec::new();
    if let Some(prefix) = std::env::var_os("INFERLINT_TEST_SHM") {
        let path = format!("{}-{role}", prefix.to_string_lossy());
        held.push(std::fs::File::create(path).expect("create the shm stand-in"));
    }
    if let (Some(path), "leader") = (std::env::var_os("INFERLINT_TEST_SHM_SHARED"), role) {
        held.push(std::fs::File::open(path).expect("open the shared file"));
    }
    held
}

fn main() {
    let o = parse();
    if leaves_session(&o.role) {
        // Before anything else, so the process is recorded (and reported ready) only once
        // it has left.
        let _ = nix::unistd::setsid();
    }
    let ignores = o.shape == "ignore-term";
    take_name(&o.role);
    let mut signals = Signals::new([SIGTERM, SIGINT, SIGHUP, SIGQUIT]).expect("signals");
    append(
        &o.record,
        &format!("{} {} {}", std::process::id(), starttime(), o.role),
    );

    let _shm = hold_shm(&o.role);
    let Some(mut kids) = start_children(&o) else {
        return;
    };
    if o.role == "leader" {
        wait_recorded(&o, expected(&o.shape));
        let mut out = std::io::stdout().lock();
        let _ = writeln!(out, "ready pid={}", std::process::id());
        let _ = out.flush();
    }

    let chatter =
        (o.role == "leader" && o.chatter_ms > 0).then(|| Duration::from_millis(o.chatter_ms));
    loop {
        let Some(sig) = next_signal(&mut signals, chatter) else {
            return;
        };
        note_signal(&o, sig);
        if ignores {
            continue;
        }
        if sig != SIGTERM && sig != SIGINT && sig != SIGHUP {
            continue;
        }
        let passes_down = matches!(
            (o.shape.as_str(), o.role.as_str()),
            ("cooperative", _) | ("renamed", "engine")
        );
        if passes_down {
            stop_children(&mut kids);
        }
        std::process::exit(0);
    }
}

/// Names the thread as vLLM names its engine and workers, for the roles that stand in for them.
fn take_name(role: &str) {
    if role == "engine" {
        inferlint_supervisor::sys::set_thread_name("VLLM::EngineCore");
    } else if let Some(rank) = role.strip_prefix("tp") {
        inferlint_supervisor::sys::set_thread_name(&format!("VLLM::Worker_TP{rank}"));
    }
}

/// Starts this role's children in its shape; the ones it waits for on its way out are
/// returned. None when this process's part is over once its child has recorded itself.
fn start_children(o: &Opts) -> Option<Vec<std::process::Child>> {
    let mut kids: Vec<std::process::Child> = Vec::new();
    match (o.shape.as_str(), o.role.as_str()) {
        ("cooperative" | "ignore-term", "leader") => {
            kids.push(child(o, "worker", None).spawn().expect("spawn"));
        }
        ("cooperative" | "ignore-term", "worker") => {
            kids.push(child(o, "helper", None).spawn().expect("spawn"));
        }
        ("setsid", "leader") => kids.push(child(o, "escapee", None).spawn().expect("spawn")),
        ("double-fork", "leader") => {
            let mut c = child(o, "daemonizer", None).spawn().expect("spawn");
            let _ = c.wait();
        }
        ("double-fork", "daemonizer") => {
            start_orphan(o, "daemon");
            // Exit once the daemon has recorded itself, leaving it an orphan.
            wait_recorded(o, 3);
            return None;
        }
        ("renamed", "leader") => kids.push(
            child(o, "engine", Some("VLLM::EngineCore"))
                .spawn()
                .expect("spawn"),
        ),
        ("renamed", "engine") => {
            for i in 0..2 {
                let role = format!("tp{i}");
                let name = format!("VLLM::Worker_TP{i}");
                kids.push(child(o, &role, Some(&name)).spawn().expect("spawn"));
            }
        }
        ("cleared-env", "leader") => {
            let mut c = child(o, "intermediate", None)
                .env_clear()
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .expect("spawn");
            let _ = c.wait();
        }
        ("cleared-env", "intermediate") => {
            start_orphan(o, "ghost");
            wait_recorded(o, 3);
            return None;
        }
        _ => {}
    }
    Some(kids)
}

/// The next signal received; with `chatter`, a `tick` line is printed every period until one
/// comes. None when no more can come.
fn next_signal(signals: &mut Signals, chatter: Option<Duration>) -> Option<i32> {
    let Some(d) = chatter else {
        return signals.forever().next();
    };
    loop {
        if let Some(sig) = signals.pending().next() {
            return Some(sig);
        }
        let _ = writeln!(std::io::stdout(), "tick");
        std::thread::sleep(d);
    }
}

/// Appends the signal to the signals file and, for the leader, prints it.
fn note_signal(o: &Opts, sig: i32) {
    if let Some(path) = &o.signals {
        append(
            path,
            &format!(
                "{} {} {}",
                std::process::id(),
                o.role,
                inferlint_supervisor::sys::signal_number_name(sig)
            ),
        );
    }
    if o.role == "leader" {
        // Output written during the teardown must still reach the raw log, even after the
        // supervisor is gone (the shepherd drains it then).
        let _ = writeln!(
            std::io::stdout(),
            "stopping on {}",
            inferlint_supervisor::sys::signal_number_name(sig)
        );
        let _ = std::io::stdout().flush();
    }
}

/// Passes SIGTERM down to the children and waits for them, 2 s in all.
fn stop_children(kids: &mut [std::process::Child]) {
    for k in kids.iter() {
        let _ = inferlint_supervisor::sys::kill(k.id() as i32, Signal::SIGTERM);
    }
    let deadline = Instant::now() + Duration::from_secs(2);
    for k in kids {
        while Instant::now() < deadline {
            if let Ok(Some(_)) = k.try_wait() {
                break;
            }
            std::thread::sleep(Duration::from_millis(1));
        }
    }
}
