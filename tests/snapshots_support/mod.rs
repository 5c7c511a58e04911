//! Shared by the snapshot tests (tests/snapshots_*.rs): runs the real binary as a user runs it
//! and turns what it printed into one text for insta, with what varies between machines and runs
//! replaced by a placeholder. The snapshots live in tests/snapshots/; an output change shows there
//! in review.
//!
//! A changed output fails `cargo test`. Under `CI=true` insta writes nothing; elsewhere it leaves
//! a `.snap.new` beside the snapshot. To accept a change: `INSTA_UPDATE=always cargo test --test
//! snapshots_…` (or `cargo insta review` where cargo-insta is installed), then read the diff.

#![allow(dead_code)] // each test file uses its own part

use std::path::Path;
use std::process::Command;

use inferlint_core::testkit::{evidence, evidence_root};

/// The terminal width the help text is wrapped to: fixed, so the snapshot does not follow the
/// width of whoever runs the tests.
const COLUMNS: &str = "100";

/// A recorded file's absolute path, or None (test skipped) when the evidence is absent and not
/// required.
pub fn fx(rel: &str) -> Option<String> {
    Some(evidence(rel)?.display().to_string())
}

/// What one run of the binary printed and how it exited.
pub struct Ran {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

/// Runs `inferlint ARGS` in `dir` (or here) with no engine named by the environment and a
/// fixed terminal width.
pub fn run_in(dir: Option<&Path>, args: &[&str]) -> Ran {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_inferlint"));
    cmd.args(args)
        .env_remove("INFERLINT_ENGINE")
        .env("COLUMNS", COLUMNS)
        .env("NO_COLOR", "1");
    if let Some(dir) = dir {
        cmd.current_dir(dir);
    }
    let out = cmd.output().expect("the binary runs");
    let ran = Ran {
        code: out.status.code().expect("exited, not killed"),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    };
    assert!(
        !ran.stderr.contains("panicked"),
        "inferlint {args:?} panicked: {}",
        ran.stderr
    );
    ran
}

/// The text a snapshot holds: the command line, the exit status, then stdout and stderr.
pub fn transcript(args: &[&str], ran: &Ran) -> String {
    let mut text = format!("$ inferlint {}\nexit: {}\n", args.join(" "), ran.code);
    text.push_str("--- stdout\n");
    text.push_str(&ran.stdout);
    if !ran.stderr.is_empty() {
        text.push_str("--- stderr\n");
        text.push_str(&ran.stderr);
    }
    text
}

/// Runs the binary and returns its transcript.
pub fn cli(args: &[&str]) -> String {
    transcript(args, &run_in(None, args))
}

/// insta's settings for these tests: the evidence folder reads `tests/fixtures` wherever it is
/// (CI reads it from a fresh clone elsewhere), a temporary folder reads `[TMP]`, and the version
/// reads `[VERSION]` (a release must not rewrite every snapshot).
pub fn settings(tmp: Option<&Path>) -> insta::Settings {
    let mut s = insta::Settings::clone_current();
    s.set_prepend_module_to_snapshot(true);
    s.set_omit_expression(true);
    let root = evidence_root().display().to_string();
    s.add_filter(&regex::escape(&root), "tests/fixtures");
    if let Some(tmp) = tmp {
        s.add_filter(&regex::escape(&tmp.display().to_string()), "[TMP]");
    }
    s.add_filter(
        &format!(
            r"\binferlint {}\b",
            regex::escape(env!("CARGO_PKG_VERSION"))
        ),
        "inferlint [VERSION]",
    );
    s
}

/// `snap!(name, text)`: the text under tests/snapshots/ with the settings above.
#[macro_export]
macro_rules! snap {
    ($name:expr, $text:expr) => {
        $crate::snapshots_support::settings(None).bind(|| insta::assert_snapshot!($name, $text))
    };
    ($name:expr, $text:expr, tmp = $tmp:expr) => {
        $crate::snapshots_support::settings(Some($tmp))
            .bind(|| insta::assert_snapshot!($name, $text))
    };
}

/// `let [a, b] = fixtures_or_skip!(["x", "y"]);`: the files' paths, or return from the test
/// when the evidence is absent and not required.
#[macro_export]
macro_rules! fixtures_or_skip {
    ([$($rel:expr),+ $(,)?]) => {
        match (|| Some([$($crate::snapshots_support::fx($rel)?),+]))() {
            Some(v) => v,
            None => return,
        }
    };
}

/// A report page made reviewable and stable: one tag to a line (the page is written as one long
/// line), and the footer's local time of writing read as `[TIME]`, the only text of the page
/// that changes from one writing to the next.
pub fn page_for_review(html: &str) -> String {
    let stamp = regex::Regex::new(r"Generated \d{4}-\d\d-\d\d \d\d:\d\d UTC[+-]?[0-9:]* by")
        .expect("a valid pattern");
    let html = stamp.replace_all(html, "Generated [TIME] by");
    html.replace("><", ">\n<")
}
