//! `inferlint preemption`, `rate`, `series` and `explain`, run as a user runs them: the real
//! binary on the recorded evidence, its output and its exit status.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use inferlint_core::testkit::evidence;

struct Run {
    code: i32,
    stdout: String,
    stderr: String,
}

impl Run {
    fn lines(&self) -> Vec<&str> {
        self.stdout.lines().collect()
    }
}

fn inferlint(args: &[&str], env: &[(&str, &str)]) -> Run {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_inferlint"));
    cmd.args(args).env_remove("INFERLINT_ENGINE");
    for (k, v) in env {
        cmd.env(k, v);
    }
    let Output {
        status,
        stdout,
        stderr,
    } = cmd.output().expect("the binary runs");
    let run = Run {
        code: status.code().expect("exited, not killed"),
        stdout: String::from_utf8_lossy(&stdout).into_owned(),
        stderr: String::from_utf8_lossy(&stderr).into_owned(),
    };
    assert!(
        !run.stderr.contains("panicked"),
        "inferlint {args:?} panicked: {}",
        run.stderr
    );
    run
}

fn run(args: &[&str]) -> Run {
    inferlint(args, &[])
}

/// The evidence paths as strings, or None (test skipped) when the evidence is absent.
fn ev<const N: usize>(rels: [&str; N]) -> Option<[String; N]> {
    let mut out: [String; N] = std::array::from_fn(|_| String::new());
    for (i, rel) in rels.iter().enumerate() {
        out[i] = evidence(rel)?.display().to_string();
    }
    Some(out)
}

macro_rules! some_or_skip {
    ($e:expr) => {
        match $e {
            Some(v) => v,
            None => return,
        }
    };
}

// ---------------------------------------------------------------- preemption

#[test]
fn preemption_on_the_12_user_run_fails_with_60() {
    let [b, a] = some_or_skip!(ev([
        "vllm-0.28/metrics/preempted_before.prom",
        "vllm-0.28/metrics/preempted_after.prom"
    ]));
    let r = run(&["preemption", &b, &a]);
    assert_eq!(r.code, 1, "{}{}", r.stdout, r.stderr);
    assert_eq!(
        r.lines(),
        ["[ T1] TRIPWIRE-FAILED  60 preemptions during the run"]
    );
    let r = run(&["preemption", &a, &a]);
    assert_eq!(
        (r.code, r.stdout.as_str()),
        (0, "[ T1] PASS  no preemptions\n")
    );
    let r = run(&["preemption", &b, &a, "--json"]);
    assert_eq!(r.code, 1);
    let v: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
    assert_eq!(v[0]["tripwire"], "T1");
    assert_eq!(v[0]["status"], "fail");
    assert_eq!(v[0]["evidence"]["preemptions"], 60.0);
}

#[test]
fn preemption_on_sglang_and_tensorrt_llm() {
    let [b, a] = some_or_skip!(ev([
        "sglang-0.5/qwen3-8b/before.snapshot.json",
        "sglang-0.5/qwen3-8b/after.snapshot.json"
    ]));
    let r = run(&["preemption", &b, &a]);
    assert_eq!(
        (r.code, r.stdout.as_str()),
        (0, "[ T1] PASS  no retractions\n")
    );
    assert_eq!(r.stderr, "", "the snapshots name their engine: no note");

    let [b, a, log] = some_or_skip!(ev([
        "trtllm-1.3/qwen3-8b/before.snapshot.json",
        "trtllm-1.3/qwen3-8b/after.snapshot.json",
        "trtllm-1.3/qwen3-8b/boot.log"
    ]));
    let r = run(&["preemption", &b, &a]);
    assert_eq!(r.code, 2);
    assert!(
        r.stdout
            .contains("server log saved until after the run is needed"),
        "{}",
        r.stdout
    );
    let r = run(&["preemption", &b, &a, "--boot-log", &log]);
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    assert_eq!(
        r.stdout,
        "[ T1] PASS  no pause in the server log, which covers 41 answered requests\n"
    );
}

// ---------------------------------------------------------------- rate

#[test]
fn rate_appends_the_integer_second_comparison_in_text_only() {
    let [b, a] = some_or_skip!(ev([
        "vllm-0.28/metrics/preempted_before.snapshot.json",
        "vllm-0.28/metrics/preempted_after.snapshot.json"
    ]));
    let r = run(&["rate", &b, &a]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(r.stdout.starts_with("[T10] PASS  "), "{}", r.stdout);
    assert!(r.stdout.contains("; an integer-second timer would say "));
    let r = run(&["rate", &b, &a, "--json"]);
    assert_eq!(r.code, 0);
    let v: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
    let msg = v[0]["message"].as_str().unwrap();
    assert!(
        msg.ends_with('s') && !msg.contains("integer-second"),
        "{msg}"
    );
    assert!(v[0]["evidence"]["integer_second_error"].is_number());
}

#[test]
fn rate_on_the_xray_run_prints_the_pinned_line() {
    let [b, a] = some_or_skip!(ev([
        "vllm-0.28/xray/before.snapshot.json",
        "vllm-0.28/xray/after.snapshot.json"
    ]));
    let r = run(&["rate", &b, &a]);
    assert_eq!(
        (r.code, r.stdout.as_str()),
        (
            0,
            "[T10] PASS  314.99 tokens/s over 101.590s; an integer-second timer would say 313.73 (-0.40%)\n"
        )
    );
}

#[test]
fn rate_on_bare_prometheus_text_cannot_tell() {
    let [b, a] = some_or_skip!(ev([
        "vllm-0.28/metrics/preempted_before.prom",
        "vllm-0.28/metrics/preempted_after.prom"
    ]));
    let r = run(&["rate", &b, &a]);
    assert_eq!(r.code, 2);
    assert_eq!(
        r.stdout,
        "[T10] ????  snapshots carry no clock (bare Prometheus text); no span available\n"
    );
    let r = run(&[
        "rate",
        &b,
        &a,
        "--counter",
        "vllm:prompt_tokens_total",
        "--json",
    ]);
    assert_eq!(r.code, 2);
}

// ---------------------------------------------------------------- series

#[test]
fn series_on_the_live_run_prints_t14_t9_t8_in_order() {
    let [s, snap] = some_or_skip!(ev([
        "vllm-0.28/live/run.series.jsonl",
        "vllm-0.28/live/after.snapshot.json"
    ]));
    let r = run(&["series", &s, "--snapshot", &snap, "--requested", "32"]);
    assert_eq!(r.code, 1);
    assert_eq!(
        r.lines(),
        [
            "[T14] PASS  gauge denominator is 42 = num_gpu_blocks (43) - 1 null block",
            "[ T9] WARN  ceiling moved between 7 and 10 as requests grew (one request held 9.5% to 14.3% of the cache); concurrency was not a constant of this run",
            "[ T8] TRIPWIRE-FAILED  requested 32 concurrent, server never ran more than 10",
        ]
    );
}

#[test]
fn series_on_the_ladder() {
    let [s, snap] = some_or_skip!(ev([
        "vllm-0.28/series/ladder.series.jsonl",
        "vllm-0.28/series/ladder_snapshot.prom"
    ]));
    let r = run(&["series", &s, "--snapshot", &snap, "--requested", "32"]);
    assert_eq!(r.code, 1);
    let lines = r.lines();
    assert_eq!(lines.len(), 3, "{}", r.stdout);
    assert!(lines[0].starts_with("[T14] PASS  gauge denominator is 52 = num_gpu_blocks (53)"));
    assert!(lines[1].starts_with("[ T9] PASS  "));
    assert!(lines[2].starts_with("[ T8] TRIPWIRE-FAILED  requested 32 concurrent"));
    let r = run(&["series", &s, "--snapshot", &snap, "--requested", "4"]);
    assert_eq!(r.code, 0, "{}", r.stdout);
    let r = run(&["series", &s, "--requested", "5", "--json"]);
    assert_eq!(r.code, 1);
    let v: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
    let ids: Vec<&str> = v
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x["tripwire"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["T9", "T8"], "no snapshot: no T14");
    // The old recording names no engine, and nothing else does.
    assert!(
        r.stderr
            .contains("does not say which engine it came from; read as vLLM's"),
        "{}",
        r.stderr
    );
    assert!(r.stderr.contains("ladder.series.jsonl"));
    let r = run(&["series", &s, "--requested", "5", "--engine", "vllm"]);
    assert_eq!(r.stderr, "");
}

#[test]
fn series_on_sglang_and_tensorrt_llm_says_t14_does_not_apply() {
    let [s] = some_or_skip!(ev(["sglang-0.5/qwen3-8b/run.series.jsonl"]));
    let r = run(&["series", &s, "--requested", "32"]);
    assert_eq!(r.code, 1);
    assert_eq!(
        r.lines()[0],
        "[T14] N/A  does not apply to SGLang: T14 is about vLLM's reserved null block"
    );
    assert!(r.stdout.contains("server never ran more than 29"));

    let [s, snap] = some_or_skip!(ev([
        "trtllm-1.3/qwen3-8b/run.series.jsonl",
        "trtllm-1.3/qwen3-8b/after.snapshot.json"
    ]));
    let r = run(&["series", &s, "--snapshot", &snap, "--requested", "32"]);
    assert_eq!(r.code, 0, "{}", r.stdout);
    let lines = r.lines();
    assert!(lines[0].starts_with("[T14] N/A  does not apply to TensorRT-LLM"));
    assert!(lines[1].contains("TensorRT-LLM updates its gauges only when a request completes"));
    assert_eq!(lines[2], "[ T8] PASS  reached 32 running (requested 32)");
}

// ---------------------------------------------------------------- engine naming

#[test]
fn another_engines_input_is_refused() {
    let [b, a] = some_or_skip!(ev([
        "vllm-0.28/metrics/preempted_before.prom",
        "vllm-0.28/metrics/preempted_after.prom"
    ]));
    let r = run(&["preemption", &b, &a, "--engine", "sglang"]);
    assert_eq!(r.code, 2);
    assert_eq!(r.stdout, "");
    assert_eq!(
        r.stderr,
        "inferlint: --engine sglang, but the snapshots came from vLLM. Check the server address or the file, or name the engine it came from.\n"
    );
    let r = inferlint(&["rate", &b, &a], &[("INFERLINT_ENGINE", "trtllm")]);
    assert_eq!(r.code, 2);
    assert_eq!(r.stdout, "");
    assert!(r
        .stderr
        .starts_with("inferlint: INFERLINT_ENGINE=trtllm, but the snapshots came from vLLM."));
    // --engine wins over the environment.
    let r = inferlint(
        &["preemption", &b, &a, "--engine", "vLLM"],
        &[("INFERLINT_ENGINE", "trtllm")],
    );
    assert_eq!(r.code, 1);
    let r = inferlint(&["preemption", &b, &a], &[("INFERLINT_ENGINE", "tgi")]);
    assert_eq!(r.code, 2);
    assert_eq!(
        r.stderr,
        "inferlint: INFERLINT_ENGINE='tgi' is not an engine (known: vllm, sglang, trtllm, llamacpp)\n"
    );
    let r = run(&["preemption", &b, &a, "--engine", "tgi"]);
    assert_eq!(r.code, 2);
    assert!(r
        .stderr
        .contains("unknown engine 'tgi' (known: vllm, sglang, trtllm, llamacpp)"));

    let [s] = some_or_skip!(ev(["sglang-0.5/qwen3-8b/run.series.jsonl"]));
    let r = run(&["series", &s, "--engine", "vllm"]);
    assert_eq!(r.code, 2);
    assert_eq!(r.stdout, "");
    assert_eq!(
        r.stderr,
        format!("inferlint: --engine vllm, but {s} came from SGLang. Check the server address or the file, or name the engine it came from.\n")
    );
}

// ---------------------------------------------------------------- explain

#[test]
fn explain_lists_all_fifteen() {
    let r = run(&["explain"]);
    assert_eq!(r.code, 0);
    for e in inferlint_core::catalogue::all() {
        let head = format!("{}  {}  ({})", e.id(), e.name, e.slug);
        assert!(r.stdout.lines().any(|l| l == head), "missing {head}");
        assert!(r.stdout.contains(&format!("    Check: {}\n", e.command)));
    }
    assert!(r.stdout.contains("verified on vLLM 0.28, 0.29 and 0.30"));
    assert!(r.stdout.contains("On SGLang: "));
    assert!(r.stdout.contains("On TensorRT-LLM: "));
}

#[test]
fn explain_by_code_or_slug() {
    let r = run(&["explain", "null-block"]);
    assert_eq!(r.code, 0);
    assert!(r
        .stdout
        .starts_with("T14  Reserved null block  (null-block)\n"));
    let r = run(&[
        "explain",
        "t1",
        "Concurrency-Not-Reached",
        "--engine",
        "trtllm",
    ]);
    assert_eq!(r.code, 0);
    assert!(r
        .stdout
        .starts_with("T1  Silent preemption  (silent-preemption)\n"));
    assert!(r
        .stdout
        .contains("\nT8  Concurrency not reached  (concurrency-not-reached)\n"));
    assert!(r.stdout.contains("On TensorRT-LLM: "));
    assert!(!r.stdout.contains("On SGLang: "));
    let r = inferlint(&["explain", "T8"], &[("INFERLINT_ENGINE", "vllm")]);
    assert!(!r.stdout.contains("On "), "{}", r.stdout);
    for id in ["T3", "T13"] {
        let r = run(&["explain", id]);
        assert!(
            r.stdout.contains("inferlint lint-script"),
            "{id}: {}",
            r.stdout
        );
    }
}

#[test]
fn explain_refuses_an_unknown_tripwire() {
    let r = run(&["explain", "T99"]);
    assert_eq!(r.code, 2);
    assert_eq!(r.stdout, "");
    assert_eq!(
        r.stderr,
        "inferlint: unknown tripwire: T99 (known: T1-T27, or a name such as silent-preemption)\n"
    );
}

// ---------------------------------------------------------------- bad input

fn write(dir: &Path, name: &str, bytes: &[u8]) -> String {
    let p: PathBuf = dir.join(name);
    std::fs::write(&p, bytes).unwrap();
    p.display().to_string()
}

#[test]
fn bad_snapshots_are_errors_naming_the_file() {
    let [good] = some_or_skip!(ev(["vllm-0.28/metrics/preempted_after.snapshot.json"]));
    let dir = tempfile::tempdir().unwrap();
    let text = std::fs::read(&good).unwrap();
    let cases = [
        write(
            dir.path(),
            "truncated.snapshot.json",
            &text[..text.len() / 2],
        ),
        write(dir.path(), "empty.snapshot.json", b""),
        write(
            dir.path(),
            "binary.snapshot.json",
            &[0x7f, b'E', b'L', b'F', 0, 1, 2, 0xff, 0xfe],
        ),
        write(
            dir.path(),
            "garbage.prom",
            b"vllm:num_preemptions_total 3\nthis is { not prometheus\n",
        ),
    ];
    for bad in &cases {
        for cmd in ["preemption", "rate"] {
            let r = run(&[cmd, &good, bad]);
            assert_eq!(r.code, 2, "{cmd} {bad}: {}", r.stdout);
            assert_eq!(r.stdout, "", "{cmd} {bad}");
            assert!(r.stderr.starts_with("inferlint: "), "{}", r.stderr);
            assert!(r.stderr.contains(bad.as_str()), "{cmd} {bad}: {}", r.stderr);
        }
    }
    let missing = dir.path().join("missing.json").display().to_string();
    let r = run(&["preemption", &good, &missing]);
    assert_eq!(r.code, 2);
    assert!(r.stderr.contains(&missing));
}

#[test]
fn bad_recordings_are_errors_naming_the_file() {
    let [good] = some_or_skip!(ev(["vllm-0.28/series/ladder.series.jsonl"]));
    let dir = tempfile::tempdir().unwrap();
    let text = std::fs::read_to_string(&good).unwrap();
    let mut lines: Vec<&str> = text.lines().collect();
    let mid = lines.len() / 2;
    lines[mid] = "{\"t_wall\": 1788682395.375, \"running\": ";
    let corrupt = write(
        dir.path(),
        "corrupt.series.jsonl",
        (lines.join("\n") + "\n").as_bytes(),
    );
    let r = run(&["series", &corrupt, "--requested", "4"]);
    assert_eq!(r.code, 2, "{}", r.stdout);
    assert_eq!(r.stdout, "");
    assert!(r.stderr.contains(&corrupt), "{}", r.stderr);
    assert!(
        r.stderr.contains(&format!("line {}", mid + 1)),
        "{}",
        r.stderr
    );

    // A killed recorder leaves a truncated last line: the recording still reads.
    let cut = &text[..text.len() - 40];
    let killed = write(dir.path(), "killed.series.jsonl", cut.as_bytes());
    let r = run(&["series", &killed, "--requested", "4", "--engine", "vllm"]);
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    assert!(r.stderr.contains("1 damaged line"), "{}", r.stderr);

    for (name, bytes) in [
        ("empty.series.jsonl", &b""[..]),
        ("binary.series.jsonl", &[0u8, 159, 146, 150, 0, 0][..]),
    ] {
        let bad = write(dir.path(), name, bytes);
        let r = run(&["series", &bad]);
        assert_eq!(r.code, 2, "{name}");
        assert_eq!(r.stdout, "");
        assert!(r.stderr.contains(&bad), "{name}: {}", r.stderr);
    }
}
