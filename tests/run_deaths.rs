//! Every death in the server's tree is an event (docs/supervision.md): `inferlint run`
//! supervises `inferlint sim serve` while `inferlint sim bench` loads it, and the simulated
//! engine dies mid-load — SIGKILLed by this test, by its pid, or ended by the kernel's OOM
//! killer under a cgroup memory limit. The run must print the death at once, record it in
//! run.json, fail T7 with it, stop the load it can no longer serve, say so in its problem line,
//! exit 1, and leave nothing alive; a bystander named `VLLM::EngineCore` that the test started
//! itself survives. A healthy run prints no death and passes T7.
//!
//! The OOM test needs a memory cgroup (v1 `memory` hierarchy or v2 with the controller at the
//! root) and root; without one it fails under CI=true and is skipped otherwise.

use crate::run_support;

#[path = "run_deaths/nodes.rs"]
mod nodes;

use std::io::{BufRead, BufReader};
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use run_support::{clean_exit_code, json_file, message_of, status_of, Bystander, World};
use serde_json::Value;

const SERVE: &str =
    "--num-gpu-blocks-override 98 --block-size 16 --max-model-len 1024 --tokens-per-s 100";
/// About 8 s of load: long enough to die in the middle of it.
const LOAD: &str = "--max-concurrency 3 --num-prompts 24 --random-input-len 40 --random-output-len 100 --random-range-ratio 0.5 --ignore-eos";
const BOUND: Duration = Duration::from_secs(90);

/// A run whose output is read as it is printed.
struct Live {
    child: Child,
    lines: mpsc::Receiver<(Instant, String)>,
    seen: Vec<String>,
    stderr: std::thread::JoinHandle<String>,
}

impl Live {
    fn spawn(mut cmd: Command) -> Live {
        cmd.stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = cmd.spawn().expect("inferlint starts");
        let out = child.stdout.take().unwrap();
        let mut err = child.stderr.take().unwrap();
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for l in BufReader::new(out).lines().map_while(Result::ok) {
                let _ = tx.send((Instant::now(), l));
            }
        });
        let stderr = std::thread::spawn(move || {
            let mut s = String::new();
            let _ = std::io::Read::read_to_string(&mut err, &mut s);
            s
        });
        Live {
            child,
            lines,
            seen: Vec::new(),
            stderr,
        }
    }

    /// Waits for a printed line containing `needle`; when it was printed.
    fn wait_line(&mut self, needle: &str, limit: Duration) -> Option<Instant> {
        let deadline = Instant::now() + limit;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok((at, l)) => {
                    let hit = l.contains(needle);
                    self.seen.push(l);
                    if hit {
                        return Some(at);
                    }
                }
                Err(_) => return None,
            }
        }
    }

    /// Waits for the end (killing the run past `limit`, which fails the test).
    fn finish(mut self, limit: Duration) -> Ran {
        let t0 = Instant::now();
        let status = loop {
            if let Some(s) = self.child.try_wait().unwrap() {
                break s;
            }
            if t0.elapsed() > limit {
                let _ = self.child.kill();
                let _ = self.child.wait();
                panic!("the run hung\n{}", self.seen.join("\n"));
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        while let Ok((_, l)) = self.lines.recv_timeout(Duration::from_secs(2)) {
            self.seen.push(l);
        }
        Ran {
            code: status.code().unwrap_or(-1),
            stdout: self.seen.join("\n"),
            stderr: self.stderr.join().unwrap_or_default(),
        }
    }
}

struct Ran {
    code: i32,
    stdout: String,
    stderr: String,
}

impl Ran {
    fn all(&self) -> String {
        format!(
            "exit {}\nstdout:\n{}\nstderr:\n{}",
            self.code, self.stdout, self.stderr
        )
    }

    /// The alert lines (`[12:00:00] ! …` on a pipe).
    fn alerts(&self) -> Vec<&str> {
        self.stdout.lines().filter(|l| l.contains("] ! ")).collect()
    }
}

impl World {
    fn serve_args(&self, extra: &str, run_args: &[&str]) -> Vec<String> {
        let mut v = vec![
            "--serve".to_string(),
            self.sim_serve("0.2", &format!("{SERVE} {extra}")),
        ];
        v.extend(run_args.iter().map(|s| s.to_string()));
        v
    }

    fn death_run(&self, extra: &str, run_args: &[&str]) -> Command {
        self.run_command(&self.serve_args(extra, run_args), &self.sim_bench(LOAD))
    }

    /// The run's simulated engine (found by this world's marker, so never the bystander).
    fn engine_pid(&self) -> Option<i32> {
        self.live_processes()
            .into_iter()
            .find(|(_, cmd)| cmd.starts_with("VLLM::EngineCore"))
            .map(|(pid, _)| pid)
    }
}

fn results(w: &World) -> Value {
    json_file(&w.out().join("results.json"))
}

fn deaths(w: &World) -> Vec<Value> {
    let run = json_file(&w.out().join("run.json"));
    run["deaths"]
        .as_array()
        .expect("run.json lists deaths")
        .clone()
}

/// What a run whose engine died mid-load must show, `how` being the end's words.
fn assert_engine_death(w: &World, r: &Ran, engine: i32, how: &str) {
    assert_eq!(r.code, 1, "{}", r.all());
    assert!(!r.stderr.contains("panicked"), "{}", r.all());
    let said = format!("into the load: VLLM::EngineCore (pid {engine}) {how}");
    assert!(
        r.alerts().iter().any(|l| l.contains(&said)),
        "no `! … {said}`\n{}",
        r.all()
    );
    assert!(
        r.stdout
            .contains("the server can no longer serve: stopping the load"),
        "{}",
        r.all()
    );
    assert!(
        r.stdout
            .contains("problem: the server could not serve the whole load: VLLM::EngineCore"),
        "{}",
        r.all()
    );
    let res = results(w);
    assert_eq!(status_of(&res, "T7").as_deref(), Some("fail"), "{res}");
    let t7 = message_of(&res, "T7").unwrap();
    assert!(
        t7.starts_with(&format!("VLLM::EngineCore (pid {engine}) {how} ")),
        "{t7}"
    );
    let d = deaths(w);
    let first = &d[0];
    assert_eq!(first["pid"], engine, "{d:?}");
    assert_eq!(first["name"], "VLLM::EngineCore");
    assert_eq!(first["phase"], "load");
    assert_eq!(first["signal"], "SIGKILL");
    assert_eq!(first["server_broken"], true);
    let run = json_file(&w.out().join("run.json"));
    assert_eq!(run["exit_code"], 1);
    assert!(
        w.live_processes().is_empty(),
        "left alive: {:?}\n{}",
        w.live_processes(),
        r.all()
    );
}

#[test]
fn an_engine_killed_mid_load_is_printed_recorded_and_fails_t7() {
    let w = World::new();
    let mut bystander = Bystander::start();
    let mut live = Live::spawn(w.death_run("", &[]));
    let load_at = live
        .wait_line("== load:", Duration::from_secs(40))
        .expect("the load starts");
    std::thread::sleep(Duration::from_millis(1500));
    let engine = w.engine_pid().expect("the run's engine runs");
    let killed_at = Instant::now();
    // SAFETY: a pid this test's run started (found by its marker), checked just above.
    assert_eq!(unsafe { libc::kill(engine, libc::SIGKILL) }, 0);
    let printed = live.wait_line(
        &format!("VLLM::EngineCore (pid {engine}) was killed by SIGKILL"),
        Duration::from_secs(10),
    );
    let r = live.finish(BOUND);
    let printed = printed.unwrap_or_else(|| panic!("no death line\n{}", r.all()));
    assert_engine_death(&w, &r, engine, "was killed by SIGKILL");
    let d = deaths(&w);
    assert_eq!(d[0]["oom_kill"], false, "no OOM counter rose: {d:?}");
    // Printed at once, and timed from the load's start (the line, seen here, came a little
    // after the load really started).
    let lag = printed.duration_since(killed_at);
    let into = killed_at.duration_since(load_at).as_secs_f64();
    let at_s = d[0]["at_s"].as_f64().unwrap();
    println!(
        "death printed {lag:?} after the kill; at_s {at_s} (kill {into:.2}s after `== load:`)"
    );
    assert!(
        lag < Duration::from_secs(1),
        "printed {lag:?} after the kill"
    );
    assert!(
        (at_s - into).abs() < 1.0,
        "at_s {at_s}, killed {into:.2}s in"
    );
    assert!(
        bystander.alive(),
        "the bystander VLLM::EngineCore was killed"
    );
}

#[test]
fn a_healthy_run_prints_no_death_and_passes_t7() {
    let w = World::new();
    let mut bystander = Bystander::start();
    let r = Live::spawn(w.death_run("", &[])).finish(BOUND);
    assert_eq!(r.code, clean_exit_code(&results(&w)), "{}", r.all());
    assert!(r.alerts().is_empty(), "{}", r.all());
    assert!(!r.stdout.contains("can no longer serve"), "{}", r.all());
    assert_eq!(status_of(&results(&w), "T7").as_deref(), Some("pass"));
    assert!(deaths(&w).is_empty(), "{:?}", deaths(&w));
    assert!(w.live_processes().is_empty(), "{:?}", w.live_processes());
    assert!(bystander.alive());
}

/// A memory cgroup of the test's own, removed on drop.
struct MemCgroup {
    dir: PathBuf,
}

impl MemCgroup {
    /// A cgroup limited to `mib` MiB without swap: under the v1 memory hierarchy (beside this
    /// test's own memory cgroup), else under the v2 root when it delegates the controller.
    fn create(mib: u64) -> Result<MemCgroup, String> {
        let mounts = inferlint_supervisor::member_exit::MemoryMounts::system();
        let name = format!("inferlint-test-oom-{}", std::process::id());
        let limit = (mib << 20).to_string();
        let own = std::fs::read_to_string("/proc/self/cgroup").unwrap_or_default();
        let (dir, files): (PathBuf, Vec<(&str, &str)>) = if let Some((root, mount)) = &mounts.v1 {
            let path = own
                .lines()
                .find_map(|l| {
                    let mut p = l.splitn(3, ':');
                    let (_, c, path) = (p.next(), p.next()?, p.next()?);
                    c.split(',')
                        .any(|x| x == "memory")
                        .then(|| path.to_string())
                })
                .unwrap_or_else(|| "/".into());
            let rel = path.strip_prefix(root.as_str()).unwrap_or(&path);
            let dir = mount.join(rel.trim_start_matches('/')).join(&name);
            (
                dir,
                vec![
                    ("memory.limit_in_bytes", limit.as_str()),
                    ("memory.swappiness", "0"),
                    ("memory.memsw.limit_in_bytes", limit.as_str()),
                ],
            )
        } else if let Some(v2) = &mounts.v2 {
            let ctl =
                std::fs::read_to_string(v2.join("cgroup.subtree_control")).unwrap_or_default();
            if !ctl.split_whitespace().any(|c| c == "memory") {
                return Err(format!(
                    "{} does not delegate the memory controller",
                    v2.display()
                ));
            }
            (
                v2.join(&name),
                vec![("memory.max", limit.as_str()), ("memory.swap.max", "0")],
            )
        } else {
            return Err("no memory cgroup hierarchy is mounted".into());
        };
        std::fs::create_dir(&dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
        let cg = MemCgroup { dir };
        for (i, (file, value)) in files.iter().enumerate() {
            let r = std::fs::write(cg.dir.join(file), value);
            // The first is the limit itself; swap accounting may be compiled out.
            if i == 0 {
                r.map_err(|e| format!("cannot set {file}: {e}"))?;
            }
        }
        Ok(cg)
    }

    /// Starts `cmd` inside: it writes itself into `cgroup.procs` between fork and exec.
    fn run_inside(&self, cmd: &mut Command) {
        let procs = std::fs::OpenOptions::new()
            .write(true)
            .open(self.dir.join("cgroup.procs"))
            .expect("cgroup.procs");
        let fd = std::os::fd::IntoRawFd::into_raw_fd(procs);
        // SAFETY: only write(2) between fork and exec, on a descriptor opened above.
        unsafe {
            cmd.pre_exec(move || {
                if libc::write(fd, b"0".as_ptr().cast(), 1) < 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
    }
}

impl Drop for MemCgroup {
    fn drop(&mut self) {
        for _ in 0..50 {
            if std::fs::remove_dir(&self.dir).is_ok() {
                return;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

#[test]
fn an_engine_killed_by_the_oom_killer_is_named_so() {
    let cg = match MemCgroup::create(200) {
        Ok(c) => c,
        Err(e) if std::env::var("CI").as_deref() == Ok("true") => {
            panic!("CI=true: the OOM test needs a memory cgroup: {e}")
        }
        Err(e) => {
            eprintln!("skipped: {e}");
            return;
        }
    };
    let w = World::new();
    // The engine takes 32 MiB of host memory per request: the 200 MiB limit ends it a few
    // requests into the load (no probe, whose requests would end it before).
    let mut cmd = w.death_run("--host-memory-grow-mib 32", &["--no-probe"]);
    cg.run_inside(&mut cmd);
    let mut live = Live::spawn(cmd);
    live.wait_line("== load:", Duration::from_secs(40))
        .expect("the load starts");
    let engine = w.engine_pid().expect("the run's engine runs");
    let r = live.finish(BOUND);
    assert_engine_death(&w, &r, engine, "was killed by the OOM killer (SIGKILL)");
    let d = deaths(&w);
    assert_eq!(d[0]["oom_kill"], true, "{d:?}");
}

/// An engine that fails during the boot: its death is printed in the boot's words and recorded,
/// but it is T12's (a boot failure), not T7's, which speaks only for a server that was ready.
#[test]
fn a_death_during_the_boot_is_printed_but_is_not_t7s() {
    let w = World::new();
    let args = vec![
        "--serve".to_string(),
        w.sim_serve("1.5", "--fail-boot kv_cache_too_small"),
    ];
    let r = Live::spawn(w.run_command(&args, &w.sim_bench(LOAD))).finish(BOUND);
    assert_eq!(r.code, 1, "{}", r.all());
    assert!(
        r.alerts()
            .iter()
            .any(|l| l.contains("into the boot: VLLM::EngineCore (pid ")
                && l.ends_with(") exited with code 1")),
        "{}",
        r.all()
    );
    let d = deaths(&w);
    assert!(
        !d.is_empty() && d.iter().all(|x| x["phase"] == "boot"),
        "{d:?}"
    );
    assert_eq!(d[0]["exit_code"], 1, "{d:?}");
    let res = results(&w);
    assert_eq!(status_of(&res, "T12").as_deref(), Some("fail"), "{res}");
    assert!(
        !res.as_array()
            .unwrap()
            .iter()
            .any(|x| x["tripwire"] == "T7" && x["message"].as_str().unwrap().contains("(pid ")),
        "{res}"
    );
    assert!(w.live_processes().is_empty(), "{:?}", w.live_processes());
}

/// The API server SIGKILLed mid-load, its engine left orphaned (`--orphan-engine`, as vLLM's
/// engine outlives a killed API server): the death is printed, and the stop names the orphan by
/// pid before it clears it. Without the leader's death no such line is printed (the healthy
/// test above asserts the other direction).
#[test]
fn the_api_servers_orphans_are_named_before_the_stop_clears_them() {
    let w = World::new();
    let mut live = Live::spawn(w.death_run("--orphan-engine", &[]));
    live.wait_line("== load:", Duration::from_secs(40))
        .expect("the load starts");
    std::thread::sleep(Duration::from_millis(1000));
    let procs = w.live_processes();
    let api = procs
        .iter()
        // `BIN sim serve …`, not the `BIN run --serve "BIN sim serve …"` that started it.
        .find(|(_, cmd)| {
            let mut words = cmd.split_whitespace().skip(1);
            words.next() == Some("sim") && words.next() == Some("serve")
        })
        .map(|(pid, _)| *pid)
        .unwrap_or_else(|| panic!("the run's API server runs: {procs:?}"));
    let engine = w.engine_pid().expect("the run's engine runs");
    // SAFETY: a pid this test's run started (found by its marker), checked just above.
    assert_eq!(unsafe { libc::kill(api, libc::SIGKILL) }, 0);
    let r = live.finish(BOUND);
    assert_eq!(r.code, 1, "{}", r.all());
    let named =
        format!("left by the server's exit (killed by SIGKILL): pid={engine:<8} VLLM::EngineCore");
    assert!(r.stdout.contains(&named), "no `{named}`\n{}", r.all());
    assert!(
        w.live_processes().is_empty(),
        "left alive: {:?}\n{}",
        w.live_processes(),
        r.all()
    );
    let healthy = World::new();
    let r = Live::spawn(healthy.death_run("", &[])).finish(BOUND);
    assert!(
        !r.stdout.contains("left by the server's exit"),
        "a healthy run names no orphan\n{}",
        r.all()
    );
}
