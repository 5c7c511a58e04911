//! `inferlint completions SHELL` and `inferlint man`: what a package or a user installs beside
//! the binary (docs/reference.md, "Install"). Both are generated from the same clap definition
//! the commands parse with, so they cannot drift from `--help`.

use std::io::Write;
use std::path::PathBuf;

use anyhow::Context;
use clap::CommandFactory;

#[derive(clap::Args, Debug)]
pub struct CompletionsArgs {
    /// The shell to complete in.
    #[arg(value_name = "SHELL")]
    pub shell: clap_complete::Shell,
}

#[derive(clap::Args, Debug)]
pub struct ManArgs {
    /// Write inferlint.1 and one page per command (inferlint-report.1, ...) into this folder
    /// instead of printing inferlint.1.
    #[arg(short = 'o', long = "out", value_name = "DIR")]
    pub out: Option<PathBuf>,
}

/// The command tree as users see it: the internal commands (`sim`, `shepherd`, hidden from
/// `--help`) left out, which clap_complete and clap_mangen would otherwise list.
pub fn command() -> clap::Command {
    let full = super::Cli::command();
    let shown: Vec<clap::Command> = full
        .get_subcommands()
        .filter(|s| !s.is_hide_set())
        .cloned()
        .collect();
    let mut cmd = clap::Command::new("inferlint")
        .version(inferlint_core::VERSION)
        .disable_help_subcommand(true)
        .subcommand_required(true)
        .subcommands(shown);
    if let Some(about) = full.get_about() {
        cmd = cmd.about(about.clone());
    }
    if let Some(long) = full.get_long_about() {
        cmd = cmd.long_about(long.clone());
    }
    cmd
}

/// Writes to stdout; a reader that closed the pipe (`| head`) is no error.
fn print(bytes: &[u8]) -> anyhow::Result<i32> {
    let mut out = std::io::stdout().lock();
    match out.write_all(bytes).and_then(|_| out.flush()) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => Err(e.into()),
        _ => Ok(0),
    }
}

pub fn completions(args: CompletionsArgs) -> anyhow::Result<i32> {
    let mut cmd = command();
    let mut script = Vec::new();
    clap_complete::generate(args.shell, &mut cmd, "inferlint", &mut script);
    print(&script)
}

pub fn man(args: ManArgs) -> anyhow::Result<i32> {
    let cmd = command();
    match args.out {
        None => {
            let mut page = Vec::new();
            clap_mangen::Man::new(cmd).render(&mut page)?;
            print(&page)
        }
        Some(dir) => {
            std::fs::create_dir_all(&dir)
                .with_context(|| format!("cannot create {}", dir.display()))?;
            clap_mangen::generate_to(cmd, &dir)
                .with_context(|| format!("cannot write the man pages into {}", dir.display()))?;
            Ok(0)
        }
    }
}
