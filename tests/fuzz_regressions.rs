//! The fuzz targets' checks under plain `cargo test`, without libFuzzer: every input of the
//! in-repository corpora (fuzz/corpus/<target>/), every minimized crash kept under
//! fuzz/regressions/<target>/, and every recorded evidence file of the matching kind go through
//! the same function the fuzzer calls (fuzz/src/lib.rs). A reader that panics, or breaks one of
//! the properties there, fails here with the file named.

#[path = "../fuzz/src/lib.rs"]
#[allow(dead_code)]
mod bodies;

use std::path::{Path, PathBuf};

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

fn files_in(dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut files: Vec<PathBuf> = entries
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_file())
        .collect();
    files.sort();
    files
}

/// Runs `body` on every file, and names the files that failed.
fn replay(target: &str, body: fn(&[u8]), files: &[PathBuf]) -> usize {
    let mut failed = Vec::new();
    for f in files {
        let data = std::fs::read(f).unwrap();
        if std::panic::catch_unwind(|| body(&data)).is_err() {
            failed.push(f.display().to_string());
        }
    }
    assert!(
        failed.is_empty(),
        "{target} fails on {} input(s):\n{}",
        failed.len(),
        failed.join("\n")
    );
    files.len()
}

fn body_of(target: &str) -> fn(&[u8]) {
    bodies::TARGETS
        .iter()
        .find(|(name, _)| *name == target)
        .unwrap()
        .1
}

/// The corpus and the saved regressions of one target.
fn replay_in_repo(target: &str) {
    let root = Path::new(ROOT).join("fuzz");
    let mut files = files_in(&root.join("corpus").join(target));
    assert!(!files.is_empty(), "fuzz/corpus/{target} is empty");
    files.extend(files_in(&root.join("regressions").join(target)));
    replay(target, body_of(target), &files);
}

#[test]
fn prom_parse_corpus_and_regressions() {
    replay_in_repo("prom_parse");
}

#[test]
fn snapshot_read_corpus_and_regressions() {
    replay_in_repo("snapshot_read");
}

#[test]
fn series_read_corpus_and_regressions() {
    replay_in_repo("series_read");
}

#[test]
fn bench_read_corpus_and_regressions() {
    replay_in_repo("bench_read");
}

#[test]
fn bootlog_feed_corpus_and_regressions() {
    replay_in_repo("bootlog_feed");
}

/// Every evidence file under `dir` whose name matches.
fn evidence_files(dir: &Path, matches: &dyn Fn(&str) -> bool, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            evidence_files(&p, matches, out);
        } else if p.file_name().and_then(|n| n.to_str()).is_some_and(matches) {
            out.push(p);
        }
    }
}

/// The recorded evidence of real GPU runs, each file through the target of its kind (as
/// `.ci/fuzz.sh` gives it to libFuzzer as an extra corpus).
#[test]
fn recorded_evidence_passes_every_target() {
    let Some(dir) = inferlint_core::testkit::evidence_dir() else {
        return;
    };
    type Kind = (&'static str, fn(&str) -> bool);
    let kinds: [Kind; 5] = [
        ("prom_parse", |n| n.ends_with(".prom")),
        ("snapshot_read", |n| {
            n.ends_with(".snapshot.json") || n.ends_with(".prom")
        }),
        ("series_read", |n| n.ends_with(".series.jsonl")),
        ("bench_read", |n| {
            n.starts_with("bench") && n.contains(".json") || n.ends_with("result.json")
        }),
        // The first byte of a bootlog_feed input is its control byte; 0 means no engine hint.
        ("bootlog_feed", |n| n.ends_with(".log")),
    ];
    let mut total = 0;
    for (target, matches) in kinds {
        let mut files = Vec::new();
        evidence_files(&dir, &matches, &mut files);
        files.sort();
        assert!(!files.is_empty(), "no evidence for {target}");
        if target == "bootlog_feed" {
            let mut failed = Vec::new();
            for f in &files {
                let mut data = vec![0u8];
                data.extend(std::fs::read(f).unwrap());
                if std::panic::catch_unwind(|| bodies::bootlog_feed(&data)).is_err() {
                    failed.push(f.display().to_string());
                }
            }
            assert!(
                failed.is_empty(),
                "bootlog_feed fails on:\n{}",
                failed.join("\n")
            );
            total += files.len();
        } else {
            total += replay(target, body_of(target), &files);
        }
    }
    assert!(total > 50, "only {total} evidence files");
}
