//! The log writer (docs/design/engines.md#log-lines): a process's [`Logger`] writes its records,
//! uvicorn's lines and tracebacks in the [`Shape`] of its engine (each engine's folder has one:
//! vLLM's `(Process pid=N) LEVEL mm-dd HH:MM:SS [file.py:line] message`, SGLang's and
//! TensorRT-LLM's), and [`sites`] gives the `file:line` each vLLM message is logged from in each
//! release.

use std::io::Write;

use super::settings::Release;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Level {
    Info,
    Warning,
    Error,
}

impl Level {
    pub fn name(self) -> &'static str {
        match self {
            Level::Info => "INFO",
            Level::Warning => "WARNING",
            Level::Error => "ERROR",
        }
    }
}

/// How one engine's processes write their lines: each engine's folder has one, and the
/// [`Logger`] of a process writes through it.
pub trait Shape: std::fmt::Debug + Sync {
    /// The formatted text of one log record (several physical lines for a multi-line message).
    fn record(&self, log: &Logger, level: Level, site: &str, msg: &str) -> String;
    /// Output that is not a log record (tracebacks, uvicorn's lines), newline included.
    fn decorate(&self, log: &Logger, text: &str) -> String;
    /// A line of Python's own traceback print, newline included.
    fn raw(&self, _log: &Logger, text: &str) -> String {
        format!("{text}\n")
    }
    /// Whether uvicorn's server lines go to stderr (else to stdout with the rest, so that a
    /// reader of two pipes still sees them in the order they were written).
    fn uvicorn_on_stderr(&self) -> bool {
        false
    }
    /// Whether the process writes vLLM's own lines (its `[shutdown]` lines and the like).
    fn is_vllm(&self) -> bool {
        false
    }
}

/// Writes one process's log lines to stdout (uvicorn's server lines may go to stderr).
#[derive(Clone, Debug)]
pub struct Logger {
    pub release: Release,
    /// `APIServer`, `EngineCore`, `Worker_TP0`.
    pub process: String,
    pub pid: u32,
    /// What the shape puts in each header beside the stamp (SGLang's ` DP{n} TP{n}`; may be empty).
    pub tag: String,
    pub shape: &'static dyn Shape,
}

impl Logger {
    pub fn new(release: Release, process: &str, shape: &'static dyn Shape) -> Logger {
        Logger {
            release,
            process: process.to_string(),
            pid: std::process::id(),
            tag: String::new(),
            shape,
        }
    }

    /// The same logger with `tag` in its headers.
    pub fn tagged(self, tag: &str) -> Logger {
        Logger {
            tag: tag.to_string(),
            ..self
        }
    }

    /// Whether it writes vLLM's lines (the `[shutdown]` lines and the like are vLLM's alone).
    pub fn is_vllm(&self) -> bool {
        self.shape.is_vllm()
    }

    /// The formatted text of one log call (several physical lines for a multi-line message).
    pub fn format(&self, level: Level, site: &str, msg: &str) -> String {
        self.shape.record(self, level, site, msg)
    }

    pub fn log(&self, level: Level, site: &str, msg: &str) {
        write_stdout(&self.format(level, site, msg));
    }

    pub fn info(&self, site: &str, msg: &str) {
        self.log(Level::Info, site, msg);
    }

    pub fn warn(&self, site: &str, msg: &str) {
        self.log(Level::Warning, site, msg);
    }

    pub fn error(&self, site: &str, msg: &str) {
        self.log(Level::Error, site, msg);
    }

    /// Output that is not a log record (tracebacks, uvicorn).
    pub fn decorate(&self, text: &str) -> String {
        self.shape.decorate(self, text)
    }

    /// Python's own traceback print in this process.
    pub fn raw(&self, text: &str) {
        write_stdout(&self.shape.raw(self, text));
    }

    /// uvicorn's server lines (`INFO:     Started server process [N]`).
    pub fn uvicorn(&self, msg: &str) {
        let line = self.decorate(&format!("INFO:     {msg}"));
        if !self.shape.uvicorn_on_stderr() {
            write_stdout(&line);
            return;
        }
        let mut e = std::io::stderr().lock();
        let _ = e.write_all(line.as_bytes());
        let _ = e.flush();
    }

    /// uvicorn's access line, on stdout.
    pub fn access(&self, peer: &str, method: &str, path: &str, status: u16, reason: &str) {
        write_stdout(&self.decorate(&format!(
            "INFO:     {peer} - \"{method} {path} HTTP/1.1\" {status} {reason}"
        )));
    }
}

pub fn write_stdout(text: &str) {
    let mut o = std::io::stdout().lock();
    let _ = o.write_all(text.as_bytes());
    let _ = o.flush();
}

/// The `file:line` vLLM logs each message from, per release: 0.28 and 0.30 from the recorded logs,
/// 0.33 from its format strings (docs/design/engines.md#log-lines) and (shutdown, engine death) the
/// recorded 0.32 run. A line no recording of that release shows gets a number near the neighbouring
/// release's; no reader depends on these numbers.
pub struct Sites {
    pub logo: &'static str,
    pub args: &'static str,
    pub arch: &'static str,
    pub max_len: &'static str,
    pub chunked_prefill: Option<&'static str>,
    pub eager: &'static str,
    pub engine_config: &'static str,
    pub load_start: &'static str,
    pub backend_auto: &'static str,
    pub backend_explicit: &'static str,
    pub weights: &'static str,
    pub model_memory: &'static str,
    pub hybrid_block: &'static str,
    pub hybrid_padding: &'static str,
    pub compile: Option<&'static str>,
    pub cudagraph_estimate: Option<&'static str>,
    pub blocks_override: &'static str,
    pub kv_memory: &'static str,
    pub kv_size: &'static str,
    pub graphs: &'static str,
    pub graph_pool: Option<&'static str>,
    pub init_done: &'static str,
    pub tasks: &'static str,
    pub listen: &'static str,
    pub routes_head: &'static str,
    pub route: &'static str,
    pub stats: &'static str,
    pub queue_full: &'static str,
    pub stream_error: &'static str,
    pub fail_start: &'static str,
    pub fatal: &'static str,
    pub output_handler: &'static str,
    pub api_shutdown: [&'static str; 5],
    pub client: [&'static str; 5],
    pub client_unexpected: &'static str,
    pub procman: [&'static str; 3],
    pub subprocess_kill: &'static str,
    pub engine_shutdown: [&'static str; 4],
    pub executor: [&'static str; 2],
    pub worker_parent_exit: &'static str,
}

pub fn sites(r: Release) -> &'static Sites {
    match r {
        Release::V028 => &V028,
        Release::V030 => &V030,
        Release::V033 => &V033,
    }
}

static V028: Sites = Sites {
    logo: "api_utils.py:333",
    args: "api_utils.py:272",
    arch: "model.py:672",
    max_len: "model.py:1965",
    chunked_prefill: None,
    eager: "vllm.py:1533",
    engine_config: "core.py:122",
    load_start: "gpu_model_runner.py:5419",
    backend_auto: "cuda.py:486",
    backend_explicit: "cuda.py:426",
    weights: "default_loader.py:430",
    model_memory: "gpu_model_runner.py:5515",
    hybrid_block: "interface.py:911",
    hybrid_padding: "interface.py:935",
    compile: Some("monitor.py:53"),
    cudagraph_estimate: Some("gpu_model_runner.py:6941"),
    blocks_override: "kv_cache_utils.py:2091",
    kv_memory: "gpu_worker.py:578",
    kv_size: "kv_cache_utils.py:1869",
    graphs: "gpu_model_runner.py:7048",
    graph_pool: Some("gpu_worker.py:741"),
    init_done: "core.py:347",
    tasks: "api_server.py:653",
    listen: "api_server.py:657",
    routes_head: "launcher.py:51",
    route: "launcher.py:60",
    stats: "loggers.py:310",
    queue_full: "async_llm.py:326",
    stream_error: "serving.py:493",
    fail_start: "core.py:1346",
    fatal: "core.py:1348",
    output_handler: "async_llm.py:744",
    api_shutdown: [
        "launcher.py:114",
        "launcher.py:130",
        "launcher.py:139",
        "launcher.py:142",
        "launcher.py:163",
    ],
    client: [
        "core_client.py:689",
        "core_client.py:691",
        "core_client.py:693",
        "core_client.py:694",
        "core_client.py:696",
    ],
    client_unexpected: "core_client.py:736",
    procman: ["utils.py:615", "utils.py:635", "utils.py:640"],
    subprocess_kill: "system_utils.py:221",
    engine_shutdown: [
        "core.py:1329",
        "core.py:1465",
        "core.py:1496",
        "core.py:1342",
    ],
    executor: ["multiproc_executor.py:463", "multiproc_executor.py:470"],
    worker_parent_exit: "multiproc_executor.py:827",
};

static V030: Sites = Sites {
    logo: "api_utils.py:347",
    args: "api_utils.py:286",
    arch: "model.py:692",
    max_len: "model.py:2030",
    chunked_prefill: None,
    eager: "vllm.py:1601",
    engine_config: "core.py:123",
    load_start: "model_runner.py:396",
    backend_auto: "cuda.py:538",
    backend_explicit: "cuda.py:478",
    weights: "default_loader.py:430",
    model_memory: "model_runner.py:428",
    hybrid_block: "interface.py:933",
    hybrid_padding: "interface.py:957",
    compile: Some("monitor.py:53"),
    cudagraph_estimate: None,
    blocks_override: "kv_cache_utils.py:2617",
    kv_memory: "gpu_worker.py:640",
    kv_size: "kv_cache_utils.py:2395",
    graphs: "model_runner.py:1066",
    graph_pool: Some("gpu_worker.py:825"),
    init_done: "core.py:372",
    tasks: "entry.py:135",
    listen: "entry.py:139",
    routes_head: "launcher.py:61",
    route: "launcher.py:70",
    stats: "loggers.py:315",
    queue_full: "async_llm.py:331",
    stream_error: "serving.py:498",
    fail_start: "core.py:1366",
    fatal: "core.py:1368",
    output_handler: "async_llm.py:843",
    api_shutdown: [
        "launcher.py:129",
        "launcher.py:145",
        "launcher.py:154",
        "launcher.py:157",
        "launcher.py:179",
    ],
    client: [
        "core_client.py:744",
        "core_client.py:746",
        "core_client.py:748",
        "core_client.py:749",
        "core_client.py:751",
    ],
    client_unexpected: "core_client.py:791",
    procman: ["utils.py:632", "utils.py:652", "utils.py:657"],
    subprocess_kill: "system_utils.py:223",
    engine_shutdown: [
        "core.py:1342",
        "core.py:1493",
        "core.py:1524",
        "core.py:1355",
    ],
    executor: ["multiproc_executor.py:471", "multiproc_executor.py:478"],
    worker_parent_exit: "multiproc_executor.py:835",
};

static V033: Sites = Sites {
    logo: "startup.py:38",
    args: "startup.py:96",
    arch: "model.py:744",
    max_len: "model.py:2170",
    chunked_prefill: Some("scheduler.py:310"),
    eager: "vllm.py:2005",
    engine_config: "core.py:139",
    load_start: "gpu_model_runner.py:4978",
    backend_auto: "cuda.py:508",
    backend_explicit: "cuda.py:448",
    weights: "default_loader.py:506",
    model_memory: "gpu_model_runner.py:5088",
    hybrid_block: "interface.py:1108",
    hybrid_padding: "interface.py:1132",
    compile: None,
    cudagraph_estimate: None,
    blocks_override: "kv_cache_utils.py:2619",
    kv_memory: "gpu_worker.py:772",
    kv_size: "kv_cache_utils.py:1147",
    graphs: "gpu_model_runner.py:6516",
    graph_pool: None,
    init_done: "core.py:405",
    tasks: "entry.py:135",
    listen: "entry.py:139",
    routes_head: "launcher.py:188",
    route: "launcher.py:197",
    stats: "loggers.py:335",
    queue_full: "async_llm.py:352",
    stream_error: "serving.py:512",
    fail_start: "core.py:1510",
    fatal: "core.py:1512",
    output_handler: "async_llm.py:906",
    api_shutdown: [
        "launcher.py:254",
        "launcher.py:270",
        "launcher.py:279",
        "launcher.py:282",
        "launcher.py:304",
    ],
    client: [
        "core_client.py:770",
        "core_client.py:772",
        "core_client.py:774",
        "core_client.py:775",
        "core_client.py:777",
    ],
    client_unexpected: "core_client.py:817",
    procman: ["utils.py:628", "utils.py:648", "utils.py:653"],
    subprocess_kill: "system_utils.py:225",
    engine_shutdown: [
        "core.py:1454",
        "core.py:1635",
        "core.py:1666",
        "core.py:1499",
    ],
    executor: ["multiproc_executor.py:479", "multiproc_executor.py:486"],
    worker_parent_exit: "multiproc_executor.py:843",
};

/// vLLM's start-up logo (0.28+): the version and model inside the art.
pub fn logo(version: &str, model: &str) -> String {
    format!(
        "\n       █     █     █▄   ▄█\n ▄▄ ▄█ █     █     █ ▀▄▀ █  version {version}\n  █▄█▀ █     █     █     █  model   {model}\n   ▀▀  ▀▀▀▀▀ ▀▀▀▀▀ ▀     ▀\n"
    )
}

/// A Python literal for a `non-default args` dict value.
pub fn py_str(s: &str) -> String {
    if s.contains('\'') && !s.contains('"') {
        format!("\"{s}\"")
    } else {
        format!("'{}'", s.replace('\\', "\\\\").replace('\'', "\\'"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn python_string_literals() {
        assert_eq!(py_str("Qwen/Qwen3-0.6B"), "'Qwen/Qwen3-0.6B'");
        assert_eq!(py_str("it's"), "\"it's\"");
    }
}
