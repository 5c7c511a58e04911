//! Test-only: the names the crate's test programs and tests run under (a product gives its
//! own), shared by `#[path]` inclusion.

#![allow(dead_code)]

use inferlint_supervisor::Names;

/// The marker variable of the test runs.
pub const MARKER_ENV: &str = "SUPERVISOR_TEST_RUN_ID";
/// Set (to anything but `0`) in a test program's environment: pidfds off.
pub const NO_PIDFD_ENV: &str = "SUPERVISOR_TEST_NO_PIDFD";

pub fn names() -> Names {
    Names {
        marker_env: MARKER_ENV.into(),
        owners_env: "SUPERVISOR_TEST_RUN_OWNERS".into(),
        cgroup_prefix: "supervisor-test-".into(),
        shepherd_title: "test-shepherd".into(),
    }
}

/// Switches pidfds off when [`NO_PIDFD_ENV`] says so.
pub fn honour_no_pidfd_env() {
    if std::env::var_os(NO_PIDFD_ENV).is_some_and(|v| !v.is_empty() && v != "0") {
        inferlint_supervisor::pidfd::switch_off();
    }
}
