//! `inferlint check-log LOG...`: start-up failures (T12, or T7 after ready), forced block sizes
//! (T5) and ignored backends (T6) per log; with two logs or more, pool jumps (T4) and KV memory
//! drift (T11) between starts with the same flags.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use inferlint_core::bootlog::{self, BootFacts};
use inferlint_core::engine::{self, Engine, NamedEngine};
use inferlint_core::output;
use inferlint_core::verdict;

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Boot logs: the server's stdout and stderr from start-up on.
    #[arg(required = true, value_name = "LOG")]
    pub logs: Vec<PathBuf>,
    #[command(flatten)]
    pub verdict: super::VerdictOptions,
}

pub fn run(args: Args) -> anyhow::Result<i32> {
    let named = args.verdict.named_engine()?;
    let mut notes = BTreeSet::new();
    let mut facts = Vec::new();
    for path in &args.logs {
        facts.push(read_log(path, named.as_ref(), &mut notes)?);
    }
    for note in &notes {
        eprintln!("{note}");
    }
    let labels = bootlog::log_labels(&args.logs);
    let labelled: Vec<(String, &BootFacts)> = labels.into_iter().zip(facts.iter()).collect();
    let results = verdict::boot_logs(&labelled);
    let mut out = std::io::stdout().lock();
    output::print_results(&mut out, &results, args.verdict.json)?;
    Ok(output::exit_code(&results, args.verdict.strict))
}

/// Reads a boot log for a command: refuses it when the engine named is not the one its own
/// markers name, and reads a log that names none as the named engine's, else as vLLM's (with a
/// note). Notes for stderr are collected in `notes`.
pub(crate) fn read_log(
    path: &Path,
    named: Option<&NamedEngine>,
    notes: &mut BTreeSet<String>,
) -> anyhow::Result<BootFacts> {
    let hint = named.map(|n| n.engine).unwrap_or(Engine::Vllm);
    // The error names the file and says it is the boot log.
    let facts = bootlog::parse_file(path, Some(hint))?;
    match (named, facts.log_engine) {
        (Some(n), Some(own)) if own != n.engine => {
            anyhow::bail!("{}", engine::refusal(n, &path.display().to_string(), own));
        }
        (None, None) => {
            notes.insert(engine::read_as_vllm_note(
                &path.display().to_string(),
                false,
            ));
        }
        _ => {}
    }
    if let Some(note) = bootlog::untested_version_note(&facts) {
        notes.insert(note);
    }
    Ok(facts)
}
