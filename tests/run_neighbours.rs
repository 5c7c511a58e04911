//! `inferlint run` on a shared node: server processes the run did not start — a `vllm
//! serve`-shaped process and a `VLLM::EngineCore`-named one of the same user, and other runs'
//! servers — survive every way a run ends (a healthy run, a failed boot, Ctrl-C, SIGKILL of
//! inferlint) and are listed as left alone; runs side by side on their own simulated GPUs
//! all complete without a failed request and never signal each other's processes.
//!
//! Each test starts its own bystanders and kills only those (by their pid, on drop).

use crate::run_support;

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use run_support::{json_file, run_with_limit, status_of, text, World};
use serde_json::Value;

const LIMIT: Duration = Duration::from_secs(150);

/// Two bystanders of the same user, started by the test: `vllm serve m` (argv exactly that
/// shape: bash running a script file named `serve`, with argv[0] set to `vllm`) and
/// `VLLM::EngineCore` (a renamed `sleep`). Neither carries a world's marker.
struct Bystanders {
    children: Vec<Child>,
    _dir: tempfile::TempDir,
}

impl Bystanders {
    fn start() -> Bystanders {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("serve"), "sleep 600\ntrue\n").unwrap();
        let spawn = |script: &str| {
            Command::new("bash")
                .args(["-c", script])
                .current_dir(dir.path())
                .env_remove("INFERLINT_GPU")
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .unwrap()
        };
        let children = vec![
            spawn("exec -a vllm bash serve m"),
            spawn("exec -a VLLM::EngineCore sleep 600"),
        ];
        let b = Bystanders {
            children,
            _dir: dir,
        };
        // Wait until both show their final argv (exec done).
        let deadline = Instant::now() + Duration::from_secs(5);
        while Instant::now() < deadline {
            let argv: Vec<String> = b.pids().iter().map(|p| cmdline(*p)).collect();
            if argv[0] == "vllm serve m" && argv[1].starts_with("VLLM::EngineCore") {
                return b;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        panic!("the bystanders did not start");
    }

    fn pids(&self) -> Vec<i32> {
        self.children.iter().map(|c| c.id() as i32).collect()
    }

    /// Both still running (not exited, not zombies).
    fn assert_alive(&mut self, after: &str) {
        for c in &mut self.children {
            assert!(
                c.try_wait().unwrap().is_none(),
                "bystander {} died after {after}",
                c.id()
            );
        }
    }

    /// Both listed as left alone in the run's output and in run.json.
    fn assert_listed(&self, stdout: &str, run: &Value) {
        let recorded: Vec<String> = run["gpu_scope"]["servers_left_alone"]
            .as_array()
            .map(|a| a.iter().map(|v| v.as_str().unwrap().to_string()).collect())
            .unwrap_or_default();
        for pid in self.pids() {
            let head = format!("left alone: pid={pid:<8} ");
            let line = stdout
                .lines()
                .find(|l| l.starts_with(&head))
                .unwrap_or_else(|| panic!("pid {pid} not listed as left alone:\n{stdout}"));
            assert!(line.ends_with("(not started by this run)"), "{line}");
            assert!(
                recorded.iter().any(|l| l.starts_with(&head)),
                "pid {pid} not in run.json: {recorded:?}"
            );
        }
    }
}

impl Drop for Bystanders {
    fn drop(&mut self) {
        for c in &mut self.children {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

fn cmdline(pid: i32) -> String {
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

impl World {
    fn run_json(&self) -> Value {
        json_file(&self.out().join("run.json"))
    }

    /// The T2 after the stop (the last one).
    fn stop_t2(&self) -> Value {
        self.results()
            .as_array()
            .unwrap()
            .iter()
            .rev()
            .find(|r| r["tripwire"] == "T2")
            .cloned()
            .expect("a T2")
    }

    /// Starts the run with its output piped: a thread collects every line and says when the
    /// load has begun.
    fn start(&self, serve: &str, args: &[&str], load: &[String]) -> run_support::Watched {
        let mut cmd = self.command(serve, args, load);
        cmd.stderr(Stdio::null()).stdin(Stdio::null());
        run_support::spawn_watching_load(cmd)
    }

    /// As [`World::start`], returning once the load has begun (at most 60 s).
    fn start_until_load(
        &self,
        serve: &str,
        args: &[&str],
        load: &[String],
    ) -> (Child, std::thread::JoinHandle<String>) {
        let (child, rx, rest) = self.start(serve, args, load);
        rx.recv_timeout(Duration::from_secs(60))
            .expect("the load starts within 60 s");
        (child, rest)
    }
}

fn long_load(w: &World) -> Vec<String> {
    w.sim_bench(
        "--max-concurrency 4 --num-prompts 400 --random-input-len 32 --random-output-len 400 --ignore-eos",
    )
}

fn short_load(w: &World, prompts: u32) -> Vec<String> {
    w.sim_bench(&format!(
        "--max-concurrency 3 --num-prompts {prompts} --random-input-len 40 --random-output-len 40 --random-range-ratio 0.5 --ignore-eos"
    ))
}

/// The simulated server of run_sim's healthy run: a cache no load here fills.
const HEALTHY: &str =
    "--num-gpu-blocks-override 98 --block-size 16 --max-model-len 1024 --tokens-per-s 100";

#[test]
fn bystanders_survive_a_healthy_run() {
    let mut b = Bystanders::start();
    let w = World::new();
    let serve = w.sim_serve("0.5", HEALTHY);
    let out = run_with_limit(w.command(&serve, &[], &short_load(&w, 9)), LIMIT);
    let stdout = text(&out.stdout);
    // Completed: no problem, the load exited 0 (a recording this short may leave T14 or T9
    // "can't tell", exit 2; that is the checks' business, not this test's).
    assert!(
        matches!(out.status.code(), Some(0 | 2)),
        "{stdout}\n{}",
        text(&out.stderr)
    );
    assert_eq!(w.run_json()["exit_reason"], "completed", "{stdout}");
    b.assert_alive("a healthy run");
    b.assert_listed(&stdout, &w.run_json());
    assert!(w.live_processes().is_empty(), "{:?}", w.live_processes());
    let t2 = w.stop_t2();
    assert_eq!(t2["status"], "pass", "{t2}");
    let signalled: Vec<i64> = t2["evidence"]["signalled_by_the_server_teardown"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_i64().unwrap())
        .collect();
    for pid in b.pids() {
        assert!(!signalled.contains(&(pid as i64)), "{t2}");
    }
    // The gate did not refuse for them either.
    assert!(!stdout.contains("refusing to start"), "{stdout}");
    // The report's T2 names the GPUs judged and that others were left alone.
    let html = std::fs::read_to_string(w.out().join("report.html")).unwrap();
    assert!(
        html.contains("Judged every GPU (card 0)."),
        "no GPU line in the report"
    );
    assert!(html.contains("not started by this run, left alone."));
    assert_eq!(w.run_json()["gpu_scope"]["judged"], "every GPU");
}

#[test]
fn bystanders_survive_a_failed_boot() {
    let mut b = Bystanders::start();
    let w = World::new();
    let serve = w.sim_serve("0.3", "--fail-boot kv_cache_too_small");
    let out = run_with_limit(w.command(&serve, &[], &short_load(&w, 2)), LIMIT);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    assert!(stdout.contains("before it was ready"), "{stdout}");
    b.assert_alive("a failed boot");
    b.assert_listed(&stdout, &w.run_json());
    assert!(w.live_processes().is_empty(), "{:?}", w.live_processes());
}

#[test]
fn bystanders_survive_ctrl_c() {
    let mut b = Bystanders::start();
    let w = World::new();
    let serve = w.sim_serve("0.3", "--tokens-per-s 100");
    let (mut child, rest) = w.start_until_load(&serve, &[], &long_load(&w));
    std::thread::sleep(Duration::from_millis(800));
    // SAFETY: a pid this test started.
    unsafe {
        libc::kill(child.id() as i32, libc::SIGINT);
    }
    let status = child.wait().unwrap();
    let stdout = rest.join().unwrap();
    assert_eq!(status.code(), Some(130), "{stdout}");
    b.assert_alive("Ctrl-C");
    b.assert_listed(&stdout, &w.run_json());
    assert!(w.live_processes().is_empty(), "{:?}", w.live_processes());
}

#[test]
fn bystanders_survive_sigkill_of_inferlint() {
    let mut b = Bystanders::start();
    let w = World::new();
    let serve = w.sim_serve("0.3", "--tokens-per-s 100");
    let (mut child, rest) = w.start_until_load(&serve, &["--stop-grace", "5"], &long_load(&w));
    assert!(!w.live_processes().is_empty());
    // SAFETY: a pid this test started.
    unsafe {
        libc::kill(child.id() as i32, libc::SIGKILL);
    }
    let _ = child.wait();
    let _ = rest.join();
    let deadline = Instant::now() + Duration::from_secs(15);
    while !w.live_processes().is_empty() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(100));
    }
    assert!(w.live_processes().is_empty(), "{:?}", w.live_processes());
    b.assert_alive("SIGKILL of inferlint");
}

/// `n` runs at once, each on its own port and simulated GPU: every one completes with no
/// failed request, and none signals a process of another.
fn side_by_side(n: usize) {
    let worlds: Vec<World> = (0..n).map(|_| World::new()).collect();
    let mut runs = Vec::new();
    for w in &worlds {
        let serve = w.sim_serve("0.5", HEALTHY);
        let load = short_load(w, 12);
        runs.push(w.start(&serve, &[], &load));
    }
    for (i, (_, rx, _)) in runs.iter().enumerate() {
        rx.recv_timeout(Duration::from_secs(60))
            .unwrap_or_else(|_| panic!("run {i}'s load did not start"));
    }
    // Every world's processes while all the loads run.
    let during: Vec<Vec<i32>> = worlds
        .iter()
        .map(|w| w.live_processes().into_iter().map(|(p, _)| p).collect())
        .collect();
    for (i, p) in during.iter().enumerate() {
        assert!(!p.is_empty(), "run {i} has no processes during its load");
    }
    let mut outputs = Vec::new();
    for (mut child, _, rest) in runs {
        let status = child.wait().unwrap();
        outputs.push((status.code(), rest.join().unwrap()));
    }
    for (i, w) in worlds.iter().enumerate() {
        let (code, stdout) = &outputs[i];
        assert!(matches!(*code, Some(0 | 2)), "run {i}:\n{stdout}");
        assert_eq!(
            w.run_json()["exit_reason"],
            "completed",
            "run {i}:\n{stdout}"
        );
        let bench = json_file(&w.out().join("bench.json"));
        assert_eq!(bench["completed"], 12, "run {i}: {bench}");
        assert_eq!(bench["failed"], 0, "run {i}: {bench}");
        let results = w.results();
        assert_eq!(
            status_of(&results, "T2").as_deref(),
            Some("pass"),
            "{results}"
        );
        assert_eq!(
            status_of(&results, "T15").as_deref(),
            Some("pass"),
            "{results}"
        );
        let signalled: Vec<i32> = w.stop_t2()["evidence"]["signalled_by_the_server_teardown"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_i64().unwrap() as i32)
            .collect();
        for (j, others) in during.iter().enumerate() {
            if j != i {
                let hit: Vec<&i32> = others.iter().filter(|p| signalled.contains(p)).collect();
                assert!(hit.is_empty(), "run {i} signalled run {j}'s {hit:?}");
            }
        }
        assert!(w.live_processes().is_empty(), "{:?}", w.live_processes());
    }
}

#[test]
fn two_runs_side_by_side() {
    side_by_side(2);
}

#[test]
fn four_runs_side_by_side() {
    side_by_side(4);
}

/// Attach mode: the run names the server listening on the URL's port (the simulated server this
/// test started, with its engine below it) and stops it, and only it, when the run ends.
#[test]
fn attach_mode_names_the_listener_and_stops_it() {
    let w = World::new();
    let mut server = w.start_sim_server(HEALTHY);
    let url = format!("http://127.0.0.1:{}", w.port);
    let out = run_with_limit(
        w.run_command(&["--url".into(), url.clone()], &short_load(&w, 6)),
        LIMIT,
    );
    let stdout = text(&out.stdout);
    let head = format!("== the server at {url}: pid={} ", server.id());
    let line = stdout
        .lines()
        .find(|l| l.starts_with(&head))
        .unwrap_or_else(|| panic!("no {head:?} line:\n{stdout}"));
    assert!(
        line.contains("(and 1 processes below it; the run stops them when it ends)"),
        "{line}"
    );
    let attached = w.run_json()["attached_server"].clone();
    assert_eq!(attached[0], server.id(), "{attached}");
    assert_eq!(attached.as_array().unwrap().len(), 2, "{attached}");
    assert!(
        stdout.contains("== stop the attached server")
            && stdout.contains(&format!("target  pid={:<8}", server.id())),
        "{stdout}"
    );
    // The listener and its engine are stopped by the run (the listener is this test's child:
    // reaping it here is what ends it as a process).
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut exited = server.try_wait().unwrap();
    while exited.is_none() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
        exited = server.try_wait().unwrap();
    }
    assert!(
        exited.is_some(),
        "the attached server still runs:\n{stdout}"
    );
    // SAFETY: the pid of the server this test started.
    unsafe {
        libc::kill(server.id() as i32, libc::SIGTERM);
    }
    let _ = server.wait();
    // Its engine exits with it; whatever of this test's server is left is killed by pid.
    let deadline = Instant::now() + Duration::from_secs(10);
    while !w.live_processes().is_empty() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(100));
    }
    for (pid, _) in w.live_processes() {
        // SAFETY: a process of this test's simulated server (it carries the world's marker).
        unsafe {
            libc::kill(pid, libc::SIGKILL);
        }
    }
}

/// `--gpus` pins the server: it is started with CUDA_VISIBLE_DEVICES (integer ordinals) and
/// CUDA_DEVICE_ORDER=PCI_BUS_ID, and run.json says so; without `--gpus` the server's
/// environment gets neither from the run.
#[test]
fn gpus_flag_starts_the_server_on_those_gpus() {
    for pinned in [true, false] {
        let w = World::new();
        let serve = w.sim_serve("0.3", "--tokens-per-s 100");
        let args: &[&str] = if pinned { &["--gpus", "0"] } else { &[] };
        let mut cmd = w.command(&serve, args, &long_load(&w));
        cmd.env_remove("CUDA_VISIBLE_DEVICES")
            .env_remove("CUDA_DEVICE_ORDER")
            .env_remove("SLURM_STEP_GPUS")
            .env_remove("SLURM_JOB_GPUS");
        cmd.stdout(Stdio::piped())
            .stderr(Stdio::null())
            .stdin(Stdio::null());
        let mut child = cmd.spawn().unwrap();
        let mut reader = BufReader::new(child.stdout.take().unwrap());
        let mut seen = String::new();
        loop {
            let mut l = String::new();
            if reader.read_line(&mut l).unwrap() == 0 || l.starts_with("== load:") {
                break;
            }
            seen.push_str(&l);
        }
        let server = w
            .live_processes()
            .into_iter()
            .find(|(_, cmd)| cmd.starts_with(&format!("{} sim serve m ", run_support::bin())))
            .expect("the simulated server runs");
        let env = std::fs::read(format!("/proc/{}/environ", server.0)).unwrap();
        let has = |v: &str| env.split(|b| *b == 0).any(|e| e == v.as_bytes());
        // SAFETY: a pid this test started.
        unsafe {
            libc::kill(child.id() as i32, libc::SIGINT);
        }
        let _ = child.wait();
        std::thread::spawn(move || {
            let mut sink = String::new();
            while reader.read_line(&mut sink).unwrap_or(0) > 0 {
                sink.clear();
            }
        });
        let run = w.run_json();
        if pinned {
            assert!(has("CUDA_VISIBLE_DEVICES=0"), "{seen}");
            assert!(has("CUDA_DEVICE_ORDER=PCI_BUS_ID"), "{seen}");
            assert!(
                seen.contains(
                    "note: the server gets CUDA_VISIBLE_DEVICES=0 (CUDA_DEVICE_ORDER=PCI_BUS_ID)"
                ),
                "{seen}"
            );
            assert_eq!(
                run["gpu_scope"]["server_cuda_visible_devices"], "0",
                "{run}"
            );
        } else {
            let cvd = env
                .split(|b| *b == 0)
                .any(|e| e.starts_with(b"CUDA_VISIBLE_DEVICES="));
            assert!(!cvd, "{seen}");
            assert!(
                run["gpu_scope"]["server_cuda_visible_devices"].is_null(),
                "{run}"
            );
        }
        let deadline = Instant::now() + Duration::from_secs(15);
        while !w.live_processes().is_empty() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(100));
        }
        assert!(w.live_processes().is_empty(), "{:?}", w.live_processes());
    }
}

/// A card of the run held by another process: the gate refuses, names the holder, starts
/// nothing, and signals nobody (the holder is this test, alive after).
#[test]
fn a_held_card_is_refused_and_its_holder_named_and_left_alone() {
    let w = World::new();
    let _held = inferlint_sim::gpu::hold(&w.dir.path().join("gpu"), 2048, 0).unwrap();
    let serve = w.sim_serve("0.3", HEALTHY);
    let out = run_with_limit(w.command(&serve, &[], &short_load(&w, 2)), LIMIT);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    assert!(
        stdout.contains("[ T2] TRIPWIRE-FAILED  card not clear; refusing to start a server. not clear after 10s: last reading 2048 MiB used, 0 server processes alive"),
        "{stdout}"
    );
    let me = format!("on the run's GPUs: pid {}", std::process::id());
    assert!(stdout.contains(&me), "{stdout}");
    assert!(stdout.contains("2048 MiB on GPU 0"), "{stdout}");
    assert!(!stdout.contains("== start the server"), "{stdout}");
    let run = w.run_json();
    let others = run["gpu_scope"]["others_holding"].to_string();
    assert!(
        others.contains(&format!("pid {}", std::process::id())),
        "{run}"
    );
}

/// Another process holds GPU 0 of a two-card node: a run on GPU 1 (`--gpus 1`) starts, its
/// server is given that card and holds it, and T2 passes; the same run judging every GPU is
/// refused, with the hint that GPU 1 is free.
#[test]
fn a_card_busy_elsewhere_is_not_a_refusal() {
    for pinned in [true, false] {
        let w = World::new();
        let gpu = w.dir.path().join("gpu");
        inferlint_sim::gpu::set_cards(&gpu, 2).unwrap();
        let _held = inferlint_sim::gpu::hold(&gpu, 20_000, 0).unwrap();
        let serve = w.sim_serve("0.3", HEALTHY);
        let args: &[&str] = if pinned { &["--gpus", "1"] } else { &[] };
        let mut cmd = w.command(&serve, args, &short_load(&w, 6));
        cmd.env_remove("CUDA_VISIBLE_DEVICES")
            .env_remove("SLURM_STEP_GPUS")
            .env_remove("SLURM_JOB_GPUS");
        let out = run_with_limit(cmd, LIMIT);
        let stdout = text(&out.stdout);
        let run = w.run_json();
        if pinned {
            assert_eq!(run["exit_reason"], "completed", "{stdout}");
            assert_eq!(run["gpu_scope"]["cards"], serde_json::json!([1]), "{run}");
            assert_eq!(
                run["gpu_scope"]["server_cuda_visible_devices"], "1",
                "{run}"
            );
            let t2: Vec<Value> = w
                .results()
                .as_array()
                .unwrap()
                .iter()
                .filter(|r| r["tripwire"] == "T2")
                .cloned()
                .collect();
            // The gate's and the stop's readings were both printed; the run's one T2 is the
            // stop's (core's merge).
            assert_eq!(stdout.matches("[ T2] PASS").count(), 2, "{stdout}");
            assert_eq!(t2.len(), 1, "{stdout}");
            assert!(t2.iter().all(|r| r["status"] == "pass"), "{t2:?}");
            // The gate said which GPUs it judged.
            assert!(stdout.contains("note: judging GPU"), "{stdout}");
        } else {
            assert_eq!(out.status.code(), Some(1), "{stdout}");
            assert!(stdout.contains("refusing to start a server"), "{stdout}");
            assert!(
                stdout.contains("note: GPU 1 is free; name the run's GPUs with --gpus"),
                "{stdout}"
            );
        }
        assert!(w.live_processes().is_empty(), "{:?}", w.live_processes());
    }
}

/// Two runs side by side on one two-card simulated node, one per card (`--gpus 0`, `--gpus
/// 1`): each judges only its card, so neither refuses for the other's server, and both
/// complete with T2 passed at the gate and the stop.
#[test]
fn two_runs_on_one_node_one_card_each() {
    let a = World::new();
    let b = World::new();
    let gpu = a.dir.path().join("gpu");
    inferlint_sim::gpu::set_cards(&gpu, 2).unwrap();
    let mut runs = Vec::new();
    for (i, w) in [&a, &b].into_iter().enumerate() {
        let serve = w.sim_serve("0.5", HEALTHY);
        let card = i.to_string();
        let mut cmd = w.command(&serve, &["--gpus", &card], &short_load(w, 12));
        cmd.env("INFERLINT_GPU", a.gpu_env())
            .env_remove("CUDA_VISIBLE_DEVICES")
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .stdin(Stdio::null());
        runs.push(cmd.spawn().unwrap());
    }
    let outputs: Vec<(Option<i32>, String)> = runs
        .into_iter()
        .map(|c| {
            let o = c.wait_with_output().unwrap();
            (o.status.code(), text(&o.stdout))
        })
        .collect();
    for (i, w) in [&a, &b].into_iter().enumerate() {
        let (code, stdout) = &outputs[i];
        assert!(matches!(*code, Some(0 | 2)), "run {i}:\n{stdout}");
        let run = w.run_json();
        assert_eq!(run["exit_reason"], "completed", "run {i}:\n{stdout}");
        assert_eq!(run["gpu_scope"]["cards"], serde_json::json!([i]), "{run}");
        let bench = json_file(&w.out().join("bench.json"));
        assert_eq!(bench["failed"], 0, "run {i}: {bench}");
        let t2: Vec<Value> = w
            .results()
            .as_array()
            .unwrap()
            .iter()
            .filter(|r| r["tripwire"] == "T2")
            .cloned()
            .collect();
        assert!(t2.iter().all(|r| r["status"] == "pass"), "run {i}: {t2:?}");
    }
    assert!(a.live_processes().is_empty(), "{:?}", a.live_processes());
}

/// Another process (this test) takes the run's card while the load runs: once the run's own
/// tree is verified gone, the stop's T2 ends within a second, not after its 120 s, with a
/// WARN that names the holder as not started by this run, and the holder lives on.
#[test]
fn a_card_taken_during_the_run_by_another_process_ends_the_stop_at_once() {
    let w = World::new();
    let serve = w.sim_serve("0.3", HEALTHY);
    let (mut child, rest) = w.start_until_load(&serve, &[], &short_load(&w, 24));
    let held = inferlint_sim::gpu::hold(&w.dir.path().join("gpu"), 2048, 0).unwrap();
    let status = child.wait().unwrap();
    let stdout = rest.join().unwrap();
    let me = std::process::id();
    let warn = format!(
        "[ T2] WARN  no process of this run is left, but its GPUs are held by 1 process(es) not started by this run: pid {me}"
    );
    assert!(stdout.contains(&warn), "{stdout}");
    assert!(
        stdout.contains(&format!("on the run's GPUs: pid {me}")),
        "{stdout}"
    );
    assert!(stdout.contains("2048 MiB on GPU 0"), "{stdout}");
    let t2 = w.stop_t2();
    assert_eq!(t2["status"], "warn", "{t2}");
    let readings = t2["evidence"]["readings"].as_array().unwrap().clone();
    assert_eq!(readings.len(), 2, "{t2}");
    let last_s = readings[1][0].as_f64().unwrap();
    assert!(last_s < 1.0, "the stop waited {last_s} s: {t2}");
    // A WARN exits 0 (1 under --strict), and run.json says the same.
    let code = run_support::clean_exit_code(&w.results());
    assert_eq!(status.code(), Some(code), "{stdout}");
    assert_eq!(w.run_json()["exit_code"], code);
    // The holder, this test's own process, was left alone (its file is still there).
    assert!(w
        .dir
        .path()
        .join("gpu")
        .join(format!("holding-{me}.json"))
        .exists());
    drop(held);
}
