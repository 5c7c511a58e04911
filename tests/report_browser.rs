//! The report in a real browser: Debian's headless Chromium, driven by playwright-core
//! (tests/browser/check.mjs). The page must load with no console error and no network request,
//! the keyboard must move a chart's cursor, and the theme switch must work and be remembered.
//!
//! Needs `chromium`, `node` and `npm ci --prefix tests/browser`. Without them the test is
//! skipped with a message, except under CI=true, where it fails.
//! `INFERLINT_UPDATE_SCREENSHOTS=1` writes docs/report-light.png and docs/report-dark.png.

use crate::report_support;

use std::path::{Path, PathBuf};
use std::process::Command;

use report_support::*;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Why the browser cannot run here, if it cannot.
fn missing_tools() -> Option<String> {
    let chromium = std::env::var("CHROMIUM").unwrap_or_else(|_| "/usr/bin/chromium".into());
    if !Path::new(&chromium).exists() {
        return Some(format!(
            "no Chromium at {chromium} (apt-get install chromium)"
        ));
    }
    if Command::new("node").arg("--version").output().is_err() {
        return Some("no node (apt-get install nodejs)".into());
    }
    if !root()
        .join("tests/browser/node_modules/playwright-core")
        .is_dir()
    {
        return Some("no playwright-core (npm ci --prefix tests/browser)".into());
    }
    None
}

/// Returns false (after saying why) when the test must be skipped; panics under CI=true.
fn browser_available() -> bool {
    match missing_tools() {
        None => true,
        Some(why) if std::env::var("CI").is_ok_and(|v| v == "true") => {
            panic!("the browser test cannot run under CI=true: {why}")
        }
        Some(why) => {
            eprintln!("skipping the browser test: {why}");
            false
        }
    }
}

/// Runs check.mjs on a page; returns its exit code and its JSON report.
fn check(page: &Path, shots: Option<&Path>) -> (i32, serde_json::Value) {
    let mut cmd = Command::new("node");
    cmd.arg(root().join("tests/browser/check.mjs")).arg(page);
    if let Some(dir) = shots {
        cmd.arg(dir);
    }
    let out = cmd.output().expect("node runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let v: serde_json::Value = serde_json::from_str(&stdout).unwrap_or_else(|_| {
        panic!(
            "check.mjs said: {stdout}\n{}",
            String::from_utf8_lossy(&out.stderr)
        )
    });
    (out.status.code().unwrap_or(-1), v)
}

#[test]
fn the_live_report_works_in_a_browser() {
    if !browser_available() {
        return;
    }
    let Some(mut inputs) = inputs("vllm-0.28/live") else {
        return;
    };
    inputs.requested = Some(32);
    let tmp = tempfile::tempdir().unwrap();
    let page = tmp.path().join("report.html");
    build(inputs).write(&page).unwrap();
    let shots = if std::env::var("INFERLINT_UPDATE_SCREENSHOTS").is_ok_and(|v| v == "1") {
        root().join("docs")
    } else {
        tmp.path().to_path_buf()
    };
    let (code, v) = check(&page, Some(&shots));
    assert_eq!(code, 0, "{v:#}");
    assert_eq!(v["ok"], true);
    for name in [
        "ArrowRight steps one reading",
        "no network request",
        "no console error",
        "the choice survives a reload",
    ] {
        assert_eq!(v["checks"][name], true, "{name}: {v:#}");
    }
    for f in ["report-light.png", "report-dark.png"] {
        assert!(shots.join(f).metadata().unwrap().len() > 10_000, "{f}");
    }
}

#[test]
fn a_thinned_day_long_chart_works_in_a_browser() {
    if !browser_available() {
        return;
    }
    let Some(mut inputs) = inputs("vllm-0.28/live") else {
        return;
    };
    inputs.requested = Some(32);
    let series = inputs.series.take().unwrap();
    inputs.series = Some(long::stretch(&series, 345_600));
    let tmp = tempfile::tempdir().unwrap();
    let page = tmp.path().join("day.html");
    build(inputs).write(&page).unwrap();
    let (code, v) = check(&page, None);
    assert_eq!(code, 0, "{v:#}");
}

#[test]
fn the_browser_check_fails_on_a_page_that_fetches() {
    if !browser_available() {
        return;
    }
    let Some(mut inputs) = inputs("vllm-0.28/live") else {
        return;
    };
    inputs.requested = Some(32);
    let html = build(inputs).render_page();
    // Without the CSP, an image from elsewhere would be fetched: the check must catch it.
    let csp_start = html
        .find("<meta http-equiv=\"Content-Security-Policy\"")
        .unwrap();
    let csp_end = csp_start + html[csp_start..].find('>').unwrap() + 1;
    let mut bad = format!("{}{}", &html[..csp_start], &html[csp_end..]);
    let body = bad.find("<body>").unwrap() + "<body>".len();
    bad.insert_str(body, "<img src=\"http://127.0.0.1:9/pixel.png\" alt=\"\">");
    let tmp = tempfile::tempdir().unwrap();
    let page = tmp.path().join("bad.html");
    std::fs::write(&page, bad).unwrap();
    let (code, v) = check(&page, None);
    assert_eq!(code, 1, "{v:#}");
    assert_ne!(v["checks"]["no network request"], true, "{v:#}");
}

use crate::report_support::long;
