//! The `inferlint` binary: the command line (clap) over the library crates. Each command lives in
//! `cli/` with its `Args` and a `run` that returns the exit status; the work is in the crates
//! (ARCHITECTURE.md).

mod cli;

fn main() {
    std::process::exit(cli::main());
}
