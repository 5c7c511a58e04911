//! The command line: a thin layer over the library. Each command lives in its own file with its
//! `Args` and a `run` that returns the exit status.

use std::ffi::OsString;
use std::io::Write;

use clap::{Parser, Subcommand};

pub mod boot_facts;
pub mod check_log;
pub mod demo;
pub mod explain;
pub mod gpu_inspect;
mod inputs;
pub mod install;
pub mod lint_script;
mod mapped;
pub mod node;
pub mod preemption;
pub mod probe;
pub mod rate;
pub mod reap;
pub mod report;
pub mod run;
pub mod series;
pub mod shepherd;
pub mod sim;
pub mod snapshot;
pub mod teardown;
mod terminal;
pub mod watch;
pub mod window;

#[derive(Parser, Debug)]
#[command(
    name = "inferlint",
    version,
    about = "Tells which of an inference benchmark's numbers hold",
    long_about = "Supervises an LLM inference server (vLLM, SGLang, TensorRT-LLM) during a \
                  benchmark, checks 27 tripwires (T1-T27) on its boot log, metrics and the load \
                  tool's result, writes an offline HTML report, and makes sure that nothing it \
                  started outlives it.",
    disable_help_subcommand = true
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Start the server, check it, run the load, check the numbers, stop everything.
    #[command(alias = "xray")]
    Run(run::Args),
    /// The whole run on the built-in simulated vLLM: no GPU needed.
    Demo(demo::Args),
    /// Write the HTML report of a saved run folder (or of files named one by one).
    Report(report::Args),
    /// Check boot logs for start-up failures, forced block sizes and ignored backends.
    CheckLog(check_log::Args),
    /// Print what a boot log says about the server that started.
    BootFacts(boot_facts::Args),
    /// T1: requests evicted and recomputed between two snapshots.
    Preemption(preemption::Args),
    /// T10: tokens per second between two snapshots, and what a whole-second timer would say.
    Rate(rate::Args),
    /// T14, T9, T8 on a recording.
    Series(series::Args),
    /// T16-T19: cached prompts, failed requests, short outputs and speculation in a load's window.
    Window(window::Args),
    /// Check a benchmark campaign's shell scripts for traps (T2, T3, T10, T13, T16).
    LintScript(lint_script::Args),
    /// Save one /metrics reading with its clocks.
    Snapshot(snapshot::Args),
    /// Record a server's gauges and counters to a series file.
    Watch(watch::Args),
    /// T7: one request, then a burst, then /health.
    Probe(probe::Args),
    /// T2: is the GPU free? No server process alive and memory released.
    GpuInspect(gpu_inspect::Args),
    /// Stop every inference server process (by structure, never by substring) and check the GPU.
    Teardown(teardown::Args),
    /// Tear down what earlier runs left behind (their owner is dead).
    Reap(reap::Args),
    /// What each tripwire catches, why it matters, and how to check it.
    Explain(explain::Args),
    /// Print the shell completion script for bash, zsh, fish, elvish or powershell.
    Completions(install::CompletionsArgs),
    /// Print the man page (or write one page per command into a folder).
    Man(install::ManArgs),
    #[command(hide = true)]
    Sim(sim::Args),
    #[command(hide = true)]
    Shepherd(shepherd::Args),
    #[command(hide = true)]
    Node(node::Args),
}

/// Commands a user may type, for "Did you mean".
const COMMANDS: &[&str] = &[
    "run",
    "xray",
    "demo",
    "report",
    "check-log",
    "boot-facts",
    "preemption",
    "rate",
    "series",
    "window",
    "lint-script",
    "snapshot",
    "watch",
    "probe",
    "gpu-inspect",
    "teardown",
    "reap",
    "explain",
    "completions",
    "man",
];
const HIDDEN_COMMANDS: &[&str] = &["sim", "shepherd", "node", "help"];

/// Runs the command line and returns the process exit status.
pub fn main() -> i32 {
    let args: Vec<OsString> = std::env::args_os().collect();
    main_with(args)
}

pub fn main_with(args: Vec<OsString>) -> i32 {
    inferlint_host::names::honour_no_pidfd_env();
    let first = args.get(1).map(|a| a.to_string_lossy().into_owned());
    match first.as_deref() {
        None => {
            print!("{}", start_text());
            return 0;
        }
        Some("--version" | "-V") => {
            println!("inferlint {}", inferlint_core::VERSION);
            return 0;
        }
        Some("--help" | "-h" | "help") if args.len() == 2 => {
            print!("{}", grouped_help());
            return 0;
        }
        Some(cmd)
            if !cmd.starts_with('-')
                && !COMMANDS.contains(&cmd)
                && !HIDDEN_COMMANDS.contains(&cmd) =>
        {
            eprintln!("inferlint: {}", unknown_command(cmd));
            return 2;
        }
        _ => {}
    }
    let cli = match Cli::try_parse_from(&args) {
        Ok(cli) => cli,
        Err(e) => {
            let code = if e.use_stderr() { 2 } else { 0 };
            let _ = e.print();
            return code;
        }
    };
    let outcome = match cli.command {
        Command::Run(a) => run::run(a),
        Command::Demo(a) => demo::run(a),
        Command::Report(a) => report::run(a),
        Command::CheckLog(a) => check_log::run(a),
        Command::BootFacts(a) => boot_facts::run(a),
        Command::Preemption(a) => preemption::run(a),
        Command::Rate(a) => rate::run(a),
        Command::Window(a) => window::run(a),
        Command::Series(a) => series::run(a),
        Command::LintScript(a) => lint_script::run(a),
        Command::Snapshot(a) => snapshot::run(a),
        Command::Watch(a) => watch::run(a),
        Command::Probe(a) => probe::run(a),
        Command::GpuInspect(a) => gpu_inspect::run(a),
        Command::Teardown(a) => teardown::run(a),
        Command::Reap(a) => reap::run(a),
        Command::Explain(a) => explain::run(a),
        Command::Completions(a) => install::completions(a),
        Command::Man(a) => install::man(a),
        Command::Sim(a) => sim::run(a),
        Command::Shepherd(a) => shepherd::run(a),
        Command::Node(a) => node::run(a),
    };
    match outcome {
        Ok(code) => code,
        Err(e) => {
            let _ = std::io::stdout().flush();
            eprintln!("inferlint: {}", error_line(&e));
            2
        }
    }
}

/// An error and its causes on one line, each cause said once. The library's errors name the
/// file and carry the OS's reason in their own message and also as their `source()`, so that
/// `{e}` alone is complete for a library user; `{e:#}` would then say the reason twice. A cause
/// whose text the line already holds is left out.
pub fn error_line(e: &anyhow::Error) -> String {
    let mut line = String::new();
    for cause in e.chain() {
        let text = cause.to_string();
        if text.is_empty() || line.contains(&text) {
            continue;
        }
        if !line.is_empty() {
            line.push_str(": ");
        }
        line.push_str(&text);
    }
    line
}

/// `unknown command 'xrya'. Did you mean 'xray'? 'inferlint --help' lists them.`
pub fn unknown_command(cmd: &str) -> String {
    let best = COMMANDS
        .iter()
        .map(|c| (similarity(cmd, c), *c))
        .filter(|(s, _)| *s >= 0.6)
        .fold(None, |best: Option<(f64, &str)>, cur| match best {
            Some(b) if b.0 >= cur.0 => Some(b),
            _ => Some(cur),
        });
    match best {
        Some((_, c)) => {
            format!("unknown command '{cmd}'. Did you mean '{c}'? 'inferlint --help' lists them.")
        }
        None => format!("unknown command '{cmd}'. 'inferlint --help' lists them."),
    }
}

/// 2·M/T, where M counts the characters of the matching blocks found by taking the longest
/// common substring and recursing on both sides (Ratcliff/Obershelp, as Python's difflib).
pub fn similarity(a: &str, b: &str) -> f64 {
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    let total = a.len() + b.len();
    if total == 0 {
        return 1.0;
    }
    2.0 * matching_chars(&a, &b) as f64 / total as f64
}

fn matching_chars(a: &[char], b: &[char]) -> usize {
    // The earliest longest common substring, as difflib's find_longest_match picks it.
    let (mut best_i, mut best_j, mut best_len) = (0, 0, 0);
    for i in 0..a.len() {
        for j in 0..b.len() {
            let mut k = 0;
            while i + k < a.len() && j + k < b.len() && a[i + k] == b[j + k] {
                k += 1;
            }
            if k > best_len {
                (best_i, best_j, best_len) = (i, j, k);
            }
        }
    }
    if best_len == 0 {
        return 0;
    }
    best_len
        + matching_chars(&a[..best_i], &b[..best_j])
        + matching_chars(&a[best_i + best_len..], &b[best_j + best_len..])
}

/// What `inferlint` with no arguments prints.
pub fn start_text() -> String {
    "\
inferlint checks an inference benchmark run for silent problems (tripwires).

Start here: let inferlint start the server, run your load and stop everything:

  inferlint run -o run/ --serve \"vllm serve Qwen/Qwen3-8B\" -- vllm bench serve --model Qwen/Qwen3-8B --max-concurrency 32 ...
  inferlint run -o run/ --serve \"python -m sglang.launch_server --model-path Qwen/Qwen3-8B --enable-metrics\" -- python -m sglang.benchmark.serving ...
  inferlint run -o run/ --serve \"trtllm-serve serve Qwen/Qwen3-8B --config perf.yaml\" -- python -m tensorrt_llm.serve.scripts.benchmark_serving ...

('xray' is the same command as 'run'.) Or attach to a server you started yourself:

  inferlint xray -o run/ --url http://127.0.0.1:8000 --boot-log server.log -- vllm bench serve ...

Then:

  inferlint report run/          the HTML report of a saved run
  inferlint explain T1           what a tripwire catches and why it matters
  inferlint demo                 the whole run on a simulated vLLM, no GPU needed

The engine is read from the server's metrics and log; --engine or INFERLINT_ENGINE
(vllm, sglang, trtllm, llamacpp) names it. 'inferlint --help' lists every command.
"
    .to_string()
}

/// `--help`: the commands in groups.
pub fn grouped_help() -> String {
    format!(
        "\
inferlint {version}: tells which of an inference benchmark's numbers hold.

Usage: inferlint <COMMAND> [OPTIONS]

Run and check a benchmark:
  run (xray)     start the server, probe it, run the load, check 27 tripwires, stop everything
  demo           the same on a built-in simulated vLLM (no GPU)

Check a saved run:
  report         the HTML report of a run folder (or of files named one by one)
  check-log      start-up failures, forced block sizes, ignored backends; pools across starts
  boot-facts     what a boot log says about the server that started
  preemption     T1: requests evicted and recomputed between two snapshots
  rate           T10: tokens per second between two snapshots
  series         T14, T9, T8 on a recording
  window         T16-T19: cached prompts, failed requests, short outputs, speculation
  lint-script    traps in benchmark campaign scripts (T2, T3, T10, T13, T16)

Record a server yourself:
  snapshot       one /metrics reading with its clocks
  watch          record gauges and counters to a series file
  probe          T7: one request, then 8 at once, then /health

The GPU:
  gpu-inspect    T2: no server process alive and the GPU's memory released
  teardown       stop every inference server process and check the GPU
  reap           tear down what earlier runs left behind

Learn:
  explain        what each tripwire catches, why it matters, how to check it

Install:
  completions    the shell completion script (bash, zsh, fish, elvish, powershell)
  man            the man page (-o DIR: one page per command)

Options:
  -h, --help     this text ('inferlint COMMAND --help' for a command's options)
  -V, --version  inferlint's version

Most commands take --engine vllm|sglang|trtllm (or INFERLINT_ENGINE). Verdict commands exit
1 on a failed tripwire, 2 when one could not tell or the input was bad, else 0.
",
        version = inferlint_core::VERSION
    )
}

/// The options every verdict command takes (docs/reference.md#common-to-every-command).
#[derive(clap::Args, Debug, Clone, Default)]
pub struct VerdictOptions {
    /// The engine the inputs came from (vllm, sglang, trtllm, llamacpp; default: read from the inputs, else
    /// INFERLINT_ENGINE); another engine's input is refused.
    #[arg(long, value_name = "ENGINE")]
    pub engine: Option<String>,
    /// Print the results as one JSON array.
    #[arg(long)]
    pub json: bool,
    /// A warning makes the exit status 1.
    #[arg(long)]
    pub strict: bool,
}

impl VerdictOptions {
    /// The engine named by `--engine` or `INFERLINT_ENGINE`.
    pub fn named_engine(
        &self,
    ) -> Result<Option<inferlint_core::engine::NamedEngine>, inferlint_core::engine::EngineNameError>
    {
        inferlint_core::engine::named_engine(self.engine.as_deref())
    }
}

/// How the commands that talk to a server reach it (docs/reference.md#reaching-the-server):
/// directly, whatever `http_proxy` says, unless a proxy is asked for.
#[derive(clap::Args, Debug, Clone, Default)]
pub struct HttpOptions {
    /// Reach the server through this proxy (default: directly; the environment's http_proxy is
    /// never used for it). Also INFERLINT_PROXY.
    #[arg(long, value_name = "URL")]
    pub proxy: Option<String>,
    /// Trust the CA certificates in this PEM file for an https:// server (a private CA). Also
    /// INFERLINT_CACERT.
    #[arg(long, value_name = "FILE")]
    pub cacert: Option<std::path::PathBuf>,
    /// Accept any certificate from an https:// server. Also INFERLINT_INSECURE=1.
    #[arg(long)]
    pub insecure: bool,
}

impl HttpOptions {
    /// Makes these options (over the environment's) the process's HTTP policy.
    pub fn apply(&self) -> anyhow::Result<()> {
        let policy = inferlint_http::HttpPolicy {
            proxy: self.proxy.clone(),
            cacert: self.cacert.clone(),
            insecure: self.insecure,
        }
        .or_env();
        inferlint_http::set_policy(policy)?;
        Ok(())
    }
}

/// Builds the tokio runtime the async commands run on.
pub fn runtime() -> anyhow::Result<tokio::runtime::Runtime> {
    Ok(tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn similarity_is_difflib_ratio() {
        assert!((similarity("xrya", "xray") - 0.75).abs() < 1e-9);
        assert_eq!(similarity("abc", "abc"), 1.0);
        assert_eq!(similarity("abc", "xyz"), 0.0);
    }

    #[test]
    fn typo_suggestions() {
        assert_eq!(
            unknown_command("xrya"),
            "unknown command 'xrya'. Did you mean 'xray'? 'inferlint --help' lists them."
        );
        assert_eq!(
            unknown_command("zzzzzzzz"),
            "unknown command 'zzzzzzzz'. 'inferlint --help' lists them."
        );
        assert!(unknown_command("checklog").contains("'check-log'"));
    }

    #[test]
    fn cli_definition_is_consistent() {
        use clap::CommandFactory;
        Cli::command().debug_assert();
    }
}
