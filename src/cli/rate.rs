//! `inferlint rate BEFORE AFTER`: T10, the token rate between two snapshots, and what a timer
//! with whole-second stamps would have said.

use std::path::PathBuf;

use crate::cli::inputs::{choose_engine, load_snapshot, print_verdicts, Input};
use inferlint_core::checks::{counters, t10};

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Snapshot taken before the run (inferlint snapshot; a bare .prom file has no clock).
    #[arg(value_name = "BEFORE")]
    pub before: PathBuf,
    /// Snapshot taken after the run.
    #[arg(value_name = "AFTER")]
    pub after: PathBuf,
    /// The counter to rate (default: the engine's generated-token counter).
    #[arg(long, value_name = "NAME")]
    pub counter: Option<String>,
    #[command(flatten)]
    pub verdict: super::VerdictOptions,
}

pub fn run(args: Args) -> anyhow::Result<i32> {
    let named = args.verdict.named_engine()?;
    let before = load_snapshot(&args.before)?;
    let after = load_snapshot(&args.after)?;
    let inputs = [Input::new(
        "the snapshots",
        counters::snapshots_engine(&[&before, &after]),
    )];
    let engine = match choose_engine(named.as_ref(), &inputs, "the snapshots", true) {
        Ok(e) => e,
        Err(code) => return Ok(code),
    };
    let result = t10::check(&before, &after, args.counter.as_deref(), engine);
    // The terminal's line adds the whole-second comparison from the evidence; JSON stays bare.
    print_verdicts(&[result], args.verdict.json, args.verdict.strict)
}
