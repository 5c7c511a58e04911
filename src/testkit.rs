//! Helpers for tests that read the recorded evidence in `../shared/fixtures`.
//!
//! The evidence is never copied into the project. `INFERLINT_EVIDENCE` names another folder.
//! Under `CI=true` a missing evidence folder is a failure, not a skip.

use std::path::PathBuf;

/// The evidence folder, or None when it is absent outside CI. Panics under `CI=true` when absent.
pub fn evidence_dir() -> Option<PathBuf> {
    let dir = match std::env::var_os("INFERLINT_EVIDENCE") {
        Some(d) => PathBuf::from(d),
        None => PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared/fixtures"),
    };
    if dir.is_dir() {
        return Some(dir);
    }
    if std::env::var("CI").is_ok_and(|v| v == "true") {
        panic!(
            "the recorded evidence is missing at {} (set INFERLINT_EVIDENCE); under CI=true this is a failure",
            dir.display()
        );
    }
    eprintln!("skipping: no recorded evidence at {}", dir.display());
    None
}

/// A path inside the evidence folder, or None (test skipped) when the folder is absent outside CI.
/// Panics when the folder exists but the file does not: a renamed fixture must not pass silently.
pub fn evidence(rel: &str) -> Option<PathBuf> {
    let p = evidence_dir()?.join(rel);
    assert!(p.exists(), "evidence file missing: {}", p.display());
    Some(p)
}

/// Reads an evidence file as text (lossily: some logs hold stray bytes).
pub fn evidence_text(rel: &str) -> Option<String> {
    let p = evidence(rel)?;
    let bytes = std::fs::read(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
    Some(String::from_utf8_lossy(&bytes).into_owned())
}

/// `let Some(path) = evidence_or_skip!("vllm-0.28/live/boot.log");` returns from the test when the
/// evidence is absent outside CI.
#[macro_export]
macro_rules! evidence_or_skip {
    ($rel:expr) => {
        match $crate::testkit::evidence($rel) {
            Some(p) => p,
            None => return,
        }
    };
}
