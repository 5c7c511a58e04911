//! vLLM's log line shapes (docs/design/engines.md#log-lines): `(Process pid=N) LEVEL mm-dd HH:MM:SS
//! [file.py:line] message`, continuation lines of a multi-line message repeating the header, the
//! uvicorn lines, and the `file:line` each message is logged from in each release. Under
//! `--engine sglang` the same logger writes SGLang's shape instead: `[%Y-%m-%d %H:%M:%S{prefix}]
//! message`, uvicorn's lines as `[stamp] INFO:     …` (docs/design/engines.md#the-simulated-sglang,
//! the recorded 0.5 logs).

use std::io::Write;

use super::config::Release;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Level {
    Info,
    Warning,
    Error,
}

impl Level {
    fn name(self) -> &'static str {
        match self {
            Level::Info => "INFO",
            Level::Warning => "WARNING",
            Level::Error => "ERROR",
        }
    }
}

/// Whose log shape a [`Logger`] writes.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum Style {
    #[default]
    Vllm,
    /// SGLang's, with the process's ` DP{n} TP{n}` prefix inside the brackets (may be empty).
    Sglang { prefix: String },
    /// TensorRT-LLM's Python logger: `[%m/%d/%Y-%H:%M:%S] [TRT-LLM] [I] [module] message`, the
    /// site being the module (`_torch`, `llmapi`, `serve`); other output bare.
    Trtllm,
}

/// Writes one process's log lines to stdout (uvicorn's server lines go to stderr).
#[derive(Clone, Debug)]
pub struct Logger {
    pub release: Release,
    /// `APIServer`, `EngineCore`, `Worker_TP0`.
    pub process: String,
    pub pid: u32,
    pub style: Style,
}

impl Logger {
    pub fn new(release: Release, process: &str) -> Logger {
        Logger {
            release,
            process: process.to_string(),
            pid: std::process::id(),
            style: Style::Vllm,
        }
    }

    /// A logger in SGLang's shape; `prefix` as [`crate::sglang::log_prefix`] gives it.
    pub fn sglang(release: Release, process: &str, prefix: &str) -> Logger {
        Logger {
            style: Style::Sglang {
                prefix: prefix.to_string(),
            },
            ..Logger::new(release, process)
        }
    }

    /// A logger in TensorRT-LLM's shape (crate::trtllm::boot writes its lines).
    pub fn trtllm(release: Release, process: &str) -> Logger {
        Logger {
            style: Style::Trtllm,
            ..Logger::new(release, process)
        }
    }

    /// Whether it writes vLLM's lines (the `[shutdown]` lines and the like are vLLM's alone).
    pub fn is_vllm(&self) -> bool {
        self.style == Style::Vllm
    }

    fn prefix(&self) -> String {
        format!("({} pid={}) ", self.process, self.pid)
    }

    /// SGLang's `[2026-10-01 01:40:43 TP0] ` header.
    fn sglang_header(prefix: &str) -> String {
        let stamp = chrono::Local::now().format("%Y-%m-%d %H:%M:%S");
        format!("[{stamp}{prefix}] ")
    }

    /// The formatted text of one log call (several physical lines for a multi-line message).
    pub fn format(&self, level: Level, site: &str, msg: &str) -> String {
        if let Style::Sglang { prefix } = &self.style {
            // SGLang's formatter has no level or site; a multi-line message keeps one header.
            return format!("{}{msg}\n", Logger::sglang_header(prefix));
        }
        if self.style == Style::Trtllm {
            let stamp = chrono::Local::now().format("%m/%d/%Y-%H:%M:%S");
            let letter = &level.name()[..1];
            let module = if site.is_empty() {
                String::new()
            } else {
                format!("[{site}] ")
            };
            return format!("[{stamp}] [TRT-LLM] [{letter}] {module}{msg}\n");
        }
        let stamp = chrono::Local::now().format("%m-%d %H:%M:%S");
        let header = format!("{}{} {} [{}] ", self.prefix(), level.name(), stamp, site);
        // vLLM's NewLineFormatter repeats the header on every line; 0.33 keeps the `\r` its
        // `\r\n` separator leaves at the end of each continued line.
        let sep = match self.release {
            Release::V033 => "\r\n",
            _ => "\n",
        };
        let mut out = String::new();
        for (i, line) in msg.split('\n').enumerate() {
            if i > 0 {
                out.push_str(sep);
            }
            out.push_str(&header);
            out.push_str(line);
        }
        out.push('\n');
        out
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

    /// Output that is not a vLLM log record (tracebacks, uvicorn): 0.28 and 0.30 prefix every
    /// line a process writes; 0.33 leaves third-party output bare.
    pub fn decorate(&self, text: &str) -> String {
        if let Style::Sglang { prefix } = &self.style {
            // SGLang patches uvicorn's formats to `[%(asctime)s] %(levelprefix)s %(message)s`.
            return format!("{}{text}\n", Logger::sglang_header(prefix));
        }
        if self.style == Style::Trtllm {
            return format!("{text}\n");
        }
        match self.release {
            Release::V033 => format!("{text}\n"),
            _ => format!("{}{text}\n", self.prefix()),
        }
    }

    /// Always prefixed: Python's own traceback print in a vLLM process.
    pub fn raw(&self, text: &str) {
        if !self.is_vllm() {
            write_stdout(&format!("{text}\n"));
            return;
        }
        write_stdout(&format!("{}{text}\n", self.prefix()));
    }

    /// uvicorn's server lines (`INFO:     Started server process [N]`), on stderr.
    pub fn uvicorn(&self, msg: &str) {
        let line = self.decorate(&format!("INFO:     {msg}"));
        if !self.is_vllm() {
            // SGLang's lines all go to one stream here, so that a reader of two pipes still
            // sees them in the order they were written (the recorded log's order).
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
    fn a_multi_line_message_repeats_the_header() {
        let l = Logger {
            release: Release::V028,
            process: "APIServer".into(),
            pid: 821,
            style: Style::Vllm,
        };
        let text = l.format(Level::Info, "api_utils.py:333", &logo("0.28.0", "m"));
        let lines: Vec<&str> = text.split('\n').collect();
        assert_eq!(lines.len(), 7, "six lines and the final newline: {text:?}");
        assert!(lines[0].starts_with("(APIServer pid=821) INFO "));
        assert!(lines[0].ends_with(" [api_utils.py:333] "));
        assert!(lines[2].ends_with("█ ▀▄▀ █  version 0.28.0"));
        let l33 = Logger {
            release: Release::V033,
            ..l
        };
        assert_eq!(
            l33.format(Level::Info, "startup.py:38", "a\nb")
                .matches("\r\n")
                .count(),
            1
        );
    }

    #[test]
    fn third_party_output_is_prefixed_before_033_only() {
        let l = Logger {
            release: Release::V030,
            process: "APIServer".into(),
            pid: 5,
            style: Style::Vllm,
        };
        assert_eq!(
            l.decorate("INFO:     Shutting down"),
            "(APIServer pid=5) INFO:     Shutting down\n"
        );
        let l = Logger {
            release: Release::V033,
            ..l
        };
        assert_eq!(
            l.decorate("INFO:     Shutting down"),
            "INFO:     Shutting down\n"
        );
    }

    #[test]
    fn sglang_lines_carry_a_bracketed_stamp_and_prefix() {
        let l = Logger::sglang(Release::V028, "scheduler", " TP1");
        let line = l.format(Level::Info, "", "Load weight begin. avail mem=22.37 GB");
        let (head, msg) = line.split_once("] ").unwrap();
        assert!(head.starts_with("[20") && head.ends_with(" TP1"), "{line}");
        assert_eq!(msg, "Load weight begin. avail mem=22.37 GB\n");
        let api = Logger::sglang(Release::V028, "APIServer", "");
        let up = api.decorate("INFO:     Application startup complete.");
        assert!(up.starts_with('[') && up.contains("] INFO:     Application startup complete.\n"));
        assert!(!api.is_vllm() && Logger::new(Release::V028, "x").is_vllm());
    }

    #[test]
    fn python_string_literals() {
        assert_eq!(py_str("Qwen/Qwen3-0.6B"), "'Qwen/Qwen3-0.6B'");
        assert_eq!(py_str("it's"), "\"it's\"");
    }
}
