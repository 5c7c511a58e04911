//! The fault-matrix harness: runs the test supervisor (standing in for `inferlint run`) over a
//! fake server tree, applies an ending, and measures how long until every process the tree
//! recorded is gone. A guard kills everything it knows of when a cell fails.

#![allow(dead_code)]

use std::fs;
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use inferlint_supervisor::{ProcId, ProcScanner};
use nix::sys::signal::Signal;

#[path = "../../src/bin/shared/mod.rs"]
mod shared;
#[allow(unused_imports)] // each test binary uses some
pub use shared::{names, MARKER_ENV, NO_PIDFD_ENV};

pub const TREE: &str = env!("CARGO_BIN_EXE_inferlint-test-tree");
pub const SUPERVISOR: &str = env!("CARGO_BIN_EXE_inferlint-test-supervisor");
pub const SHEPHERD: &str = env!("CARGO_BIN_EXE_inferlint-test-shepherd");

/// Short graces keep the matrix fast: leader, after-leader, group, force (ms).
pub const GRACES: &str = "300,100,300,2000";
/// How long any cell may take to clear before it fails.
pub const CLEAR_LIMIT: Duration = Duration::from_secs(8);

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Backend {
    /// As root, `--cgroup require`.
    Cgroup,
    /// As an unprivileged user (uid 65534, when we are root), `--cgroup auto` falling back.
    Group,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ending {
    Normal,
    Error,
    Sigint,
    SigintTwice,
    Sigterm,
    SighupTerminalGone,
    KillSupervisor,
    KillShepherd,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Shape {
    Cooperative,
    IgnoreTerm,
    Setsid,
    DoubleFork,
    Renamed,
    ClearedEnv,
}

impl Shape {
    pub fn arg(self) -> &'static str {
        match self {
            Shape::Cooperative => "cooperative",
            Shape::IgnoreTerm => "ignore-term",
            Shape::Setsid => "setsid",
            Shape::DoubleFork => "double-fork",
            Shape::Renamed => "renamed",
            Shape::ClearedEnv => "cleared-env",
        }
    }
}

pub fn is_root() -> bool {
    nix::unistd::getuid().is_root()
}

fn in_ci() -> bool {
    std::env::var("CI").is_ok_and(|v| v == "true")
}

/// Whether this machine lets us create a cgroup (root with a writable cgroup2 hierarchy).
/// Probed once per test process.
pub fn cgroups_usable() -> bool {
    static USABLE: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *USABLE.get_or_init(|| {
        match inferlint_supervisor::cgroup::Cgroup::create(&format!(
            "inferlint-probe-{}",
            std::process::id()
        )) {
            Ok(c) => {
                let _ = c.remove();
                true
            }
            Err(_) => false,
        }
    })
}

/// Skips (returns false) when the backend cannot run here; under CI=true as root that is a
/// failure instead.
pub fn backend_available(b: Backend) -> bool {
    match b {
        Backend::Cgroup => {
            if cgroups_usable() {
                return true;
            }
            assert!(
                !(in_ci() && is_root()),
                "CI runs as root: the cgroup backend must be usable"
            );
            eprintln!("skipping: no writable cgroup2 hierarchy here");
            false
        }
        Backend::Group => true,
    }
}

/// One recorded process of the tree.
#[derive(Clone, Debug)]
pub struct Recorded {
    pub id: ProcId,
    pub role: String,
}

pub fn read_records(path: &Path) -> Vec<Recorded> {
    fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| {
            let mut it = l.split_whitespace();
            let pid = it.next()?.parse().ok()?;
            let starttime = it.next()?.parse().ok()?;
            Some(Recorded {
                id: ProcId { pid, starttime },
                role: it.next().unwrap_or("").to_string(),
            })
        })
        .collect()
}

/// Everything a cell started, killed on drop (failing or not).
pub struct Guard {
    pub dir: tempfile::TempDir,
    pub child: Option<Child>,
    pub status: Option<serde_json::Value>,
    pub pty_master: Option<OwnedFd>,
    /// The supervisor and shepherd identities (a recycled pid is never killed).
    pub owners: Vec<ProcId>,
}

impl Guard {
    pub fn new() -> Guard {
        let dir = tempfile::Builder::new()
            .prefix("fault-matrix-")
            .tempdir()
            .expect("tempdir");
        fs::set_permissions(dir.path(), fs::Permissions::from_mode(0o777)).unwrap();
        Guard {
            dir,
            child: None,
            status: None,
            pty_master: None,
            owners: Vec::new(),
        }
    }

    pub fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    pub fn records(&self) -> Vec<Recorded> {
        read_records(&self.path("record.txt"))
    }

    pub fn pid_of(&self, key: &str) -> i32 {
        self.status.as_ref().expect("status")[key]
            .as_i64()
            .expect("pid") as i32
    }

    pub fn run_id(&self) -> String {
        self.status.as_ref().expect("status")["run_id"]
            .as_str()
            .unwrap_or_default()
            .to_string()
    }

    /// Diagnostics for a failure message.
    pub fn logs(&self) -> String {
        let mut s = String::new();
        for f in [
            "status.json",
            "record.txt",
            "signals.txt",
            "supervisor.err",
            "supervisor.out",
            "shepherd.log",
            "report.json",
            "report.shepherd.json",
        ] {
            if let Ok(t) = fs::read_to_string(self.path(f)) {
                s.push_str(&format!("--- {f}\n{t}\n"));
            }
        }
        s
    }
}

impl Drop for Guard {
    fn drop(&mut self) {
        let scan = ProcScanner::system();
        for r in self.records() {
            if scan.is_alive(r.id) {
                let _ = inferlint_supervisor::sys::kill(r.id.pid, Signal::SIGKILL);
            }
        }
        for id in &self.owners {
            if let Some(t) = inferlint_supervisor::Tracked::open(&scan, *id) {
                t.signal(&scan, Signal::SIGKILL);
            }
        }
        if let Some(st) = &self.status {
            if let Some(id) = st["run_id"].as_str() {
                for p in marked(id) {
                    let _ = inferlint_supervisor::sys::kill(p, Signal::SIGKILL);
                }
            }
            if let Some(cg) = st["cgroup"].as_str() {
                let c = inferlint_supervisor::cgroup::Cgroup::at(cg);
                let _ = c.kill_all(Duration::from_millis(500));
                std::thread::sleep(Duration::from_millis(20));
                let _ = c.remove();
            }
        }
        if let Some(c) = &mut self.child {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// Live processes carrying the test runs' marker `=id`.
pub fn marked(id: &str) -> Vec<i32> {
    let scan = ProcScanner::system();
    scan.pids()
        .into_iter()
        .filter(|&p| {
            scan.stat(p).is_some_and(|s| s.state != 'Z')
                && scan.environ_var(p, MARKER_ENV).as_deref() == Some(id)
        })
        .collect()
}

/// Options of one run of the test supervisor.
pub struct Launch {
    pub backend: Backend,
    pub shape: Shape,
    pub end: &'static str,
    pub pty: bool,
    pub cgroup_arg: Option<&'static str>,
    pub subreaper: bool,
    pub env: Vec<(String, String)>,
}

/// Starts the test supervisor and waits until the tree is ready.
pub fn launch(g: &mut Guard, l: &Launch) {
    let mut argv: Vec<String> = Vec::new();
    let unprivileged = l.backend == Backend::Group && is_root();
    if unprivileged {
        argv.extend(
            [
                "setpriv",
                "--reuid",
                "65534",
                "--regid",
                "65534",
                "--clear-groups",
            ]
            .map(String::from),
        );
    }
    let cgroup = l.cgroup_arg.unwrap_or(match l.backend {
        Backend::Cgroup => "require",
        Backend::Group if is_root() => "auto",
        Backend::Group => "off",
    });
    let p = |n: &str| g.path(n).display().to_string();
    argv.extend([
        SUPERVISOR.to_string(),
        "--shepherd".into(),
        SHEPHERD.into(),
        "--status".into(),
        p("status.json"),
        "--cgroup".into(),
        cgroup.into(),
        "--grace-ms".into(),
        GRACES.into(),
        "--end".into(),
        l.end.into(),
        "--report".into(),
        p("report.json"),
        "--shepherd-log".into(),
        p("shepherd.log"),
        "--raw".into(),
        p("raw.log"),
    ]);
    if !l.subreaper {
        argv.push("--no-subreaper".into());
    }
    argv.extend([
        "--".into(),
        TREE.into(),
        "--shape".into(),
        l.shape.arg().into(),
        "--record".into(),
        p("record.txt"),
        "--signals".into(),
        p("signals.txt"),
    ]);
    let mut cmd = Command::new(&argv[0]);
    cmd.args(&argv[1..]);
    for (k, v) in &l.env {
        cmd.env(k, v);
    }
    if l.pty {
        let (master, slave) = open_pty();
        cmd.stdin(Stdio::from(slave.try_clone().unwrap()))
            .stdout(Stdio::from(slave.try_clone().unwrap()))
            .stderr(Stdio::from(slave));
        // SAFETY: the hook runs in the forked child before exec, where setsid and ioctl are
        // async-signal-safe; TIOCSCTTY takes an integer argument, no memory.
        unsafe {
            cmd.pre_exec(|| {
                let _ = nix::unistd::setsid();
                if libc::ioctl(0, libc::TIOCSCTTY, 0) < 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        g.pty_master = Some(master);
    } else {
        cmd.process_group(0)
            .stdin(Stdio::null())
            .stdout(fs::File::create(g.path("supervisor.out")).unwrap())
            .stderr(fs::File::create(g.path("supervisor.err")).unwrap());
    }
    g.child = Some(cmd.spawn().expect("start the test supervisor"));

    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        if let Ok(t) = fs::read_to_string(g.path("status.json")) {
            if let Ok(v) = serde_json::from_str::<serde_json::Value>(&t) {
                let scan = ProcScanner::system();
                for key in ["supervisor", "shepherd"] {
                    if let Some(id) = v[key].as_i64().and_then(|p| scan.id_of(p as i32)) {
                        g.owners.push(id);
                    }
                }
                g.status = Some(v);
                break;
            }
        }
        if let Some(Ok(Some(st))) = g.child.as_mut().map(|c| c.try_wait()) {
            panic!("the test supervisor exited early ({st})\n{}", g.logs());
        }
        assert!(
            Instant::now() < deadline,
            "the tree never became ready\n{}",
            g.logs()
        );
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// A pty pair opened close-on-exec, so no other process (another test's child) inherits the
/// master and keeps the terminal alive when the test closes it.
fn open_pty() -> (OwnedFd, OwnedFd) {
    use nix::fcntl::OFlag;
    let master = nix::pty::posix_openpt(OFlag::O_RDWR | OFlag::O_NOCTTY | OFlag::O_CLOEXEC)
        .expect("posix_openpt");
    nix::pty::grantpt(&master).expect("grantpt");
    nix::pty::unlockpt(&master).expect("unlockpt");
    let name = nix::pty::ptsname_r(&master).expect("ptsname");
    let slave: OwnedFd = fs::OpenOptions::new()
        .read(true)
        .write(true)
        .custom_flags(libc::O_NOCTTY | libc::O_CLOEXEC)
        .open(name)
        .expect("open the pty slave")
        .into();
    (master.into(), slave)
}

/// Polls every 10 ms until `done` holds or `limit` has passed; whether it held.
pub fn wait_until(limit: Duration, mut done: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + limit;
    while !done() {
        if Instant::now() >= deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    true
}

/// Polls until none of `ids` runs; returns the time it took, or None at `limit`.
pub fn wait_gone(ids: &[ProcId], limit: Duration) -> Option<Duration> {
    let scan = ProcScanner::system();
    let t0 = Instant::now();
    loop {
        if ids.iter().all(|id| !scan.is_alive(*id)) {
            return Some(t0.elapsed());
        }
        if t0.elapsed() >= limit {
            return None;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// Waits for the test supervisor to exit; its status (code, or 128 + signal).
pub fn wait_child(g: &mut Guard, limit: Duration) -> Option<i32> {
    use std::os::unix::process::ExitStatusExt;
    let deadline = Instant::now() + limit;
    let c = g.child.as_mut()?;
    loop {
        if let Ok(Some(st)) = c.try_wait() {
            return Some(st.code().unwrap_or_else(|| 128 + st.signal().unwrap_or(0)));
        }
        if Instant::now() >= deadline {
            return None;
        }
        std::thread::sleep(Duration::from_millis(2));
    }
}

pub fn send(pid: i32, sig: Signal) {
    let _ = inferlint_supervisor::sys::kill(pid, sig);
}

pub fn send_group(pgid: i32, sig: Signal) {
    let _ = inferlint_supervisor::sys::killpg(pgid, sig);
}

/// The result row of one cell, appended to `$CARGO_TARGET_TMPDIR/fault-matrix.tsv`.
pub fn record_row(backend: Backend, ending: Ending, shape: Shape, clear: Duration) {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR"));
    let line = format!(
        "{:?}\t{:?}\t{}\t{}\n",
        backend,
        ending,
        shape.arg(),
        clear.as_millis()
    );
    if let Ok(mut f) = fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(dir.join("fault-matrix.tsv"))
    {
        use std::io::Write;
        let _ = f.write_all(line.as_bytes());
    }
}

/// Closes the pty master: the terminal is gone (the kernel hangs up the session).
pub fn close_terminal(g: &mut Guard) {
    if let Some(m) = g.pty_master.take() {
        let _ = m.as_raw_fd();
        drop(m);
    }
}
