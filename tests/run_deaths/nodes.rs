//! A run that spans nodes (docs/design/nodes.md), on one host: the head's part is a simulated
//! vLLM under the run, node 1's part a second one under a node agent started through a local
//! launcher (`--node-launcher env`, where Slurm would use `srun --relative=1`). A death on node 1
//! is printed and fails T7 named by its node; SIGKILL of the head leaves no process of either
//! part; a bystander titled like an engine survives both.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use super::{Bystander, Live, BOUND, LOAD, SERVE};
use crate::run_support::{free_port, json_file, message_of, status_of, World};

impl World {
    /// The run with node 1's part: a simulated vLLM on `port1`.
    fn two_node_command(&self, port1: u16) -> Command {
        let gpu = self.node1_gpu();
        self.two_node_command_with(port1, &format!("env INFERLINT_GPU=sim:{}", gpu.display()))
    }

    /// Node 1's own simulated GPU (a real node has its own cards: its gate and its T2 judge
    /// those, not the head's).
    fn node1_gpu(&self) -> std::path::PathBuf {
        let dir = self.dir.path().join("gpu-node1");
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    /// [`World::two_node_command`] with the launcher `launcher` (`env VAR=… ` gives node 1's
    /// part an environment of its own).
    fn two_node_command_with(&self, port1: u16, launcher: &str) -> Command {
        let node1 = format!(
            "{} sim serve m --port {port1} --boot-secs 0.2 {SERVE}",
            shlex::try_quote(crate::run_support::bin()).unwrap()
        );
        let args = vec![
            "--serve".to_string(),
            self.sim_serve("0.2", SERVE),
            "--serve-node".into(),
            "1".into(),
            node1,
            "--node-launcher".into(),
            launcher.into(),
        ];
        let mut cmd = self.run_command(&args, &self.sim_bench(LOAD));
        cmd.env_remove("SLURM_JOB_ID")
            .env_remove("INFERLINT_NODE_LAUNCHER");
        cmd
    }

    /// The live processes of node 1's part (their marker ends with `-node1`).
    fn node1_processes(&self) -> Vec<(i32, String)> {
        self.live_processes()
            .into_iter()
            .filter(|(pid, _)| {
                std::fs::read(format!("/proc/{pid}/environ"))
                    .unwrap_or_default()
                    .split(|b| *b == 0)
                    .any(|v| v.starts_with(b"INFERLINT_RUN_ID=") && v.ends_with(b"-node1"))
            })
            .collect()
    }

    fn wait_none_alive(&self, limit: Duration) -> Vec<(i32, String)> {
        let t0 = Instant::now();
        loop {
            let alive = self.live_processes();
            if alive.is_empty() || t0.elapsed() > limit {
                return alive;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

#[test]
fn a_death_on_node_1_is_printed_and_fails_t7_named_by_its_node() {
    let w = World::new();
    let mut bystander = Bystander::start();
    let mut live = Live::spawn(w.two_node_command(free_port()));
    live.wait_line("== load:", Duration::from_secs(40))
        .expect("the load starts");
    std::thread::sleep(Duration::from_millis(1000));
    let engine = w
        .node1_processes()
        .into_iter()
        .find(|(_, cmd)| cmd.starts_with("VLLM::EngineCore"))
        .map(|(pid, _)| pid)
        .expect("node 1's engine runs");
    // SAFETY: a pid this test's run started on "node 1" (found by its marker), just above.
    assert_eq!(unsafe { libc::kill(engine, libc::SIGKILL) }, 0);
    let said = format!("node 1: VLLM::EngineCore (pid {engine}) was killed by SIGKILL");
    let printed = live.wait_line(&said, Duration::from_secs(10));
    let r = live.finish(BOUND);
    assert!(printed.is_some(), "no `{said}`\n{}", r.all());
    assert!(
        r.alerts().iter().any(|l| l.contains(&said)),
        "not an alert\n{}",
        r.all()
    );
    assert_eq!(r.code, 1, "{}", r.all());
    let res = json_file(&w.out().join("results.json"));
    assert_eq!(status_of(&res, "T7").as_deref(), Some("fail"), "{res}");
    let t7 = message_of(&res, "T7").unwrap();
    assert!(t7.starts_with(&said), "{t7}");
    let run = json_file(&w.out().join("run.json"));
    assert_eq!(run["deaths"][0]["node"], 1, "{}", run["deaths"]);
    assert_eq!(run["deaths"][0]["pid"], engine);
    let node = &run["nodes"][0];
    assert_eq!(node["node"], 1, "{node}");
    assert_eq!(node["teardown_left"], 0, "{node}");
    assert!(node["hostname"].as_str().is_some_and(|h| !h.is_empty()));
    assert!(
        node["deaths"][0].as_str().unwrap().starts_with(&said),
        "{node}"
    );
    // The report names the node and its death, as the run wrote it and as `report` reads the
    // folder back.
    let html = std::fs::read_to_string(w.out().join("report.html")).unwrap();
    assert!(
        html.contains("The nodes") && html.contains(&said),
        "no node section"
    );
    let again = w.dir.path().join("again.html");
    let out = Command::new(crate::run_support::bin())
        .arg("report")
        .arg(w.out())
        .arg("-o")
        .arg(&again)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let html = std::fs::read_to_string(&again).unwrap();
    assert!(
        html.contains("The nodes") && html.contains(&said),
        "report DIR: no node section"
    );
    let log = std::fs::read_to_string(w.out().join("nodes/1/boot.log")).unwrap();
    assert!(log.contains("Application startup complete"), "{log}");
    assert!(r.stdout.contains("node 1 ("), "{}", r.all());
    let alive = w.wait_none_alive(Duration::from_secs(5));
    assert!(alive.is_empty(), "left alive: {alive:?}\n{}", r.all());
    assert!(bystander.alive(), "the bystander was hit");
}

#[test]
fn a_sigkilled_head_leaves_no_process_on_either_node() {
    let w = World::new();
    let mut bystander = Bystander::start();
    let mut live = Live::spawn(w.two_node_command(free_port()));
    live.wait_line("== load:", Duration::from_secs(40))
        .expect("the load starts");
    let before = w.live_processes();
    assert!(
        !w.node1_processes().is_empty(),
        "node 1's part runs: {before:?}"
    );
    live.child.kill().unwrap();
    let _ = live.child.wait();
    // The head's shepherd ends the head's part; node 1's agent sees its stdin close and ends
    // its own (graces of the default --stop-grace, but the simulator stops at once).
    let alive = w.wait_none_alive(Duration::from_secs(30));
    assert!(alive.is_empty(), "left alive: {alive:?} (were {before:?})");
    assert!(bystander.alive(), "the bystander was hit");
}

/// The pid of the node agent the run `run_pid` started (the `env` launcher execs it, so the
/// run is its parent).
fn agent_of(run_pid: u32) -> Option<i32> {
    std::fs::read_dir("/proc").ok()?.find_map(|e| {
        let pid: i32 = e.ok()?.file_name().to_str()?.parse().ok()?;
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
        let ppid: u32 = stat.rsplit_once(") ")?.1.split(' ').nth(1)?.parse().ok()?;
        let cmd = std::fs::read(format!("/proc/{pid}/cmdline")).ok()?;
        let args: Vec<&[u8]> = cmd.split(|b| *b == 0).collect();
        (ppid == run_pid && args.get(1) == Some(&&b"node"[..])).then_some(pid)
    })
}

/// SIGKILL of node 1's agent mid-load: its stream ends without its last word, which is a death
/// of node 1's part: printed, T7 fails named by node 1, the load is stopped, the agent's
/// shepherd ends the part, and the run's T2 cannot tell node 1's GPUs (no reading came).
#[test]
fn a_sigkilled_node_agent_is_a_death_of_its_part() {
    let w = World::new();
    let mut bystander = Bystander::start();
    let mut live = Live::spawn(w.two_node_command(free_port()));
    live.wait_line("== load:", Duration::from_secs(40))
        .expect("the load starts");
    let agent = agent_of(live.child.id()).expect("node 1's agent runs");
    assert!(!w.node1_processes().is_empty(), "node 1's part runs");
    // SAFETY: the agent this test's run started (its parent is the run), found just above.
    assert_eq!(unsafe { libc::kill(agent, libc::SIGKILL) }, 0);
    let said =
        format!("node 1: the server's part (inferlint node, pid {agent}) was killed by SIGKILL");
    let printed = live.wait_line(&said, Duration::from_secs(15));
    let r = live.finish(BOUND);
    assert!(printed.is_some(), "no `{said}`\n{}", r.all());
    assert_eq!(r.code, 1, "{}", r.all());
    let res = json_file(&w.out().join("results.json"));
    assert_eq!(status_of(&res, "T7").as_deref(), Some("fail"), "{res}");
    assert!(message_of(&res, "T7").unwrap().starts_with(&said), "{res}");
    let t2 = message_of(&res, "T2").unwrap();
    assert!(
        t2.contains("node 1 (") && t2.contains("its agent sent no T2"),
        "{t2}"
    );
    let run = json_file(&w.out().join("run.json"));
    assert_eq!(run["deaths"][0]["node"], 1, "{}", run["deaths"]);
    let alive = w.wait_none_alive(Duration::from_secs(10));
    assert!(alive.is_empty(), "left alive: {alive:?}\n{}", r.all());
    assert!(bystander.alive(), "the bystander was hit");
}

#[test]
fn serve_node_outside_slurm_without_a_launcher_is_a_usage_error() {
    let w = World::new();
    let args = vec![
        "--serve".to_string(),
        w.sim_serve("0.2", SERVE),
        "--serve-node".into(),
        "1".into(),
        "sleep 1".into(),
    ];
    let out = w
        .run_command(&args, &w.sim_bench(LOAD))
        .env_remove("SLURM_JOB_ID")
        .env_remove("INFERLINT_NODE_LAUNCHER")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("--serve-node needs Slurm (SLURM_JOB_ID is not set) or a launcher"),
        "{err}"
    );
    assert!(!w.out().exists(), "nothing was started");
}

#[test]
fn a_node_part_that_ends_before_ready_ends_the_boot_wait() {
    let w = World::new();
    let mut bystander = Bystander::start();
    // The head boots for 5 s; node 1's part gives up at once. Without the node's end, the run
    // would wait the whole boot (and, for a real head, its ready timeout).
    let args = vec![
        "--serve".to_string(),
        w.sim_serve("5", SERVE),
        "--serve-node".into(),
        "1".into(),
        "sh -c 'echo no peers; exit 3'".into(),
        "--node-launcher".into(),
        "env".into(),
    ];
    let mut cmd = w.run_command(&args, &w.sim_bench(LOAD));
    cmd.env_remove("SLURM_JOB_ID")
        .env_remove("INFERLINT_NODE_LAUNCHER");
    let t0 = Instant::now();
    let r = Live::spawn(cmd).finish(BOUND);
    assert!(
        t0.elapsed() < Duration::from_secs(5),
        "waited for the head's boot: {:?}\n{}",
        t0.elapsed(),
        r.all()
    );
    assert_eq!(r.code, 1, "{}", r.all());
    assert!(
        r.stdout
            .contains("node 1's part ended before the server was ready"),
        "{}",
        r.all()
    );
    let log = std::fs::read_to_string(w.out().join("nodes/1/boot.log")).unwrap();
    assert!(log.contains("no peers"), "{log}");
    let alive = w.wait_none_alive(Duration::from_secs(5));
    assert!(alive.is_empty(), "left alive: {alive:?}\n{}", r.all());
    assert!(bystander.alive(), "the bystander was hit");
}

/// T2 on every node: node 1's agent judges its own node's GPUs after its teardown (a simulated
/// GPU of its own). Taken there by another process (this test) during the load, the run's T2
/// warns and names node 1 while the head's card is clear; the same run with node 1's card left
/// free passes and names node 1's PASS.
#[test]
fn t2_is_judged_on_each_nodes_own_gpus() {
    for held in [false, true] {
        let w = World::new();
        let mut live = Live::spawn(w.two_node_command(free_port()));
        live.wait_line("== load:", Duration::from_secs(40))
            .expect("the load starts");
        let hold = held.then(|| inferlint_sim::gpu::hold(&w.node1_gpu(), 4096, 0).unwrap());
        let r = live.finish(BOUND);
        let res = json_file(&w.out().join("results.json"));
        let t2 = message_of(&res, "T2").unwrap();
        let node = &json_file(&w.out().join("run.json"))["nodes"][0];
        let me = std::process::id();
        if held {
            assert_eq!(
                status_of(&res, "T2").as_deref(),
                Some("warn"),
                "{t2}\n{}",
                r.all()
            );
            assert!(
                t2.starts_with("node 1 (")
                    && t2.contains(&format!("not started by this run: pid {me}")),
                "{t2}"
            );
            assert!(t2.contains("; the head, PASS: "), "{t2}");
            assert_eq!(node["t2"]["status"], "warn", "{node}");
        } else {
            assert_eq!(
                status_of(&res, "T2").as_deref(),
                Some("pass"),
                "{t2}\n{}",
                r.all()
            );
            assert!(t2.contains("; node 1 ("), "{t2}");
            assert!(t2.contains("), PASS: "), "{t2}");
            assert_eq!(node["t2"]["status"], "pass", "{node}");
        }
        assert_eq!(node["gate_t2"]["status"], "pass", "{node}");
        assert!(
            r.stdout.contains("node 1 (") && r.stdout.contains("): [ T2]"),
            "{}",
            r.all()
        );
        assert_eq!(r.code, 0, "{}", r.all());
        let html = std::fs::read_to_string(w.out().join("report.html")).unwrap();
        let cell = if held {
            "<strong>Warning</strong>: no process of this run is left"
        } else {
            "<strong>Pass</strong>: "
        };
        assert!(
            html.contains("T2 on its GPUs") && html.contains(cell),
            "the report's node row"
        );
        drop(hold);
    }
}

/// The gate on every node: node 1's card (a simulated GPU of its own) is held by another process
/// (this test) before the run. Node 1's agent judges it as the head judges the head's, refuses
/// to start its part, and the run stops before the load with node 1's gate as its problem; the
/// head's own card was clear. The holder is left alone.
#[test]
fn a_node_whose_card_is_not_clear_refuses_its_part() {
    let w = World::new();
    let hold = inferlint_sim::gpu::hold(&w.node1_gpu(), 4096, 0).unwrap();
    let r = Live::spawn(w.two_node_command(free_port())).finish(BOUND);
    let all = r.all();
    assert!(
        all.contains("problem: node 1's part ended before the server was ready"),
        "{all}"
    );
    let refused = "node 1: card not clear; refusing to start a server. not clear after 10s: last reading 4096 MiB used";
    assert!(
        all.contains(&format!(
            "the gate: [ T2] TRIPWIRE-FAILED  {}",
            &refused[8..]
        )),
        "{all}"
    );
    assert!(!all.contains("== load:"), "the load ran: {all}");
    let res = json_file(&w.out().join("results.json"));
    assert_eq!(status_of(&res, "T2").as_deref(), Some("fail"), "{all}");
    let t2 = message_of(&res, "T2").unwrap();
    assert!(t2.starts_with(refused), "{t2}");
    assert_eq!(r.code, 1, "{all}");
    let node = &json_file(&w.out().join("run.json"))["nodes"][0];
    assert_eq!(node["gate_t2"]["status"], "fail", "{node}");
    assert!(
        node["leader_pid"].is_null(),
        "node 1's part started: {node}"
    );
    let alive = w.wait_none_alive(Duration::from_secs(10));
    assert!(alive.is_empty(), "left alive: {alive:?}\n{all}");
    assert!(
        w.dir
            .path()
            .join("gpu-node1")
            .join(format!("holding-{}.json", std::process::id()))
            .exists(),
        "the holder's card was touched"
    );
    drop(hold);
}
