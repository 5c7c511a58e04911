//! `inferlint shepherd` (hidden): the single-threaded keeper of one supervised command, started
//! by the supervisor crate (`inferlint_supervisor::Supervised::spawn`), never by hand. Its
//! arguments are written and read by `inferlint_supervisor::shepherd::ShepherdConfig`.

use std::ffi::OsString;

#[derive(clap::Args, Debug)]
pub struct Args {
    /// The shepherd's own arguments, then `--` and the command.
    #[arg(trailing_var_arg = true, allow_hyphen_values = true, num_args = 0..)]
    pub args: Vec<OsString>,
}

pub fn run(args: Args) -> anyhow::Result<i32> {
    let mut raw = args.args;
    // clap keeps everything after the first value, but swallows a leading `--`.
    if !raw.iter().any(|a| a == "--") {
        raw.insert(0, "--".into());
    }
    Ok(inferlint_supervisor::shepherd::main_with_args(
        inferlint_host::names::names(),
        raw,
    ))
}
