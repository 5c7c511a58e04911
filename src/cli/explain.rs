//! `inferlint explain [IDS...]`: what each tripwire catches, why it matters and how to check it.

use std::io::Write;

use inferlint_core::catalogue;
use inferlint_core::engine;

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Tripwire codes or names (T1, t14, silent-preemption); default: all twenty-one.
    #[arg(value_name = "IDS")]
    pub ids: Vec<String>,
    /// Show only this engine's notes (vllm, sglang, trtllm, llamacpp; default: INFERLINT_ENGINE, else all).
    #[arg(long)]
    pub engine: Option<String>,
}

pub fn run(args: Args) -> anyhow::Result<i32> {
    let named = engine::named_engine(args.engine.as_deref())?.map(|n| n.engine);
    let entries: Vec<&catalogue::Entry> = if args.ids.is_empty() {
        catalogue::all().iter().collect()
    } else {
        let mut found = Vec::new();
        for id in &args.ids {
            match catalogue::lookup(id) {
                Some(e) => found.push(e),
                None => anyhow::bail!("{}", catalogue::unknown_message(id)),
            }
        }
        found
    };
    let texts: Vec<String> = entries
        .iter()
        .map(|e| catalogue::explain_text(e, named))
        .collect();
    let mut out = std::io::stdout().lock();
    write!(out, "{}", texts.join("\n"))?;
    if args.ids.is_empty() {
        writeln!(out, "\nThe vLLM texts are {}.", catalogue::VERIFIED)?;
    }
    Ok(0)
}
