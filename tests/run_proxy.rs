//! A cluster's outbound proxy in the environment (docs/reference.md#reaching-the-server): `run`
//! and `probe` reach the simulated server directly, the "proxy" (a listener that counts the
//! connections reaching it and answers none) sees nothing, and the run records its series.

use crate::run_support;

use std::net::TcpListener;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use run_support::{bin, json_file, run_with_limit, status_of, text, World};

const PROXY_VARS: [&str; 6] = [
    "http_proxy",
    "HTTP_PROXY",
    "https_proxy",
    "HTTPS_PROXY",
    "ALL_PROXY",
    "all_proxy",
];

/// A listener on loopback that counts connections and closes each at once.
struct CountingProxy {
    url: String,
    connections: Arc<AtomicUsize>,
}

impl CountingProxy {
    fn start() -> CountingProxy {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let connections = Arc::new(AtomicUsize::new(0));
        let seen = connections.clone();
        // Ends with the test process; it only accepts and drops.
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                seen.fetch_add(1, Ordering::SeqCst);
                drop(stream);
            }
        });
        CountingProxy { url, connections }
    }
}

#[test]
fn run_and_probe_never_use_the_environments_proxy() {
    let w = World::new();
    let proxy = CountingProxy::start();
    let serve = w.sim_serve(
        "0.2",
        "--num-gpu-blocks-override 98 --block-size 16 --max-model-len 1024 --tokens-per-s 100",
    );
    let load = w.sim_bench(
        "--max-concurrency 3 --num-prompts 9 --random-input-len 40 --random-output-len 40 --ignore-eos",
    );
    let mut cmd = w.run_command(&["--serve".into(), serve], &load);
    for var in PROXY_VARS {
        cmd.env(var, &proxy.url);
    }
    cmd.env_remove("no_proxy").env_remove("NO_PROXY");
    let o = run_with_limit(cmd, Duration::from_secs(120));
    let stdout = text(&o.stdout);
    let results = json_file(&w.out().join("results.json"));
    assert_eq!(
        status_of(&results, "T7").as_deref(),
        Some("pass"),
        "{stdout}"
    );
    assert_eq!(
        status_of(&results, "T8").as_deref(),
        Some("pass"),
        "{stdout}"
    );
    let series = std::fs::read_to_string(w.out().join("run.series.jsonl")).unwrap();
    assert!(
        series.lines().count() > 3,
        "the run recorded nothing: {series}"
    );
    // probe, against a server of the test's own.
    let mut server = w.start_sim_server("");
    let mut probe = std::process::Command::new(bin());
    probe
        .args(["probe", &format!("http://127.0.0.1:{}", w.port)])
        .env("INFERLINT_GPU", w.gpu_env());
    for var in PROXY_VARS {
        probe.env(var, &proxy.url);
    }
    let p = run_with_limit(probe, Duration::from_secs(60));
    let _ = server.kill();
    let _ = server.wait();
    assert_eq!(
        p.status.code(),
        Some(0),
        "{}{}",
        text(&p.stdout),
        text(&p.stderr)
    );
    assert_eq!(
        proxy.connections.load(Ordering::SeqCst),
        0,
        "connections reached the proxy"
    );
    // The test's own server was SIGKILLed: its engine notices and exits a moment later.
    assert!(
        crate::sim_support::eventually(Duration::from_secs(10), || w.live_processes().is_empty()),
        "{:?}",
        w.live_processes()
    );
}
