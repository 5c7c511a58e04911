//! What a command line runs, read from its words: the launchers in front of it (`env X=1`,
//! `nohup`, `timeout 60`, `srun -n1`, `uv run`…), and whether what remains starts an inference
//! server (and of which engine) or a benchmark load.
//!
//! The one set of rules behind every place that asks: the script linter (a command in a
//! script), `teardown` and the run's neighbours (a process in `/proc`, [`process_engine`]), and
//! the `--serve` command of a run ([`command_engine`]). A server is recognised by the shape of
//! its argument vector, never by a substring of the whole line, so `vllm bench serve`,
//! `grep "vllm serve"`, `bash -c "vllm serve m"` and `tail -f "vllm serve.log"` are not servers.

use crate::engine::Engine;

/// The last path component of a word (`/opt/venv/bin/vllm` → `vllm`).
pub fn basename(s: &str) -> &str {
    s.rsplit('/').next().unwrap_or(s)
}

/// A Python interpreter: `python`, `python3`, `python3.12`, `python3.7m`. Not `python-config`
/// or `pythonista`, which are other programs that happen to share the prefix.
pub fn is_python(word: &str) -> bool {
    basename(word).strip_prefix("python").is_some_and(|v| {
        v.chars()
            .all(|c| c.is_ascii_digit() || c == '.' || c == 'm')
    })
}

/// inferlint itself, also as a renamed copy of its binary (`inferlint-0.3`).
fn is_inferlint(name: &str) -> bool {
    name.starts_with("inferlint")
}

/// A command that runs the rest of its arguments as another command.
struct Launcher {
    name: &'static str,
    /// It stays alive as the parent of the command (so its own command line exists in /proc);
    /// the others exec the command in their place.
    stays: bool,
    /// Options that take the next word as their value.
    valued: &'static [&'static str],
    /// Positional words before the command (timeout's duration, taskset's mask).
    positional: usize,
}

const fn launcher(
    name: &'static str,
    stays: bool,
    valued: &'static [&'static str],
    positional: usize,
) -> Launcher {
    Launcher {
        name,
        stays,
        valued,
        positional,
    }
}

const LAUNCHERS: &[Launcher] = &[
    launcher("nohup", false, &[], 0),
    launcher("exec", false, &["-a"], 0),
    launcher("command", false, &[], 0),
    launcher("builtin", false, &[], 0),
    launcher("nice", false, &["-n", "--adjustment"], 0),
    launcher("ionice", false, &["-c", "-n", "-p"], 0),
    launcher("setsid", false, &[], 0),
    launcher("stdbuf", false, &["-i", "-o", "-e"], 0),
    launcher("taskset", false, &[], 1),
    launcher("chrt", false, &[], 1),
    launcher("numactl", false, &["-N", "-m", "-C", "-p", "-i", "-P"], 0),
    launcher(
        "env",
        false,
        &["-u", "--unset", "-C", "--chdir", "-S", "--split-string"],
        0,
    ),
    launcher(
        "sudo",
        true,
        &["-u", "-g", "-C", "-D", "-h", "-p", "-r", "-t", "-U", "-T"],
        0,
    ),
    launcher("doas", true, &["-u", "-C"], 0),
    launcher(
        "timeout",
        true,
        &["-s", "-k", "--signal", "--kill-after"],
        1,
    ),
    launcher(
        "flock",
        true,
        &["-w", "-E", "--timeout", "--conflict-exit-code"],
        1,
    ),
    launcher("time", true, &["-f", "-o", "--format", "--output"], 0),
    launcher("srun", true, SRUN_VALUED, 0),
];

const SRUN_VALUED: &[&str] = &[
    "-n",
    "-N",
    "-c",
    "-G",
    "-p",
    "-t",
    "-J",
    "-o",
    "-e",
    "-i",
    "-w",
    "-x",
    "-A",
    "-q",
    "-D",
    "-m",
    "--gres",
    "--ntasks",
    "--nodes",
    "--cpus-per-task",
    "--gpus",
    "--partition",
    "--time",
    "--job-name",
    "--output",
    "--error",
    "--input",
    "--nodelist",
    "--exclude",
    "--account",
    "--qos",
    "--mem",
    "--export",
    "--chdir",
    "--gpus-per-task",
    "--mpi",
    "--cpu-bind",
    "--distribution",
    "--signal",
    "--kill-on-bad-exit",
];

/// Two-word launchers (`uv run`, `conda run`…): the tool, then `run`.
const RUN_TOOLS: &[&str] = &["uv", "conda", "pixi", "poetry", "micromamba"];

/// The options of the two-word launchers that take a value.
const RUN_VALUED: &[&str] = &[
    "-n",
    "--name",
    "-p",
    "--prefix",
    "--with",
    "--python",
    "--project",
    "--directory",
    "--env-file",
    "--group",
    "--extra",
    "-e",
    "--environment",
];

/// A command line with its launchers taken off.
#[derive(Debug, Clone, PartialEq)]
pub struct Stripped {
    /// Index of the first word of the command itself.
    pub start: usize,
    /// Index where each launcher that stays alive as a parent begins (`sudo`, `timeout`, `srun`,
    /// `uv run`).
    pub parents: Vec<usize>,
}

/// Takes the launchers (`nohup`, `env X=1`, `timeout 60`, `srun -n1`, `uv run`…) off a command line.
pub fn strip_launchers(argv: &[String]) -> Stripped {
    let mut i = 0;
    let mut parents = Vec::new();
    while i < argv.len() {
        let word = basename(&argv[i]);
        if RUN_TOOLS.contains(&word) && argv.get(i + 1).map(String::as_str) == Some("run") {
            parents.push(i);
            i = skip_options(argv, i + 2, RUN_VALUED, 0);
            continue;
        }
        let Some(l) = LAUNCHERS.iter().find(|l| l.name == word) else {
            break;
        };
        if l.stays {
            parents.push(i);
        }
        let mut j = skip_options(argv, i + 1, l.valued, l.positional);
        if l.name == "env" {
            while j < argv.len() && is_assignment(&argv[j]) {
                j += 1;
            }
        }
        i = j;
    }
    Stripped { start: i, parents }
}

fn is_assignment(word: &str) -> bool {
    match word.split_once('=') {
        Some((name, _)) => {
            !name.is_empty()
                && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
                && !name.starts_with(|c: char| c.is_ascii_digit())
        }
        None => false,
    }
}

/// Skips options from `i` on (and the values of the `valued` ones, and a `--`), then
/// `positional` words; the index of the word after them.
pub fn skip_options(argv: &[String], mut i: usize, valued: &[&str], positional: usize) -> usize {
    while i < argv.len() {
        let w = argv[i].as_str();
        if w == "--" {
            i += 1;
            break;
        }
        if !w.starts_with('-') || w == "-" {
            break;
        }
        let takes_value = valued.contains(&w) && !w.contains('=');
        i += if takes_value { 2 } else { 1 };
    }
    (i + positional).min(argv.len())
}

/// The Python modules that are a server when run with `python -m`, and whether the word after
/// the module must be `serve` (`vllm.entrypoints.cli.main` is the `vllm` command itself, whose
/// `bench serve` is a load).
const SERVER_MODULES: &[(&str, Engine, bool)] = &[
    ("vllm.entrypoints.openai.api_server", Engine::Vllm, false),
    ("vllm.entrypoints.cli.main", Engine::Vllm, true),
    ("sglang.launch_server", Engine::Sglang, false),
];

/// The engine whose server this command line starts
/// (docs/design/processes.md#finding-server-processes), after its launchers: `vllm serve`,
/// `sglang serve`, `trtllm-serve …` (not its `--help`), `llama-server …` (not its `--help` or
/// `--version`), `python -m` one of the server modules,
/// `python …/vllm serve` (a console script run by its interpreter), and `inferlint sim serve`,
/// which imitates vLLM, or the engine its `--engine` names. None for anything else.
pub fn server_engine(argv: &[String]) -> Option<Engine> {
    let rest = &argv[strip_launchers(argv).start..];
    let first = rest.first()?;
    let arg = |k: usize| rest.get(k).map(String::as_str);
    let name = basename(first);
    match name {
        "vllm" if arg(1) == Some("serve") => return Some(Engine::Vllm),
        "sglang" if arg(1) == Some("serve") => return Some(Engine::Sglang),
        "trtllm-serve" if !matches!(arg(1), Some("-h" | "--help") | None) => {
            return Some(Engine::Trtllm)
        }
        "llama-server" if !matches!(arg(1), Some("-h" | "--help" | "--version")) => {
            return Some(Engine::Llamacpp)
        }
        _ if is_inferlint(name) && arg(1) == Some("sim") && arg(2) == Some("serve") => {
            return Some(sim_engine(&rest[3..]))
        }
        _ => {}
    }
    if !is_python(first) {
        return None;
    }
    match python_target(rest)? {
        PythonTarget::Module(m, k) => SERVER_MODULES
            .iter()
            .find(|(module, _, _)| *module == m)
            .filter(|(_, _, needs_serve)| !needs_serve || arg(k + 1) == Some("serve"))
            .map(|&(_, e, _)| e),
        PythonTarget::Script(k) => server_engine(&rest[k..]),
    }
}

/// The engine `inferlint sim serve ARGS` imitates: its `--engine` (`--engine X` or
/// `--engine=X`), vLLM without one.
fn sim_engine(args: &[String]) -> Engine {
    let named = args
        .iter()
        .enumerate()
        .find_map(|(i, a)| match a.strip_prefix("--engine") {
            Some("") => args.get(i + 1).map(String::as_str),
            Some(v) => v.strip_prefix('='),
            None => None,
        });
    named.and_then(Engine::parse).unwrap_or(Engine::Vllm)
}

/// The engine of a process in `/proc`: a renamed engine process by its name (`VLLM::EngineCore`,
/// `sglang::scheduler`; `comm` is cut to 15 characters and argv may be wiped), else by
/// [`server_engine`] on its argument vector.
pub fn process_engine(comm: &str, argv: &[String]) -> Option<Engine> {
    let a0 = argv.first().map(String::as_str).unwrap_or("");
    for name in [comm, a0] {
        if name.starts_with("VLLM::") {
            return Some(Engine::Vllm);
        }
        if name.starts_with("sglang::") {
            return Some(Engine::Sglang);
        }
    }
    server_engine(argv)
}

/// The engine a command given as a server's (`--serve`) starts. The command is known to start
/// a server, so this is more tolerant than [`server_engine`]: the server may come after words
/// it does not know as launchers (`docker run IMAGE vllm serve`, `ssh node vllm serve`,
/// `apptainer exec IMG vllm serve`), and `python -m` any module of an engine's package
/// (`vllm…`, `sglang…`, `tensorrt_llm…`) names that engine unless the command is a load.
/// `python serve.py --model vllm`, `vllm bench serve` and an empty command name none.
pub fn command_engine(argv: &[String]) -> Option<Engine> {
    if let Some(e) = (0..argv.len()).find_map(|i| server_engine(&argv[i..])) {
        return Some(e);
    }
    if is_load(argv) {
        return None;
    }
    argv.windows(2)
        .filter(|w| w[0] == "-m")
        .find_map(|w| package_engine(&w[1]))
}

/// As [`command_engine`], on a command string (shell-split; unbalanced quotes name no engine).
pub fn command_string_engine(command: &str) -> Option<Engine> {
    command_engine(&shlex::split(command)?)
}

fn package_engine(module: &str) -> Option<Engine> {
    let package = module.split('.').next().unwrap_or(module);
    match package {
        "vllm" => Some(Engine::Vllm),
        "sglang" => Some(Engine::Sglang),
        "tensorrt_llm" => Some(Engine::Trtllm),
        _ => None,
    }
}

enum PythonTarget<'a> {
    /// `-m MODULE`, and the index of the module word.
    Module(&'a str, usize),
    /// A script path at this index.
    Script(usize),
}

/// What a Python command line runs: a module, a script, or neither (`-c CODE`, the REPL).
fn python_target(argv: &[String]) -> Option<PythonTarget<'_>> {
    let mut k = 1;
    while k < argv.len() {
        let w = argv[k].as_str();
        if w == "-m" {
            return argv.get(k + 1).map(|m| PythonTarget::Module(m, k + 1));
        }
        if let Some(m) = w.strip_prefix("-m").filter(|m| !m.is_empty()) {
            return Some(PythonTarget::Module(m, k));
        }
        match w {
            "-c" => return None,
            "-X" | "-W" => k += 2,
            _ if w.starts_with('-') => k += 1,
            _ => return Some(PythonTarget::Script(k)),
        }
    }
    None
}

/// True when the command line runs a benchmark load client (`vllm bench`, `inferlint sim
/// bench`, genai-perf, guidellm, aiperf, llmperf, `python -m sglang.bench_serving`, a
/// `benchmark_serving.py`).
pub fn is_load(argv: &[String]) -> bool {
    let rest = &argv[strip_launchers(argv).start..];
    let Some(first) = rest.first() else {
        return false;
    };
    let arg = |k: usize| rest.get(k).map(String::as_str);
    match basename(first) {
        "vllm" => return arg(1) == Some("bench"),
        name if is_inferlint(name) => return arg(1) == Some("sim") && arg(2) == Some("bench"),
        "genai-perf" | "guidellm" | "aiperf" | "llmperf" => return true,
        _ => {}
    }
    if !is_python(first) {
        return false;
    }
    match python_target(rest) {
        Some(PythonTarget::Module(m, _)) => {
            m.contains("bench_serving")
                || m.contains("benchmark_serving")
                || m.ends_with("benchmark.serving")
        }
        Some(PythonTarget::Script(k)) => {
            basename(&rest[k]).contains("benchmark_serving") || is_load(&rest[k..])
        }
        None => false,
    }
}

/// The value of `--flag V` or `--flag=V` (the last one wins, as argparse does).
pub fn flag_value(argv: &[String], flag: &str) -> Option<String> {
    let mut found = None;
    let prefix = format!("{flag}=");
    let mut i = 0;
    while i < argv.len() {
        let w = &argv[i];
        if w == flag {
            if let Some(v) = argv.get(i + 1) {
                found = Some(v.clone());
                i += 1;
            }
        } else if let Some(v) = w.strip_prefix(&prefix) {
            found = Some(v.to_string());
        }
        i += 1;
    }
    found
}

/// Whether the flag appears at all (`--flag`, `--flag V` or `--flag=V`).
pub fn has_flag(argv: &[String], flag: &str) -> bool {
    let prefix = format!("{flag}=");
    argv.iter().any(|w| w == flag || w.starts_with(&prefix))
}

/// A command given as one string (`--serve "vllm serve M --port 8000"`) that does not split
/// into words as a shell would.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{flag}: cannot split {command:?} into a command (unbalanced quotes?)")]
pub struct SplitError {
    /// The option that gave it (`--serve`, `--serve-node 1`).
    pub flag: String,
    pub command: String,
}

/// A command string split into words as a shell would: the one rule the command line (which
/// refuses it before anything starts) and the run (which stops before starting a server) share.
/// An empty command is no command.
pub fn split_command(flag: &str, command: &str) -> Result<Vec<String>, SplitError> {
    shlex::split(command)
        .filter(|a| !a.is_empty())
        .ok_or_else(|| SplitError {
            flag: flag.to_string(),
            command: command.to_string(),
        })
}

#[cfg(test)]
mod tests;
