//! Test-only: the shepherd entry point as its own program (the product runs the same code as
//! the hidden `inferlint shepherd` subcommand).

fn main() {
    std::process::exit(inferlint_supervisor::shepherd::main_with_args(
        std::env::args_os().skip(1),
    ));
}
