//! `inferlint gpu-inspect`.

#[derive(clap::Args, Debug)]
pub struct Args {}

pub fn run(_args: Args) -> anyhow::Result<i32> {
    anyhow::bail!("'gpu-inspect' is not built yet")
}
