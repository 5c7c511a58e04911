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
pub mod t16;
pub mod t17;
pub mod t18;
pub mod t19;
pub mod t20;
pub mod t21;
pub mod t22;
pub mod t23;
pub mod t24;
pub mod t25;
pub mod t26;
pub mod t27;
pub mod t8;
pub mod t9;
// Boot logs.
pub mod t12;
pub mod t4_t11;
pub mod t5;
pub mod t6;
// Campaign scripts.
pub mod script;
// Processes and the GPU.
pub mod t2;
pub mod t7;
pub mod t7_deaths;

use crate::bench::BenchResult;
use crate::bootlog::BootFacts;
use crate::engine::Engine;
use crate::load::LoadIntent;
use crate::observed::LoadObserved;
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
    /// What the load command asked for; None where the command is not known.
    pub load: Option<&'a LoadIntent>,
    /// What `run` saw of the load while it ran (the server's warm-up lines, the client's CPU);
    /// None where no run watched it.
    pub observed: Option<&'a LoadObserved>,
    pub engine: Engine,
}

/// The checks of a run (docs/design/run.md#the-checks): T1, T10, T14 (or N/A), T9, T8 (when the
/// concurrency asked for is known), T15 (when a result file was read), then the window's T16
/// (both snapshots), T17 (a result file, or a failure the snapshots show), T18 (a load of a
/// known client) and T19 (speculative decoding in the run). T10's message is
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
        out.push(t9::check(s, blocks, f.requested, engine));
        if let Some(n) = f.requested {
            out.push(t8::check(s, n, f.boot, engine));
        }
    }
    if let (Some(r), Some(b), Some(a)) = (f.bench, f.before, f.after) {
        out.push(t15::check(r, b, a, f.untimed_requests, engine));
    }
    out.extend(window_all(f));
    out
}

/// The window's checks (docs/design/tripwires.md#what-the-load-asked-for), as `run_all` and
/// `inferlint window` print them: T16 (both snapshots), T17 (a result file, or a failure the
/// snapshots show), T18 (a load of a known client), T19 (speculative decoding in the run), T20
/// (per-request TTFTs, or warm-up work the server logged during the load) and T21 (a rate sent
/// on an exact schedule, or the client's CPU measured), T22 (a data-parallel server), T23 (the
/// result's per-request streams), T24 (a prompt length asked, or counted by the client), T25
/// (a recording, and the CUDA graphs the boot log says were captured), T26 (KV offloading on)
/// and T27 (the cards' clocks, read during the load).
pub fn window_all(f: &Facts<'_>) -> Vec<CheckResult> {
    let engine = f.engine;
    let mut out = Vec::new();
    let unknown_load = LoadIntent::unknown();
    let load = f.load.unwrap_or(&unknown_load);
    let server = f.before.zip(f.after);
    if let Some((b, a)) = server {
        let untimed = t16::Untimed {
            requests: f.untimed_requests,
            completed: f.bench.and_then(|r| r.completed),
        };
        out.push(t16::check(b, a, load, untimed, engine));
    }
    // T17 needs the client's account to pass, as T15 does; without a result file it is
    // printed only when the server's own counters show a failure, which is certain.
    let t17 = t17::check(f.bench, server, engine);
    if f.bench.is_some() || t17.status == crate::result::Status::Fail {
        out.push(t17);
    }
    // T18 needs to know what the load asked for: printed for a known client, as T8 is for a
    // known concurrency.
    if load.tool.is_some() {
        out.push(t18::check(load, f.bench, server, engine));
    }
    // T19 only where speculative decoding was part of the run, as T8 only where a concurrency
    // was asked for.
    if let Some((b, a)) = server {
        if t19::active(b, a, f.boot, engine) == Some(true) {
            out.push(t19::check(b, a, load, f.boot, engine));
        }
    }
    // T20 and T21 are printed where they have something to judge, as T19 is: without
    // per-request TTFTs, warm-up lines, send times or the client's CPU neither can tell, and a
    // "can't tell" on every run that lacks --save-detailed would hide the ones that matter.
    let warmup = f.observed.and_then(|o| o.warmup_work.as_deref());
    let t20 = t20::check(f.bench, warmup);
    if t20.status != crate::result::Status::Unknown {
        out.push(t20);
    }
    let cpu = f.observed.and_then(|o| o.client_cpu.as_ref());
    if t21::due(load, cpu) {
        let t21 = t21::check(load, f.bench, f.series, f.requested, cpu);
        if t21.status != crate::result::Status::Unknown {
            out.push(t21);
        }
    }
    out.extend(balance_streams_tokens(f, load));
    out
}

/// T22 on a data-parallel server, T23 where the result has per-request streams, T24 where the
/// load's prompt length is known, T25 where the boot log says which CUDA graphs were captured,
/// T26 where KV offloading was on, T27 where run read the cards' clocks during the load: each
/// printed only where it has something to judge, as T19.
fn balance_streams_tokens(f: &Facts<'_>, load: &LoadIntent) -> Vec<CheckResult> {
    let mut out = Vec::new();
    let server = f.before.zip(f.after);
    if let Some((b, a)) = server {
        if let Some(ids) = t22::engines(a, f.engine) {
            out.push(t22::check(b, a, f.series, &ids, f.engine));
        }
    }
    let t23 = t23::check(f.bench, f.boot);
    if t23.status != crate::result::Status::Unknown {
        out.push(t23);
    }
    if let Some((b, a)) = server.filter(|_| t24::due(load, f.bench)) {
        out.push(t24::check(b, a, load, f.bench, f.engine));
    }
    if let (Some(s), Some(g)) = (f.series, t25::graph_batch(f.boot)) {
        out.push(t25::check(s, g, f.engine));
    }
    if let Some((b, a)) = server.filter(|(_, a)| t26::active(a, f.boot)) {
        out.push(t26::check(b, a, f.boot));
    }
    // Only where run read the cards during the load: no GPU, no reading, no line.
    out.extend(f.observed.and_then(t27::judge));
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
