//! Every command's errors and notes say one cause once, in correct English: a file that cannot
//! be read is named once with the OS's reason once (exit 2), and the note for inputs that name no
//! engine agrees in number with what it is about.

use std::process::Command;

use inferlint_core::evidence_or_skip;

fn inferlint(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_inferlint"))
        .args(args)
        .env_remove("INFERLINT_ENGINE")
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8(out.stderr).unwrap(),
    )
}

#[test]
fn a_missing_file_is_named_once_with_its_reason_once() {
    let tmp = tempfile::tempdir().unwrap();
    let missing = tmp.path().join("gone.log");
    let m = missing.to_str().unwrap();
    let out = tmp.path().join("r.html");
    let o = out.to_str().unwrap();
    let series = evidence_or_skip!("vllm-0.28/live/run.series.jsonl");
    let series = series.to_str().unwrap();
    let reason = "No such file or directory (os error 2)";
    let boot = format!("inferlint: cannot read the boot log {m}: {reason}\n");
    let plain = format!("inferlint: {m}: {reason}\n");
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (vec!["boot-facts", m], &boot),
        (vec!["check-log", m], &boot),
        (
            vec!["series", series, "--boot-log", m, "--requested", "3"],
            &boot,
        ),
        (vec!["preemption", m, m], &plain),
        (vec!["rate", m, m], &plain),
        (vec!["series", m], &plain),
        (vec!["series", series, "--snapshot", m], &plain),
        (vec!["report", "--boot-log", m, "-o", o], &plain),
        (vec!["report", "--before", m, "--after", m, "-o", o], &plain),
        (vec!["report", "--series", m, "-o", o], &plain),
        (
            vec!["report", "--series", series, "--bench-result", m, "-o", o],
            &plain,
        ),
        (vec!["lint-script", m], &plain),
    ];
    for (args, want) in cases {
        let (code, _, stderr) = inferlint(&args);
        assert_eq!(code, 2, "{args:?}: {stderr}");
        assert_eq!(stderr, want, "{args:?}");
        assert_eq!(stderr.matches("os error").count(), 1, "{args:?}: {stderr}");
    }
    assert!(!out.exists(), "no report from unreadable inputs");
}

#[test]
fn a_bad_file_says_its_line_once() {
    let tmp = tempfile::tempdir().unwrap();
    let bad = tmp.path().join("bad.prom");
    std::fs::write(&bad, "garbage\n").unwrap();
    let b = bad.to_str().unwrap();
    let (code, _, stderr) = inferlint(&["preemption", b, b]);
    assert_eq!(code, 2);
    assert_eq!(
        stderr,
        format!("inferlint: {b}: line 1: not a Prometheus sample: garbage\n")
    );
}

#[test]
fn the_engine_note_agrees_in_number() {
    let tmp = tempfile::tempdir().unwrap();
    // A boot log and snapshots in which nothing names an engine.
    let log = tmp.path().join("server.log");
    std::fs::write(&log, "starting\nlistening\n").unwrap();
    let l = log.to_str().unwrap();
    let snap = tmp.path().join("m.prom");
    std::fs::write(&snap, "process_cpu_seconds_total 1.0\n").unwrap();
    let s = snap.to_str().unwrap();
    let tail = "read as vLLM's (--engine or INFERLINT_ENGINE names it)";

    let out = tmp.path().join("r.html");
    let (_, _, stderr) = inferlint(&["report", "--boot-log", l, "-o", out.to_str().unwrap()]);
    assert!(
        stderr.contains(&format!(
            "note: the files do not say which engine they came from; {tail}"
        )),
        "{stderr}"
    );
    assert!(!stderr.contains("files does"), "{stderr}");

    let (_, _, stderr) = inferlint(&["preemption", s, s]);
    assert!(
        stderr.contains(&format!(
            "note: the snapshots do not say which engine they came from; {tail}"
        )),
        "{stderr}"
    );

    let (_, _, stderr) = inferlint(&["boot-facts", l]);
    assert!(
        stderr.contains(&format!(
            "note: {l} does not say which engine it came from; {tail}"
        )),
        "{stderr}"
    );
}
