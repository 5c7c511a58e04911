//! `inferlint run --sweep` end to end on the simulated vLLM: one server, a point per value, each
//! judged as a window of its own in `points/NN-…/`, the points judged together in `sweep.json`
//! and the table; bad sweeps refused before anything starts; a bystander left alone.

use std::time::Duration;

use serde_json::Value;

use crate::run_support::{json_file, run_with_limit, text, Bystander, World};

const LIMIT: Duration = Duration::from_secs(240);

/// One supervised run at a time (two cores), in this binary and beside it.
fn turn() -> crate::serial::Turn {
    crate::serial::turn("runs")
}

/// A seeded random load of 16 prompts of 256 tokens (several cache blocks each).
fn seeded(w: &World) -> Vec<String> {
    w.sim_bench("--num-prompts 16 --random-input-len 256 --random-output-len 16 --seed 0")
}

fn sweep_run(w: &World, serve_extra: &str, args: &[&str]) -> (i32, String) {
    let serve = w.sim_serve("0.3", serve_extra);
    let out = run_with_limit(w.command(&serve, args, &seeded(w)), LIMIT);
    let all = format!("{}{}", text(&out.stdout), text(&out.stderr));
    (out.status.code().unwrap_or(-1), all)
}

fn findings(sweep: &Value) -> Vec<(String, u64, Option<u64>)> {
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

/// The same seeded load at three concurrencies, nothing done between points, on a server that
/// runs at most 4 at once: points 2 and 3 are served from the cache point 1 filled (each named),
/// and the point asking for 8 alone reaches past `--max-num-seqs`: the knee.
#[test]
fn a_same_seed_sweep_names_the_point_that_filled_the_cache_and_the_knee() {
    let _t = turn();
    let w = World::new();
    let mut bystander = Bystander::start();
    let (code, all) = sweep_run(
        &w,
        "--host 127.0.0.1 --max-num-seqs 4",
        &["--sweep", "max-concurrency=1,4,8", "--between", "nothing"],
    );
    assert_eq!(code, 1, "T8 and T16 fail at some points:\n{all}");
    for k in 1..=3 {
        assert!(
            all.contains(&format!("== point {k} of 3: --max-concurrency ")),
            "{all}"
        );
    }
    let sweep = json_file(&w.out().join("sweep.json"));
    assert_eq!(sweep["schema"], "inferlint.sweep/1");
    assert_eq!(sweep["between"], "nothing");
    let points = sweep["points"].as_array().unwrap();
    assert_eq!(points.len(), 3);
    let f = findings(&sweep);
    assert!(
        f.contains(&("inherited_cache".into(), 2, Some(1)))
            && f.contains(&("inherited_cache".into(), 3, Some(1))),
        "{f:?}"
    );
    assert!(
        !f.iter().any(|x| x.0 == "inherited_cache" && x.1 == 1),
        "{f:?}"
    );
    assert_eq!(sweep["knee"], 3, "{f:?}");
    // T8 fails at the point past --max-num-seqs alone.
    let t8: Vec<&str> = points
        .iter()
        .map(|p| {
            p["results"]
                .as_array()
                .unwrap()
                .iter()
                .find(|r| r["tripwire"] == "T8")
                .map_or("none", |r| r["status"].as_str().unwrap())
        })
        .collect();
    assert_eq!(t8, ["pass", "pass", "fail"], "{all}");
    // Each point is a folder that `report` reads as a run, with its own verdicts.
    for p in points {
        let dir = w.out().join(p["folder"].as_str().unwrap());
        for f in [
            "before.snapshot.json",
            "after.snapshot.json",
            "run.series.jsonl",
            "bench.json",
            "results.json",
            "report.html",
        ] {
            assert!(dir.join(f).is_file(), "{f} missing in {}", dir.display());
        }
        let own = json_file(&dir.join("results.json"));
        assert_eq!(
            own, p["results"],
            "the point's results.json is its sweep.json entry"
        );
    }
    // The table agrees with sweep.json: point 1 holds, 2 and 3 do not, and say why.
    let row = |k: usize| {
        all.lines()
            .find(|l| l.starts_with(&format!("{k} ")) && l.contains("--max-concurrency"))
            .unwrap_or_else(|| panic!("no row {k}:\n{all}"))
            .to_string()
    };
    assert!(row(1).ends_with("yes"), "{}", row(1));
    assert!(
        row(2).contains("no: ") && row(2).contains("cache of point 1"),
        "{}",
        row(2)
    );
    assert!(row(3).contains("the knee"), "{}", row(3));
    // The sweep's page, beside sweep.json, links each point's own page.
    let page = std::fs::read_to_string(w.out().join("sweep.html")).unwrap();
    assert!(
        page.contains("points/03-max-concurrency-8/report.html"),
        "the page links point 3"
    );
    assert!(all.contains("sweep page: "), "{all}");
    assert!(w.live_processes().is_empty(), "{:?}", w.live_processes());
    assert!(bystander.alive(), "the bystander was killed");
}

/// One number changed: the same sweep with one seed per point reads no inherited cache.
#[test]
fn points_with_their_own_prompts_inherit_nothing() {
    let _t = turn();
    let w = World::new();
    let serve = w.sim_serve("0.3", "--host 127.0.0.1");
    // Long enough for the recording to see requests running (T9, T14 can tell).
    let load = w.sim_bench(
        "--num-prompts 16 --random-input-len 256 --random-output-len 16 --max-concurrency 2",
    );
    let out = run_with_limit(
        w.command(
            &serve,
            &["--sweep", "seed=1,2", "--between", "nothing"],
            &load,
        ),
        LIMIT,
    );
    let all = format!("{}{}", text(&out.stdout), text(&out.stderr));
    let sweep = json_file(&w.out().join("sweep.json"));
    assert!(
        !findings(&sweep).iter().any(|f| f.0 == "inherited_cache"),
        "{all}"
    );
    assert_eq!(out.status.code(), Some(0), "{all}");
}

/// A sweep inferlint cannot run as asked is refused before the server starts: exit 2, no
/// boot log, the reason named.
#[test]
fn a_sweep_that_cannot_run_is_refused_before_anything_starts() {
    let w = World::new();
    let serve = w.sim_serve("0.3", "");
    let cases: [(&[&str], Vec<String>, &str); 6] = [
        (
            &["--sweep", "max-num-seqs=1,2"],
            seeded(&w),
            "does not take --max-num-seqs",
        ),
        (
            &["--sweep", "max-concurrency=1,,2"],
            seeded(&w),
            "value 2 is empty",
        ),
        (
            &["--sweep", "max-concurrency"],
            seeded(&w),
            "give OPTION=V1,V2",
        ),
        (
            &["--sweep", "max-concurrency=1,2"],
            vec!["sh".into(), "-c".into(), "true".into()],
            "Loop over the points in the script itself",
        ),
        (
            &["--sweep", "max-concurrency=1,2", "--repeat", "0"],
            seeded(&w),
            "--repeat 0: give how many times each point runs, 1 or more",
        ),
        (
            &[
                "--sweep",
                "max-concurrency=1,2",
                "--between",
                "restart",
                "--serve-node",
                "1",
                "sim serve m",
                "--node-launcher",
                "true",
            ],
            seeded(&w),
            "--between restart with --serve-node is not available",
        ),
    ];
    for (args, load, says) in cases {
        let out = run_with_limit(w.command(&serve, args, &load), Duration::from_secs(30));
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(says), "{args:?}: {err}");
        assert!(
            !w.out().join("boot.log").exists(),
            "{args:?} started a server"
        );
    }
}

/// Dev mode is a security decision: a server that listens on every address gets no development
/// endpoints without `--allow-dev-endpoints`, and the output and run.json say so.
#[test]
fn a_server_other_hosts_can_reach_gets_no_dev_endpoints_unasked() {
    let _t = turn();
    let w = World::new();
    let (_, all) = sweep_run(&w, "--host 0.0.0.0", &["--sweep", "max-concurrency=1,2"]);
    assert!(
        all.contains("development endpoints stay off (--allow-dev-endpoints turns them on"),
        "{all}"
    );
    assert!(!all.contains("VLLM_SERVER_DEV_MODE=1 ("), "{all}");
    let run = json_file(&w.out().join("run.json"));
    assert!(run.get("dev_endpoints").is_none(), "{run}");
    let sweep = json_file(&w.out().join("sweep.json"));
    assert_eq!(
        sweep["points"][1]["reset"]["outcome"], "unavailable",
        "{sweep}"
    );
    assert!(w.live_processes().is_empty());
}

/// A three-point sweep (`--max-concurrency 1,2,4`, nothing between) started with its output
/// watched, returned once point 2's load has run for a moment.
fn three_points_until_the_second(
    w: &World,
) -> (std::process::Child, std::thread::JoinHandle<String>) {
    let serve = w.sim_serve("0.3", "--host 127.0.0.1");
    let load =
        w.sim_bench("--num-prompts 16 --random-input-len 64 --random-output-len 32 --seed 0");
    let cmd = w.command(
        &serve,
        &["--sweep", "max-concurrency=1,2,4", "--between", "nothing"],
        &load,
    );
    let (child, loads, rest) = crate::run_support::spawn_watching_load(cmd);
    for k in 1..=2 {
        loads
            .recv_timeout(Duration::from_secs(120))
            .unwrap_or_else(|_| panic!("point {k}'s load did not start"));
    }
    std::thread::sleep(Duration::from_millis(800));
    (child, rest)
}

/// The run's exit status, once it ended (within `limit`, else the test fails).
fn exit_within(child: &mut std::process::Child, limit: Duration) -> std::process::ExitStatus {
    let deadline = std::time::Instant::now() + limit;
    loop {
        if let Some(s) = child.try_wait().unwrap() {
            return s;
        }
        assert!(std::time::Instant::now() < deadline, "the run did not end");
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Ctrl-C mid-sweep: the points done keep their folders and verdicts, the current one is marked
/// interrupted, no later point starts, the run exits 130 and leaves nothing running.
#[test]
fn ctrl_c_mid_sweep_keeps_the_points_done_and_marks_the_current_one() {
    let _t = turn();
    let w = World::new();
    let mut bystander = Bystander::start();
    let (mut child, rest) = three_points_until_the_second(&w);
    // SAFETY: the pid of the run this test started, still its child.
    assert_eq!(unsafe { libc::kill(child.id() as i32, libc::SIGINT) }, 0);
    let status = exit_within(&mut child, Duration::from_secs(90));
    let all = rest.join().unwrap();
    assert_eq!(status.code(), Some(130), "{all}");
    assert!(!all.contains("== point 3 of 3"), "{all}");
    let sweep = json_file(&w.out().join("sweep.json"));
    let points = sweep["points"].as_array().unwrap();
    assert_eq!(points.len(), 2, "{sweep}");
    assert_eq!(points[0]["interrupted"], false);
    assert_eq!(points[1]["interrupted"], true);
    let first = w.out().join(points[0]["folder"].as_str().unwrap());
    assert!(first.join("results.json").is_file() && first.join("bench.json").is_file());
    let row2 = all
        .lines()
        .find(|l| l.starts_with("2 ") && l.contains("--max-concurrency"))
        .unwrap_or_else(|| panic!("no row 2:\n{all}"));
    assert!(row2.contains("interrupted"), "{row2}");
    assert!(w.live_processes().is_empty(), "{:?}", w.live_processes());
    assert!(bystander.alive(), "the bystander was killed");
}

/// The server's engine killed during point 2: T7 fails at point 2, the sweep stops there (the
/// points before it keep their verdicts), the run exits 1 and leaves nothing running.
#[test]
fn a_server_that_dies_mid_sweep_fails_t7_at_its_point_and_stops_the_sweep() {
    let _t = turn();
    let w = World::new();
    let mut bystander = Bystander::start();
    let (mut child, rest) = three_points_until_the_second(&w);
    let engine = w
        .live_processes()
        .into_iter()
        .find(|(_, cmd)| cmd.contains("EngineCore"))
        .map(|(pid, _)| pid)
        .expect("the run's engine runs");
    // SAFETY: the run's own engine, found by this world's marker just above.
    assert_eq!(unsafe { libc::kill(engine, libc::SIGKILL) }, 0);
    let status = exit_within(&mut child, Duration::from_secs(120));
    let all = rest.join().unwrap();
    assert_eq!(status.code(), Some(1), "{all}");
    assert!(!all.contains("== point 3 of 3"), "{all}");
    let sweep = json_file(&w.out().join("sweep.json"));
    let points = sweep["points"].as_array().unwrap();
    assert_eq!(points.len(), 2, "{sweep}");
    let t7 = |p: &Value| {
        p["results"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["tripwire"] == "T7")
            .map(|r| r["status"].clone())
    };
    assert_eq!(t7(&points[0]), None, "point 1 saw no death: {sweep}");
    assert_eq!(t7(&points[1]), Some(Value::from("fail")), "{sweep}");
    assert!(w.live_processes().is_empty(), "{:?}", w.live_processes());
    assert!(bystander.alive(), "the bystander was killed");
}

/// The same three-point sweep with the cache reset between points (the default), on a server
/// that listens on loopback alone: dev mode is turned on and said, every reset is verified
/// done, and no point inherits a cache; the point past `--max-num-seqs` is still the knee.
#[test]
fn with_the_reset_between_points_no_point_inherits_a_cache() {
    let _t = turn();
    let w = World::new();
    let (code, all) = sweep_run(
        &w,
        "--host 127.0.0.1 --max-num-seqs 4",
        &["--sweep", "max-concurrency=1,4,8"],
    );
    assert_eq!(code, 1, "T8 fails at the knee:\n{all}");
    assert!(
        all.contains(
            "note: the server runs with VLLM_SERVER_DEV_MODE=1 (it listens on loopback alone)"
        ),
        "{all}"
    );
    assert_eq!(
        all.matches("reset the prefix cache: done").count(),
        2,
        "{all}"
    );
    let boot = std::fs::read_to_string(w.out().join("boot.log")).unwrap();
    assert!(
        boot.contains("SECURITY WARNING: Development endpoints are enabled!"),
        "{boot}"
    );
    let run = json_file(&w.out().join("run.json"));
    assert_eq!(run["dev_endpoints"], true, "{run}");
    let sweep = json_file(&w.out().join("sweep.json"));
    assert_eq!(sweep["between"], "reset-cache");
    let points = sweep["points"].as_array().unwrap();
    assert_eq!(points[1]["reset"]["outcome"], "done", "{sweep}");
    assert_eq!(points[2]["reset"]["outcome"], "done", "{sweep}");
    let f = findings(&sweep);
    assert!(
        !f.iter()
            .any(|x| x.0 == "inherited_cache" || x.0 == "reset_failed"),
        "{f:?}"
    );
    assert_eq!(sweep["knee"], 3, "{f:?}");
    assert!(w.live_processes().is_empty(), "{:?}", w.live_processes());
}

/// A sweep written as a loop in the user's own script, unchanged: each load-tool process it
/// starts is a point, judged from its own command, the counters around it and the result file
/// it named; the second names the cache the first filled, and only it fails T8.
#[test]
fn a_shell_loop_is_judged_point_by_point() {
    let _t = turn();
    let w = World::new();
    let serve = w.sim_serve("0.3", "--host 127.0.0.1 --max-num-seqs 4");
    let bench = w
        .sim_bench("--num-prompts 16 --random-input-len 256 --random-output-len 16 --seed 0")
        .iter()
        .map(|a| shlex::try_quote(a).unwrap().into_owned())
        .collect::<Vec<_>>()
        .join(" ");
    let results = w.dir.path().join("results");
    let script = format!(
        "for c in 2 8; do {bench} --max-concurrency $c --save-result --result-dir {} --result-filename bench-$c.json; sleep 0.5; done",
        results.display()
    );
    let load = ["sh".to_string(), "-c".to_string(), script];
    let out = run_with_limit(w.command(&serve, &[], &load), LIMIT);
    let all = format!("{}{}", text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(1), "{all}");
    assert!(
        all.contains("== the load ran 2 load-tool processes: each is a point, judged on its own"),
        "{all}"
    );
    let sweep = json_file(&w.out().join("sweep.json"));
    assert_eq!(sweep["option"], "(script)");
    let points = sweep["points"].as_array().unwrap();
    assert_eq!(points.len(), 2, "{sweep}");
    assert_eq!(points[0]["label"], "--max-concurrency 2");
    // Each point has a folder of its own, as a `--sweep` point does, linked from the page.
    assert_eq!(points[1]["folder"], "points/02-max-concurrency-8");
    for p in points {
        let dir = w.out().join(p["folder"].as_str().unwrap());
        for f in [
            "before.snapshot.json",
            "after.snapshot.json",
            "results.json",
            "report.html",
        ] {
            assert!(dir.join(f).is_file(), "{f} missing in {}", dir.display());
        }
    }
    let status = |p: &Value, t: &str| {
        p["results"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["tripwire"] == t)
            .map_or("none".to_string(), |r| {
                r["status"].as_str().unwrap().to_string()
            })
    };
    // T8 and T15 for each point, from its own command and result file.
    assert_eq!(
        (status(&points[0], "T8"), status(&points[1], "T8")),
        ("pass".to_string(), "fail".to_string()),
        "{all}"
    );
    assert_eq!(
        (status(&points[0], "T15"), status(&points[1], "T15")),
        ("pass".to_string(), "pass".to_string()),
        "no T15 blames another point's requests:\n{all}"
    );
    assert!(
        findings(&sweep).contains(&("inherited_cache".into(), 2, Some(1))),
        "{all}"
    );
    assert!(w.live_processes().is_empty(), "{:?}", w.live_processes());
}

/// `--repeat`: each value runs several times in a row, each run a point of its own with its own
/// folder. The simulated server's timings are steady (its prefill does not shorten with cache
/// hits), so its runs agree and no spread is named, though the second run is served from the
/// cache the first filled; the real server's runs disagree (tests/sweep_evidence.rs).
///
/// The outputs' lengths vary (`--random-range-ratio`) so that the two requests in flight end at
/// different steps: a new request then always waits for the next 40-ms step of a busy engine,
/// and its TTFT is that step, not a draw between it and an idle engine's few milliseconds (two
/// equal requests end together and leave the engine idle, and the median TTFT of such a run
/// fell on either side of the draw).
#[test]
fn repeats_of_a_point_each_have_a_folder_and_steady_ones_agree() {
    let _t = turn();
    let w = World::new();
    let serve = w.sim_serve("0.3", "--host 127.0.0.1 --max-num-seqs 4 --tokens-per-s 25");
    let load = w.sim_bench(
        "--num-prompts 16 --random-input-len 256 --random-output-len 16 --random-range-ratio 0.5 --seed 0",
    );
    let args = [
        "--sweep",
        "max-concurrency=2",
        "--repeat",
        "2",
        "--between",
        "nothing",
    ];
    let out = run_with_limit(w.command(&serve, &args, &load), LIMIT);
    let all = format!("{}{}", text(&out.stdout), text(&out.stderr));
    let code = out.status.code().unwrap_or(-1);
    assert_eq!(code, 1, "T16 fails on the second run:\n{all}");
    assert!(
        all.contains("== sweep: --max-concurrency over 2 point(s), each value 2 times"),
        "{all}"
    );
    assert!(
        all.contains("== point 2 of 2: --max-concurrency 2 (2 of 2)"),
        "{all}"
    );
    let sweep = json_file(&w.out().join("sweep.json"));
    let points = sweep["points"].as_array().unwrap();
    assert_eq!(points.len(), 2, "{sweep}");
    assert_eq!(
        (&points[0]["repeat"], &points[1]["repeat"]),
        (&Value::from(1), &Value::from(2))
    );
    assert_eq!(points[1]["folder"], "points/02-max-concurrency-2-r2");
    assert!(w
        .out()
        .join("points/02-max-concurrency-2-r2/results.json")
        .is_file());
    let f = findings(&sweep);
    assert_eq!(f, [("inherited_cache".to_string(), 2, Some(1))], "{all}");
    assert!(w.live_processes().is_empty(), "{:?}", w.live_processes());
}

/// `--between restart`: the server is stopped and started anew before every point but the
/// first, each start logged to its own file (`boot.log`, `boot-2.log`) and checked as at a
/// run's start; T4 and T11 compare the starts (the simulated vLLM draws the same pool from the
/// same flags), and `report` remade from the folder finds every start. Every start's gate and
/// stop judge the run's own card (`--gpus 1`) while another process holds GPU 0; the
/// bystander lives.
#[test]
fn a_sweep_restarted_between_points_compares_its_starts() {
    let _t = turn();
    let w = World::new();
    let mut bystander = Bystander::start();
    // A two-card node whose GPU 0 another process holds: the run's card is GPU 1, and every
    // start's gate judges that card alone.
    let gpu = w.dir.path().join("gpu");
    inferlint_sim::gpu::set_cards(&gpu, 2).unwrap();
    let _held = inferlint_sim::gpu::hold(&gpu, 20_000, 0).unwrap();
    let (code, all) = sweep_run(
        &w,
        "--host 127.0.0.1 --max-num-seqs 4",
        &[
            "--sweep",
            "max-concurrency=2,4",
            "--between",
            "restart",
            "--gpus",
            "1",
        ],
    );
    assert_eq!(code, 0, "{all}");
    // Two gates and two stops, each on GPU 1 alone, each clear.
    assert_eq!(all.matches("[ T2] PASS").count(), 4, "{all}");
    let run = json_file(&w.out().join("run.json"));
    assert_eq!(run["gpu_scope"]["cards"], serde_json::json!([1]), "{run}");
    assert_eq!(
        all.matches("== between points: restart the server").count(),
        1,
        "{all}"
    );
    assert!(all.contains("boot-2.log"), "{all}");
    assert!(all.contains("== the server's 2 starts compared"), "{all}");
    assert!(
        all.contains("[ T4] PASS  same flags, same pool (") && all.contains("boot.log, boot-2.log"),
        "{all}"
    );
    assert!(w.out().join("boot-2.log").is_file());
    let sweep = json_file(&w.out().join("sweep.json"));
    assert_eq!(sweep["between"], "restart");
    let points = sweep["points"].as_array().unwrap();
    assert_eq!(
        (&points[0]["server"]["boot"], &points[1]["server"]["boot"]),
        (&Value::from(1), &Value::from(2)),
        "{sweep}"
    );
    assert!(
        findings(&sweep).is_empty(),
        "same pool, no finding: {sweep}"
    );
    let results = json_file(&w.out().join("results.json"));
    let t4 = results
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["tripwire"] == "T4")
        .unwrap_or_else(|| panic!("no T4 in results.json: {results}"));
    assert_eq!(t4["status"], "pass", "{t4}");
    // Remade from the folder: both starts are found, T4 as the run had it.
    let again = std::process::Command::new(crate::run_support::bin())
        .args(["report", "--json"])
        .arg(w.out())
        .output()
        .unwrap();
    let again: Value = serde_json::from_slice(&again.stdout).unwrap();
    let t4_again = again
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["tripwire"] == "T4");
    assert_eq!(
        t4_again.map(|r| &r["status"]),
        Some(&Value::from("pass")),
        "{again}"
    );
    assert!(w.live_processes().is_empty(), "{:?}", w.live_processes());
    assert!(bystander.alive(), "the bystander was killed");
}
