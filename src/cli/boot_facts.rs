//! `inferlint boot-facts`.

#[derive(clap::Args, Debug)]
pub struct Args {}

pub fn run(_args: Args) -> anyhow::Result<i32> {
    anyhow::bail!("'boot-facts' is not built yet")
}
