//! What a `pkill`/`pgrep`/`killall` pattern hits: tried against the processes an inference server
//! runs as (docs/design/processes.md#finding-server-processes) and against the processes running
//! the script itself.

use regex::{Regex, RegexBuilder};

use super::argv::basename;
use super::killer::{KillTool, Killer};
use inferlint_core::engine::Engine;

/// A process as pkill sees it: its command line (argv joined by spaces) and its name (`comm`,
/// at most 15 bytes).
#[derive(Debug, Clone, PartialEq)]
pub struct Proc {
    pub cmdline: String,
    pub comm: String,
}

impl Proc {
    pub fn new(cmdline: &str) -> Proc {
        let argv0 = cmdline.split(' ').next().unwrap_or("");
        Proc::named(cmdline, basename(argv0))
    }

    pub fn named(cmdline: &str, comm: &str) -> Proc {
        Proc {
            cmdline: cmdline.to_string(),
            comm: comm.chars().take(15).collect(),
        }
    }
}

/// The role of a process in a server's tree.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// What the user started (`vllm serve …`).
    Server,
    /// A process the server starts that keeps the GPU (renamed, or an MPI worker).
    Engine,
}

pub struct ServerProc {
    pub engine: Engine,
    pub role: Role,
    /// How users know it (`VLLM::EngineCore`).
    pub label: &'static str,
    pub cmdline: &'static str,
    pub comm: &'static str,
}

/// Typical processes of each engine's server, as `ps` shows them
/// (docs/design/processes.md#finding-server-processes).
pub const SERVER_PROCS: &[ServerProc] = &[
    ServerProc {
        engine: Engine::Vllm,
        role: Role::Server,
        label: "vllm serve",
        cmdline: "/opt/venv/bin/python3 /opt/venv/bin/vllm serve Qwen/Qwen3-8B --port 8000",
        comm: "vllm",
    },
    ServerProc {
        engine: Engine::Vllm,
        role: Role::Server,
        label: "vllm serve",
        cmdline: "vllm serve Qwen/Qwen3-8B --port 8000",
        comm: "vllm",
    },
    ServerProc {
        engine: Engine::Vllm,
        role: Role::Server,
        label: "python -m vllm.entrypoints.openai.api_server",
        cmdline: "python3 -m vllm.entrypoints.openai.api_server --model Qwen/Qwen3-8B --port 8000",
        comm: "python3",
    },
    ServerProc {
        engine: Engine::Vllm,
        role: Role::Server,
        label: "inferlint sim serve",
        cmdline: "inferlint sim serve Qwen/Qwen3-8B --port 8000",
        comm: "inferlint",
    },
    ServerProc {
        engine: Engine::Vllm,
        role: Role::Engine,
        label: "VLLM::EngineCore",
        cmdline: "VLLM::EngineCore",
        comm: "VLLM::EngineCor",
    },
    ServerProc {
        engine: Engine::Vllm,
        role: Role::Engine,
        label: "VLLM::Worker_TP0",
        cmdline: "VLLM::Worker_TP0",
        comm: "VLLM::Worker_TP",
    },
    ServerProc {
        engine: Engine::Sglang,
        role: Role::Server,
        label: "python -m sglang.launch_server",
        cmdline: "python3 -m sglang.launch_server --model-path Qwen/Qwen3-8B --port 30000",
        comm: "python3",
    },
    ServerProc {
        engine: Engine::Sglang,
        role: Role::Server,
        label: "sglang serve",
        cmdline: "/opt/venv/bin/python3 /opt/venv/bin/sglang serve --model-path Qwen/Qwen3-8B",
        comm: "sglang",
    },
    ServerProc {
        engine: Engine::Sglang,
        role: Role::Engine,
        label: "sglang::scheduler",
        cmdline: "sglang::scheduler",
        comm: "sglang::schedul",
    },
    ServerProc {
        engine: Engine::Sglang,
        role: Role::Engine,
        label: "sglang::detokenizer",
        cmdline: "sglang::detokenizer",
        comm: "sglang::detoken",
    },
    ServerProc {
        engine: Engine::Trtllm,
        role: Role::Server,
        label: "trtllm-serve",
        cmdline: "/opt/venv/bin/python3 /opt/venv/bin/trtllm-serve serve Qwen/Qwen3-8B --port 8000",
        comm: "trtllm-serve",
    },
    ServerProc {
        engine: Engine::Trtllm,
        role: Role::Engine,
        label: "mpi4py.futures.server",
        cmdline: "/opt/venv/bin/python3 -R -m mpi4py.futures.server",
        comm: "python3",
    },
];

/// A compiled kill pattern.
#[derive(Debug)]
pub struct Matcher {
    tool: KillTool,
    full: bool,
    /// killall's plain name match.
    name: Option<String>,
    regex: Option<Regex>,
    ignore_case: bool,
}

impl Matcher {
    /// Compiles one pattern of `k`. `pattern` is the pattern's text; pkill reads it as a POSIX
    /// extended regular expression (close enough to Rust's syntax; `\<`/`\>` become `\b`); one
    /// that does not compile is searched as plain text.
    pub fn new(k: &Killer, pattern: &str) -> Matcher {
        let plain_name = k.tool == KillTool::Killall && k.exact;
        let regex = (!plain_name).then(|| {
            let src = pattern.replace("\\<", "\\b").replace("\\>", "\\b");
            let src = if k.exact { format!("^(?:{src})$") } else { src };
            RegexBuilder::new(&src)
                .case_insensitive(k.ignore_case)
                .build()
                .or_else(|_| {
                    RegexBuilder::new(&regex::escape(pattern))
                        .case_insensitive(k.ignore_case)
                        .build()
                })
                .ok()
        });
        Matcher {
            tool: k.tool,
            full: k.full,
            name: plain_name.then(|| pattern.to_string()),
            regex: regex.flatten(),
            ignore_case: k.ignore_case,
        }
    }

    pub fn hits(&self, p: &Proc) -> bool {
        if let Some(name) = &self.name {
            // killall compares the name; names over 15 bytes against the executable's name.
            let argv0 = basename(p.cmdline.split(' ').next().unwrap_or(""));
            let eq = |a: &str, b: &str| {
                if self.ignore_case {
                    a.eq_ignore_ascii_case(b)
                } else {
                    a == b
                }
            };
            let short: String = name.chars().take(15).collect();
            return eq(&p.comm, &short) || (name.len() > 15 && eq(argv0, name));
        }
        let Some(re) = &self.regex else {
            return false;
        };
        let hay = if self.full && self.tool != KillTool::Killall {
            &p.cmdline
        } else {
            &p.comm
        };
        re.is_match(hay)
    }
}

/// What a set of patterns does to an engine's processes.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct EngineHits {
    pub servers_hit: Vec<&'static str>,
    pub engines_missed: Vec<&'static str>,
}

/// For each engine whose server at least one matcher hits: the engine processes none of them hit.
pub fn engine_coverage(matchers: &[&Matcher]) -> Vec<(Engine, EngineHits)> {
    let mut out = Vec::new();
    for engine in Engine::ALL {
        let procs: Vec<_> = SERVER_PROCS.iter().filter(|p| p.engine == engine).collect();
        let hit = |sp: &ServerProc| {
            let p = Proc::named(sp.cmdline, sp.comm);
            matchers.iter().any(|m| m.hits(&p))
        };
        let mut h = EngineHits::default();
        for sp in &procs {
            match (sp.role, hit(sp)) {
                (Role::Server, true) if !h.servers_hit.contains(&sp.label) => {
                    h.servers_hit.push(sp.label)
                }
                (Role::Engine, false) => h.engines_missed.push(sp.label),
                _ => {}
            }
        }
        if !h.servers_hit.is_empty() {
            out.push((engine, h));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::super::killer::killer;
    use super::*;

    fn m(cmd: &str) -> Matcher {
        let argv = shlex::split(cmd).unwrap();
        let k = killer(&argv).unwrap();
        Matcher::new(&k, &argv[k.patterns[0]])
    }

    #[test]
    fn full_patterns_search_the_command_line() {
        let p = Proc::new("bash -lc vllm serve m & sleep 5; pkill -f \"vllm serve\"");
        assert!(m("pkill -f 'vllm serve'").hits(&p));
        // The bracket keeps the pattern from matching its own text…
        let own = Proc::new("bash -lc sleep 5; pkill -f \"vllm[ ]serve\"");
        assert!(!m("pkill -f 'vllm[ ]serve'").hits(&own));
        // …but not a one-liner that also starts the server.
        assert!(m("pkill -f 'vllm[ ]serve'").hits(&p));
    }

    #[test]
    fn names_are_matched_without_f() {
        let core = Proc::named("VLLM::EngineCore", "VLLM::EngineCor");
        assert!(!m("pkill vllm").hits(&core));
        assert!(m("pkill -i vllm").hits(&core));
        assert!(m("pkill -f VLLM::").hits(&core));
        assert!(m("killall VLLM::EngineCore").hits(&core));
        assert!(!m("killall vllm").hits(&core));
        assert!(m("killall bash").hits(&Proc::new("/bin/bash ./x.sh")));
        assert!(m("pkill -x bash").hits(&Proc::new("/bin/bash ./x.sh")));
        assert!(!m("pkill -x bas").hits(&Proc::new("/bin/bash ./x.sh")));
    }

    #[test]
    fn coverage_names_what_a_name_match_misses() {
        let pk = m("pkill -f 'vllm serve'");
        let cov = engine_coverage(&[&pk]);
        assert_eq!(cov.len(), 1);
        assert_eq!(cov[0].0, Engine::Vllm);
        assert_eq!(
            cov[0].1.engines_missed,
            vec!["VLLM::EngineCore", "VLLM::Worker_TP0"]
        );
        let core = m("pkill -f VLLM::");
        let cov = engine_coverage(&[&pk, &core]);
        assert!(cov[0].1.engines_missed.is_empty());
        let sg = m("pkill -f sglang");
        let cov = engine_coverage(&[&sg]);
        assert_eq!(cov[0].0, Engine::Sglang);
        assert!(cov[0].1.engines_missed.is_empty());
        let sg = m("pkill -f sglang.launch_server");
        assert_eq!(engine_coverage(&[&sg])[0].1.engines_missed.len(), 2);
        let trt = m("pkill -f trtllm-serve");
        assert_eq!(
            engine_coverage(&[&trt])[0].1.engines_missed,
            vec!["mpi4py.futures.server"]
        );
        assert!(engine_coverage(&[&m("pkill -f nginx")]).is_empty());
    }
}
