//! The GPU before the server starts (T2 gate, spec §4 step 2) and after it stopped (the full
//! teardown and its T2, step 12).

use std::time::Duration;

use inferlint_supervisor::TeardownReport;

use crate::engine::Engine;
use crate::result::{CheckResult, Tripwire};

use super::GpuCheck;

/// The T2 gate: two consecutive clear readings within `timeout`, and a note to print.
pub async fn before_start(_timeout: Duration, _mode: GpuCheck) -> (CheckResult, Option<String>) {
    (
        CheckResult::unknown(Tripwire::T2, "the GPU gate is not built yet"),
        None,
    )
}

/// The full teardown after the server stopped, and its T2.
pub async fn after_stop(_timeout: Duration, _report: &TeardownReport, _engine: Engine) -> CheckResult {
    CheckResult::unknown(Tripwire::T2, "the teardown is not built yet")
}
