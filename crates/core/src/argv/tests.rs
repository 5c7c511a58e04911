use super::*;

fn v(s: &str) -> Vec<String> {
    shlex::split(s).unwrap()
}

const VLLM: Option<Engine> = Some(Engine::Vllm);
const SGLANG: Option<Engine> = Some(Engine::Sglang);
const TRTLLM: Option<Engine> = Some(Engine::Trtllm);

/// Launchers, each put in front of every command of [`SERVERS`] and [`NOT_SERVERS`].
const LAUNCHERS: &[&str] = &[
    "nohup",
    "exec",
    "exec -a myname",
    "command",
    "builtin",
    "nice -n 5",
    "nice --adjustment 5",
    "ionice -c 2 -n 0",
    "setsid",
    "stdbuf -o L",
    "taskset 0xff",
    "taskset -c 0-7",
    "chrt 10",
    "numactl -N 0 -m 0",
    "numactl --cpunodebind=0 --membind=0",
    "env",
    "env CUDA_VISIBLE_DEVICES=0,1 VLLM_LOGGING_LEVEL=DEBUG",
    "env -u HOME X=1",
    "/usr/bin/env -C /tmp X=1",
    "sudo",
    "sudo -u bob -E",
    "doas -u bob",
    "timeout 600",
    "timeout -s INT -k 10 600",
    "timeout --signal=INT 600",
    "flock -w 5 /tmp/lock",
    "time",
    "time -f %e",
    "srun",
    "srun -n 1 -N 1 --gres gpu:1",
    "srun --ntasks=1 --gpus-per-task=1",
    "uv run",
    "uv run --with vllm --python 3.12",
    "conda run -n serving",
    "conda run --prefix /opt/env",
    "micromamba run -n serving",
    "pixi run",
    "poetry run",
    // Launchers in front of launchers.
    "nohup env X=1 taskset 0x1 numactl -N 0 timeout 600 srun -n1 uv run",
];

/// Server commands and the engine each starts.
const SERVERS: &[(&str, Option<Engine>)] = &[
    ("vllm serve Qwen/Qwen3-8B --port 8000", VLLM),
    ("/opt/venv/bin/vllm serve m", VLLM),
    ("sglang serve --model-path m", SGLANG),
    ("trtllm-serve serve m", TRTLLM),
    ("trtllm-serve m --backend pytorch", TRTLLM),
    (
        "python -m vllm.entrypoints.openai.api_server --model m",
        VLLM,
    ),
    ("python3 -u -m vllm.entrypoints.cli.main serve m", VLLM),
    ("python3.12 -m sglang.launch_server --model-path m", SGLANG),
    ("python -msglang.launch_server --model-path m", SGLANG),
    ("/opt/venv/bin/python /opt/venv/bin/vllm serve m", VLLM),
    ("python3 -X dev /opt/venv/bin/trtllm-serve serve m", TRTLLM),
    ("inferlint sim serve m --port 8100", VLLM),
    ("/x/target/debug/inferlint sim serve m", VLLM),
    (
        "inferlint sim serve m --engine sglang --enable-metrics",
        SGLANG,
    ),
    ("inferlint sim serve m --engine=sglang", SGLANG),
    ("inferlint sim serve m --engine vllm", VLLM),
];

/// Commands that name a server's program but start none.
const NOT_SERVERS: &[&str] = &[
    "vllm bench serve --model m",
    "vllm serve-docs",
    "/opt/tools/vllm",
    "sglang",
    "trtllm-serve",
    "trtllm-serve --help",
    "grep 'vllm serve' log",
    "tail -f 'logs/vllm serve.log'",
    "bash -c 'vllm serve m'",
    "python serve.py --model vllm",
    "python -c 'import vllm'",
    "python -m vllm.entrypoints.cli.main bench serve",
    "python -m sglang.bench_serving --backend sglang",
    "python -m mpi4py.futures.server",
    "python-config --includes vllm serve",
    "inferlint sim bench --model m",
    "inferlint teardown",
    "docker run img vllm serve m",
];

/// Every launcher in front of a server, and the same launcher in front of something that is no
/// server: each must be seen through, and must not make a server of what it runs.
#[test]
fn every_launcher_is_seen_through_in_both_directions() {
    for l in LAUNCHERS {
        for &(cmd, engine) in SERVERS {
            let line = format!("{l} {cmd}");
            assert_eq!(server_engine(&v(&line)), engine, "{line}");
            assert_eq!(command_engine(&v(&line)), engine, "{line}");
            assert_eq!(process_engine("x", &v(&line)), engine, "{line}");
        }
        for cmd in NOT_SERVERS {
            let line = format!("{l} {cmd}");
            assert_eq!(server_engine(&v(&line)), None, "{line}");
        }
    }
    // Without a launcher too.
    for &(cmd, engine) in SERVERS {
        assert_eq!(server_engine(&v(cmd)), engine, "{cmd}");
    }
    for cmd in NOT_SERVERS {
        assert_eq!(server_engine(&v(cmd)), None, "{cmd}");
        assert_eq!(process_engine("x", &v(cmd)), None, "{cmd}");
    }
}

#[test]
fn launchers_end_where_the_command_begins() {
    let cases = [
        ("nohup vllm serve m", 1, vec![]),
        ("env A=1 B=2 vllm serve m", 3, vec![]),
        ("timeout -s INT 600 vllm serve m", 4, vec![0]),
        ("sudo -u bob timeout 60 srun -n 1 cmd", 8, vec![0, 3, 5]),
        ("uv run --with x cmd", 4, vec![0]),
        ("conda run -n env cmd", 4, vec![0]),
        ("taskset -c 0-3 cmd", 3, vec![]),
        ("timeout -- 60 cmd", 3, vec![0]),
        ("srun -- cmd", 2, vec![0]),
        // Not launchers: `uv pip`, `conda activate`, a word that only ends in a launcher's name.
        ("uv pip install vllm", 0, vec![]),
        ("conda activate env", 0, vec![]),
        ("mynohup cmd", 0, vec![]),
        ("cmd nohup", 0, vec![]),
        ("", 0, vec![]),
    ];
    for (line, start, parents) in cases {
        let s = strip_launchers(&v(line));
        assert_eq!((s.start, s.parents), (start, parents), "{line}");
    }
}

#[test]
fn pythons_and_not_pythons() {
    for p in [
        "python",
        "python3",
        "python3.12",
        "/usr/bin/python3.7m",
        "python2",
    ] {
        assert!(is_python(p), "{p}");
    }
    for p in [
        "python-config",
        "pythonista",
        "ipython",
        "py",
        "/opt/python/bin/vllm",
        "",
    ] {
        assert!(!is_python(p), "{p}");
    }
}

#[test]
fn renamed_processes_are_servers_by_name_even_with_argv_wiped() {
    let cases = [
        ("VLLM::EngineCor", vec![], VLLM),
        ("x", v("VLLM::Worker_TP0"), VLLM),
        ("sglang::schedul", vec![], SGLANG),
        ("x", v("sglang::detokenizer"), SGLANG),
        ("vllm", vec![], None),
        ("python3", v("python -m mpi4py.futures.server"), None),
    ];
    for (comm, argv, engine) in cases {
        assert_eq!(process_engine(comm, &argv), engine, "{comm} {argv:?}");
    }
}

/// A `--serve` command is known to start a server: what it runs may follow words that are no
/// launchers, and any module of an engine's package names the engine.
#[test]
fn serve_commands_name_their_engine() {
    let d = command_string_engine;
    assert_eq!(d("vllm serve Qwen/Qwen3-8B --port 8001"), VLLM);
    assert_eq!(
        d("env CUDA_VISIBLE_DEVICES=0 /opt/venv/bin/vllm serve m"),
        VLLM
    );
    assert_eq!(d("python -m sglang.launch_server --model-path m"), SGLANG);
    assert_eq!(d("sglang serve --model-path m"), SGLANG);
    assert_eq!(d("trtllm-serve serve m"), TRTLLM);
    assert_eq!(
        d("/opt/venv/bin/python3 /opt/venv/bin/trtllm-serve serve m"),
        TRTLLM
    );
    assert_eq!(
        d("python -m vllm.entrypoints.openai.api_server --model m"),
        VLLM
    );
    assert_eq!(d("docker run --gpus all img vllm serve m"), VLLM);
    assert_eq!(d("ssh node1 python -m sglang.launch_server"), SGLANG);
    assert_eq!(d("python -m vllm.entrypoints.api_server --model m"), VLLM);
    assert_eq!(d("python -m tensorrt_llm.commands.serve serve m"), TRTLLM);
    assert_eq!(d("inferlint sim serve m --port 8100"), VLLM);
    // Not engines.
    assert_eq!(d("python serve.py --model vllm"), None);
    assert_eq!(d("vllm bench serve --model m"), None);
    assert_eq!(d("python -m sglang.bench_serving --backend sglang"), None);
    assert_eq!(d("python -m mpi4py.futures.server"), None);
    assert_eq!(d("bash -c 'vllm serve m'"), None);
    assert_eq!(d("vllm serve 'unbalanced"), None);
    assert_eq!(d(""), None);
}

#[test]
fn loads_in_both_directions() {
    let loads = [
        "vllm bench serve --model m",
        "python -m sglang.bench_serving --backend sglang",
        "python3 benchmarks/benchmark_serving.py",
        "python -m vllm.benchmarks.benchmark_serving",
        "inferlint sim bench --model m",
        "/x/inferlint-0.3 sim bench --model m",
        "genai-perf profile -m m",
        "guidellm benchmark",
        "aiperf profile",
        "llmperf",
        "nohup timeout 600 vllm bench serve --model m",
        "uv run python benchmarks/benchmark_serving.py",
    ];
    let not_loads = [
        "vllm serve m",
        "python serve.py",
        "python -c 'import vllm'",
        "inferlint sim serve m",
        "inferlint teardown",
        "curl localhost:8000",
        "",
    ];
    for l in loads {
        assert!(is_load(&v(l)), "{l}");
    }
    for l in not_loads {
        assert!(!is_load(&v(l)), "{l}");
    }
}

// The script linter's own cases, from before the rules were one module.
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
