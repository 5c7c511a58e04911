//! `inferlint rate BEFORE AFTER`: T10, the token rate between two snapshots, and what a timer
//! with whole-second stamps would have said.

use std::path::PathBuf;

use crate::checks::{counters, t10};
use crate::cli::inputs::{choose_engine, load_snapshot, print_verdicts, Input};
use crate::engine;

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
    /// The engine the snapshots came from (vllm, sglang, trtllm); another engine's are refused.
    #[arg(long, value_name = "ENGINE")]
    pub engine: Option<String>,
    /// Print the result as JSON (the bare message, without the whole-second comparison).
    #[arg(long)]
    pub json: bool,
    /// Exit 1 on a warning too.
    #[arg(long)]
    pub strict: bool,
}

pub fn run(args: Args) -> anyhow::Result<i32> {
    let named = engine::named_engine(args.engine.as_deref())?;
    let before = load_snapshot(&args.before)?;
    let after = load_snapshot(&args.after)?;
    let inputs = [Input::new(
        "the snapshots",
        counters::snapshots_engine(&[&before, &after]),
    )];
    let engine = match choose_engine(named.as_ref(), &inputs, "the snapshots") {
        Ok(e) => e,
        Err(code) => return Ok(code),
    };
    let result = t10::check(&before, &after, args.counter.as_deref(), engine);
    let shown = if args.json {
        result
    } else {
        t10::with_integer_second_comparison(&result)
    };
    print_verdicts(&[shown], args.json, args.strict)
}
