//! Helpers for tests (and benches) that read the recorded evidence of real GPU runs.
//!
//! The evidence lives in the repository, in `tests/fixtures/` (Apache-2.0 recorded data, with its
//! LICENSE and NOTICE beside it), so a fresh clone runs every evidence test. `INFERLINT_EVIDENCE`
//! names another folder. When the folder is absent, the tests that need it skip with a message,
//! except under `CI=true` or `INFERLINT_REQUIRE_EVIDENCE=1`, where a skip is a failure (CI's
//! fresh-clone step sets the latter: see CONTRIBUTING.md).

use std::path::PathBuf;

/// The folder the evidence is read from: `INFERLINT_EVIDENCE`, else the repository's
/// `tests/fixtures`.
pub fn evidence_root() -> PathBuf {
    match std::env::var_os("INFERLINT_EVIDENCE") {
        Some(d) => PathBuf::from(d),
        None => repository().join("tests/fixtures"),
    }
}

/// The repository's root (this crate is `crates/core` in it).
fn repository() -> PathBuf {
    let core = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    core.ancestors().nth(2).unwrap_or(core).to_path_buf()
}

/// The text of one of the engines' format samples in `tests/engine-samples/`: synthetic files
/// whose format (names, labels, line prefixes, key order) is exact for the release they name
/// (their README says how each was made). They are committed with the tests, so a missing one
/// is a failure, never a skip.
pub fn engine_sample(name: &str) -> String {
    let p = engine_samples_dir().join(name);
    std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

/// The folder of the engines' format samples.
pub fn engine_samples_dir() -> PathBuf {
    repository().join("tests/engine-samples")
}

/// Whether a missing evidence folder must fail rather than skip.
pub fn evidence_required() -> bool {
    let set =
        |name: &str, yes: &[&str]| std::env::var(name).is_ok_and(|v| yes.contains(&v.as_str()));
    set("CI", &["true", "1"]) || set("INFERLINT_REQUIRE_EVIDENCE", &["1", "true", "yes"])
}

/// The evidence folder, or None when it is absent and not required. Panics when absent and
/// required (`CI=true`, `INFERLINT_REQUIRE_EVIDENCE=1`).
pub fn evidence_dir() -> Option<PathBuf> {
    let dir = evidence_root();
    if dir.is_dir() {
        return Some(dir);
    }
    if evidence_required() {
        panic!(
            "the recorded evidence is missing at {} (set INFERLINT_EVIDENCE); under CI=true or \
             INFERLINT_REQUIRE_EVIDENCE=1 a skipped evidence test is a failure",
            dir.display()
        );
    }
    eprintln!("skipping: no recorded evidence at {}", dir.display());
    None
}

/// A path inside the evidence folder, or None (test skipped) when the folder is absent and not
/// required. Panics when the folder exists but the file does not: a renamed fixture must not
/// pass silently.
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
/// evidence is absent and not required.
#[macro_export]
macro_rules! evidence_or_skip {
    ($rel:expr) => {
        match $crate::testkit::evidence($rel) {
            Some(p) => p,
            None => return,
        }
    };
}

/// A snapshot of bare `/metrics` text with no clock, for tests of counter checks.
#[allow(
    clippy::expect_used,
    reason = "test support: a test's own text that does not parse is the test's error"
)]
pub fn snapshot_from_prom(text: &str) -> crate::snapshot::Snapshot {
    crate::snapshot::Snapshot::from_text(text, "test.prom").expect("metrics text")
}
