//! A real Ray cluster for the tests: where Ray is, free ports, the census of one cluster's
//! processes, and a bystander cluster the test starts itself.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The venv holding Ray 2.60 (.ci/ray.sh installs it): `INFERLINT_RAY_VENV`, else the cache
/// folder's. None (after saying why) when there is none; under CI=true that is a failure.
pub fn venv() -> Option<PathBuf> {
    let path = std::env::var_os("INFERLINT_RAY_VENV")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/var/cache/inferlint/ray/venv"));
    if path.join("bin/ray").is_file() {
        return Some(path);
    }
    let why = format!(
        "no Ray at {} (bin/ray); run .ci/ray.sh or set INFERLINT_RAY_VENV",
        path.display()
    );
    if std::env::var("CI").is_ok_and(|v| v == "true" || v == "1") {
        panic!("CI=true: the Ray tests must run: {why}");
    }
    eprintln!("skipped: {why}");
    None
}

/// The script that starts a cluster (and, unless told not to, the server on it).
pub fn script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/ray/cluster.sh")
}

/// The first of 40 consecutive loopback ports that are all free now (cluster.sh's range).
pub fn free_ports() -> u16 {
    let seed = std::process::id() as u64 * 7919
        + std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.subsec_nanos() as u64)
            .unwrap_or(0);
    for k in 0..200u64 {
        let base = 20_000 + ((seed + k * 977) % 800) as u16 * 50;
        let all_free =
            (base..base + 40).all(|p| std::net::TcpListener::bind(("127.0.0.1", p)).is_ok());
        if all_free {
            return base;
        }
    }
    panic!("no 40 free ports between 20000 and 60000");
}

/// One cluster's environment for cluster.sh: its venv, ports and temp dir. Every process of
/// the cluster inherits `RAY_TMP=<its dir>`, which is how the census finds them.
pub struct Env {
    pub venv: PathBuf,
    pub base: u16,
    pub tmp: tempfile::TempDir,
}

impl Env {
    pub fn new(venv: &Path) -> Env {
        // Short: Ray's socket paths under the temp dir must fit a sockaddr_un.
        let tmp = tempfile::Builder::new()
            .prefix("ray")
            .tempdir_in("/tmp")
            .unwrap();
        Env {
            venv: venv.to_path_buf(),
            base: free_ports(),
            tmp,
        }
    }

    pub fn vars(&self, mode: &str) -> Vec<(String, String)> {
        vec![
            ("RAY_VENV".into(), self.venv.display().to_string()),
            ("RAY_PORT_BASE".into(), self.base.to_string()),
            ("RAY_TMP".into(), self.tmp.path().display().to_string()),
            ("RAY_MODE".into(), mode.into()),
        ]
    }

    /// Live processes (not zombies) whose environment holds this cluster's `RAY_TMP`, or whose
    /// command line names its temp dir: the `ray start`s, gcs_server, raylets, dashboard,
    /// agents, workers, actors, their children. (setproctitle may write over a process's
    /// environment, so the command line is asked too.)
    pub fn census(&self) -> Vec<(i32, String)> {
        let tmp = self.tmp.path().display().to_string();
        let marker = format!("RAY_TMP={tmp}");
        let mut found = Vec::new();
        for e in std::fs::read_dir("/proc").unwrap().flatten() {
            let Ok(pid) = e.file_name().to_string_lossy().parse::<i32>() else {
                continue;
            };
            let Ok(env) = std::fs::read(e.path().join("environ")) else {
                continue;
            };
            let stat = std::fs::read_to_string(e.path().join("stat")).unwrap_or_default();
            if stat.contains(") Z ") || stat.is_empty() {
                continue;
            }
            let cmd = cmdline(pid);
            if env.split(|b| *b == 0).any(|v| v == marker.as_bytes()) || cmd.contains(&tmp) {
                found.push((pid, cmd));
            }
        }
        found
    }

    /// Waits up to `limit` for the census to be empty; returns what is left.
    pub fn wait_empty(&self, limit: Duration) -> Vec<(i32, String)> {
        let deadline = Instant::now() + limit;
        loop {
            let left = self.census();
            if left.is_empty() || Instant::now() > deadline {
                return left;
            }
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    /// Ends every process of this cluster still alive (they carry this test's marker: the
    /// test's own), so a failed test leaves nothing behind.
    pub fn kill_all(&self) {
        for _ in 0..20 {
            let left = self.census();
            if left.is_empty() {
                return;
            }
            for (pid, _) in left {
                // SAFETY: a pid whose environment carries this test's own temp dir.
                unsafe {
                    libc::kill(pid, libc::SIGKILL);
                }
            }
            std::thread::sleep(Duration::from_millis(200));
        }
    }
}

impl Drop for Env {
    fn drop(&mut self) {
        self.kill_all();
    }
}

pub fn cmdline(pid: i32) -> String {
    std::fs::read(format!("/proc/{pid}/cmdline"))
        .map(|b| {
            String::from_utf8_lossy(&b)
                .split('\0')
                .filter(|s| !s.is_empty())
                .collect::<Vec<_>>()
                .join(" ")
        })
        .unwrap_or_default()
}

/// The Ray daemons' kind, from a command line: what a leftover is called in messages.
pub fn kind(cmd: &str) -> &'static str {
    const KINDS: [(&str, &str); 8] = [
        ("gcs_server", "gcs_server"),
        ("raylet/raylet", "raylet"),
        ("dashboard", "dashboard"),
        ("ray::IDLE", "worker"),
        ("ray::RayWorkerProc", "actor"),
        ("ray::DetachedHolder", "detached actor"),
        ("ray start", "ray start"),
        ("time.sleep(600)", "detached actor's child"),
    ];
    KINDS
        .iter()
        .find(|(pat, _)| cmd.contains(pat))
        .map_or("other", |(_, k)| k)
}

/// A Ray cluster (a head, no dashboard: quick to start) that the test starts itself, not under any run: it
/// must survive every case, and the test then stops it.
pub struct Bystander {
    pub env: Env,
    child: Child,
    /// The cluster's daemons once it is up (pid, command line).
    pub daemons: Vec<(i32, String)>,
}

impl Bystander {
    pub fn start(venv: &Path) -> Bystander {
        let env = Env::new(venv);
        let mut cmd = Command::new("bash");
        cmd.arg(script())
            .args(["--port", "1"])
            .envs(env.vars("block"))
            .env("RAY_NO_SERVER", "1")
            .env("RAY_LIGHT", "1")
            .env_remove("INFERLINT_GPU")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        std::os::unix::process::CommandExt::process_group(&mut cmd, 0);
        let child = cmd.spawn().unwrap();
        let mut b = Bystander {
            env,
            child,
            daemons: Vec::new(),
        };
        let deadline = Instant::now() + Duration::from_secs(120);
        loop {
            let procs = b.env.census();
            let raylets = procs.iter().filter(|(_, c)| kind(c) == "raylet").count();
            let gcs = procs.iter().any(|(_, c)| kind(c) == "gcs_server");
            if raylets == 1 && gcs {
                b.daemons = procs
                    .into_iter()
                    .filter(|(_, c)| matches!(kind(c), "raylet" | "gcs_server"))
                    .collect();
                return b;
            }
            assert!(
                Instant::now() < deadline,
                "the bystander cluster did not start: {procs:?}"
            );
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    /// Its gcs_server and raylet are the same processes as at the start, and alive.
    pub fn assert_alive(&self, after: &str) {
        let now: Vec<i32> = self.env.census().iter().map(|(p, _)| *p).collect();
        for (pid, cmd) in &self.daemons {
            assert!(
                now.contains(pid),
                "the bystander's {} (pid {pid}) died after {after}",
                kind(cmd)
            );
        }
    }

    /// Stops it: SIGTERM to its process group, then SIGKILL to what is left of it.
    pub fn stop(mut self) -> Vec<(i32, String)> {
        let pgid = self.child.id() as i32;
        // SAFETY: the process group this test started.
        unsafe {
            libc::kill(-pgid, libc::SIGTERM);
        }
        let _ = self.child.wait();
        self.env.kill_all();
        self.env.wait_empty(Duration::from_secs(10))
    }
}

impl Drop for Bystander {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
