//! What a command line does, read from its words: the launchers in front of it, whether it starts
//! an inference server or a load, runs a shell string, or kills processes by pattern.

use inferlint_core::engine::Engine;

pub fn basename(s: &str) -> &str {
    s.rsplit('/').next().unwrap_or(s)
}

pub fn is_shell(word: &str) -> bool {
    matches!(basename(word), "bash" | "sh" | "dash" | "zsh" | "ksh")
}

fn is_python(word: &str) -> bool {
    let b = basename(word);
    b.starts_with("python")
        && b[6..]
            .chars()
            .all(|c| c.is_ascii_digit() || c == '.' || c == 'm')
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

const LAUNCHERS: &[Launcher] = &[
    Launcher {
        name: "nohup",
        stays: false,
        valued: &[],
        positional: 0,
    },
    Launcher {
        name: "exec",
        stays: false,
        valued: &["-a"],
        positional: 0,
    },
    Launcher {
        name: "command",
        stays: false,
        valued: &[],
        positional: 0,
    },
    Launcher {
        name: "builtin",
        stays: false,
        valued: &[],
        positional: 0,
    },
    Launcher {
        name: "nice",
        stays: false,
        valued: &["-n", "--adjustment"],
        positional: 0,
    },
    Launcher {
        name: "ionice",
        stays: false,
        valued: &["-c", "-n", "-p"],
        positional: 0,
    },
    Launcher {
        name: "setsid",
        stays: false,
        valued: &[],
        positional: 0,
    },
    Launcher {
        name: "stdbuf",
        stays: false,
        valued: &["-i", "-o", "-e"],
        positional: 0,
    },
    Launcher {
        name: "taskset",
        stays: false,
        valued: &[],
        positional: 1,
    },
    Launcher {
        name: "chrt",
        stays: false,
        valued: &[],
        positional: 1,
    },
    Launcher {
        name: "numactl",
        stays: false,
        valued: &["-N", "-m", "-C", "-p", "-i", "-P"],
        positional: 0,
    },
    Launcher {
        name: "env",
        stays: false,
        valued: &["-u", "--unset", "-C", "--chdir", "-S", "--split-string"],
        positional: 0,
    },
    Launcher {
        name: "sudo",
        stays: true,
        valued: &["-u", "-g", "-C", "-D", "-h", "-p", "-r", "-t", "-U", "-T"],
        positional: 0,
    },
    Launcher {
        name: "doas",
        stays: true,
        valued: &["-u", "-C"],
        positional: 0,
    },
    Launcher {
        name: "timeout",
        stays: true,
        valued: &["-s", "-k", "--signal", "--kill-after"],
        positional: 1,
    },
    Launcher {
        name: "flock",
        stays: true,
        valued: &["-w", "-E", "--timeout", "--conflict-exit-code"],
        positional: 1,
    },
    Launcher {
        name: "time",
        stays: true,
        valued: &["-f", "-o", "--format", "--output"],
        positional: 0,
    },
    Launcher {
        name: "srun",
        stays: true,
        valued: &[
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
        ],
        positional: 0,
    },
];

/// A command line with its launchers taken off.
#[derive(Debug, Clone, PartialEq)]
pub struct Stripped {
    /// Index of the first word of the command itself.
    pub start: usize,
    /// Index where each launcher that stays alive as a parent begins (`sudo`, `timeout`, `srun`).
    pub parents: Vec<usize>,
}

/// Takes the launchers (`nohup`, `env X=1`, `timeout 60`, `srun -n1`, `uv run`…) off a command line.
pub fn strip_launchers(argv: &[String]) -> Stripped {
    let mut i = 0;
    let mut parents = Vec::new();
    while i < argv.len() {
        let word = basename(&argv[i]);
        // Two-word launchers: `uv run`, `conda run`, `pixi run`, `poetry run`.
        if matches!(word, "uv" | "conda" | "pixi" | "poetry" | "micromamba")
            && argv.get(i + 1).map(String::as_str) == Some("run")
        {
            parents.push(i);
            i = skip_options(
                argv,
                i + 2,
                &[
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
                ],
                0,
            );
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

/// Skips options (and the values of `valued` ones) and then `positional` words.
fn skip_options(argv: &[String], mut i: usize, valued: &[&str], positional: usize) -> usize {
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

/// The engine whose server this command line starts
/// (docs/design/processes.md#finding-server-processes, after the launchers; `inferlint sim serve`
/// counts as vLLM, which it imitates).
pub fn server_engine(argv: &[String]) -> Option<Engine> {
    let s = strip_launchers(argv);
    let rest = &argv[s.start..];
    let first = rest.first()?;
    let arg = |k: usize| rest.get(k).map(String::as_str);
    match basename(first) {
        "vllm" if arg(1) == Some("serve") => return Some(Engine::Vllm),
        "sglang" if arg(1) == Some("serve") => return Some(Engine::Sglang),
        "trtllm-serve" if !matches!(arg(1), Some("-h" | "--help") | None) => {
            return Some(Engine::Trtllm)
        }
        "inferlint" if arg(1) == Some("sim") && arg(2) == Some("serve") => {
            return Some(Engine::Vllm)
        }
        _ => {}
    }
    if is_python(first) {
        match python_target(rest)? {
            PythonTarget::Module(m, k) => {
                return match m {
                    "vllm.entrypoints.openai.api_server" => Some(Engine::Vllm),
                    "vllm.entrypoints.cli.main" if arg(k + 1) == Some("serve") => {
                        Some(Engine::Vllm)
                    }
                    "sglang.launch_server" => Some(Engine::Sglang),
                    _ => None,
                };
            }
            PythonTarget::Script(k) => return server_engine(&rest[k..]),
        }
    }
    None
}

enum PythonTarget<'a> {
    /// `-m MODULE`, and the index of the module word.
    Module(&'a str, usize),
    /// A script path at this index.
    Script(usize),
}

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
        if matches!(w, "-X" | "-W" | "-c") {
            if w == "-c" {
                return None;
            }
            k += 2;
            continue;
        }
        if w.starts_with('-') {
            k += 1;
            continue;
        }
        return Some(PythonTarget::Script(k));
    }
    None
}

/// True when the command line runs a benchmark load client.
pub fn is_load(argv: &[String]) -> bool {
    let s = strip_launchers(argv);
    let rest = &argv[s.start..];
    let Some(first) = rest.first() else {
        return false;
    };
    let arg = |k: usize| rest.get(k).map(String::as_str);
    match basename(first) {
        "vllm" => return arg(1) == Some("bench"),
        "inferlint" => return arg(1) == Some("sim") && arg(2) == Some("bench"),
        "genai-perf" | "guidellm" | "aiperf" | "llmperf" => return true,
        _ => {}
    }
    if is_python(first) {
        return match python_target(rest) {
            Some(PythonTarget::Module(m, _)) => {
                m.contains("bench_serving")
                    || m.contains("benchmark_serving")
                    || m.ends_with("benchmark.serving")
            }
            Some(PythonTarget::Script(k)) => {
                basename(&rest[k]).contains("benchmark_serving") || is_load(&rest[k..])
            }
            None => false,
        };
    }
    false
}

/// A shell string that a command runs (`bash -c STR`, `su -c STR`, `ssh host STR`,
/// `sbatch --wrap STR`), with the command lines of the processes that hold it in /proc.
#[derive(Debug, Clone, PartialEq)]
pub struct ShellString {
    /// Index of the word holding the string, or of the first of several words ssh joins.
    pub word: usize,
    /// With ssh the remaining words are joined by spaces.
    pub joined: bool,
    /// Word ranges (start..end) of argv, each the command line of one process whose argv
    /// contains the string: every launcher that stays, and the shell itself.
    pub holders: Vec<std::ops::Range<usize>>,
    /// The holder runs elsewhere (ssh): the string is its own remote `bash -c` command line.
    pub remote: bool,
}

pub fn shell_string(argv: &[String]) -> Option<ShellString> {
    let s = strip_launchers(argv);
    let rest_at = s.start;
    let first = argv.get(rest_at)?;
    let end = argv.len();
    let holders = |shell_at: usize| {
        let mut h: Vec<_> = s.parents.iter().map(|&p| p..end).collect();
        h.push(shell_at..end);
        h
    };
    let name = basename(first);
    if is_shell(first) {
        let mut c_mode = false;
        let mut k = rest_at + 1;
        while k < end {
            let w = argv[k].as_str();
            if w == "-o" || w == "+o" || w == "-O" || w == "+O" {
                k += 2;
                continue;
            }
            if w.starts_with("--") {
                k += 1;
                continue;
            }
            if (w.starts_with('-') || w.starts_with('+')) && w.len() > 1 {
                c_mode |= w.starts_with('-') && w[1..].contains('c');
                k += 1;
                continue;
            }
            break;
        }
        return (c_mode && k < end).then(|| ShellString {
            word: k,
            joined: false,
            holders: holders(rest_at),
            remote: false,
        });
    }
    if matches!(name, "su" | "runuser") {
        let k = (rest_at + 1..end).find(|&k| argv[k] == "-c" || argv[k] == "--command")?;
        return (k + 1 < end).then(|| ShellString {
            word: k + 1,
            joined: false,
            holders: holders(rest_at),
            remote: false,
        });
    }
    if name == "ssh" {
        let k = skip_options(
            argv,
            rest_at + 1,
            &[
                "-b", "-c", "-D", "-E", "-e", "-F", "-I", "-i", "-J", "-L", "-l", "-m", "-O", "-o",
                "-p", "-Q", "-R", "-S", "-W", "-w",
            ],
            1,
        );
        return (k < end).then(|| ShellString {
            word: k,
            joined: true,
            holders: Vec::new(),
            remote: true,
        });
    }
    if name == "sbatch" {
        let k = (rest_at + 1..end).find(|&k| argv[k] == "--wrap")?;
        return (k + 1 < end).then(|| ShellString {
            word: k + 1,
            joined: false,
            // The batch script runs as `/bin/sh …/slurm_script`: the string is in no argv.
            holders: Vec::new(),
            remote: false,
        });
    }
    None
}

/// True when the command is a shell reading its script from standard input (`bash`, `bash -s`,
/// `ssh host bash -s`), so a here-document given to it is code.
pub fn reads_script_from_stdin(argv: &[String]) -> bool {
    let s = strip_launchers(argv);
    let Some(first) = argv.get(s.start) else {
        return false;
    };
    if basename(first) == "ssh" {
        return argv[s.start + 1..].iter().any(|w| is_shell(w));
    }
    is_shell(first)
        && argv[s.start + 1..]
            .iter()
            .all(|w| w.starts_with('-') && !w[1..].contains('c'))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(s: &str) -> Vec<String> {
        shlex::split(s).unwrap()
    }

    #[test]
    fn servers_by_structure() {
        assert_eq!(
            server_engine(&v("vllm serve Qwen/Qwen3-8B --port 8000")),
            Some(Engine::Vllm)
        );
        assert_eq!(
            server_engine(&v("nohup env CUDA_VISIBLE_DEVICES=0 vllm serve m")),
            Some(Engine::Vllm)
        );
        assert_eq!(
            server_engine(&v("timeout 600 srun -n 1 vllm serve m")),
            Some(Engine::Vllm)
        );
        assert_eq!(
            server_engine(&v(
                "python3 -m vllm.entrypoints.openai.api_server --model m"
            )),
            Some(Engine::Vllm)
        );
        assert_eq!(
            server_engine(&v("/opt/venv/bin/python /opt/venv/bin/vllm serve m")),
            Some(Engine::Vllm)
        );
        assert_eq!(
            server_engine(&v("python -m sglang.launch_server --model-path m")),
            Some(Engine::Sglang)
        );
        assert_eq!(
            server_engine(&v("trtllm-serve serve m")),
            Some(Engine::Trtllm)
        );
        assert_eq!(
            server_engine(&v("inferlint sim serve m")),
            Some(Engine::Vllm)
        );
        assert_eq!(server_engine(&v("vllm bench serve --model m")), None);
        assert_eq!(server_engine(&v("grep 'vllm serve' log")), None);
        assert_eq!(server_engine(&v("bash -c 'vllm serve m'")), None);
    }

    #[test]
    fn loads() {
        assert!(is_load(&v("vllm bench serve --model m")));
        assert!(is_load(&v(
            "python -m sglang.bench_serving --backend sglang"
        )));
        assert!(is_load(&v("python3 benchmarks/benchmark_serving.py")));
        assert!(is_load(&v("inferlint sim bench --model m")));
        assert!(!is_load(&v("vllm serve m")));
    }

    #[test]
    fn shell_strings_and_their_holders() {
        let a = v("timeout 60 bash -lc 'pkill -f x'");
        let s = shell_string(&a).unwrap();
        assert_eq!(s.word, 4);
        assert_eq!(s.holders, vec![0..5, 2..5]);
        assert_eq!(shell_string(&v("bash script.sh")), None);
        assert_eq!(shell_string(&v("sh -e -c 'x'")).unwrap().word, 3);
        assert_eq!(shell_string(&v("su bob -c 'x'")).unwrap().word, 3);
        let ssh = shell_string(&v("ssh -p 22 node1 pkill -f x")).unwrap();
        assert_eq!((ssh.word, ssh.joined, ssh.remote), (4, true, true));
        assert_eq!(shell_string(&v("sbatch --wrap 'x'")).unwrap().word, 2);
    }

    #[test]
    fn stdin_shells() {
        assert!(reads_script_from_stdin(&v("bash")));
        assert!(reads_script_from_stdin(&v("bash -s")));
        assert!(reads_script_from_stdin(&v("ssh node bash -s")));
        assert!(!reads_script_from_stdin(&v("bash -c x")));
        assert!(!reads_script_from_stdin(&v("bash run.sh")));
        assert!(!reads_script_from_stdin(&v("cat")));
    }
}
