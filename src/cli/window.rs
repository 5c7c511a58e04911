//! `inferlint window BEFORE AFTER [--bench-result FILE] [-- LOAD...]`: T16, T17, T18 and (where
//! speculative decoding ran) T19, the checks of the load's window as a whole, on saved snapshots, the load tool's result and the
//! load's command line.

use std::path::PathBuf;

use anyhow::Context;

use crate::cli::inputs::{choose_engine, load_snapshot, print_verdicts, Input};
use inferlint_core::checks::{self, counters};
use inferlint_core::load::{self, LoadIntent};

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Snapshot taken before the load (inferlint snapshot, or a bare .prom file).
    #[arg(value_name = "BEFORE")]
    pub before: PathBuf,
    /// Snapshot taken after the load.
    #[arg(value_name = "AFTER")]
    pub after: PathBuf,
    /// The load tool's result file (vllm bench serve's --save-result JSON, with --save-detailed
    /// for per-request errors and output lengths).
    #[arg(long = "bench-result", value_name = "PATH")]
    pub bench_result: Option<PathBuf>,
    /// The load tool's output, for the untimed requests it sent (a test prompt, warm-ups).
    #[arg(long = "load-log", value_name = "PATH")]
    pub load_log: Option<PathBuf>,
    #[command(flatten)]
    pub verdict: super::VerdictOptions,
    /// The load command as it was run: what its prompts and output lengths were meant to be.
    #[arg(last = true, value_name = "LOAD")]
    pub load: Vec<String>,
}

pub fn run(args: Args) -> anyhow::Result<i32> {
    let named = args.verdict.named_engine()?;
    let before = load_snapshot(&args.before)?;
    let after = load_snapshot(&args.after)?;
    let bench = args
        .bench_result
        .as_deref()
        .map(inferlint_core::bench::load)
        .transpose()?;
    let untimed = match &args.load_log {
        Some(p) => {
            let bytes = std::fs::read(p).with_context(|| format!("{}", p.display()))?;
            inferlint_core::bench::untimed_requests(&String::from_utf8_lossy(&bytes))
        }
        None => 0,
    };
    let inputs = [Input::new(
        "the snapshots",
        counters::snapshots_engine(&[&before, &after]),
    )];
    let engine = match choose_engine(named.as_ref(), &inputs, "the snapshots", true) {
        Ok(e) => e,
        Err(code) => return Ok(code),
    };
    let intent = if args.load.is_empty() {
        LoadIntent::unknown()
    } else {
        load::intent(&args.load)
    };
    let results = checks::window_all(&checks::Facts {
        before: Some(&before),
        after: Some(&after),
        series: None,
        boot: None,
        requested: None,
        bench: bench.as_ref(),
        untimed_requests: untimed,
        load: Some(&intent),
        observed: None,
        engine,
    });
    print_verdicts(&results, args.verdict.json, args.verdict.strict)
}
