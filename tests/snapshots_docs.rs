//! docs/example-report.html is the report of the recorded live run, made as a user makes it:
//! tests/fixtures/vllm-0.28/live copied to a folder named `run`, then
//! `inferlint report run --requested 32 -o example-report.html` in the folder above it. This test
//! makes it again and fails when the committed page is stale (anything but the footer's time of
//! writing differs). `INFERLINT_BLESS=1 cargo test --test snapshots_docs` rewrites it.
//!
//! docs/report-light.png and docs/report-dark.png are taken by the browser test:
//! `INFERLINT_UPDATE_SCREENSHOTS=1 cargo test --test report_browser the_live_report` (needs
//! Chromium, see tests/report_browser.rs). They are not compared here: their pixels follow the
//! Chromium build and the fonts installed, not only inferlint's output.

mod snapshots_support;

use std::path::PathBuf;

use snapshots_support::{page_for_review, run_in};

fn blessing() -> bool {
    std::env::var("INFERLINT_BLESS").is_ok_and(|v| v == "1")
}

#[test]
fn the_example_report_is_current() {
    let [live] = fixtures_or_skip!(["vllm-0.28/live"]);
    let tmp = tempfile::tempdir().unwrap();
    let run = tmp.path().join("run");
    std::fs::create_dir(&run).unwrap();
    for entry in std::fs::read_dir(&live).unwrap() {
        let entry = entry.unwrap();
        std::fs::copy(entry.path(), run.join(entry.file_name())).unwrap();
    }
    let ran = run_in(
        Some(tmp.path()),
        &[
            "report",
            "run",
            "--requested",
            "32",
            "-o",
            "example-report.html",
        ],
    );
    assert_eq!(ran.stderr, "", "exit {}: {}", ran.code, ran.stdout);
    let fresh = std::fs::read_to_string(tmp.path().join("example-report.html")).unwrap();

    let committed_path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("docs/example-report.html");
    let committed = std::fs::read_to_string(&committed_path).unwrap_or_default();
    let (fresh_lines, committed_lines) = (page_for_review(&fresh), page_for_review(&committed));
    if fresh_lines == committed_lines {
        return;
    }
    if blessing() {
        std::fs::write(&committed_path, &fresh).unwrap();
        eprintln!("rewrote {}", committed_path.display());
        return;
    }
    let (n, (want, got)) = fresh_lines
        .lines()
        .zip(committed_lines.lines())
        .enumerate()
        .find(|(_, (a, b))| a != b)
        .unwrap_or((
            fresh_lines
                .lines()
                .count()
                .min(committed_lines.lines().count()),
            ("(one page ends here)", "(one page ends here)"),
        ));
    panic!(
        "docs/example-report.html is stale: it is not what `inferlint report` writes for the \
         recorded live run today. First difference, at tag {}:\n  committed: {got}\n  today:     \
         {want}\nINFERLINT_BLESS=1 cargo test --test snapshots_docs rewrites it.",
        n + 1
    );
}
