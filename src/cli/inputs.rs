//! The input handling the evidence commands share (`preemption`, `rate`, `series`): loading
//! evidence files with errors that name them, choosing the engine among the inputs (refusing
//! another engine's input when one is named), and printing the verdicts.

use std::path::Path;

use inferlint_core::bootlog::BootFacts;
use inferlint_core::engine::{self, Engine, NamedEngine};
use inferlint_core::output;
use inferlint_core::result::CheckResult;
use inferlint_core::series::Series;
use inferlint_core::snapshot::Snapshot;

/// One input and the engine it names (None when it names none).
pub(crate) struct Input {
    pub what: String,
    pub engine: Option<Engine>,
}

impl Input {
    pub(crate) fn new(what: impl Into<String>, engine: Option<Engine>) -> Input {
        Input {
            what: what.into(),
            engine,
        }
    }
}

/// The engine to read the inputs as: the named one (refusing, with exit status 2, any input
/// that came from another), else the first input's that names one, else vLLM with a note on
/// stderr saying so (`what` is the input the note is about, `plural` when it names several).
pub(crate) fn choose_engine(
    named: Option<&NamedEngine>,
    inputs: &[Input],
    what: &str,
    plural: bool,
) -> Result<Engine, i32> {
    if let Some(n) = named {
        if let Some((bad, actual)) = inputs.iter().find_map(|i| {
            i.engine
                .filter(|e| *e != n.engine)
                .map(|actual| (i, actual))
        }) {
            eprintln!("inferlint: {}", engine::refusal(n, &bad.what, actual));
            return Err(2);
        }
        return Ok(n.engine);
    }
    if let Some(e) = inputs.iter().find_map(|i| i.engine) {
        return Ok(e);
    }
    eprintln!("{}", engine::read_as_vllm_note(what, plural));
    Ok(Engine::Vllm)
}

/// Reads a snapshot; the error names the file (and line).
pub(crate) fn load_snapshot(path: &Path) -> anyhow::Result<Snapshot> {
    Ok(Snapshot::load(path)?)
}

/// Reads a recording; the error names the file. A killed recorder leaves a truncated last line,
/// which is skipped with a note; a damaged line in the middle means the file was altered or two
/// writers shared it, so the verdicts would rest on a recording nobody can vouch for: an error
/// naming the line.
pub(crate) fn load_series(path: &Path) -> anyhow::Result<Series> {
    let series = super::mapped::read_recording(path)?;
    if series.skipped_lines > 0 {
        if let Some((lineno, line)) = damaged_middle_line(path) {
            anyhow::bail!(
                "{}: line {lineno}: not a series sample, in the middle of the recording: {}",
                path.display(),
                excerpt(&line)
            );
        }
        eprintln!(
            "note: {}: {} damaged line(s) skipped",
            path.display(),
            series.skipped_lines
        );
    }
    Ok(series)
}

/// The first non-blank line that is not a JSON object, unless it is the last non-blank line.
fn damaged_middle_line(path: &Path) -> Option<(usize, String)> {
    let bytes = std::fs::read(path).ok()?;
    let text = String::from_utf8_lossy(&bytes);
    let rows: Vec<(usize, &str)> = text
        .split('\n')
        .enumerate()
        .map(|(i, l)| (i + 1, l.trim()))
        .filter(|(_, l)| !l.is_empty())
        .collect();
    let last = rows.len().checked_sub(1)?;
    rows[..last]
        .iter()
        .find(|(_, l)| !matches!(serde_json::from_str(l), Ok(serde_json::Value::Object(_))))
        .map(|(n, l)| (*n, l.to_string()))
}

fn excerpt(line: &str) -> String {
    const MAX: usize = 80;
    match line.char_indices().nth(MAX) {
        Some((i, _)) => format!("{}…", &line[..i]),
        None => line.to_string(),
    }
}

/// Reads a server log's boot facts and the engine its own markers name. `hint` is the engine the
/// user named; the log's markers win over it.
pub(crate) fn parse_boot_log(
    path: &Path,
    hint: Option<Engine>,
) -> anyhow::Result<(BootFacts, Option<Engine>)> {
    Ok(inferlint_core::bootlog::parse_file_with_markers(
        path, hint,
    )?)
}

/// [`parse_boot_log`] when a log was given: its facts and the engine its markers name.
pub(crate) fn parse_optional_boot_log(
    path: Option<&Path>,
    hint: Option<Engine>,
) -> anyhow::Result<(Option<BootFacts>, Option<Engine>)> {
    match path {
        Some(p) => {
            let (facts, engine) = parse_boot_log(p, hint)?;
            Ok((Some(facts), engine))
        }
        None => Ok((None, None)),
    }
}

/// Prints the verdict lines (or the JSON array) and returns the exit status
/// (docs/design/formats.md#exit-status).
pub(crate) fn print_verdicts(
    results: &[CheckResult],
    json: bool,
    strict: bool,
) -> anyhow::Result<i32> {
    let mut out = std::io::stdout().lock();
    output::print_results(&mut out, results, json)?;
    Ok(output::exit_code(results, strict))
}
