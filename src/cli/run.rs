//! `inferlint run` (alias `xray`): start the server (or attach to one), probe it, run the load
//! while recording the server, check the tripwires, write the run folder and the report, and
//! stop everything that was started.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use inferlint_core::engine::named_engine;
use inferlint_core::output::counts_line;
use inferlint_run::{self as run, GpuCheck, Interrupt, Outcome, RunInputs, Sink};

use super::terminal::Terminal;

/// The usage error when nothing follows `--`.
pub const NO_LOAD: &str = "xray needs the load command after --, e.g. -- vllm bench serve ..., or the engine's own benchmark client";

#[derive(clap::Args, Debug)]
#[command(after_help = AFTER_HELP)]
pub struct Args {
    /// The run folder (default: xray-YYYYmmdd-HHMMSS)
    #[arg(short = 'o', long = "out")]
    pub out: Option<PathBuf>,
    /// The command that starts the server, in quotes; inferlint becomes its parent and stops it
    #[arg(long, value_name = "CMD")]
    pub serve: Option<String>,
    /// The server's address (default: --host/--port of --serve, else http://127.0.0.1:8000,
    /// SGLang :30000)
    #[arg(long)]
    pub url: Option<String>,
    /// The running server's log, when attaching to a server you started (no --serve)
    #[arg(long, value_name = "LOG")]
    pub boot_log: Option<PathBuf>,
    /// Attaching (no --serve): leave the server running when the run ends, for the next run of
    /// a campaign (T16 then tells whether its prefix cache served the prompts)
    #[arg(long)]
    pub keep_server: bool,
    /// The concurrency the load asks for (default: its --max-concurrency or --concurrency,
    /// else the result file's max_concurrency)
    #[arg(long, value_name = "N")]
    pub requested: Option<u64>,
    /// The load's result file (default: found; vLLM, SGLang and TensorRT-LLM clients are told
    /// to save it in the run folder; aiperf and GuideLLM results are looked for)
    #[arg(long, value_name = "PATH")]
    pub bench_result: Option<PathBuf>,
    /// Seconds between two recordings of the server's metrics
    #[arg(long, default_value_t = 0.25)]
    pub interval: f64,
    /// Seconds to wait for the server to be ready
    #[arg(long, default_value_t = 900.0)]
    pub ready_timeout: f64,
    /// Do not send the 9 probe requests (T7)
    #[arg(long)]
    pub no_probe: bool,
    /// The report's title
    #[arg(long)]
    pub title: Option<String>,
    /// The engine: vllm, sglang, trtllm or llamacpp (default: $INFERLINT_ENGINE, else detected)
    #[arg(long)]
    pub engine: Option<String>,
    /// A warning makes the exit status 1
    #[arg(long)]
    pub strict: bool,
    /// Accepted for compatibility; the results go to results.json in the run folder
    #[arg(long, hide = true)]
    pub json: bool,
    /// Also write the tripwires as a JUnit XML test suite to FILE (for CI systems)
    #[arg(long, value_name = "FILE")]
    pub junit: Option<PathBuf>,
    /// Skip the GPU check before the server starts (a CPU build, the simulator)
    #[arg(long)]
    pub no_gpu_check: bool,
    /// The run's GPUs: indices or UUIDs, comma-separated (default: CUDA_VISIBLE_DEVICES, else
    /// Slurm's step or job GPUs, else every GPU). The server is started on them.
    #[arg(long, value_name = "LIST")]
    pub gpus: Option<String>,
    /// Seconds the server gets to stop after SIGTERM before its processes are killed
    #[arg(long, default_value_t = 30.0)]
    pub stop_grace: f64,
    /// Without a terminal, print the server's state every this many seconds
    #[arg(long, default_value_t = 10.0, value_name = "SECS")]
    pub status_every: f64,
    /// Another node's part of the server: K (its Slurm relative node index) and its command, in
    /// quotes; repeatable. Each is started with `srun --relative=K` (or --node-launcher) under
    /// inferlint's node agent, which stops it with the run
    #[arg(long, num_args = 2, value_names = ["K", "CMD"], action = clap::ArgAction::Append, allow_hyphen_values = true)]
    pub serve_node: Vec<String>,
    /// How --serve-node parts are started instead of srun: a command line in which {node} is K
    /// and {cmd} the agent's command as one word (else it is appended) (default:
    /// $INFERLINT_NODE_LAUNCHER)
    #[arg(long, value_name = "TEMPLATE")]
    pub node_launcher: Option<String>,
    /// Run the load once per value of one of its options against the one server, e.g.
    /// max-concurrency=1,4,16,64: each point is judged on its own (points/NN-OPTION-VALUE/), then
    /// the points together (sweep.json)
    #[arg(long, value_name = "OPTION=V1,V2,...")]
    pub sweep: Option<String>,
    /// What is done between a sweep's points: reset-cache (the prefix cache, through the
    /// engine's own endpoint, verified), restart (the server stopped and started anew, its
    /// boots compared) or nothing
    #[arg(
        long,
        value_name = "WHAT",
        default_value = "reset-cache",
        requires = "sweep"
    )]
    pub between: String,
    /// Turn on vLLM's development endpoints (VLLM_SERVER_DEV_MODE=1: /reset_prefix_cache, but
    /// also /collective_rpc, a method call on every worker, /sleep and /server_info) for the
    /// cache reset between points even when the server listens on an address other hosts can
    /// reach; on loopback alone they are turned on without it
    #[arg(long, requires = "sweep")]
    pub allow_dev_endpoints: bool,
    /// Run each point of the sweep N times in a row (each run a point of its own); repeats
    /// whose figures disagree beyond run-to-run noise are named
    #[arg(long, value_name = "N", default_value_t = 1, requires = "sweep")]
    pub repeat: u32,
    #[command(flatten)]
    pub http: super::HttpOptions,
    /// The load command (everything after --)
    #[arg(last = true, value_name = "LOAD COMMAND")]
    pub load: Vec<String>,
}

const AFTER_HELP: &str = "\
The GPU check (T2) before the server starts waits for two consecutive clear readings of the
run's GPUs (--gpus, else CUDA_VISIBLE_DEVICES, else Slurm's, else every GPU): no server
process holding memory on them and each at most 800 MiB used. Server processes elsewhere are
listed, not refused, and a run never signals a process it did not start. On a machine without
NVIDIA GPUs (nvidia-smi missing or failing) it says so and judges only the run's own
processes, so CPU builds and the simulator run; INFERLINT_GPU=sim:DIR reads the simulated GPU
instead. --no-gpu-check skips it.

Ctrl-C (or SIGTERM, as Slurm's scancel sends) stops the load and still takes the last
snapshot, checks, report and teardown (exit 130); a second Ctrl-C kills everything at once.
If inferlint itself is killed, its shepherd stops what it started.

Exit status: 130 if interrupted; 1 on a problem, a failed load or a failed tripwire (a warning
too with --strict); 2 if a tripwire could not tell; else 0.";

fn secs(x: f64, what: &str) -> anyhow::Result<Duration> {
    if !(x.is_finite() && x >= 0.0) {
        anyhow::bail!("{what} must be a number of seconds, not {x}");
    }
    Ok(Duration::from_secs_f64(x))
}

/// The sweep asked for, refused before anything starts when the load cannot be swept as asked.
fn sweeping(args: &Args) -> anyhow::Result<Option<run::Sweeping>> {
    let Some(arg) = &args.sweep else {
        return Ok(None);
    };
    let plan = inferlint_core::sweep::Plan::parse(arg)?.repeated(args.repeat)?;
    plan.check_load(&args.load)?;
    let between = inferlint_core::sweep::Between::parse(&args.between)?;
    if between == inferlint_core::sweep::Between::Restart {
        if args.serve.is_none() {
            anyhow::bail!(
                "--between restart needs --serve: inferlint restarts only a server it started"
            );
        }
        if !args.serve_node.is_empty() {
            anyhow::bail!("--between restart with --serve-node is not available: a server that spans nodes is started once per run");
        }
    }
    Ok(Some(run::Sweeping { plan, between }))
}

/// The run's inputs from the command line.
pub fn inputs(args: &Args) -> anyhow::Result<RunInputs> {
    if args.load.is_empty() {
        anyhow::bail!(NO_LOAD);
    }
    let engine = named_engine(args.engine.as_deref())?;
    let interval = secs(args.interval, "--interval")?;
    if interval < Duration::from_millis(10) {
        anyhow::bail!("--interval must be at least 0.01 s");
    }
    let out = args
        .out
        .clone()
        .unwrap_or_else(|| PathBuf::from(run::folder::default_folder_name()));
    let mut i = RunInputs::new(out, args.load.clone());
    i.url = args.url.clone();
    i.serve = args.serve.clone();
    i.boot_log = args.boot_log.clone();
    i.keep_server = args.keep_server;
    i.requested = args.requested;
    i.bench_result = args.bench_result.clone();
    i.interval = interval;
    i.ready_timeout = secs(args.ready_timeout, "--ready-timeout")?;
    i.probe = !args.no_probe;
    i.title = args.title.clone();
    i.engine = engine;
    i.gpu_check = if args.no_gpu_check {
        GpuCheck::Off
    } else {
        GpuCheck::Auto
    };
    i.junit = args.junit.clone();
    i.strict = args.strict;
    i.stop_grace = secs(args.stop_grace, "--stop-grace")?;
    let resolved = inferlint_host::gpu::GpuScope::from_env_noted(args.gpus.as_deref())?;
    i.gpu_scope = resolved.scope;
    i.gpu_scope_notes = resolved.notes;
    i.pin_server_gpus = args.gpus.is_some();
    if args.gpus.is_some() && i.serve.is_none() {
        anyhow::bail!("--gpus names the GPUs to start the server on; it needs --serve");
    }
    if let Some(serve) = &i.serve {
        inferlint_core::argv::split_command("--serve", serve)?;
    }
    node_parts(args, &mut i)?;
    i.sweep = sweeping(args)?;
    i.allow_dev_endpoints = args.allow_dev_endpoints;
    if i.keep_server && i.serve.is_some() {
        anyhow::bail!("--keep-server is for attaching to a running server; a server the run starts with --serve never outlives it");
    }
    if let Some(p) = &i.boot_log {
        if i.serve.is_some() {
            anyhow::bail!("--boot-log is for attaching to a running server; with --serve the run writes boot.log itself");
        }
        if !p.is_file() {
            anyhow::bail!("{}: no such file", p.display());
        }
    }
    Ok(i)
}

/// `--serve-node K CMD` pairs and the launcher they need (docs/design/nodes.md).
fn node_parts(args: &Args, i: &mut RunInputs) -> anyhow::Result<()> {
    if args.serve_node.is_empty() {
        return Ok(());
    }
    if i.serve.is_none() {
        anyhow::bail!("--serve-node starts a part of the server on another node; it needs --serve for the head's part");
    }
    for pair in args.serve_node.chunks(2) {
        let [k, cmd] = pair else {
            anyhow::bail!("--serve-node needs a node index and a command");
        };
        let index: u32 = k.parse().map_err(|_| {
            anyhow::anyhow!(
                "--serve-node {k:?}: the node index must be a whole number (Slurm's --relative)"
            )
        })?;
        if index == 0 {
            anyhow::bail!("--serve-node 0: node 0 is the head, whose part is --serve");
        }
        if i.serve_nodes.iter().any(|p| p.index == index) {
            anyhow::bail!("--serve-node {index} is given twice");
        }
        inferlint_core::argv::split_command(&format!("--serve-node {index}"), cmd)?;
        i.serve_nodes.push(inferlint_run::nodes::NodePart {
            index,
            command: cmd.clone(),
        });
    }
    let launcher = inferlint_run::nodes::Launcher::choose(args.node_launcher.as_deref(), |k| {
        std::env::var(k).ok()
    })
    .map_err(anyhow::Error::msg)?;
    i.node_launcher = Some(launcher);
    Ok(())
}

/// Runs the sequence with the terminal and the signals, and prints the closing lines.
pub fn execute(inputs: RunInputs, status_every: Duration) -> anyhow::Result<Outcome> {
    // If a shepherd is SIGKILLed, the server's tree comes to us (not to PID 1), where the
    // supervisor's fallback teardown finds it.
    let _ = inferlint_supervisor::become_subreaper();
    let rt = super::runtime()?;
    let outcome = rt.block_on(async move {
        let interrupt = Interrupt::new();
        interrupt.listen_to_signals()?;
        let sink: Arc<dyn Sink> = Arc::new(Terminal::new(status_every));
        let outcome = run::run(inputs, sink.clone(), interrupt).await;
        print_closing(sink.as_ref(), &outcome);
        anyhow::Ok(outcome)
    })?;
    // The runtime's tasks (the signal listener) end with it; nothing else is left running.
    rt.shutdown_timeout(Duration::from_secs(1));
    Ok(outcome)
}

/// `{counts}`, `report: {path}` and `files:  {out}`.
pub fn print_closing(sink: &dyn Sink, outcome: &Outcome) {
    sink.clear_status();
    sink.line(&counts_line(&outcome.results));
    if let Some(r) = &outcome.report {
        sink.line(&format!("report: {}", r.display()));
    }
    sink.line(&format!("files:  {}", outcome.out.display()));
}

pub fn run(args: Args) -> anyhow::Result<i32> {
    args.http.apply()?;
    let every = secs(args.status_every, "--status-every")?.max(Duration::from_millis(100));
    let inputs = inputs(&args)?;
    let strict = inputs.strict;
    Ok(execute(inputs, every)?.exit_code(strict))
}
