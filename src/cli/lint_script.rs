//! `inferlint lint-script FILE…`: the traps of benchmark campaign scripts.

use std::io::Write;
use std::path::PathBuf;

use inferlint_core::output::{exit_code, print_results};
use inferlint_lintscript::{lint_file, results};

const AFTER_HELP: &str = "\
Output: one line per finding,
  [ T3] TRIPWIRE-FAILED  FILE:LINE: what goes wrong; fix: how to fix it
(WARN instead of TRIPWIRE-FAILED for the softer traps), and for each tripwire without a finding
  [ T3] PASS  FILE: what was checked
--json prints the same results as a JSON array; a finding's evidence has file, line, column,
snippet, rule and fix.

What it finds (bash is parsed as bash, including strings run by bash -c, trap handlers, ssh
commands and here-documents fed to a shell):
  T2   TRIPWIRE-FAILED  a cleanup that finds the server by name (pkill -f \"vllm serve\" misses
                        VLLM::EngineCore), or that kills only $! (the API server, or tee)
  T3   TRIPWIRE-FAILED  a pkill -f / pgrep -f / killall pattern that its own shell also matches
                        (the bash -c one-liner around it, sudo, the script's name): exit 143
  T10  WARN             a duration from date +%s or $SECONDS differences (±1 s at each end)
  T12  WARN             a server or load piped into tee without set -o pipefail
  T13  TRIPWIRE-FAILED  a readiness loop on a fixed port, with a killing trap ... EXIT, that
                        never checks the server answering is its own (pid or unique
                        --served-model-name)
  T13  WARN             sleep N as the only wait after starting a server
The fix for most of them: run each test under 'inferlint run'.

Exit status: 1 if any TRIPWIRE-FAILED (or WARN with --strict), else 0; 2 when a file could not
be read or parsed (named with its line on stderr), even if another file failed.
Guide: docs/orchestration.md.";

/// Check benchmark campaign scripts for the traps that silently spoil them.
#[derive(clap::Args, Debug)]
#[command(after_help = AFTER_HELP)]
pub struct Args {
    /// Shell scripts to check (bash; Slurm batch scripts included).
    #[arg(required = true, value_name = "FILE")]
    pub files: Vec<PathBuf>,
    /// Print the results as a JSON array.
    #[arg(long)]
    pub json: bool,
    /// A WARN makes the exit status 1.
    #[arg(long)]
    pub strict: bool,
}

pub fn run(args: Args) -> anyhow::Result<i32> {
    let mut all = Vec::new();
    let mut errors = 0;
    for path in &args.files {
        match lint_file(path) {
            Ok(findings) => all.extend(results(&path.display().to_string(), &findings)),
            Err(e) => {
                errors += 1;
                eprintln!("inferlint: {e}");
            }
        }
    }
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    if !all.is_empty() || args.json {
        print_results(&mut out, &all, args.json)?;
    }
    out.flush()?;
    if errors > 0 {
        return Ok(2);
    }
    Ok(exit_code(&all, args.strict))
}
