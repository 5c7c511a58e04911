//! `inferlint check-log LOG...`: start-up failures (T12, or T7 after ready), forced block sizes
//! (T5) and ignored backends (T6) per log; with two logs or more, pool jumps (T4) and KV memory
//! drift (T11) between starts with the same flags.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use inferlint_core::bootlog::{self, BootFacts};
use inferlint_core::checks::{t12, t4_t11, t5, t6};
use inferlint_core::engine::{self, Engine, NamedEngine};
use inferlint_core::output;
use inferlint_core::result::CheckResult;

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
    let results = check(&labelled);
    let mut out = std::io::stdout().lock();
    output::print_results(&mut out, &results, args.verdict.json)?;
    Ok(output::exit_code(&results, args.verdict.strict))
}

/// The check-log results for labelled logs: per log T12/T7, T5, T6 and the "could not read"
/// results; with two logs or more each message starts with the log's label and T4 and T11 follow.
pub fn check(logs: &[(String, &BootFacts)]) -> Vec<CheckResult> {
    let many = logs.len() >= 2;
    let mut results = Vec::new();
    for (label, f) in logs {
        let mut per_log = vec![t12::from_facts(f), t5::check(f), t6::check(f)];
        per_log.extend(t12::unparsed(f));
        per_log.extend(t12::unreadable(f));
        for r in per_log {
            results.push(if many {
                let msg = format!("{label}: {}", r.message);
                r.with_message(msg).with_log(label)
            } else {
                r
            });
        }
    }
    if many {
        results.extend(t4_t11::check_t4(logs));
        results.extend(t4_t11::check_t11(logs));
    }
    results
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
