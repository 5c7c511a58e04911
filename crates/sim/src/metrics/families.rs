//! The families each vLLM release registers, in its order, with their HELP text, labels, buckets
//! and pre-created children (docs/design/engines.md#metrics-exposition and the recorded 0.28/0.30
//! scrapes), and prometheus-fastapi-instrumentator's `http_*` families.

use crate::expo::{buckets_1_2_5, Family, Kind};
use crate::os::unix_now;
use crate::settings::{Release, ServeConfig};

const TTFT_BUCKETS: &[f64] = &[
    0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0,
    20.0, 40.0, 80.0, 160.0, 640.0, 2560.0,
];
const ITL_BUCKETS: &[f64] = &[
    0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0, 20.0,
    40.0, 80.0,
];
const REQUEST_LATENCY_BUCKETS: &[f64] = &[
    0.3, 0.5, 0.8, 1.0, 1.5, 2.0, 2.5, 5.0, 10.0, 15.0, 20.0, 30.0, 40.0, 50.0, 60.0, 120.0, 240.0,
    480.0, 960.0, 1920.0, 7680.0,
];
const ITERATION_TOKENS_BUCKETS: &[f64] = &[
    1.0, 8.0, 16.0, 32.0, 64.0, 128.0, 256.0, 512.0, 1024.0, 2048.0, 4096.0, 8192.0, 16384.0,
];
const HIGHR_BUCKETS: &[f64] = &[
    0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75, 1.0, 1.5, 2.0, 2.5, 3.0, 3.5, 4.0, 4.5, 5.0,
    7.5, 10.0, 30.0, 60.0,
];

pub(super) const ML: &[&str] = &["model_name", "engine"];

/// The accepted draft tokens by position in the draft, one child per position.
pub(super) const SPEC_PER_POS: &str = "vllm:spec_decode_num_accepted_tokens_per_pos";

fn f(name: &str, help: &str, kind: Kind, labels: &[&str]) -> Family {
    Family::new(name, help, kind, labels)
}

/// The releases that register a family (or give `cache_config_info` a label).
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Releases {
    All,
    Before033,
    Since030,
    Only030,
    Only033,
}

impl Releases {
    pub(super) fn include(self, r: Release) -> bool {
        match self {
            Releases::All => true,
            Releases::Before033 => r != Release::V033,
            Releases::Since030 => r != Release::V028,
            Releases::Only030 => r == Release::V030,
            Releases::Only033 => r == Release::V033,
        }
    }
}

/// A family's type, and a histogram's bucket bounds.
enum Type {
    Counter,
    Gauge,
    Histogram(&'static [f64]),
    /// Bounds of 1, 2, 5 × 10ⁿ up to the model length.
    TokenHistogram,
}

/// One family of the table.
struct Spec {
    name: &'static str,
    help: &'static str,
    kind: Type,
    labels: &'static [&'static str],
    releases: Releases,
    /// Registered on a speculative server only (and first, `field/spec-ngram/after.prom`).
    speculative: bool,
}

const fn spec(name: &'static str, help: &'static str, labels: &'static [&'static str]) -> Spec {
    Spec {
        name,
        help,
        kind: Type::Counter,
        labels,
        releases: Releases::All,
        speculative: true,
    }
}

const fn fam(
    name: &'static str,
    help: &'static str,
    kind: Type,
    labels: &'static [&'static str],
    releases: Releases,
) -> Spec {
    Spec {
        name,
        help,
        kind,
        labels,
        releases,
        speculative: false,
    }
}

const fn counter(name: &'static str, help: &'static str) -> Spec {
    fam(name, help, Type::Counter, ML, Releases::All)
}

const fn gauge(name: &'static str, help: &'static str) -> Spec {
    fam(name, help, Type::Gauge, ML, Releases::All)
}

const fn histogram(name: &'static str, help: &'static str, kind: Type) -> Spec {
    fam(name, help, kind, ML, Releases::All)
}

use Releases::{Before033, Only033, Since030};
use Type::{Histogram, TokenHistogram};

/// The `vllm:` families of every release, in registration order.
const FAMILIES: &[Spec] = &[
    spec("vllm:spec_decode_num_drafts", "Number of spec decoding drafts.", ML),
    spec("vllm:spec_decode_num_draft_tokens", "Number of draft tokens.", ML),
    spec("vllm:spec_decode_num_accepted_tokens", "Number of accepted tokens.", ML),
    spec(SPEC_PER_POS, "Accepted tokens per draft position.", &["model_name", "engine", "position"]),
    fam("vllm:estimated_flops_per_gpu_total", "Estimated number of floating point operations per GPU (for Model Flops Utilization calculations).", Type::Counter, ML, Before033),
    fam("vllm:estimated_read_bytes_per_gpu_total", "Estimated number of bytes read from memory per GPU (for Model Flops Utilization calculations).", Type::Counter, ML, Before033),
    fam("vllm:estimated_write_bytes_per_gpu_total", "Estimated number of bytes written to memory per GPU (for Model Flops Utilization calculations).", Type::Counter, ML, Before033),
    gauge("vllm:num_requests_running", "Number of requests in model execution batches."),
    gauge("vllm:num_requests_waiting", "Number of requests waiting to be processed."),
    fam("vllm:num_requests_waiting_by_reason", "Number of waiting requests by reason. Reason labels: 'capacity' = waiting for scheduling capacity; 'deferred' = deferred by transient constraints (LoRA budget, KV transfer, blocked status). Sum of all reasons equals vllm:num_requests_waiting.", Type::Gauge, &["model_name", "engine", "reason"], Releases::All),
    fam("vllm:engine_sleep_state", "Engine sleep state; awake = 0 means engine is sleeping; awake = 1 means engine is awake; weights_offloaded = 1 means sleep level 1; discard_all = 1 means sleep level 2.", Type::Gauge, &["model_name", "engine", "sleep_state"], Releases::All),
    gauge("vllm:kv_cache_usage_perc", "KV-cache usage. 1 means 100 percent usage."),
    counter("vllm:prefix_cache_queries", "Prefix cache queries, in terms of number of queried tokens."),
    counter("vllm:prefix_cache_hits", "Prefix cache hits, in terms of number of cached tokens."),
    counter("vllm:external_prefix_cache_queries", "External prefix cache queries from KV connector cross-instance cache sharing, in terms of number of queried tokens."),
    counter("vllm:external_prefix_cache_hits", "External prefix cache hits from KV connector cross-instance cache sharing, in terms of number of cached tokens."),
    counter("vllm:mm_cache_queries", "Multi-modal cache queries, in terms of number of queried items."),
    counter("vllm:mm_cache_hits", "Multi-modal cache hits, in terms of number of cached items."),
    counter("vllm:num_preemptions", "Cumulative number of preemption from the engine."),
    counter("vllm:prompt_tokens", "Number of prefill tokens processed."),
    fam("vllm:prompt_tokens_by_source", "Number of prompt tokens by source.", Type::Counter, &["model_name", "engine", "source"], Releases::All),
    counter("vllm:prompt_tokens_cached", "Number of cached prompt tokens (local + external)."),
    fam("vllm:prompt_tokens_cached_by_source", "Prefix-cache hit tokens by the cache tier that supplied them: device (local HBM), host (offloaded to DRAM), disk, p2p (transferred from another vLLM instance) or external_unspecified. Counted at admission; sums to vllm:prefix_cache_hits + vllm:external_prefix_cache_hits.", Type::Counter, &["model_name", "engine", "source"], Only033),
    counter("vllm:generation_tokens", "Number of generation tokens processed."),
    fam("vllm:request_success", "Count of successfully processed requests.", Type::Counter, &["model_name", "engine", "finished_reason"], Releases::All),
    fam("vllm:admission_rejections", "Number of admission attempts rejected by a queue limit, by reason.", Type::Counter, &["model_name", "reason"], Only033),
    histogram("vllm:request_prompt_tokens", "Number of prefill tokens processed.", TokenHistogram),
    histogram("vllm:request_generation_tokens", "Number of generation tokens processed.", TokenHistogram),
    histogram("vllm:iteration_tokens_total", "Histogram of number of tokens per engine_step.", Histogram(ITERATION_TOKENS_BUCKETS)),
    histogram("vllm:request_max_num_generation_tokens", "Histogram of maximum number of requested generation tokens.", TokenHistogram),
    histogram("vllm:request_params_n", "Histogram of the n request parameter.", Histogram(&[1.0, 2.0, 5.0, 10.0, 20.0])),
    histogram("vllm:request_params_max_tokens", "Histogram of the max_tokens request parameter.", TokenHistogram),
    histogram("vllm:time_to_first_token_seconds", "Histogram of time to first token in seconds.", Histogram(TTFT_BUCKETS)),
    histogram("vllm:inter_token_latency_seconds", "Histogram of inter-token latency in seconds.", Histogram(ITL_BUCKETS)),
    histogram("vllm:request_time_per_output_token_seconds", "Histogram of time_per_output_token_seconds per request.", Histogram(ITL_BUCKETS)),
    histogram("vllm:e2e_request_latency_seconds", "Histogram of e2e request latency in seconds.", Histogram(REQUEST_LATENCY_BUCKETS)),
    histogram("vllm:request_queue_time_seconds", "Histogram of time spent in WAITING phase for request.", Histogram(REQUEST_LATENCY_BUCKETS)),
    histogram("vllm:request_inference_time_seconds", "Histogram of time spent in RUNNING phase for request.", Histogram(REQUEST_LATENCY_BUCKETS)),
    histogram("vllm:request_prefill_time_seconds", "Histogram of time spent in PREFILL phase for request.", Histogram(REQUEST_LATENCY_BUCKETS)),
    histogram("vllm:request_decode_time_seconds", "Histogram of time spent in DECODE phase for request.", Histogram(REQUEST_LATENCY_BUCKETS)),
    fam("vllm:request_num_preemptions", "Histogram of the number of times a request was preempted.", Histogram(&[1.0, 2.0, 3.0, 4.0, 5.0, 10.0, 20.0]), ML, Since030),
    histogram("vllm:request_prefill_kv_computed_tokens", "Histogram of new KV tokens computed during prefill (excluding cached tokens).", TokenHistogram),
];

impl Spec {
    fn registered(&self, cfg: &ServeConfig) -> bool {
        self.releases.include(cfg.release) && (!self.speculative || cfg.spec.is_some())
    }

    fn family(&self, token_buckets: &[f64]) -> Family {
        let kind = match self.kind {
            Type::Counter => Kind::Counter,
            Type::Gauge => Kind::Gauge,
            Histogram(b) => Kind::Histogram(b.to_vec()),
            TokenHistogram => Kind::Histogram(token_buckets.to_vec()),
        };
        Family::new(self.name, self.help, kind, self.labels)
    }
}

/// The `vllm:` families of `cfg.release`, children created (all but `cache_config_info`).
pub fn vllm(cfg: &ServeConfig) -> Vec<Family> {
    let tok = buckets_1_2_5(cfg.max_model_len);
    let mut v: Vec<Family> = FAMILIES
        .iter()
        .filter(|s| s.registered(cfg))
        .map(|s| s.family(&tok))
        .collect();
    let positions = cfg.spec.as_ref().map_or(0, |s| s.num_speculative_tokens);
    precreate_children(
        &mut v,
        cfg.release,
        cfg.model_name(),
        cfg.dp.max(1),
        positions,
    );
    v
}

/// The per-engine gauges a multiprocess exposition has no sample of until the engine's first
/// step (`vllm-0.32-cpu/dp2/idle.prom`: TYPE and HELP lines only).
const SET_AT_FIRST_STEP: &[&str] = &[
    "vllm:num_requests_running",
    "vllm:num_requests_waiting",
    "vllm:num_requests_waiting_by_reason",
    "vllm:kv_cache_usage_perc",
];

/// Children vLLM creates at registration, so zero series exist before any request: one set
/// per engine (the `engine` label), interleaved as the recorded data-parallel scrapes show.
fn precreate_children(
    families: &mut [Family],
    release: Release,
    m: &str,
    engines: u32,
    positions: u32,
) {
    let ids: Vec<String> = (0..engines).map(|e| e.to_string()).collect();
    let positions: Vec<String> = (0..positions).map(|p| p.to_string()).collect();
    let sleep: &[&str] = match release {
        Release::V033 => &["discard_all", "weights_offloaded", "awake"],
        _ => &["awake", "weights_offloaded", "discard_all"],
    };
    for fam in families.iter_mut() {
        let n = fam.name.clone();
        let extra: Vec<&str> = match n.as_str() {
            "vllm:num_requests_waiting_by_reason" => vec!["capacity", "deferred"],
            "vllm:engine_sleep_state" => sleep.to_vec(),
            "vllm:prompt_tokens_by_source" => {
                vec!["local_compute", "local_cache_hit", "external_kv_transfer"]
            }
            "vllm:prompt_tokens_cached_by_source" => {
                vec!["device", "host", "p2p", "disk", "external_unspecified"]
            }
            "vllm:request_success" => vec!["stop", "length", "abort", "error", "repetition"],
            "vllm:admission_rejections" => vec!["max_num_queued_reqs", "max_num_queued_tokens"],
            SPEC_PER_POS => positions.iter().map(String::as_str).collect(),
            _ => vec![],
        };
        // Each child is stamped when it is created, microseconds apart, as in vLLM.
        if n == "vllm:admission_rejections" {
            for e in extra {
                fam.child(&[m, e], unix_now());
            }
        } else if engines > 1 && SET_AT_FIRST_STEP.contains(&n.as_str()) {
            // Multiprocess mode: nothing until the engine sets it.
        } else if extra.is_empty() {
            for id in &ids {
                fam.child(&[m, id], unix_now());
            }
        } else {
            for e in extra {
                for id in &ids {
                    let c = fam.child(&[m, id, e], unix_now());
                    if n == "vllm:engine_sleep_state" && e == "awake" {
                        c.value = 1.0;
                    }
                }
            }
        }
    }
}

/// The instrumentator's families; only the unlabelled histogram exists before a request.
pub fn http(now_unix: f64) -> Vec<Family> {
    let mut http = vec![
        f("http_requests_total", "Total number of requests by method, status and handler.", Kind::Counter, &["method", "status", "handler"]),
        f("http_request_size_bytes", "Content length of incoming requests by handler. Only value of header is respected. Otherwise ignored. No percentile calculated. ", Kind::Summary, &["handler"]),
        f("http_response_size_bytes", "Content length of outgoing responses by handler. Only value of header is respected. Otherwise ignored. No percentile calculated. ", Kind::Summary, &["handler"]),
        f("http_request_duration_highr_seconds", "Latency with many buckets but no API specific labels. Made for more accurate percentile calculations. ", Kind::Histogram(HIGHR_BUCKETS.to_vec()), &[]),
        f("http_request_duration_seconds", "Latency with only few buckets by handler. Made to be only used if aggregation by handler is important. ", Kind::Histogram(vec![0.1, 0.5, 1.0]), &["handler", "method"]),
    ];
    http[3].child(&[], now_unix);
    http
}
