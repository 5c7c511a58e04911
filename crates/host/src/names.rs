//! What inferlint's runs are called on a machine: the variables every process of a run carries
//! and the names [`inferlint_supervisor`] finds a run's processes by (docs/design/run.md).

use inferlint_supervisor::Names;

/// The variable every process of a run carries, its value the run id.
pub const RUN_ID_ENV: &str = "INFERLINT_RUN_ID";
/// The variable naming a run's owners (inferlint and its shepherd).
pub const OWNERS_ENV: &str = "INFERLINT_RUN_OWNERS";
/// Set (to anything but `0`), pidfds are not used: the `(pid, start time)` identity is (tests
/// of that fallback).
pub const NO_PIDFD_ENV: &str = "INFERLINT_NO_PIDFD";

/// What inferlint's runs are called on the system: the marker and owners variables, the
/// `inferlint-*` cgroups, the shepherd's title.
pub fn names() -> Names {
    Names {
        marker_env: RUN_ID_ENV.into(),
        owners_env: OWNERS_ENV.into(),
        cgroup_prefix: "inferlint-".into(),
        shepherd_title: "inferlint-shep".into(),
    }
}

/// Turns pidfds off in this process (and the shepherds it starts) when [`NO_PIDFD_ENV`] says
/// so.
pub fn honour_no_pidfd_env() {
    if std::env::var_os(NO_PIDFD_ENV).is_some_and(|v| v != "0" && !v.is_empty()) {
        inferlint_supervisor::pidfd::switch_off();
    }
}
