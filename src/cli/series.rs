//! `inferlint series REC`: T14 (or N/A), T9 and T8 on a recording, in that order.

use std::path::PathBuf;

use crate::cli::inputs::{
    choose_engine, load_series, load_snapshot, parse_optional_boot_log, print_verdicts, Input,
};
use inferlint_core::checks::{t14, t8, t9};
use inferlint_core::engine::Engine;
use inferlint_core::result::CheckResult;
use inferlint_core::series::Series;
use inferlint_core::snapshot::Snapshot;

#[derive(clap::Args, Debug)]
pub struct Args {
    /// The recording (inferlint watch, or run.series.jsonl of a run folder).
    #[arg(value_name = "REC")]
    pub series: PathBuf,
    /// A snapshot of the same boot: its block count checks the usage gauge (T14).
    #[arg(long, value_name = "SNAP")]
    pub snapshot: Option<PathBuf>,
    /// The concurrency the load tool asked for (T8).
    #[arg(long, value_name = "N")]
    pub requested: Option<u64>,
    /// The server's log: its limits explain a shortfall (T8).
    #[arg(long = "boot-log", value_name = "LOG")]
    pub boot_log: Option<PathBuf>,
    #[command(flatten)]
    pub verdict: super::VerdictOptions,
}

pub fn run(args: Args) -> anyhow::Result<i32> {
    let named = args.verdict.named_engine()?;
    let series = load_series(&args.series)?;
    let snapshot = args.snapshot.as_deref().map(load_snapshot).transpose()?;
    let hint = named.as_ref().map(|n| n.engine);
    let (facts, log_engine) = parse_optional_boot_log(args.boot_log.as_deref(), hint)?;
    let rec = args.series.display().to_string();
    let mut inputs = vec![Input::new(rec.clone(), series.engine())];
    if let (Some(s), Some(p)) = (&snapshot, &args.snapshot) {
        inputs.push(Input::new(p.display().to_string(), s.engine()));
    }
    if let Some(p) = &args.boot_log {
        inputs.push(Input::new(p.display().to_string(), log_engine));
    }
    let engine = match choose_engine(named.as_ref(), &inputs, &rec, false) {
        Ok(e) => e,
        Err(code) => return Ok(code),
    };
    // T8 and T25 read only the recording, so they run on a second thread while T14 and T9 (T9
    // takes T14's block count) run on this one; the results keep the order above.
    let (mut results, rest) = std::thread::scope(|scope| {
        let other = scope.spawn(|| {
            let mut rest = Vec::new();
            if let Some(n) = args.requested {
                rest.push(t8::check(&series, n, facts.as_ref(), engine));
            }
            // T25 where the boot log says which CUDA graphs were captured.
            if let Some(g) = inferlint_core::checks::t25::graph_batch(facts.as_ref()) {
                rest.push(inferlint_core::checks::t25::check(&series, g, engine));
            }
            rest
        });
        let first = t14_then_t9(&series, snapshot.as_ref(), engine, args.requested);
        (first, other.join())
    });
    match rest {
        Ok(rest) => results.extend(rest),
        Err(panic) => std::panic::resume_unwind(panic),
    }
    // The samples are tens of MiB in many small allocations (docs/benchmarks.md measured freeing
    // them at ~12 ms); the process ends after printing, which returns the memory at once.
    std::mem::forget(series);
    print_verdicts(&results, args.verdict.json, args.verdict.strict)
}

/// T14 (or N/A), then T9 with the block count T14 found.
fn t14_then_t9(
    series: &Series,
    snapshot: Option<&Snapshot>,
    engine: Engine,
    requested: Option<u64>,
) -> Vec<CheckResult> {
    let mut results = Vec::new();
    // T14 gate (docs/design/tripwires.md#t14): N/A on engines without a block count; else only with
    // a snapshot from an engine that exports the cache-info series.
    let mut usable_blocks = None;
    if !t14::applies_to(engine) {
        results.push(t14::not_applicable(engine));
    } else if let Some(snap) = snapshot {
        if snap
            .engine()
            .unwrap_or(engine)
            .metrics()
            .cache_info
            .is_some()
        {
            let r = t14::check(series, snap, engine);
            usable_blocks = t14::usable_blocks(&r);
            results.push(r);
        }
    }
    results.push(t9::check(series, usable_blocks, requested, engine));
    results
}
