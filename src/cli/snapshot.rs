//! `inferlint snapshot`.

#[derive(clap::Args, Debug)]
pub struct Args {}

pub fn run(_args: Args) -> anyhow::Result<i32> {
    anyhow::bail!("'snapshot' is not built yet")
}
