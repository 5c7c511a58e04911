//! The recorded evidence lives in the repository (`tests/fixtures/`) and the tests find it there:
//! a fresh clone runs every evidence test. A missing evidence folder skips with a message, and
//! fails under `INFERLINT_REQUIRE_EVIDENCE=1` (or `CI=true`), which CI's fresh-clone step sets.

use std::path::{Path, PathBuf};
use std::process::Command;

use inferlint_core::evidence_or_skip;
use inferlint_core::testkit::evidence_root;

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
}

#[test]
fn the_evidence_is_in_the_repository_with_its_licence() {
    if std::env::var_os("INFERLINT_EVIDENCE").is_none() {
        assert_eq!(evidence_root(), fixtures());
    }
    let dir = fixtures();
    for f in ["LICENSE", "NOTICE", "README.md"] {
        assert!(dir.join(f).is_file(), "tests/fixtures/{f}");
    }
    let licence = std::fs::read_to_string(dir.join("LICENSE")).unwrap();
    assert!(licence.contains("Apache License"), "tests/fixtures/LICENSE");
    // Every engine's runs, and the data-parallel and tensor-parallel runs added last.
    for rel in [
        "vllm-0.28/live/run.series.jsonl",
        "vllm-0.30/capped/boot.log",
        "vllm-0.32-cpu/metrics-preempt.prom",
        "vllm-0.32-cpu/dp2/after.prom",
        "vllm-0.32-cpu/tp3/boot.log",
        "sglang-0.5/live/bench.json",
        "trtllm-1.3/qwen3-8b/after.snapshot.json",
        "nvidia-smi/SOURCES.md",
    ] {
        assert!(dir.join(rel).is_file(), "tests/fixtures/{rel}");
    }
}

/// Every file under tests/fixtures is committed: a fixture left untracked would pass here and
/// be missing from every clone. (Outside a git checkout, e.g. a source tarball, there is
/// nothing to compare with.)
#[test]
fn every_fixture_is_committed() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let out = Command::new("git")
        .args([
            "ls-files",
            "--others",
            "--exclude-standard",
            "--",
            "tests/fixtures",
        ])
        .current_dir(root)
        .output();
    let Some(out) = out.ok().filter(|o| o.status.success()) else {
        eprintln!("skipping: not a git checkout");
        return;
    };
    let untracked = String::from_utf8_lossy(&out.stdout);
    assert!(
        untracked.trim().is_empty(),
        "untracked fixtures (git add them):\n{untracked}"
    );
    let ignored = Command::new("git")
        .args([
            "ls-files",
            "--others",
            "--ignored",
            "--exclude-standard",
            "--",
            "tests/fixtures",
        ])
        .current_dir(root)
        .output()
        .unwrap();
    let ignored = String::from_utf8_lossy(&ignored.stdout);
    assert!(ignored.trim().is_empty(), "ignored fixtures:\n{ignored}");
}

/// Reads one evidence file through the helper; the parent test runs it in a child process with
/// the evidence folder moved away.
#[test]
fn probe_reads_one_evidence_file() {
    let p = evidence_or_skip!("vllm-0.28/live/boot.log");
    assert!(std::fs::metadata(p).unwrap().len() > 1000);
}

fn probe_with(evidence: &Path, require: Option<&str>) -> (bool, String) {
    let mut cmd = Command::new(std::env::current_exe().unwrap());
    cmd.args([
        "--exact",
        "evidence_home::probe_reads_one_evidence_file",
        "--nocapture",
    ])
    .env("INFERLINT_EVIDENCE", evidence)
    .env_remove("CI")
    .env_remove("INFERLINT_REQUIRE_EVIDENCE");
    if let Some(v) = require {
        cmd.env("INFERLINT_REQUIRE_EVIDENCE", v);
    }
    let out = cmd.output().unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.success(), text)
}

#[test]
fn missing_evidence_skips_unless_required() {
    let tmp = tempfile::tempdir().unwrap();
    let gone = tmp.path().join("no-evidence-here");
    // Outside CI, a missing folder is a skip with a message.
    let (ok, text) = probe_with(&gone, None);
    assert!(ok, "{text}");
    assert!(text.contains("skipping: no recorded evidence at"), "{text}");
    // Required, the same skip fails and says why.
    let (ok, text) = probe_with(&gone, Some("1"));
    assert!(!ok, "{text}");
    assert!(text.contains("INFERLINT_REQUIRE_EVIDENCE=1"), "{text}");
    // Required and present: the test runs and passes.
    let (ok, text) = probe_with(&fixtures(), Some("1"));
    assert!(ok, "{text}");
    assert!(!text.contains("skipping"), "{text}");
}

/// The test binaries were built from the tree they run in: cargo sets `CARGO_MANIFEST_DIR` when
/// it runs a test, and it must be the folder the binary was compiled from (where the evidence
/// helper looks). A build reused from another checkout (a shared target folder) would read that
/// checkout's fixtures, and the fresh-clone step would prove nothing.
#[test]
fn the_tests_run_where_they_were_built() {
    let Some(run_dir) = std::env::var_os("CARGO_MANIFEST_DIR") else {
        eprintln!("skipping: not run by cargo");
        return;
    };
    let canon =
        |p: &Path| std::fs::canonicalize(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
    assert_eq!(
        canon(Path::new(&run_dir)),
        canon(Path::new(env!("CARGO_MANIFEST_DIR"))),
        "these tests were built in another tree than the one they run in"
    );
}
