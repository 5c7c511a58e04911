//! `inferlint preemption BEFORE AFTER`: T1 between two snapshots.

use std::path::PathBuf;

use crate::cli::inputs::{
    choose_engine, load_series, load_snapshot, parse_optional_boot_log, print_verdicts, Input,
};
use inferlint_core::checks::{counters, t1};

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Snapshot taken before the run (inferlint snapshot, or a bare .prom file).
    #[arg(value_name = "BEFORE")]
    pub before: PathBuf,
    /// Snapshot taken after the run.
    #[arg(value_name = "AFTER")]
    pub after: PathBuf,
    /// The run's recording (TensorRT-LLM: its paused gauge).
    #[arg(long, value_name = "REC")]
    pub series: Option<PathBuf>,
    /// The server's log, saved until after the run: TensorRT-LLM logs each pause there.
    #[arg(long = "boot-log", value_name = "LOG")]
    pub boot_log: Option<PathBuf>,
    #[command(flatten)]
    pub verdict: super::VerdictOptions,
}

pub fn run(args: Args) -> anyhow::Result<i32> {
    let named = args.verdict.named_engine()?;
    let before = load_snapshot(&args.before)?;
    let after = load_snapshot(&args.after)?;
    let series = args.series.as_deref().map(load_series).transpose()?;
    let hint = named.as_ref().map(|n| n.engine);
    let (facts, log_engine) = parse_optional_boot_log(args.boot_log.as_deref(), hint)?;
    let mut inputs = vec![Input::new(
        "the snapshots",
        counters::snapshots_engine(&[&before, &after]),
    )];
    if let (Some(s), Some(p)) = (&series, &args.series) {
        inputs.push(Input::new(p.display().to_string(), s.engine()));
    }
    if let Some(p) = &args.boot_log {
        inputs.push(Input::new(p.display().to_string(), log_engine));
    }
    let engine = match choose_engine(named.as_ref(), &inputs, "the snapshots", true) {
        Ok(e) => e,
        Err(code) => return Ok(code),
    };
    let result = t1::check(&before, &after, series.as_ref(), facts.as_ref(), engine);
    print_verdicts(&[result], args.verdict.json, args.verdict.strict)
}
