//! inferlint as a library: check a benchmark you drive yourself.
//!
//! Reads the before/after snapshots and the boot log of a saved run, checks T1 (silent
//! preemption) and T10 (throughput timing), and prints the boot facts that should travel with the
//! benchmark's own results. A test harness would call `raise_for_status` to fail on a finding.
//!
//! ```sh
//! cargo run --example library -- tests/fixtures/vllm-0.28/live
//! ```

use std::path::PathBuf;

use anyhow::Context;
use inferlint_core::checks::{t1, t10};
use inferlint_core::snapshot::Snapshot;
use inferlint_core::{bootlog, output, Engine};

fn main() -> anyhow::Result<()> {
    let run: PathBuf = std::env::args_os().nth(1).map(PathBuf::from).context(
        "usage: library RUN_FOLDER (with before.snapshot.json, after.snapshot.json, boot.log)",
    )?;

    let before = Snapshot::load(&run.join("before.snapshot.json"))?;
    let after = Snapshot::load(&run.join("after.snapshot.json"))?;
    // The snapshots' own metric names say which engine served them.
    let engine = after.engine().unwrap_or(Engine::Vllm);

    let facts = bootlog::parse_file(&run.join("boot.log"), Some(engine))?;
    let results = vec![
        t1::check(&before, &after, None, Some(&facts), engine),
        t10::check(&before, &after, None, engine),
    ];
    for r in &results {
        println!("{}", r.line());
    }

    // Store this block with the benchmark's own numbers: it changes from one start to the next.
    println!(
        "boot: {}",
        output::to_json_string(&bootlog::result_block(&facts))
    );

    // In a test, a failed tripwire is a failed assertion:
    if let Err(e) = results[0].raise_for_status(false, true) {
        eprintln!("would fail the test: {e}");
    }
    Ok(())
}
