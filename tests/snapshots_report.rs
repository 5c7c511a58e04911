//! One report page under snapshot: `inferlint report tests/fixtures/vllm-0.28/live -o …`, the
//! page itself (one tag to a line, the time of writing normalised) and what the command printed.

use crate::snapshots_support;

use snapshots_support::{cli, page_for_review};

#[test]
fn the_report_page_of_the_live_run() {
    let [live] = fixtures_or_skip!(["vllm-0.28/live"]);
    let tmp = tempfile::tempdir().unwrap();
    let page = tmp.path().join("report.html");
    let page_arg = page.display().to_string();
    snap!(
        "report_live_command",
        cli(&["report", &live, "-o", &page_arg]),
        tmp = tmp.path()
    );
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(
        html.contains("<footer>Generated "),
        "the footer's time of writing is what page_for_review replaces"
    );
    snap!("report_live_page", page_for_review(&html), tmp = tmp.path());
}
