//! T14 on the real vLLM 0.32 lane's recording (docs/tripwires.md, T14): a pool of 5 blocks,
//! one of them the null block, gives at most 4 distinct usage readings, fewer than the 5 the
//! blind inference trusts. Readings that are multiples of 1/4 and not all of 1/5 already answer
//! T14's question, so the verdict is PASS; a reading that fits 1/5 only, or a block count that
//! the readings do not fit as R - 1, is no pass.

use std::path::Path;
use std::process::Command;

use inferlint_core::evidence_or_skip;

const LOG: &str = "vllm-0.32-cpu/boot-preempt-orphan.log";
const SNAPSHOT: &str = "vllm-0.32-cpu/metrics-preempt.prom";

/// The lane's recording, as `watch` would have written it: one sample per stats line of the
/// server's log (`Running: R reqs, Waiting: W reqs, CPU KV cache usage: P%`).
fn recording_from_log(log: &Path) -> Vec<(f64, f64, f64)> {
    let text = std::fs::read_to_string(log).unwrap();
    let re = regex::Regex::new(
        r"Running: (\d+) reqs, Waiting: (\d+) reqs, CPU KV cache usage: ([\d.]+)%",
    )
    .unwrap();
    let rows: Vec<(f64, f64, f64)> = re
        .captures_iter(&text)
        .map(|c| {
            (
                c[1].parse().unwrap(),
                c[2].parse().unwrap(),
                c[3].parse::<f64>().unwrap() / 100.0,
            )
        })
        .collect();
    assert!(
        rows.len() >= 10,
        "{} stats lines in {}",
        rows.len(),
        log.display()
    );
    rows
}

fn write_series(dir: &Path, rows: &[(f64, f64, f64)]) -> std::path::PathBuf {
    let mut text = String::from(
        r#"{"schema": "inferlint.series/1", "url": "http://127.0.0.1:8000", "interval_s": 10.0}"#,
    );
    text.push('\n');
    for (i, (running, waiting, usage)) in rows.iter().enumerate() {
        text.push_str(&format!(
            "{{\"t_wall\": {}, \"running\": {running:?}, \"waiting\": {waiting:?}, \"kv_usage\": {usage:?}}}\n",
            1_764_427_204.0 + 10.0 * i as f64
        ));
    }
    let p = dir.join("run.series.jsonl");
    std::fs::write(&p, text).unwrap();
    p
}

/// `inferlint series REC --snapshot SNAP --json`: T14's result.
fn t14(series: &Path, snapshot: &Path) -> serde_json::Value {
    let out = Command::new(env!("CARGO_BIN_EXE_inferlint"))
        .arg("series")
        .arg(series)
        .arg("--snapshot")
        .arg(snapshot)
        .arg("--json")
        .output()
        .unwrap();
    let stdout = String::from_utf8(out.stdout).unwrap();
    let results: serde_json::Value = serde_json::from_str(&stdout)
        .unwrap_or_else(|e| panic!("{e}: {stdout}{}", String::from_utf8_lossy(&out.stderr)));
    results
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["tripwire"] == "T14")
        .cloned()
        .unwrap_or_else(|| panic!("no T14 in {stdout}"))
}

#[test]
fn four_readings_of_five_blocks_show_the_null_block() {
    let log = evidence_or_skip!(LOG);
    let snap = evidence_or_skip!(SNAPSHOT);
    let tmp = tempfile::tempdir().unwrap();
    let rows = recording_from_log(&log);
    let rec = write_series(tmp.path(), &rows);
    let r = t14(&rec, &snap);
    assert_eq!(r["status"], "pass", "{r}");
    assert_eq!(
        r["message"],
        "gauge denominator is 4 = num_gpu_blocks (5) - 1 null block: each of the 3 distinct \
         readings is a multiple of 1/4, and 0.25 is not a multiple of 1/5"
    );
    assert_eq!(r["evidence"]["inferred_usable_blocks"], 4);
    assert_eq!(r["evidence"]["reported_num_gpu_blocks"], 5);
    assert_eq!(r["evidence"]["distinct_readings"], 3);

    // The printed line, and T9 computing its ceilings in the 4 usable blocks the pass found.
    let out = Command::new(env!("CARGO_BIN_EXE_inferlint"))
        .arg("series")
        .arg(&rec)
        .arg("--snapshot")
        .arg(&snap)
        .output()
        .unwrap();
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert!(
        stdout.starts_with(
            "[T14] PASS  gauge denominator is 4 = num_gpu_blocks (5) - 1 null block: "
        ),
        "{stdout}"
    );
    assert!(stdout.contains("[ T9] "), "{stdout}");
}

#[test]
fn a_reading_that_fits_five_blocks_only_is_no_pass() {
    let log = evidence_or_skip!(LOG);
    let snap = evidence_or_skip!(SNAPSHOT);
    let tmp = tempfile::tempdir().unwrap();
    // One reading changed from 1/4 to 2/5: a multiple of 1/5 and not of 1/4.
    let mut rows = recording_from_log(&log);
    let i = rows
        .iter()
        .position(|r| r.2 == 0.25)
        .expect("a 25% reading");
    rows[i].2 = 0.4;
    let r = t14(&write_series(tmp.path(), &rows), &snap);
    assert_eq!(r["status"], "unknown", "{r}");
    assert_eq!(
        r["message"],
        "block count not inferable: only 3 distinct readings; a divisor of N could fit by luck"
    );
}

#[test]
fn readings_that_do_not_fit_one_block_fewer_than_reported_are_no_pass() {
    let log = evidence_or_skip!(LOG);
    let snap = evidence_or_skip!(SNAPSHOT);
    let tmp = tempfile::tempdir().unwrap();
    let rec = write_series(tmp.path(), &recording_from_log(&log));
    // The same readings against a server that reports 4 blocks (or 6): R - 1 is 3 (or 5), which
    // the readings do not fit.
    let text = std::fs::read_to_string(&snap).unwrap();
    assert!(text.contains("num_gpu_blocks=\"5\""));
    for blocks in ["4", "6"] {
        let other = tmp.path().join(format!("blocks-{blocks}.prom"));
        std::fs::write(
            &other,
            text.replace(
                "num_gpu_blocks=\"5\"",
                &format!("num_gpu_blocks=\"{blocks}\""),
            ),
        )
        .unwrap();
        let r = t14(&rec, &other);
        assert_eq!(r["status"], "unknown", "{blocks}: {r}");
        assert_eq!(r["evidence"]["inferred_usable_blocks"], 4);
    }
}
