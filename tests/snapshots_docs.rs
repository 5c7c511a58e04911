//! docs/example-report.html is the report of the recorded live run, made as a user makes it:
//! tests/fixtures/vllm-0.28/live copied to a folder named `run`, then
//! `inferlint report run --requested 32 -o example-report.html` in the folder above it. This test
//! makes it again and fails when the committed page is stale (anything but the footer's time of
//! writing differs). `INFERLINT_BLESS=1 cargo test --test snapshots snapshots_docs::` rewrites it.
//!
//! docs/report-light.png and docs/report-dark.png are screenshots of that page, taken by the
//! browser test's script (tests/browser/check.mjs, Debian's Chromium; see tests/report_browser.rs
//! for what it needs): `cargo test --test snapshots snapshots_docs:: -- --ignored` takes them again. On one
//! machine they come out the same byte for byte (the test checks it), but their pixels follow
//! the Chromium build and the fonts installed, not only inferlint's output, so no test fails on
//! them being stale: a Debian update of Chromium would fail every CI run.

use crate::snapshots_support;

use std::path::{Path, PathBuf};
use std::process::Command;

use snapshots_support::{page_for_review, run_in};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

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

    let committed_path = root().join("docs/example-report.html");
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
         {want}\nINFERLINT_BLESS=1 cargo test --test snapshots snapshots_docs:: rewrites it.",
        n + 1
    );
}

/// Takes the light and dark screenshots of `page` into `dir` with the browser test's script.
fn screenshots(page: &Path, dir: &Path) {
    let chromium = std::env::var("CHROMIUM").unwrap_or_else(|_| "/usr/bin/chromium".into());
    assert!(
        Path::new(&chromium).exists(),
        "no Chromium at {chromium} (apt-get install chromium)"
    );
    assert!(
        root()
            .join("tests/browser/node_modules/playwright-core")
            .is_dir(),
        "no playwright-core (npm ci --prefix tests/browser, or bash .ci/install.sh)"
    );
    let out = Command::new("node")
        .arg(root().join("tests/browser/check.mjs"))
        .arg(page)
        .arg(dir)
        .output()
        .expect("node runs");
    assert!(
        out.status.success(),
        "check.mjs: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
#[ignore = "rewrites docs/report-light.png and docs/report-dark.png; needs Chromium and playwright-core"]
fn take_the_screenshots_of_the_example_report() {
    let page = root().join("docs/example-report.html");
    let tmp = tempfile::tempdir().unwrap();
    let (first, second) = (tmp.path().join("1"), tmp.path().join("2"));
    for dir in [&first, &second] {
        std::fs::create_dir(dir).unwrap();
        screenshots(&page, dir);
    }
    for name in ["report-light.png", "report-dark.png"] {
        let shot = std::fs::read(first.join(name)).unwrap();
        assert!(shot.len() > 10_000, "{name}: {} bytes", shot.len());
        assert!(
            shot == std::fs::read(second.join(name)).unwrap(),
            "{name}: two screenshots of the same page differ; the page or the browser is not \
             deterministic"
        );
        std::fs::write(root().join("docs").join(name), shot).unwrap();
    }
}
