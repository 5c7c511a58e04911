//! `inferlint demo [-o DIR]`: the whole supervised run on the built-in simulated vLLM, with
//! settings that reproduce, in under a minute and without a GPU, what inferlint exists to
//! catch: 32 requests asked for while about 10 run, preemptions that vLLM never logs, the
//! concurrency ceiling falling as outputs grow, 784-token KV blocks, the reserved null block,
//! and an engine process that escaped its server's process group, found by the teardown.
//! `--window` tells the window's story instead: a first load on a server that compiles for each
//! new batch size (T20) and whose model stops at end-of-sequence before the length asked (T18).
//! `--engine sglang|trtllm` tells that engine's story on its simulator (see [`engine_commands`]).
//! `--sweep` tells a sweep's story: one seeded load at three concurrencies against one server,
//! nothing done between points (see [`sweep_commands`]).

use std::path::PathBuf;
use std::time::Duration;

use inferlint_core::Engine;
use inferlint_run::{self as run, GpuCheck, RunInputs};

#[derive(clap::Args, Debug)]
#[command(after_help = "\
The demo starts `inferlint sim serve` (a simulated vLLM 0.28 serving a hybrid model: 784-token
KV blocks, 43 blocks of which one is the reserved null block) under inferlint's supervision,
loads it with `inferlint sim bench` (vllm bench serve's flags: 32 concurrent requests of 2,400
prompt and 2,000 output tokens), checks the tripwires and writes the run folder and its report.
Its simulated GPU lives in a temporary folder; nothing touches a real GPU.

`--window` runs a simulated vLLM 0.33 with a small model instead, whose first batch of 16
compiles a graph while the load runs (T20) and whose model ends each answer after 60 tokens
where the load asked for 200 without --ignore-eos (T18).

`--engine sglang` runs the simulated SGLang 0.5 with a KV pool too small for its load: it
retracts requests (T1), runs fewer than the 32 asked for (T8), and its scheduler has left the
launcher's process group, to be found by the teardown. `--engine trtllm` runs the simulated
TensorRT-LLM 1.3 with `return_perf_metrics` but not `enable_iter_perf_stats`: its running and
KV gauges are missing (T8 and T9 cannot tell), and an MPI rank has left the launcher's group.

`--sweep` runs one seeded random load at --max-concurrency 2, 4 and 16 against one simulated
vLLM that runs at most 8 at once, with nothing done between the points: the later points are
served from the prefix cache the first one filled, and the last asks for more than the server
runs (the knee). It writes sweep.json and a folder per point.

Exit status: 0 when the demo ran (its failed tripwires are the point), 130 if interrupted,
1 if it could not run.")]
pub struct Args {
    /// The run folder (default: demo-YYYYmmdd-HHMMSS)
    #[arg(short = 'o', long = "out")]
    pub out: Option<PathBuf>,
    /// Without a terminal, print the server's state every this many seconds
    #[arg(long, default_value_t = 5.0, value_name = "SECS")]
    pub status_every: f64,
    /// The window's story: warm-up measured and outputs shorter than asked (T20, T18)
    #[arg(long, conflicts_with = "engine")]
    pub window: bool,
    /// A sweep's story: later points served from the cache the first filled, and the knee
    #[arg(long, conflicts_with_all = ["engine", "window"])]
    pub sweep: bool,
    /// The engine whose story to tell: vllm, sglang or trtllm
    #[arg(long, value_parser = parse_engine, default_value = "vllm")]
    pub engine: Engine,
}

fn parse_engine(s: &str) -> Result<Engine, String> {
    match Engine::parse(s) {
        // No simulated llama.cpp: its story is told on the real server (docs/real-llamacpp.md).
        Some(Engine::Llamacpp) => Err(format!(
            "'{s}': the demo has no simulated llama.cpp; run a real llama-server under inferlint run (docs/real-llamacpp.md)"
        )),
        Some(e) => Ok(e),
        None => Err(format!("'{s}' is not an engine (vllm, sglang, trtllm)")),
    }
}

/// The simulated model: a hybrid attention/Mamba model, as vLLM serves it with 784-token blocks.
pub const MODEL: &str = "Qwen/Qwen3-Next-80B-A3B-Instruct";

/// The window story's model: a small dense model, as the real vLLM lane serves.
pub const WINDOW_MODEL: &str = "Qwen/Qwen3-0.6B";

/// The server command and the load command of the demo, for a port.
pub fn commands(exe: &str, port: u16, window: bool) -> (String, Vec<String>) {
    let q = shlex::try_quote(exe).map_or_else(|_| exe.to_string(), |q| q.into_owned());
    let (serve, load) = if window {
        (
            format!(
                "{q} sim serve {WINDOW_MODEL} --port {port} --vllm-version 0.33 --num-gpu-blocks-override 400 \
                 --block-size 16 --max-model-len 1024 --tokens-per-s 400 --boot-secs 1 --cold-start-secs 2 \
                 --eos-after 60"
            ),
            format!(
                "sim bench --port {port} --model {WINDOW_MODEL} --max-concurrency 16 --num-prompts 48 \
                 --random-input-len 200 --random-output-len 200 --save-detailed"
            ),
        )
    } else {
        (
            format!(
                "{q} sim serve {MODEL} --port {port} --hybrid --num-gpu-blocks-override 43 --max-model-len 8192 \
                 --tokens-per-s 1000 --boot-secs 2 --orphan-engine --escape setsid --engine-ignores-sigterm"
            ),
            format!(
                "sim bench --port {port} --model {MODEL} --max-concurrency 32 --num-prompts 40 \
                 --random-input-len 2400 --random-output-len 2000 --ignore-eos"
            ),
        )
    };
    let mut argv = vec![exe.to_string()];
    argv.extend(load.split_whitespace().map(String::from));
    (serve, argv)
}

/// The server and load commands of SGLang's and TensorRT-LLM's stories (None for vLLM's, in
/// [`commands`]); `dir` holds TensorRT-LLM's `--config` YAML. Each engine's scheduler or rank
/// escapes its launcher's process group and ignores SIGTERM, for the teardown to find.
pub fn engine_commands(
    engine: Engine,
    exe: &str,
    port: u16,
    dir: &std::path::Path,
) -> Option<(String, Vec<String>)> {
    let q = shlex::try_quote(exe).map_or_else(|_| exe.to_string(), |q| q.into_owned());
    let escape = "--orphan-engine --escape setsid --engine-ignores-sigterm";
    let (serve, load) = match engine {
        Engine::Vllm | Engine::Llamacpp => return None,
        Engine::Sglang => (
            format!(
                "{q} sim serve {ENGINE_MODEL} --engine sglang --port {port} --enable-metrics \
                 --max-running-requests 32 --max-total-tokens 6000 --context-length 4096 \
                 --tokens-per-s 400 --boot-secs 2 {escape}"
            ),
            format!(
                "sim bench --backend sglang --port {port} --model {ENGINE_MODEL} --dataset-name random \
                 --max-concurrency 32 --num-prompts 32 --random-input-len 200 --random-output-len 400 --output-details"
            ),
        ),
        Engine::Trtllm => {
            let yaml = dir.join("perf.yaml");
            // Only return_perf_metrics: the iteration stats (the gauges) are left off, a common
            // setting (the recorded no-iter-stats run).
            let _ = std::fs::write(&yaml, "return_perf_metrics: true\n");
            let yaml = yaml.display().to_string();
            let yaml = shlex::try_quote(&yaml).map_or(yaml.clone(), |y| y.into_owned());
            (
                format!(
                    "{q} sim serve {ENGINE_MODEL} --engine trtllm --config {yaml} --port {port} \
                     --max_batch_size 8 --max_seq_len 4096 --num-gpu-blocks-override 400 \
                     --tokens-per-s 400 --boot-secs 2 {escape}"
                ),
                format!(
                    "sim bench --backend trtllm --port {port} --model {ENGINE_MODEL} --max-concurrency 32 \
                     --num-prompts 32 --random-input-len 200 --random-output-len 300 --ignore-eos"
                ),
            )
        }
    };
    let mut argv = vec![exe.to_string()];
    argv.extend(load.split_whitespace().map(String::from));
    Some((serve, argv))
}

/// The sweep story's server and load: a small model on loopback that runs at most 8 requests
/// at once, and one seeded random load of prompts several cache blocks long; the sweep's plan
/// sets its concurrency per point.
pub fn sweep_commands(exe: &str, port: u16) -> (String, Vec<String>, inferlint_run::Sweeping) {
    let q = shlex::try_quote(exe).map_or_else(|_| exe.to_string(), |q| q.into_owned());
    let serve = format!(
        "{q} sim serve {WINDOW_MODEL} --host 127.0.0.1 --port {port} --max-num-seqs 8 \
         --block-size 16 --tokens-per-s 400 --boot-secs 1"
    );
    let load = format!(
        "sim bench --port {port} --model {WINDOW_MODEL} --num-prompts 32 --random-input-len 512 \
         --random-output-len 32 --seed 0"
    );
    let mut argv = vec![exe.to_string()];
    argv.extend(load.split_whitespace().map(String::from));
    let sweeping = inferlint_run::Sweeping {
        plan: inferlint_core::sweep::Plan {
            option: "max-concurrency".to_string(),
            values: ["2", "4", "16"].map(String::from).to_vec(),
            repeat: 1,
        },
        between: inferlint_core::sweep::Between::Nothing,
    };
    (serve, argv, sweeping)
}

/// The SGLang and TensorRT-LLM stories' model (the recorded runs').
pub const ENGINE_MODEL: &str = "Qwen/Qwen3-8B";

fn free_port() -> anyhow::Result<u16> {
    Ok(std::net::TcpListener::bind("127.0.0.1:0")?
        .local_addr()?
        .port())
}

pub fn run(args: Args) -> anyhow::Result<i32> {
    let exe = std::env::current_exe()?;
    let exe = exe.to_string_lossy().into_owned();
    let port = free_port()?;
    let gpu_dir = std::env::temp_dir().join(format!("inferlint-demo-gpu-{}", std::process::id()));
    std::fs::create_dir_all(&gpu_dir)?;
    let (serve, load, sweep) = if args.sweep {
        let (serve, load, sweeping) = sweep_commands(&exe, port);
        (serve, load, Some(sweeping))
    } else {
        let (serve, load) = engine_commands(args.engine, &exe, port, &gpu_dir)
            .unwrap_or_else(|| commands(&exe, port, args.window));
        (serve, load, None)
    };
    // SAFETY (of set_var): no other thread runs yet; the runtime starts after this. The server,
    // its engine and this process all read the same simulated GPU.
    std::env::set_var(
        inferlint_host::gpu::GPU_ENV,
        format!("sim:{}", gpu_dir.display()),
    );
    std::env::remove_var(inferlint_core::engine::ENGINE_ENV);

    let out = args.out.unwrap_or_else(|| {
        PathBuf::from(run::folder::default_folder_name().replacen("xray", "demo", 1))
    });
    let name = args.engine.name();
    println!(
        "inferlint demo: a simulated {name} on a simulated GPU (no GPU needed), about half a minute"
    );
    println!();
    let mut inputs = RunInputs::new(out, load);
    inputs.serve = Some(serve);
    inputs.sweep = sweep;
    inputs.gpu_check = GpuCheck::Auto;
    // A short stop: the engine (which ignores SIGTERM and left the server's process group)
    // must be found and killed by the teardown, not waited for.
    inputs.stop_grace = Duration::from_secs(3);
    inputs.ready_timeout = Duration::from_secs(60);
    inputs.title = Some(match args.engine {
        Engine::Sglang => {
            "inferlint demo --engine sglang: simulated SGLang 0.5, a small KV pool".into()
        }
        Engine::Trtllm => {
            "inferlint demo --engine trtllm: simulated TensorRT-LLM 1.3, no iteration stats".into()
        }
        Engine::Vllm if args.window => {
            "inferlint demo --window: simulated vLLM 0.33, a first load after boot".into()
        }
        Engine::Vllm if args.sweep => {
            "inferlint demo --sweep: one seeded load at three concurrencies, one server".into()
        }
        // parse_engine refuses llama.cpp; the default story stands in for the type's sake.
        Engine::Vllm | Engine::Llamacpp => {
            "inferlint demo: simulated vLLM 0.28, hybrid model, 32 requested".into()
        }
    });
    let every = Duration::from_secs_f64(args.status_every.max(0.1));
    let outcome = super::run::execute(inputs, every);
    let _ = std::fs::remove_dir_all(&gpu_dir);
    let outcome = outcome?;
    if outcome.interrupted {
        return Ok(130);
    }
    if let Some(p) = &outcome.problem {
        eprintln!("inferlint demo: the demo could not run: {p}");
        return Ok(1);
    }
    println!();
    let explain = match args.engine {
        Engine::Sglang => "T1 T8 T2",
        Engine::Trtllm => "T8 T9 T2",
        Engine::Vllm if args.window => "T18 T20",
        Engine::Vllm if args.sweep => "T16 T8",
        Engine::Vllm | Engine::Llamacpp => "T1 T8 T9",
    };
    println!("That was the demo. Open the report above in a browser; 'inferlint explain {explain}' says what each finding means.");
    Ok(0)
}
