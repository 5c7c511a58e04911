//! The `inferlint` binary: the command line (clap) over the library crates. Each command lives in
//! `cli/` with its `Args` and a `run` that returns the exit status; the work is in the crates
//! (ARCHITECTURE.md).

// No unwrap or expect on what the inputs hold: bad input is an error naming the file and line,
// never a panic. Where an invariant makes one safe, the site allows it and says why.
#![cfg_attr(not(test), warn(clippy::unwrap_used, clippy::expect_used))]

mod cli;

fn main() {
    std::process::exit(cli::main());
}
