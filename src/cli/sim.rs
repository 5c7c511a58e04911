//! `inferlint sim`: the simulated vLLM (hidden). `serve` is the API server, `bench` the load
//! client; `engine-core` and `worker` are the processes `serve` starts (not for users).

use inferlint_sim as sim;

#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(subcommand)]
    pub command: SimCommand,
}

#[derive(clap::Subcommand, Debug)]
pub enum SimCommand {
    /// A simulated `vllm serve MODEL`: same processes, boot log, /metrics and scheduling.
    Serve(Box<sim::config::ServeArgs>),
    /// A simulated `vllm bench serve`: same flags, summary and result JSON.
    Bench(Box<sim::bench::BenchArgs>),
    /// The engine process `serve` starts (argv[0] `VLLM::EngineCore`).
    #[command(name = "engine-core", hide = true)]
    EngineCore,
    /// A tensor-parallel worker the engine starts (argv[0] `VLLM::Worker_TP{n}`).
    #[command(hide = true)]
    Worker,
}

pub fn run(args: Args) -> anyhow::Result<i32> {
    let code = match args.command {
        SimCommand::Serve(a) => sim::api::run_serve(*a),
        SimCommand::Bench(a) => sim::bench::run_bench(*a),
        SimCommand::EngineCore => sim::engine::run_engine(),
        SimCommand::Worker => sim::engine::run_worker(),
    }?;
    Ok(code)
}
