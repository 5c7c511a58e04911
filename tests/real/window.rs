//! The real-vLLM lane, the window's tripwires: one real `vllm serve` kept between runs
//! (`run --url … --keep-server`), as a campaign keeps it. The same `vllm bench serve --seed 0`
//! load twice (its second pass is served from vLLM's prefix cache: T16 fails there only), then
//! questions whose answers stop at end-of-sequence before the length asked (T18 warns).
//!
//! The server is this test's child in a process group of its own, stopped by the test (the runs
//! attach to it and, with `--keep-server`, leave it alone). Run it with
//! `REAL_VLLM_PROFILE=debug bash .ci/real-vllm.sh window::`.

use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use super::files::{json, result};
use super::install::MODEL;
use super::{assert_port_free, Install, Launch, SERVER_ENV};

const RUN_LIMIT: Duration = Duration::from_secs(900);
const UNTIL_READY: Duration = Duration::from_secs(900);

/// A `vllm serve` of the test's own, in its own process group (its `VLLM::EngineCore` and
/// `VLLM::Worker` stay in it); the whole group is stopped on drop.
struct KeptServer {
    child: Child,
}

impl KeptServer {
    fn start(inst: &Install, port: u16, log: &Path) -> KeptServer {
        let serve = format!(
            "exec {} serve {} --served-model-name {MODEL} --host 127.0.0.1 --port {port} --max-model-len 512 --dtype bfloat16 --max-num-seqs 8 --enforce-eager",
            inst.vllm.display(),
            inst.model.display()
        );
        let out = std::fs::File::create(log).unwrap();
        let child = Command::new("sh")
            .arg("-c")
            .arg(serve)
            .envs(SERVER_ENV)
            .env_remove("INFERLINT_GPU")
            .stdin(Stdio::null())
            .stdout(out.try_clone().unwrap())
            .stderr(out)
            .process_group(0)
            .spawn()
            .unwrap();
        let s = KeptServer { child };
        let start = Instant::now();
        while !healthy(port) {
            assert!(
                start.elapsed() < UNTIL_READY,
                "vLLM not ready in {UNTIL_READY:?}: {}",
                std::fs::read_to_string(log).unwrap_or_default()
            );
            std::thread::sleep(Duration::from_millis(500));
        }
        println!(
            "the kept server answered /health after {:.1} s",
            start.elapsed().as_secs_f64()
        );
        s
    }

    fn alive(&mut self) -> bool {
        self.child.try_wait().ok().flatten().is_none()
    }
}

impl Drop for KeptServer {
    fn drop(&mut self) {
        let group = nix::unistd::Pid::from_raw(-(self.child.id() as i32));
        let _ = nix::sys::signal::kill(group, nix::sys::signal::Signal::SIGTERM);
        let deadline = Instant::now() + Duration::from_secs(30);
        while Instant::now() < deadline && nix::sys::signal::kill(group, None).is_ok() {
            std::thread::sleep(Duration::from_millis(200));
        }
        let _ = nix::sys::signal::kill(group, nix::sys::signal::Signal::SIGKILL);
        let _ = self.child.wait();
    }
}

fn healthy(port: u16) -> bool {
    use std::io::{Read, Write};
    let Ok(mut s) = std::net::TcpStream::connect(("127.0.0.1", port)) else {
        return false;
    };
    let _ = s.set_read_timeout(Some(Duration::from_secs(5)));
    let _ = s.write_all(b"GET /health HTTP/1.0\r\n\r\n");
    let mut buf = [0u8; 12];
    s.read_exact(&mut buf).is_ok() && buf.ends_with(b"200")
}

/// `vllm bench serve` against the kept server with `dataset` options.
fn bench(inst: &Install, port: u16, dataset: &[&str]) -> Vec<String> {
    let mut v = inst.bench_on(port, &inst.model);
    v.extend(["--max-concurrency".into(), "4".into()]);
    v.extend(dataset.iter().map(|s| s.to_string()));
    v
}

/// One attached run: `run -o run --url URL --keep-server --no-gpu-check -- LOAD`; its results.
fn attached(name: &str, port: u16, load: &[String]) -> (i32, String, serde_json::Value) {
    let mut args: Vec<String> = [
        "run",
        "-o",
        "run",
        "--url",
        &format!("http://127.0.0.1:{port}"),
        "--keep-server",
        "--no-gpu-check",
        "--",
    ]
    .map(String::from)
    .to_vec();
    args.extend(load.iter().cloned());
    let launch = Launch::start(name, &args);
    let code = launch.wait(RUN_LIMIT);
    let stdout = launch.output();
    let results = json(&launch.out().join("results.json"));
    (code, stdout, results)
}

#[test]
fn a_kept_server_serves_a_second_seeded_load_from_its_prefix_cache() {
    let _t = super::turn();
    let name = "a_kept_server_serves_a_second_seeded_load_from_its_prefix_cache";
    let Some(inst) = Install::find(name) else {
        return;
    };
    let questions = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/vllm-0.32-cpu/field/eos/questions.jsonl");
    assert!(questions.is_file(), "{}", questions.display());
    let port = 8019;
    assert_port_free(port);
    let logdir = tempfile::tempdir().unwrap();
    let mut server = KeptServer::start(&inst, port, &logdir.path().join("server.log"));
    // 4 prompts of 257 tokens: two full 128-token blocks each, which a second pass finds cached.
    let seeded = bench(
        &inst,
        port,
        &[
            "--dataset-name",
            "random",
            "--random-input-len",
            "257",
            "--random-output-len",
            "4",
            "--num-prompts",
            "4",
            "--seed",
            "0",
            "--ignore-eos",
        ],
    );
    // Exit codes follow the other checks too (T8 on 4 prompts at concurrency 4): only the
    // window's verdicts are this test's.
    let (_, stdout, first) = attached("window-first", port, &seeded);
    let t16 = result(&first, "T16");
    assert_eq!(t16["status"], "pass", "{stdout}");
    assert_eq!(t16["evidence"]["hit_tokens"], 0.0, "{t16}");
    assert!(
        stdout.contains("== the attached server is left running (--keep-server)"),
        "{stdout}"
    );
    assert!(
        server.alive() && healthy(port),
        "--keep-server: the server must still serve"
    );

    let (code, stdout, second) = attached("window-second", port, &seeded);
    assert_eq!(code, 1, "a failed T16 fails the run\n{stdout}");
    let t16 = result(&second, "T16");
    assert_eq!(t16["status"], "fail", "{stdout}");
    // Each prompt's two full blocks: 4 × 256 of 4 × 257 prompt tokens.
    assert_eq!(t16["evidence"]["hit_tokens"], 1024.0, "{t16}");
    assert_eq!(t16["evidence"]["prompt_tokens"], 1028.0, "{t16}");
    assert!(
        stdout.contains("[T16] TRIPWIRE-FAILED  99.6% of prompt tokens came from the prefix cache (1,024 of 1,028)"),
        "{stdout}"
    );
    assert_eq!(result(&second, "T17")["status"], "pass", "{stdout}");

    // Questions with 200 tokens asked and no --ignore-eos: the model answers and stops.
    let questions = questions.display().to_string();
    let eos = bench(
        &inst,
        port,
        &[
            "--dataset-name",
            "custom",
            "--dataset-path",
            &questions,
            "--custom-output-len",
            "200",
            "--num-prompts",
            "4",
            "--seed",
            "0",
        ],
    );
    let (_, stdout, third) = attached("window-eos", port, &eos);
    let t18 = result(&third, "T18");
    assert_eq!(t18["status"], "warn", "{stdout}");
    assert!(
        t18["evidence"]["server_stop"].as_f64().unwrap() >= 1.0,
        "{t18}"
    );
    assert!(server.alive(), "the runs stopped the kept server");
    drop(server);
    assert_port_free(port);
}
