//! `inferlint lint-script`.

#[derive(clap::Args, Debug)]
pub struct Args {}

pub fn run(_args: Args) -> anyhow::Result<i32> {
    anyhow::bail!("'lint-script' is not built yet")
}
