//! Test-only: the shepherd entry point as its own program (the product runs the same code as
//! the hidden `inferlint shepherd` subcommand).

#![forbid(unsafe_code)]

#[path = "shared/mod.rs"]
mod shared;

fn main() {
    shared::honour_no_pidfd_env();
    std::process::exit(inferlint_supervisor::shepherd::main_with_args(
        shared::names(),
        std::env::args_os().skip(1),
    ));
}
