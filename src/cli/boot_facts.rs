//! `inferlint boot-facts LOG`: what a boot log says about the server that started.

use std::collections::BTreeSet;
use std::fmt::Write as _;
use std::path::PathBuf;

use serde_json::Value;

use inferlint_core::bootlog::BootFacts;
use inferlint_core::engine;
use inferlint_core::output;

#[derive(clap::Args, Debug)]
pub struct Args {
    /// The boot log: the server's stdout and stderr from start-up on.
    #[arg(value_name = "LOG")]
    pub log: PathBuf,
    /// Print every fact as one JSON object.
    #[arg(long)]
    pub json: bool,
    /// Exit 2 when a known line did not parse.
    #[arg(long)]
    pub strict: bool,
    /// The engine the log came from (vllm, sglang, trtllm, llamacpp); default: read from the log.
    #[arg(long)]
    pub engine: Option<String>,
}

pub fn run(args: Args) -> anyhow::Result<i32> {
    let named = engine::named_engine(args.engine.as_deref())?;
    let mut notes = BTreeSet::new();
    let facts = super::check_log::read_log(&args.log, named.as_ref(), &mut notes)?;
    for note in &notes {
        eprintln!("{note}");
    }
    if args.json {
        println!("{}", output::to_json_string(&facts));
    } else {
        print!("{}", text(&facts));
    }
    Ok(if args.strict && facts.unparsed_count() > 0 {
        2
    } else {
        0
    })
}

/// Fields the text form leaves out or prints in a form of their own.
const NOT_LISTED: [&str; 5] = [
    "unparsed",
    "conflicts",
    "non_default_args",
    "server_args",
    "config_args",
];
/// Counters printed only when they are not zero.
const ZERO_HIDDEN: [&str; 4] = ["lines_cut", "lines_lossy", "unparsed_more", "lines"];

/// The text form: `{field:28} {value}` per non-empty fact, then the argument keys, conflicts
/// and unparsed lines.
pub fn text(facts: &BootFacts) -> String {
    let mut out = String::new();
    let Value::Object(all) = inferlint_core::result::to_json_value(facts) else {
        return out;
    };
    for (field, value) in &all {
        if NOT_LISTED.contains(&field.as_str()) {
            continue;
        }
        if ZERO_HIDDEN.contains(&field.as_str()) && value.as_u64() == Some(0) {
            continue;
        }
        let shown = match field.as_str() {
            "failure" => facts.failure.as_ref().map(|f| f.summary()),
            "cudagraph_mode_downgrade" => facts
                .cudagraph_mode_downgrade
                .as_ref()
                .map(|(a, b)| format!("{a} -> {b}")),
            "processes" => (!facts.processes.is_empty()).then(|| {
                facts
                    .processes
                    .iter()
                    .map(|(name, pids)| {
                        let pids: Vec<String> = pids.iter().map(u32::to_string).collect();
                        format!("{name} [{}]", pids.join(", "))
                    })
                    .collect::<Vec<_>>()
                    .join(", ")
            }),
            _ => plain(value),
        };
        if let Some(v) = shown {
            let _ = writeln!(out, "{field:28} {v}");
        }
    }
    if let Some(args) = &facts.non_default_args {
        let mut keys: Vec<&str> = args.keys().map(String::as_str).collect();
        keys.sort_unstable();
        let _ = writeln!(out, "{:28} {}", "non_default_args", keys.join(", "));
    }
    if let Some(args) = &facts.server_args {
        let _ = writeln!(
            out,
            "server_args   {} settings (--json lists them)",
            args.len()
        );
    }
    for (field, values) in &facts.conflicts {
        let vals: Vec<String> = values.iter().map(Value::to_string).collect();
        let _ = writeln!(out, "CONFLICT {field}: [{}]", vals.join(", "));
    }
    for u in &facts.unparsed {
        let _ = writeln!(out, "UNPARSED {} (line {}): {}", u.field, u.lineno, u.line);
    }
    if facts.unparsed_more > 0 {
        let _ = writeln!(out, "UNPARSED … and {} more lines", facts.unparsed_more);
    }
    out
}

/// A fact's value as text; None for an empty one.
fn plain(v: &Value) -> Option<String> {
    match v {
        Value::Null => None,
        Value::String(s) => Some(s.clone()),
        Value::Array(items) if items.is_empty() => None,
        Value::Object(m) if m.is_empty() => None,
        Value::Array(items) => Some(
            items
                .iter()
                .map(|i| match i {
                    Value::String(s) => s.clone(),
                    other => other.to_string(),
                })
                .collect::<Vec<_>>()
                .join(", "),
        ),
        other => Some(other.to_string()),
    }
}
