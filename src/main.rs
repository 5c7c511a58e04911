fn main() {
    std::process::exit(inferlint::cli::main());
}
