//! The real-vLLM lane, sweeps: `inferlint run --sweep` on a real `vllm serve` (CPU, SmolLM2-135M)
//! loaded by the real `vllm bench serve`. The same seeded load at three concurrencies on a server
//! that runs at most 8 at once: without a reset between points, points 2 and 3 are served from
//! the prefix cache point 1 filled; with vLLM's own reset (its development endpoints on, the
//! server listening on loopback alone) none is; the point asking 16 is the knee either way.
//! The same seeded load twice as a shell loop is judged point by point too. Run it with
//! `REAL_VLLM_PROFILE=debug bash .ci/real-vllm.sh sweep::`.

use std::path::Path;
use std::time::Duration;

use serde_json::Value;

use super::files::{args, json};
use super::install::MODEL;
use super::{assert_port_free, Install, Launch};

/// Three points, each a short load: boot (~40 s) dominates.
const RUN_LIMIT: Duration = Duration::from_secs(1200);

/// `vllm bench serve`: 8 random prompts of 300 tokens (two full 128-token blocks, which a
/// second pass finds cached), 16 tokens out, one seed.
fn seeded(inst: &Install, port: u16) -> Vec<String> {
    [
        inst.vllm.display().to_string(),
        "bench".into(),
        "serve".into(),
        "--model".into(),
        MODEL.into(),
        "--tokenizer".into(),
        inst.model.display().to_string(),
        "--base-url".into(),
        format!("http://127.0.0.1:{port}"),
        "--dataset-name".into(),
        "random".into(),
        "--random-input-len".into(),
        "300".into(),
        "--random-output-len".into(),
        "16".into(),
        "--num-prompts".into(),
        "8".into(),
        "--seed".into(),
        "0".into(),
        "--ignore-eos".into(),
        "--max-concurrency".into(),
        "2".into(),
    ]
    .to_vec()
}

/// One sweep of `--max-concurrency 2,4,16` on a fresh server (64 blocks, at most 8 running).
fn sweep(name: &str, inst: &Install, port: u16, between: &str) -> (i32, String, Value) {
    assert_port_free(port);
    let launch = Launch::start(
        name,
        &args(
            Path::new("run"),
            &inst.serve(port, 64),
            &["--sweep", "max-concurrency=2,4,16", "--between", between],
            &seeded(inst, port),
        ),
    );
    let code = launch.wait(RUN_LIMIT);
    let stdout = launch.output();
    let out = launch.out();
    let sweep = json(&out.join("sweep.json"));
    assert!(out.join("sweep.html").is_file(), "no sweep page\n{stdout}");
    if let Err(left) = launch.wait_nothing_left(Duration::from_secs(5)) {
        panic!("left after the run: {left:#?}");
    }
    (code, stdout, sweep)
}

pub(super) fn kinds(sweep: &Value) -> Vec<(String, u64, Option<u64>)> {
    sweep["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            (
                f["kind"].as_str().unwrap().to_string(),
                f["point"].as_u64().unwrap(),
                f["names"].as_u64(),
            )
        })
        .collect()
}

pub(super) fn statuses(sweep: &Value, t: &str) -> Vec<String> {
    sweep["points"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            p["results"]
                .as_array()
                .unwrap()
                .iter()
                .find(|r| r["tripwire"] == t)
                .map_or("none".to_string(), |r| {
                    r["status"].as_str().unwrap().to_string()
                })
        })
        .collect()
}

/// Run by hand (`-- --ignored`), not in every CI run: its recording is
/// tests/fixtures/vllm-0.32-cpu/sweep/nothing/ (judged in tests/sweep_evidence.rs), and a live
/// sweep whose later point inherits the cache runs in CI on llama.cpp
/// (`llamacpp::a_sweep_resets_llamacpps_cache_only_where_the_server_lets_it`), at a fifth of the
/// cost of a vLLM boot (docs/benchmarks.md).
#[test]
#[ignore = "long; recorded in tests/fixtures/vllm-0.32-cpu/sweep/nothing, live on llama.cpp in CI"]
fn a_same_seed_sweep_without_a_reset_inherits_the_first_points_cache() {
    let _t = super::turn();
    let name = "a_same_seed_sweep_without_a_reset_inherits_the_first_points_cache";
    let Some(inst) = Install::find(name) else {
        return;
    };
    let (code, stdout, sweep) = sweep("sweep-nothing", &inst, 8025, "nothing");
    assert_eq!(code, 1, "T16 and T8 fail at some points\n{stdout}");
    let k = kinds(&sweep);
    assert!(
        k.contains(&("inherited_cache".into(), 2, Some(1)))
            && k.contains(&("inherited_cache".into(), 3, Some(1))),
        "{k:?}\n{stdout}"
    );
    assert_eq!(
        statuses(&sweep, "T16"),
        ["pass", "fail", "fail"],
        "{stdout}"
    );
    // The point past --max-num-seqs 8 alone fails T8: the knee.
    assert_eq!(statuses(&sweep, "T8"), ["pass", "pass", "fail"], "{stdout}");
    assert_eq!(sweep["knee"], 3, "{k:?}");
}

#[test]
fn a_same_seed_sweep_with_vllms_reset_inherits_nothing() {
    let _t = super::turn();
    let name = "a_same_seed_sweep_with_vllms_reset_inherits_nothing";
    let Some(inst) = Install::find(name) else {
        return;
    };
    let (code, stdout, sweep) = sweep("sweep-reset", &inst, 8026, "reset-cache");
    assert_eq!(code, 1, "T8 fails at the knee\n{stdout}");
    assert!(
        stdout.contains(
            "note: the server runs with VLLM_SERVER_DEV_MODE=1 (it listens on loopback alone)"
        ),
        "{stdout}"
    );
    assert_eq!(
        stdout.matches("reset the prefix cache: done").count(),
        2,
        "{stdout}"
    );
    let k = kinds(&sweep);
    assert!(
        !k.iter()
            .any(|f| f.0 == "inherited_cache" || f.0 == "reset_failed"),
        "{k:?}\n{stdout}"
    );
    assert_eq!(
        statuses(&sweep, "T16"),
        ["pass", "pass", "pass"],
        "{stdout}"
    );
    assert_eq!(sweep["knee"], 3, "{k:?}");
}

/// The same seeded load twice, written as the user's own shell loop and left unchanged: each
/// `vllm bench serve` is a point, judged on its own (T8 and T15 from its command and its result
/// file), and the second names the cache the first filled. Run by hand (`-- --ignored`), not
/// in every CI run: the same shell loop runs live in CI on llama.cpp
/// (`llamacpp::the_same_seeded_load_twice_gives_the_cache_finding_on_the_second_point`) and on
/// the simulator (tests/run_sweep.rs), for a fifth of a vLLM boot's cost.
#[test]
#[ignore = "long; the same shell loop runs live on llama.cpp and the simulator in CI"]
fn a_shell_loop_of_the_same_seeded_load_names_the_first_pass_cache() {
    let _t = super::turn();
    let name = "a_shell_loop_of_the_same_seeded_load_names_the_first_pass_cache";
    let Some(inst) = Install::find(name) else {
        return;
    };
    let port = 8027;
    assert_port_free(port);
    let results = tempfile::tempdir().unwrap();
    let bench = seeded(&inst, port)
        .iter()
        .map(|a| shlex::try_quote(a).unwrap().into_owned())
        .collect::<Vec<_>>()
        .join(" ");
    let dir = results.path().display();
    let script = format!(
        "for pass in 1 2; do {bench} --save-result --result-dir {dir} --result-filename pass-$pass.json || exit 1; done"
    );
    let load = ["sh".to_string(), "-c".to_string(), script];
    let launch = Launch::start(
        "sweep-shell-loop",
        &args(Path::new("run"), &inst.serve(port, 64), &[], &load),
    );
    let code = launch.wait(RUN_LIMIT);
    let stdout = launch.output();
    assert_eq!(code, 1, "T16 fails on the second pass\n{stdout}");
    assert!(
        stdout
            .contains("== the load ran 2 load-tool processes: each is a point, judged on its own"),
        "{stdout}"
    );
    let sweep = json(&launch.out().join("sweep.json"));
    assert_eq!(sweep["points"].as_array().map(Vec::len), Some(2), "{sweep}");
    // The passes differ only in where their result goes: that labels nothing.
    assert_eq!(sweep["points"][1]["label"], "run 2", "{sweep}");
    assert_eq!(statuses(&sweep, "T8"), ["pass", "pass"], "{stdout}");
    assert_eq!(
        statuses(&sweep, "T15"),
        ["pass", "pass"],
        "no T15 blames the other pass's requests:\n{stdout}"
    );
    assert_eq!(statuses(&sweep, "T16"), ["pass", "fail"], "{stdout}");
    let k = kinds(&sweep);
    assert!(
        k.contains(&("inherited_cache".into(), 2, Some(1))),
        "{k:?}\n{stdout}"
    );
    if let Err(left) = launch.wait_nothing_left(Duration::from_secs(5)) {
        panic!("left after the run: {left:#?}");
    }
    assert_port_free(port);
}
