//! `inferlint report` on the command line: finding a run's files, its errors, never
//! overwriting an input, hostile input, reading a page back, and comparing runs.

use crate::report_support;

use std::process::Command;

use report_support::*;

fn report(args: &[&std::ffi::OsStr]) -> (i32, String, String) {
    let out = Command::new(bin())
        .arg("report")
        .args(args)
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

macro_rules! args {
    ($($a:expr),* $(,)?) => { &[$(std::ffi::OsStr::new($a)),*] };
}

#[test]
fn usage_errors_exit_2_with_the_spec_messages() {
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("x.txt");
    std::fs::write(&file, "x").unwrap();
    let (code, out, err) = report(args![&file]);
    assert_eq!((code, out.as_str()), (2, ""));
    assert_eq!(
        err.trim(),
        format!("inferlint: {} is not a folder", file.display())
    );
    let (code, _, err) = report(args![]);
    assert_eq!(code, 2);
    assert_eq!(
        err.trim(),
        "inferlint: give a run folder, or -o and the files to read"
    );
    let empty = tmp.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    let (code, _, err) = report(args![&empty]);
    assert_eq!(code, 2);
    assert_eq!(
        err.trim(),
        format!(
            "inferlint: no run files in {} (boot.log, *.snapshot.json, *.series.jsonl)",
            empty.display()
        )
    );
    let (code, _, err) = report(args![&empty, "--engine", "tgi"]);
    assert_eq!(code, 2);
    assert!(err.contains("unknown engine 'tgi' (known: vllm, sglang, trtllm, llamacpp)"));
}

#[test]
fn a_report_from_a_boot_log_alone() {
    let Some(log) = inferlint_core::testkit::evidence("vllm-0.28/boot_cudagraphs.log") else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("sub/dir/r.html");
    let (code, stdout, err) = report(args!["-o", &out, "--boot-log", &log]);
    assert_eq!(code, 0, "{stdout}{err}");
    assert!(stdout.contains("[T12] PASS"));
    let html = std::fs::read_to_string(&out).unwrap();
    assert!(html.len() > 10_000, "{}", html.len());
    check_balanced(&html).unwrap();
    assert_offline(&html);
    assert!(html.contains("id=\"h-server\""));
    assert!(
        !html.contains("id=\"h-did\""),
        "no charts without a recording"
    );
}

#[test]
fn the_report_never_overwrites_an_input() {
    let Some((_tmp, run)) = copy_run("vllm-0.28/live") else {
        return;
    };
    let log = run.join("boot.log");
    let before = std::fs::read(&log).unwrap();
    let (code, _, err) = report(args![&run, "-o", &log]);
    assert_eq!(code, 2);
    assert!(err.contains("is one of the report's input files"), "{err}");
    assert_eq!(std::fs::read(&log).unwrap(), before);
}

#[test]
fn a_named_engine_refuses_another_engines_files() {
    let Some((_tmp, run)) = copy_run("vllm-0.28/live") else {
        return;
    };
    let (code, out, err) = report(args![&run, "--engine", "sglang"]);
    assert_eq!((code, out.as_str()), (2, ""));
    assert!(err.starts_with("inferlint: --engine sglang, but "), "{err}");
    assert!(err.contains("came from vLLM. Check the server address or the file"));
    assert!(!run.join("report.html").exists());
}

#[test]
fn hostile_names_and_lines_stay_text() {
    let Some((_tmp, run)) = copy_run("vllm-0.28/live") else {
        return;
    };
    let evil = "</script><img src=x onerror=alert(1)>";
    // A model name and a log line carrying markup, and a file name carrying it too.
    let log = std::fs::read_to_string(run.join("boot.log")).unwrap();
    let log = log.replace("Qwen3.8-27B-W4A16-AutoRound", &format!("Qwen{evil}"));
    let log = format!("{log}\nERROR 09-26 17:53:00 [x.py:1] {evil}\n");
    std::fs::remove_file(run.join("boot.log")).unwrap();
    let log_name = format!("boot{}.log", "<b>&x");
    std::fs::write(run.join(&log_name), log).unwrap();
    let (code, stdout, err) = report(args![&run, "--requested", "32", "--title", evil]);
    assert_eq!(code, 0, "{stdout}{err}");
    let html = std::fs::read_to_string(run.join("report.html")).unwrap();
    assert!(!html.contains("<img"), "markup leaked");
    assert!(!html.contains("<b>&x"));
    assert!(html.contains("&lt;/script&gt;&lt;img src=x onerror=alert(1)&gt;"));
    assert!(html.contains("boot&lt;b&gt;&amp;x.log"));
    // The embedded data keeps them as data, escaped for the script element.
    assert!(html.contains("\\u003c/script\\u003e\\u003cimg"));
    assert_eq!(
        html.matches("</script>").count(),
        html.matches("<script").count()
    );
    check_balanced(&html).unwrap();
    let back = inferlint_report::embed::read_back(&html, "r").unwrap();
    assert_eq!(back.title, evil);
}

#[test]
fn from_html_reads_the_results_back() {
    let Some((_tmp, run)) = copy_run("vllm-0.28/live") else {
        return;
    };
    let (code, first, _) = report(args![&run, "--requested", "32", "--json"]);
    assert_eq!(code, 0);
    let page = run.join("report.html");
    let (code, back, err) = report(args!["--from-html", &page, "--json"]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(
        back, first,
        "the page gives back the results it was written with"
    );
    let (code, text, _) = report(args!["--from-html", &page]);
    assert_eq!(code, 0);
    assert!(text.starts_with("vLLM 0.28.0 run\n"));
    assert!(text.contains("[ T1] TRIPWIRE-FAILED  22 preemptions during the run"));
    assert!(text
        .trim_end()
        .ends_with("10 checks (6 pass, 2 warn, 2 tripwire-failed)"));
    let not_ours = run.join("other.html");
    std::fs::write(&not_ours, "<html><body>hello</body></html>").unwrap();
    let (code, _, err) = report(args!["--from-html", &not_ours]);
    assert_eq!(code, 2);
    assert!(err.contains("no inferlint data in the page"), "{err}");
}

#[test]
fn compare_two_runs() {
    let (Some(a), Some(b)) = (
        inferlint_core::testkit::evidence("vllm-0.28/live"),
        inferlint_core::testkit::evidence("vllm-0.28/xray"),
    ) else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("cmp.html");
    let (code, stdout, err) = report(args!["--compare", &a, &b, "-o", &out, "--requested", "32"]);
    assert_eq!(code, 0, "{stdout}{err}");
    assert!(
        // T25 passes on its boot log's CUDA graphs (up to 64, 10 running at most).
        stdout.contains("live: 10 checks (6 pass, 2 warn, 2 tripwire-failed)"),
        "{stdout}"
    );
    assert!(stdout.contains("xray: "));
    // Same flags, same pool: T4 PASS across the two starts.
    assert!(
        stdout.contains("[ T4] PASS  same flags, same pool (26,093 tokens)"),
        "{stdout}"
    );
    let html = std::fs::read_to_string(&out).unwrap();
    check_balanced(&html).unwrap();
    assert_offline(&html);
    for s in [
        "Side by side",
        "Average running while busy",
        "22",
        "21",
        "341.4",
        "315.0",
        "26,093 tokens",
    ] {
        assert!(html.contains(s), "missing {s}");
    }
    assert!(html.contains("inferlint.compare/1"));
}

/// A run folder (`run.json` and `load.log`: its load was started) that lacks its after snapshot
/// (a run killed mid-load, a file deleted since): the checks that needed it are "can't tell",
/// as `run` records them, never left out. A folder of files that `run` did not write keeps the
/// rule of docs/design/report.md#finding-a-runs-files: the checks its files allow, and no others.
#[test]
fn a_run_folder_missing_its_after_snapshot_cannot_tell_what_it_needed() {
    let Some((_tmp, dir)) = copy_run("vllm-0.28/xray") else {
        return;
    };
    let line_of = |stdout: &str, t: &str| {
        stdout
            .lines()
            .find(|l| l.starts_with(&format!("[{t:>3}]")))
            .map(str::to_string)
    };
    std::fs::write(
        dir.join("run.json"),
        r#"{"schema": "inferlint.run/1", "state": "running"}"#,
    )
    .unwrap();
    std::fs::write(dir.join("load.log"), "").unwrap();

    // Whole, the folder's checks are all made.
    let (code, stdout, err) = report(args![&dir]);
    assert_eq!(code, 0, "{stdout}{err}");
    let t1 = line_of(&stdout, "T1").expect("T1 made from both snapshots");
    assert!(!t1.contains("????"), "{stdout}");

    std::fs::remove_file(dir.join("after.snapshot.json")).unwrap();
    std::fs::remove_file(dir.join("report.html")).unwrap();
    let (code, stdout, err) = report(args![&dir]);
    assert_eq!(code, 0, "{stdout}{err}");
    let why = "the run folder has no after snapshot (after.snapshot.json)";
    for (t, what) in [
        ("T1", "preemptions cannot be ruled out"),
        ("T10", "the token rate needs both snapshots"),
        (
            "T14",
            "the usage gauge's denominator cannot be compared with num_gpu_blocks",
        ),
        ("T15", "the server's request and token counts are unknown"),
    ] {
        assert_eq!(
            line_of(&stdout, t).as_deref(),
            Some(format!("[{t:>3}] ????  {why}; {what}").as_str()),
            "{stdout}"
        );
    }
    // The recording is there: T9 is still judged on it.
    assert!(
        line_of(&stdout, "T9").is_some_and(|l| !l.contains("????")),
        "{stdout}"
    );

    // Without run.json the folder is files the user gathered: T1 and T10 are left out.
    std::fs::remove_file(dir.join("run.json")).unwrap();
    std::fs::remove_file(dir.join("report.html")).unwrap();
    let (code, stdout, err) = report(args![&dir]);
    assert_eq!(code, 0, "{stdout}{err}");
    assert_eq!(line_of(&stdout, "T1"), None, "{stdout}");
    assert_eq!(line_of(&stdout, "T10"), None, "{stdout}");
}
