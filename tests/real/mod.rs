//! The harness of the real-vLLM lane (`tests/real_vllm.rs`): where the install is, the environment
//! docs/real-vllm.md#what-the-server-gets gives the server, and one run of the real binary, watched
//! from outside.
//!
//! Each run lives in a PID namespace of its own (`unshare --pid --fork --mount-proc`) whose first
//! process is a small shell. Inside, inferlint's GPU gate and its teardown (which stop any
//! inference server process of their user, docs/design/processes.md#finding-server-processes) see
//! only this run's processes, so the lane can neither refuse to start because of nor stop another
//! test's servers on a shared machine. From outside, every process of the namespace but the shell
//! is the run's: "nothing left" is exact, and the test signals only pids it found there. inferlint
//! is not the namespace's first process, so killing it does not make the kernel clean up for it:
//! what survives is what its shepherds failed to stop. Where `unshare` is refused, the run is
//! started bare and its processes are found by a marker in their environment and by their process
//! groups (vLLM's renamed children wipe their environment, but stay in the API server's group).

pub mod engines;
pub mod field;
pub mod files;
pub mod install;
pub mod llamacpp;
pub mod multiproc;
pub mod sweep;
pub mod window;

pub use install::{Install, SERVER_ENV};

use std::collections::BTreeSet;
use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// One real vLLM at a time (the machine has two cores), even without `--test-threads=1`.
pub fn turn() -> crate::serial::Turn {
    crate::serial::turn("real-vllm")
}

/// Fails the test when the port is taken (each test has its own, 8011 and up).
pub fn assert_port_free(port: u16) {
    if let Err(e) = std::net::TcpListener::bind(("127.0.0.1", port)) {
        panic!("port {port} is taken ({e}); the real-vLLM tests use 8011-8019 and 8021-8024");
    }
}

/// A process seen from outside the run.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Seen {
    pub pid: i32,
    pub comm: String,
    pub cmdline: String,
}

impl std::fmt::Display for Seen {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let cmd: String = self.cmdline.chars().take(120).collect();
        write!(f, "{} ({}) {}", self.pid, self.comm, cmd)
    }
}

/// `/proc/PID/stat`: (state, ppid, pgrp, session).
fn stat(pid: i32) -> Option<(char, i32, i32, i32)> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let rest = &s[s.rfind(')')? + 2..];
    let mut f = rest.split(' ');
    let state = f.next()?.chars().next()?;
    let ppid = f.next()?.parse().ok()?;
    let pgrp = f.next()?.parse().ok()?;
    let sid = f.next()?.parse().ok()?;
    Some((state, ppid, pgrp, sid))
}

fn pids() -> Vec<i32> {
    std::fs::read_dir("/proc")
        .map(|d| {
            d.flatten()
                .filter_map(|e| e.file_name().to_string_lossy().parse().ok())
                .collect()
        })
        .unwrap_or_default()
}

fn seen(pid: i32) -> Seen {
    let comm = std::fs::read_to_string(format!("/proc/{pid}/comm"))
        .unwrap_or_default()
        .trim()
        .to_string();
    let cmdline = std::fs::read(format!("/proc/{pid}/cmdline"))
        .map(|b| {
            String::from_utf8_lossy(&b)
                .replace('\0', " ")
                .trim()
                .to_string()
        })
        .unwrap_or_default();
    Seen { pid, comm, cmdline }
}

fn pid_ns(pid: i32) -> Option<PathBuf> {
    std::fs::read_link(format!("/proc/{pid}/ns/pid")).ok()
}

fn has_env(pid: i32, var: &[u8]) -> bool {
    std::fs::read(format!("/proc/{pid}/environ"))
        .is_ok_and(|env| env.split(|b| *b == 0).any(|v| v == var))
}

/// Whether this machine lets the test start a PID namespace (`INFERLINT_REAL_VLLM_BARE=1`
/// says no, to try the fallback).
fn namespaces_work() -> bool {
    static OK: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *OK.get_or_init(|| {
        if std::env::var("INFERLINT_REAL_VLLM_BARE").is_ok_and(|v| v == "1") {
            return false;
        }
        Command::new("unshare")
            .args(["--pid", "--fork", "--mount-proc", "true"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    })
}

/// The shell that runs inferlint: it writes inferlint's exit status to a file, then stays (as
/// the namespace's first process it keeps the namespace, and what the run left in it, alive
/// until the test has looked).
const INIT: &str = r#"rc="$1"; shift; "$@" 2>&1; echo "$?" > "$rc.tmp"; mv "$rc.tmp" "$rc"; exec sleep 100000 </dev/null >/dev/null 2>&1"#;

static RUNS: AtomicUsize = AtomicUsize::new(0);

/// One `inferlint` command running (in its namespace), its output collected line by line.
pub struct Launch {
    /// Where the run's files go (kept when `INFERLINT_REAL_VLLM_KEEP=1`).
    pub dir: tempfile::TempDir,
    child: Child,
    /// The shell's pid (the namespace's first process) on this side.
    init: i32,
    ns: Option<PathBuf>,
    pub inferlint: i32,
    marker: String,
    groups: Mutex<BTreeSet<i32>>,
    lines: Arc<Mutex<Vec<(Duration, String)>>>,
    pub started: Instant,
    rc_file: PathBuf,
}

impl Launch {
    /// Starts `inferlint ARGS` with the server environment of
    /// docs/real-vllm.md#what-the-server-gets, in a PID namespace where
    /// the machine allows one.
    pub fn start(name: &str, args: &[String]) -> Launch {
        Launch::start_with(name, args, &[], true)
    }

    /// As [`Launch::start`], with more environment, and bare (no namespace) unless `isolate`.
    pub fn start_with(name: &str, args: &[String], env: &[(&str, &str)], isolate: bool) -> Launch {
        let dir = tempfile::Builder::new()
            .prefix(&format!("real-vllm-{name}-"))
            .tempdir()
            .unwrap();
        let rc_file = dir.path().join("inferlint.rc");
        let marker = format!(
            "{}-{}-{}",
            name,
            std::process::id(),
            RUNS.fetch_add(1, Ordering::SeqCst)
        );
        let isolated = isolate && namespaces_work();
        if isolate && !isolated {
            println!("note: no PID namespace (unshare refused, or INFERLINT_REAL_VLLM_BARE=1): the run is started bare and its processes are found by its marker");
        }
        let mut cmd = if isolated {
            let mut c = Command::new("unshare");
            c.args([
                "--pid",
                "--fork",
                "--mount-proc",
                "--kill-child",
                "sh",
                "-c",
            ]);
            c
        } else {
            let mut c = Command::new("sh");
            // A group of its own, so the run's groups are never the test's.
            std::os::unix::process::CommandExt::process_group(&mut c, 0);
            c.arg("-c");
            c
        };
        cmd.arg(INIT)
            .arg("sh")
            .arg(&rc_file)
            .arg(env!("CARGO_BIN_EXE_inferlint"))
            .args(args)
            .current_dir(dir.path())
            .env_remove("INFERLINT_ENGINE")
            .env_remove("INFERLINT_GPU")
            .env_remove("OPENAI_API_KEY")
            .env("NO_COLOR", "1")
            .env("INFERLINT_REAL_VLLM_RUN", &marker)
            .envs(SERVER_ENV)
            .envs(env.iter().copied())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null());
        let started = Instant::now();
        let mut child = cmd.spawn().expect("unshare/sh starts");
        let stdout = child.stdout.take().expect("piped");
        let lines: Arc<Mutex<Vec<(Duration, String)>>> = Arc::default();
        let sink = lines.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                println!("    | {line}");
                sink.lock().unwrap().push((started.elapsed(), line));
            }
        });
        let child_of = |parent: i32| {
            let deadline = Instant::now() + Duration::from_secs(10);
            loop {
                if let Some(p) = pids()
                    .into_iter()
                    .find(|p| stat(*p).is_some_and(|s| s.1 == parent))
                {
                    return p;
                }
                assert!(Instant::now() < deadline, "no child of {parent} appeared");
                std::thread::sleep(Duration::from_millis(20));
            }
        };
        let init = if isolated {
            child_of(child.id() as i32)
        } else {
            child.id() as i32
        };
        let inferlint = child_of(init);
        let ns = if isolated { pid_ns(init) } else { None };
        Launch {
            dir,
            child,
            init,
            ns,
            inferlint,
            marker,
            groups: Mutex::default(),
            lines,
            started,
            rc_file,
        }
    }

    /// The folder the run writes (`-o`).
    pub fn out(&self) -> PathBuf {
        self.dir.path().join("run")
    }

    /// Every output line so far.
    pub fn output(&self) -> String {
        let l = self.lines.lock().unwrap();
        l.iter()
            .map(|(_, s)| s.as_str())
            .collect::<Vec<_>>()
            .join("\n")
    }

    /// When the first line starting with `prefix` was printed (since the start).
    pub fn printed_at(&self, prefix: &str) -> Option<Duration> {
        let l = self.lines.lock().unwrap();
        l.iter()
            .find(|(_, s)| s.starts_with(prefix))
            .map(|(t, _)| *t)
    }

    /// Waits until a line starting with `prefix` is printed; panics after `limit`.
    pub fn wait_line(&self, prefix: &str, limit: Duration) -> Duration {
        let deadline = Instant::now() + limit;
        loop {
            if let Some(t) = self.printed_at(prefix) {
                return t;
            }
            if self.exit_code().is_some() {
                panic!(
                    "inferlint ended before printing {prefix:?}:\n{}",
                    self.output()
                );
            }
            assert!(
                Instant::now() < deadline,
                "no {prefix:?} within {limit:?}:\n{}",
                self.output()
            );
            self.census();
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// inferlint's exit status, once it has exited.
    pub fn exit_code(&self) -> Option<i32> {
        std::fs::read_to_string(&self.rc_file)
            .ok()
            .and_then(|s| s.trim().parse().ok())
    }

    /// Waits for inferlint to exit; kills it and panics after `limit`.
    pub fn wait(&self, limit: Duration) -> i32 {
        let deadline = Instant::now() + limit;
        loop {
            if let Some(rc) = self.exit_code() {
                // The last lines may still be in the pipe.
                std::thread::sleep(Duration::from_millis(200));
                return rc;
            }
            if Instant::now() >= deadline {
                self.signal(libc::SIGKILL);
                panic!(
                    "inferlint did not finish within {limit:?}:\n{}",
                    self.output()
                );
            }
            self.census();
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    /// Sends a signal to inferlint itself (a terminal's Ctrl-C, or SIGKILL).
    pub fn signal(&self, sig: i32) {
        // SAFETY: a pid this test started and found as its shell's child.
        unsafe {
            libc::kill(self.inferlint, sig);
        }
    }

    /// The live (not zombie) processes of this run, inferlint included.
    pub fn census(&self) -> Vec<Seen> {
        let mut out = Vec::new();
        let marker = format!("INFERLINT_REAL_VLLM_RUN={}", self.marker);
        let me = std::process::id() as i32;
        // SAFETY: getpgrp has no arguments and cannot fail.
        let my_group = unsafe { libc::getpgrp() };
        for pid in pids() {
            if pid == self.init || pid == self.child.id() as i32 {
                continue;
            }
            let Some((state, _, pgrp, _)) = stat(pid) else {
                continue;
            };
            if state == 'Z' || state == 'X' || pid == me {
                continue;
            }
            let ours = match &self.ns {
                Some(ns) => pid_ns(pid).as_ref() == Some(ns),
                None if pgrp == my_group => false,
                None => {
                    if has_env(pid, marker.as_bytes()) {
                        self.groups.lock().unwrap().insert(pgrp);
                        true
                    } else {
                        self.groups.lock().unwrap().contains(&pgrp)
                    }
                }
            };
            if ours {
                out.push(seen(pid));
            }
        }
        out.sort();
        out
    }

    /// Waits until none of the run's processes is alive; returns how long that took, or the
    /// processes still alive after `limit`.
    pub fn wait_nothing_left(&self, limit: Duration) -> Result<Duration, Vec<Seen>> {
        let t0 = Instant::now();
        loop {
            let left = self.census();
            if left.is_empty() {
                return Ok(t0.elapsed());
            }
            if t0.elapsed() >= limit {
                return Err(left);
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

impl Drop for Launch {
    fn drop(&mut self) {
        // Whatever the test's outcome: stop everything this run started. Killing the
        // namespace's first process makes the kernel kill the rest of the namespace.
        if self.ns.is_some() {
            // SAFETY: the shell this test started.
            unsafe {
                libc::kill(self.init, libc::SIGKILL);
            }
        } else {
            for p in self.census() {
                // SAFETY: processes carrying this run's marker, or in its process groups.
                unsafe {
                    libc::kill(p.pid, libc::SIGKILL);
                }
            }
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
        if std::env::var("INFERLINT_REAL_VLLM_KEEP").is_ok_and(|v| v == "1") {
            let kept = std::mem::replace(&mut self.dir, tempfile::tempdir().unwrap());
            println!("kept {}", kept.keep().display());
        }
    }
}

/// Runs `inferlint ARGS` to the end (outside any namespace: for read-only commands).
pub fn inferlint(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_inferlint"))
        .args(args)
        .env_remove("INFERLINT_ENGINE")
        .env("NO_COLOR", "1")
        .stdin(Stdio::null())
        .output()
        .expect("inferlint runs");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}
