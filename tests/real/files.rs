//! Reading what a run left in its folder: results, snapshots, the recording, the timings.

use std::path::Path;
use std::time::Duration;

use inferlint_core::snapshot::Snapshot;
use serde_json::Value;

use super::Launch;

/// Reads a JSON file.
pub fn json(p: &Path) -> Value {
    let t = std::fs::read_to_string(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
    serde_json::from_str(&t).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

/// The last result of a tripwire in a results array.
pub fn result<'a>(results: &'a Value, t: &str) -> &'a Value {
    results
        .as_array()
        .expect("results.json is an array")
        .iter()
        .rev()
        .find(|r| r["tripwire"] == t)
        .unwrap_or_else(|| panic!("no {t} in {results:#}"))
}

pub fn counter(snapshot: &Snapshot, name: &str) -> f64 {
    snapshot
        .metrics
        .total(name)
        .unwrap_or_else(|| panic!("{name} absent from {}", snapshot.source))
}

pub fn snapshot(out: &Path, name: &str) -> Snapshot {
    Snapshot::load(&out.join(name)).unwrap_or_else(|e| panic!("{name}: {e}"))
}

/// The recording's samples as JSON objects (the header line left out).
pub fn samples(out: &Path) -> Vec<Value> {
    let text = std::fs::read_to_string(out.join("run.series.jsonl")).unwrap();
    text.lines()
        .skip(1)
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .collect()
}

pub fn num(v: &Value) -> f64 {
    v.as_f64().unwrap_or_else(|| panic!("not a number: {v}"))
}

pub fn names(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

pub fn assert_has_files(out: &Path, files: &[&str]) {
    let n = names(out);
    for f in files {
        assert!(n.iter().any(|x| x == f), "{f} missing from {n:?}");
    }
}

/// Prints where the run's time went, from run.json and the printed lines: the server's own time
/// (boot, the probe's real inference, its shutdown) apart from inferlint's.
pub fn print_timings(name: &str, launch: &Launch, out: &Path, results: &Value) {
    let rec = json(&out.join("run.json"));
    let t = &rec["timings"];
    let f = |k: &str| t[k].as_f64().unwrap_or(f64::NAN);
    let (total, gate, boot, load, stop) = (
        f("total_s"),
        f("gate_s"),
        f("boot_s"),
        f("load_s"),
        f("stop_s"),
    );
    let probe = match (launch.printed_at("== probe"), launch.printed_at("== load:")) {
        (Some(a), Some(b)) => b.saturating_sub(a).as_secs_f64(),
        _ => 0.0,
    };
    // `stopped: N process(es) signalled (…) in X s`: the server's own shutdown.
    let server_stop = launch
        .output()
        .lines()
        .find_map(|l| {
            l.strip_prefix("stopped: ")?
                .rsplit_once(" in ")?
                .1
                .strip_suffix(" s")?
                .parse::<f64>()
                .ok()
        })
        .unwrap_or(0.0);
    let t2_waits: f64 = results
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["tripwire"] == "T2")
        .filter_map(|r| r["evidence"]["readings"].as_array()?.last()?[0].as_f64())
        .sum();
    let own = total - boot - load - probe - server_stop - t2_waits;
    println!(
        "timings {name}: total {total:.1} s = gate {gate:.1} + boot {boot:.1} + probe {probe:.1} + load {load:.1} + stop {stop:.1} (server shutdown {server_stop:.1}, T2 readings {t2_waits:.1}) + rest; inferlint's own overhead {own:.2} s (total - boot - probe - load - server shutdown - T2 readings)"
    );
}

pub fn args(out: &Path, serve: &str, flags: &[&str], load: &[String]) -> Vec<String> {
    let mut v: Vec<String> = vec![
        "run".into(),
        "-o".into(),
        out.display().to_string(),
        "--serve".into(),
        serve.into(),
    ];
    v.extend(flags.iter().map(|s| s.to_string()));
    v.push("--".into());
    v.extend(load.iter().cloned());
    v
}

/// Waits until the recording shows at least `n` requests running: the load is under way.
pub fn wait_running(launch: &Launch, n: f64, limit: Duration) {
    let deadline = std::time::Instant::now() + limit;
    loop {
        let running = std::fs::read_to_string(launch.out().join("run.series.jsonl"))
            .unwrap_or_default()
            .lines()
            .skip(1)
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .filter_map(|s| s["running"].as_f64())
            .fold(0.0, f64::max);
        if running >= n {
            return;
        }
        assert!(
            launch.exit_code().is_none(),
            "inferlint ended before the load ran:\n{}\n{}",
            launch.output(),
            boot_log_tail(launch, 40)
        );
        assert!(
            std::time::Instant::now() < deadline,
            "never {n} running within {limit:?}:\n{}\n{}",
            launch.output(),
            boot_log_tail(launch, 40)
        );
        std::thread::sleep(Duration::from_millis(250));
    }
}

/// The last `n` lines of the server's log (`run/boot.log`), for a failure message: why vLLM
/// stopped is there, and the run folder goes with the test.
pub fn boot_log_tail(launch: &Launch, n: usize) -> String {
    let text = std::fs::read_to_string(launch.out().join("boot.log")).unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    let tail = lines[lines.len().saturating_sub(n)..].join("\n");
    format!("--- last {n} lines of boot.log ---\n{tail}")
}

/// The stop's T2 (N/A on a machine without NVIDIA GPUs: no GPU memory to free, no server
/// process alive) and, from outside, nothing of the run alive and its port free again.
/// T15's result, asserting it read aiperf's own file (`profile_export_aiperf.json`) and counted
/// `completed` requests on the client's side.
pub fn aiperf_t15(results: &Value, completed: f64) -> &Value {
    let t15 = result(results, "T15");
    let ev = &t15["evidence"];
    assert!(
        ev["result_file"]
            .as_str()
            .is_some_and(|f| f.ends_with("profile_export_aiperf.json")),
        "T15 did not read aiperf's file: {t15}"
    );
    assert_eq!(num(&ev["client_completed"]), completed, "{t15}");
    t15
}

pub fn assert_stopped_clean(launch: &Launch, results: &Value) {
    let t2 = result(results, "T2");
    assert_eq!(t2["status"], "not_applicable", "T2 after the stop: {t2}");
    assert_eq!(
        t2["message"],
        "no NVIDIA GPU here, so no GPU memory to free; no inference server process is alive"
    );
    assert_eq!(
        t2["evidence"]["left_after_the_server_stopped"],
        serde_json::json!([])
    );
    if let Err(left) = launch.wait_nothing_left(Duration::from_secs(5)) {
        panic!("left after the run: {left:#?}");
    }
}

/// Writes a copy of a snapshot file with every series of counter `name` set to `value` (a
/// mutation of the real evidence, to show a verdict hinges on that number).
pub fn with_counter(src: &Path, dst: &Path, name: &str, value: f64) {
    let mut doc = json(src);
    let text = doc["text"].as_str().expect("a snapshot's text").to_string();
    let mut changed = 0;
    let lines: Vec<String> = text
        .lines()
        .map(|l| match l.strip_prefix(name) {
            Some(rest) if rest.starts_with('{') || rest.starts_with(' ') => {
                changed += 1;
                let series = &l[..l.rfind(' ').expect("a sample line")];
                format!("{series} {value:?}")
            }
            _ => l.to_string(),
        })
        .collect();
    assert!(changed > 0, "{name} not in {}", src.display());
    doc["text"] = Value::String(lines.join("\n") + "\n");
    std::fs::write(dst, serde_json::to_string_pretty(&doc).unwrap()).unwrap();
}
