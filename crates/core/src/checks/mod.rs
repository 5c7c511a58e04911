//! The tripwire checks: pure functions from facts to a [`crate::CheckResult`]. A missing input is
//! UNKNOWN, never a pass; a finding never makes a check fail as a function.

// Counters, series and result files (the evidence core).
pub mod blocks;
pub mod counters;
pub mod gaps;
pub mod per_engine;
pub mod t1;
pub mod t10;
pub mod t14;
pub mod t15;
pub mod t8;
pub mod t9;
// Boot logs.
pub mod t12;
pub mod t4_t11;
pub mod t5;
pub mod t6;
// Processes and the GPU.
pub mod t2;
pub mod t7;

use crate::bench::BenchResult;
use crate::bootlog::BootFacts;
use crate::engine::Engine;
use crate::result::CheckResult;
use crate::series::Series;
use crate::snapshot::Snapshot;

/// What the checks of a run are decided on. Every input is optional on its own, as a live run
/// or a saved run folder has it; a check whose input is missing is left out here and becomes
/// "can't tell" in [`gaps::complete`].
#[derive(Clone, Copy, Debug)]
pub struct Facts<'a> {
    pub before: Option<&'a Snapshot>,
    pub after: Option<&'a Snapshot>,
    pub series: Option<&'a Series>,
    /// The boot facts of the run's own server.
    pub boot: Option<&'a BootFacts>,
    /// The concurrency the load asked for.
    pub requested: Option<u64>,
    /// The load tool's result.
    pub bench: Option<&'a BenchResult>,
    /// Requests the load tool sent outside its timing (warm-up), which the server counted.
    pub untimed_requests: u64,
    pub engine: Engine,
}

/// The checks of a run (docs/design/run.md#the-checks): T1, T10, T14 (or N/A), T9, T8 (when the
/// concurrency asked for is known), then T15 (when a result file was read). T10's message is
/// the bare one; the run's terminal line appends the integer-second comparison itself. The
/// live run, the report and the Python binding all decide through this one function.
pub fn run_all(f: &Facts<'_>) -> Vec<CheckResult> {
    let engine = f.engine;
    let mut out = Vec::new();
    if let (Some(b), Some(a)) = (f.before, f.after) {
        out.push(t1::check(b, a, f.series, f.boot, engine));
        out.push(t10::check(b, a, None, engine));
    }
    if let Some(s) = f.series.filter(|s| !s.samples.is_empty()) {
        let t14 = if t14::applies_to(engine) {
            f.after.map(|a| t14::check(s, a, engine))
        } else {
            Some(t14::not_applicable(engine))
        };
        let blocks = t14.as_ref().and_then(t14::usable_blocks);
        out.extend(t14);
        out.push(t9::check(s, blocks, engine));
        if let Some(n) = f.requested {
            out.push(t8::check(s, n, f.boot, engine));
        }
    }
    if let (Some(r), Some(b), Some(a)) = (f.bench, f.before, f.after) {
        out.push(t15::check(r, b, a, f.untimed_requests, engine));
    }
    out
}

/// The boot-log checks: T12 (or T7) on the run's own log (`first_log`, whose facts come first
/// in `facts`), T5 and T6 on its facts; T4 and T11 across two or more starts.
pub fn boot_all(first_log: Option<&str>, facts: &[(String, BootFacts)]) -> Vec<CheckResult> {
    let mut out = Vec::new();
    if let (Some(text), Some((_, f))) = (first_log, facts.first()) {
        out.push(t12::check(text, f));
        out.push(t5::check(f));
        out.push(t6::check(f));
    }
    if facts.len() >= 2 {
        let pairs: Vec<(String, &BootFacts)> = facts.iter().map(|(l, f)| (l.clone(), f)).collect();
        out.extend(t4_t11::check_t4(&pairs));
        out.extend(t4_t11::check_t11(&pairs));
    }
    out
}
