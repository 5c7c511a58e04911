//! Every URL form a user gives reaches the server (docs/design/run.md, "The server's address"
//! and "HTTP"): a server listening on IPv6 loopback, reached at `http://[::1]:PORT` by
//! `snapshot`, `watch`, `probe` and `run` (which derives the URL from `--host ::1`), and a server
//! on every address (`--host 0.0.0.0`) reached at `localhost` and at the address it printed. The
//! test's servers are its own, on loopback, and it ends them. A module of tests/http_tls.rs.

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::run_support::{bin, clean_exit_code, json_file, run_with_limit, text, World};

/// IPv6 loopback is configured here; under CI=true its absence fails, never skips.
fn ipv6_loopback() -> bool {
    let up = std::net::TcpListener::bind("[::1]:0").is_ok();
    assert!(
        up || std::env::var_os("CI").is_none(),
        "CI=true: IPv6 loopback (::1) is not configured, so the IPv6 URLs cannot be tested"
    );
    up
}

/// A simulated vLLM of the test's own on `host`, listening when returned.
struct Server {
    child: Child,
}

impl Server {
    fn start(w: &World, host: &str, reach: &str) -> Server {
        let child = Command::new(bin())
            .args(["sim", "serve", "m", "--host", host, "--boot-secs", "0.1"])
            .args(["--port", &w.port.to_string()])
            .env("INFERLINT_GPU", w.gpu_env())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let s = Server { child };
        let deadline = Instant::now() + Duration::from_secs(20);
        while Instant::now() < deadline {
            if std::net::TcpStream::connect(reach).is_ok() {
                return s;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        panic!("the simulated server on {host} did not listen at {reach}");
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn inferlint(args: &[&str]) -> std::process::Output {
    let out = Command::new(bin())
        .args(args)
        .env("NO_COLOR", "1")
        .output()
        .unwrap();
    assert!(
        !text(&out.stderr).contains("panicked"),
        "{}",
        text(&out.stderr)
    );
    out
}

#[test]
fn an_ipv6_loopback_server_is_reached_by_every_command() {
    if !ipv6_loopback() {
        return;
    }
    let w = World::new();
    let _s = Server::start(&w, "::1", &format!("[::1]:{}", w.port));
    let url = format!("http://[::1]:{}", w.port);
    let snap = w.dir.path().join("s.json");
    let o = inferlint(&["snapshot", &url, "-o", snap.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    assert_eq!(json_file(&snap)["url"], format!("{url}/metrics"));
    let o = inferlint(&["probe", &url]);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}{}",
        text(&o.stdout),
        text(&o.stderr)
    );
    assert!(
        text(&o.stdout).contains("[ T7] PASS"),
        "{}",
        text(&o.stdout)
    );
    let rec = w.dir.path().join("r.series.jsonl");
    let o = inferlint(&[
        "watch",
        &url,
        "-o",
        rec.to_str().unwrap(),
        "--interval",
        "0.1",
        "--duration",
        "0.5",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    let rows = std::fs::read_to_string(&rec).unwrap().lines().count();
    assert!(rows >= 2, "a header and at least one row: {rows}");
}

#[test]
fn a_server_on_every_address_is_reached_at_localhost_and_at_0_0_0_0() {
    let w = World::new();
    let _s = Server::start(&w, "0.0.0.0", &format!("127.0.0.1:{}", w.port));
    for host in ["localhost", "0.0.0.0", "127.0.0.1"] {
        let url = format!("http://{host}:{}", w.port);
        let snap = w.dir.path().join(format!("{host}.json"));
        let o = inferlint(&["snapshot", &url, "-o", snap.to_str().unwrap()]);
        assert_eq!(o.status.code(), Some(0), "{url}: {}", text(&o.stderr));
    }
}

/// `run --serve "… --host ::1"` reaches its server at `http://[::1]:PORT` for the readiness,
/// the probe and the recording, and decides the series checks.
#[test]
fn a_run_whose_server_listens_on_ipv6_loopback_records_and_decides() {
    if !ipv6_loopback() {
        return;
    }
    let w = World::new();
    let serve = format!("{} --host ::1", w.sim_serve("0.2", "--tokens-per-s 200"));
    let url = format!("http://[::1]:{}", w.port);
    let load = [
        bin(),
        "sim",
        "bench",
        "--base-url",
        &url,
        "--model",
        "m",
        "--max-concurrency",
        "2",
        "--num-prompts",
        "6",
        "--random-input-len",
        "16",
        "--random-output-len",
        "16",
    ]
    .map(String::from);
    let out = run_with_limit(
        w.run_command(&["--serve".to_string(), serve], &load),
        Duration::from_secs(120),
    );
    let stdout = text(&out.stdout);
    let results = json_file(&w.out().join("results.json"));
    assert_eq!(
        out.status.code(),
        Some(clean_exit_code(&results)),
        "{stdout}"
    );
    assert!(stdout.contains("[ T7] PASS"), "{stdout}");
    assert!(stdout.contains("[ T1] PASS"), "{stdout}");
    let run = json_file(&w.out().join("run.json"));
    assert!(run.to_string().contains(&url), "{run}");
    let rows = std::fs::read_to_string(w.out().join("run.series.jsonl"))
        .unwrap()
        .lines()
        .count();
    assert!(rows >= 2, "{rows}");
}
