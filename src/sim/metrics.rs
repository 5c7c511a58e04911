//! The API server's /metrics: the families each vLLM release registers (names, HELP, labels,
//! buckets, pre-created children, order; spec/engines.md §1 and the recorded 0.28/0.30 scrapes),
//! the default Python collectors, and prometheus-fastapi-instrumentator's `http_*` families.
//!
//! Like vLLM, the frontend owns every metric; the engine ships per-step numbers to it.

use super::config::{Release, ServeConfig};
use super::expo::{buckets_1_2_5, go_float, py_repr, Family, Kind};
use super::os::unix_now;

const TTFT_BUCKETS: &[f64] = &[
    0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0, 160.0,
    640.0, 2560.0,
];
const ITL_BUCKETS: &[f64] =
    &[0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0];
const REQUEST_LATENCY_BUCKETS: &[f64] = &[
    0.3, 0.5, 0.8, 1.0, 1.5, 2.0, 2.5, 5.0, 10.0, 15.0, 20.0, 30.0, 40.0, 50.0, 60.0, 120.0, 240.0, 480.0, 960.0,
    1920.0, 7680.0,
];
const ITERATION_TOKENS_BUCKETS: &[f64] =
    &[1.0, 8.0, 16.0, 32.0, 64.0, 128.0, 256.0, 512.0, 1024.0, 2048.0, 4096.0, 8192.0, 16384.0];
const HIGHR_BUCKETS: &[f64] = &[
    0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75, 1.0, 1.5, 2.0, 2.5, 3.0, 3.5, 4.0, 4.5, 5.0, 7.5, 10.0, 30.0, 60.0,
];

/// Handlers prometheus-fastapi-instrumentator leaves out (vLLM's `excluded_handlers`).
pub const UNINSTRUMENTED: &[&str] = &["/metrics", "/health", "/load", "/ping", "/version", "/server_info"];

const ML: &[&str] = &["model_name", "engine"];

/// One finished request as the frontend saw it, for the per-request histograms.
#[derive(Clone, Debug, Default)]
pub struct RequestStats {
    pub finished_reason: &'static str,
    pub prompt_tokens: u32,
    pub generation_tokens: u32,
    pub max_tokens: u32,
    pub e2e_s: f64,
    pub queue_s: f64,
    pub prefill_s: f64,
    pub decode_s: f64,
    pub inference_s: f64,
    pub num_preemptions: u32,
}

pub struct Registry {
    release: Release,
    model: String,
    start_unix: f64,
    families: Vec<Family>,
    cache_info: Option<Family>,
    http: Vec<Family>,
    /// Scrapes served, to move the fake Python GC counters a little.
    scrapes: u64,
}

fn f(name: &str, help: &str, kind: Kind, labels: &[&str]) -> Family {
    Family::new(name, help, kind, labels)
}

fn hist(name: &str, help: &str, b: &[f64]) -> Family {
    Family::new(name, help, Kind::Histogram(b.to_vec()), ML)
}

impl Registry {
    pub fn new(cfg: &ServeConfig, start_unix: f64, now_unix: f64) -> Registry {
        let r = cfg.release;
        let m = cfg.model_name().to_string();
        let tok = buckets_1_2_5(cfg.max_model_len);
        let mut v: Vec<Family> = Vec::new();
        if r != Release::V033 {
            for (what, help) in [
                ("flops", "Estimated number of floating point operations per GPU"),
                ("read_bytes", "Estimated number of bytes read from memory per GPU"),
                ("write_bytes", "Estimated number of bytes written to memory per GPU"),
            ] {
                v.push(f(
                    &format!("vllm:estimated_{what}_per_gpu_total"),
                    &format!("{help} (for Model Flops Utilization calculations)."),
                    Kind::Counter,
                    ML,
                ));
            }
        }
        v.push(f("vllm:num_requests_running", "Number of requests in model execution batches.", Kind::Gauge, ML));
        v.push(f("vllm:num_requests_waiting", "Number of requests waiting to be processed.", Kind::Gauge, ML));
        v.push(f("vllm:num_requests_waiting_by_reason", "Number of waiting requests by reason. Reason labels: 'capacity' = waiting for scheduling capacity; 'deferred' = deferred by transient constraints (LoRA budget, KV transfer, blocked status). Sum of all reasons equals vllm:num_requests_waiting.", Kind::Gauge, &["model_name", "engine", "reason"]));
        v.push(f("vllm:engine_sleep_state", "Engine sleep state; awake = 0 means engine is sleeping; awake = 1 means engine is awake; weights_offloaded = 1 means sleep level 1; discard_all = 1 means sleep level 2.", Kind::Gauge, &["model_name", "engine", "sleep_state"]));
        v.push(f("vllm:kv_cache_usage_perc", "KV-cache usage. 1 means 100 percent usage.", Kind::Gauge, ML));
        v.push(f("vllm:prefix_cache_queries", "Prefix cache queries, in terms of number of queried tokens.", Kind::Counter, ML));
        v.push(f("vllm:prefix_cache_hits", "Prefix cache hits, in terms of number of cached tokens.", Kind::Counter, ML));
        v.push(f("vllm:external_prefix_cache_queries", "External prefix cache queries from KV connector cross-instance cache sharing, in terms of number of queried tokens.", Kind::Counter, ML));
        v.push(f("vllm:external_prefix_cache_hits", "External prefix cache hits from KV connector cross-instance cache sharing, in terms of number of cached tokens.", Kind::Counter, ML));
        v.push(f("vllm:mm_cache_queries", "Multi-modal cache queries, in terms of number of queried items.", Kind::Counter, ML));
        v.push(f("vllm:mm_cache_hits", "Multi-modal cache hits, in terms of number of cached items.", Kind::Counter, ML));
        v.push(f("vllm:num_preemptions", "Cumulative number of preemption from the engine.", Kind::Counter, ML));
        v.push(f("vllm:prompt_tokens", "Number of prefill tokens processed.", Kind::Counter, ML));
        v.push(f("vllm:prompt_tokens_by_source", "Number of prompt tokens by source.", Kind::Counter, &["model_name", "engine", "source"]));
        v.push(f("vllm:prompt_tokens_cached", "Number of cached prompt tokens (local + external).", Kind::Counter, ML));
        if r == Release::V033 {
            v.push(f("vllm:prompt_tokens_cached_by_source", "Prefix-cache hit tokens by the cache tier that supplied them: device (local HBM), host (offloaded to DRAM), disk, p2p (transferred from another vLLM instance) or external_unspecified. Counted at admission; sums to vllm:prefix_cache_hits + vllm:external_prefix_cache_hits.", Kind::Counter, &["model_name", "engine", "source"]));
        }
        v.push(f("vllm:generation_tokens", "Number of generation tokens processed.", Kind::Counter, ML));
        v.push(f("vllm:request_success", "Count of successfully processed requests.", Kind::Counter, &["model_name", "engine", "finished_reason"]));
        if r == Release::V033 {
            v.push(f("vllm:admission_rejections", "Number of admission attempts rejected by a queue limit, by reason.", Kind::Counter, &["model_name", "reason"]));
        }
        v.push(hist("vllm:request_prompt_tokens", "Number of prefill tokens processed.", &tok));
        v.push(hist("vllm:request_generation_tokens", "Number of generation tokens processed.", &tok));
        v.push(hist("vllm:iteration_tokens_total", "Histogram of number of tokens per engine_step.", ITERATION_TOKENS_BUCKETS));
        v.push(hist("vllm:request_max_num_generation_tokens", "Histogram of maximum number of requested generation tokens.", &tok));
        v.push(hist("vllm:request_params_n", "Histogram of the n request parameter.", &[1.0, 2.0, 5.0, 10.0, 20.0]));
        v.push(hist("vllm:request_params_max_tokens", "Histogram of the max_tokens request parameter.", &tok));
        v.push(hist("vllm:time_to_first_token_seconds", "Histogram of time to first token in seconds.", TTFT_BUCKETS));
        v.push(hist("vllm:inter_token_latency_seconds", "Histogram of inter-token latency in seconds.", ITL_BUCKETS));
        v.push(hist("vllm:request_time_per_output_token_seconds", "Histogram of time_per_output_token_seconds per request.", ITL_BUCKETS));
        v.push(hist("vllm:e2e_request_latency_seconds", "Histogram of e2e request latency in seconds.", REQUEST_LATENCY_BUCKETS));
        v.push(hist("vllm:request_queue_time_seconds", "Histogram of time spent in WAITING phase for request.", REQUEST_LATENCY_BUCKETS));
        v.push(hist("vllm:request_inference_time_seconds", "Histogram of time spent in RUNNING phase for request.", REQUEST_LATENCY_BUCKETS));
        v.push(hist("vllm:request_prefill_time_seconds", "Histogram of time spent in PREFILL phase for request.", REQUEST_LATENCY_BUCKETS));
        v.push(hist("vllm:request_decode_time_seconds", "Histogram of time spent in DECODE phase for request.", REQUEST_LATENCY_BUCKETS));
        if r != Release::V028 {
            v.push(hist("vllm:request_num_preemptions", "Histogram of the number of times a request was preempted.", &[1.0, 2.0, 3.0, 4.0, 5.0, 10.0, 20.0]));
        }
        v.push(hist("vllm:request_prefill_kv_computed_tokens", "Histogram of new KV tokens computed during prefill (excluding cached tokens).", &tok));

        let mut reg = Registry { release: r, model: m, start_unix, families: v, cache_info: None, http: Vec::new(), scrapes: 0 };
        reg.precreate_children(now_unix);
        reg.http = vec![
            f("http_requests_total", "Total number of requests by method, status and handler.", Kind::Counter, &["method", "status", "handler"]),
            f("http_request_size_bytes", "Content length of incoming requests by handler. Only value of header is respected. Otherwise ignored. No percentile calculated. ", Kind::Summary, &["handler"]),
            f("http_response_size_bytes", "Content length of outgoing responses by handler. Only value of header is respected. Otherwise ignored. No percentile calculated. ", Kind::Summary, &["handler"]),
            f("http_request_duration_highr_seconds", "Latency with many buckets but no API specific labels. Made for more accurate percentile calculations. ", Kind::Histogram(HIGHR_BUCKETS.to_vec()), &[]),
            f("http_request_duration_seconds", "Latency with only few buckets by handler. Made to be only used if aggregation by handler is important. ", Kind::Histogram(vec![0.1, 0.5, 1.0]), &["handler", "method"]),
        ];
        // The unlabelled histogram exists from registration.
        reg.http[3].child(&[], now_unix);
        reg
    }

    /// Children vLLM creates at registration, so zero series exist before any request.
    fn precreate_children(&mut self, _registered: f64) {
        let m = self.model.clone();
        let sleep: &[&str] = match self.release {
            Release::V033 => &["discard_all", "weights_offloaded", "awake"],
            _ => &["awake", "weights_offloaded", "discard_all"],
        };
        for fam in &mut self.families {
            let n = fam.name.clone();
            let extra: Vec<&str> = match n.as_str() {
                "vllm:num_requests_waiting_by_reason" => vec!["capacity", "deferred"],
                "vllm:engine_sleep_state" => sleep.to_vec(),
                "vllm:prompt_tokens_by_source" => vec!["local_compute", "local_cache_hit", "external_kv_transfer"],
                "vllm:prompt_tokens_cached_by_source" => vec!["device", "host", "p2p", "disk", "external_unspecified"],
                "vllm:request_success" => vec!["stop", "length", "abort", "error", "repetition"],
                "vllm:admission_rejections" => vec!["max_num_queued_reqs", "max_num_queued_tokens"],
                _ => vec![],
            };
            // Each child is stamped when it is created, microseconds apart, as in vLLM.
            if n == "vllm:admission_rejections" {
                for e in extra {
                    fam.child(&[&m, e], unix_now());
                }
            } else if extra.is_empty() {
                fam.child(&[&m, "0"], unix_now());
            } else {
                for e in extra {
                    let c = fam.child(&[&m, "0", e], unix_now());
                    if n == "vllm:engine_sleep_state" && e == "awake" {
                        c.value = 1.0;
                    }
                }
            }
        }
    }

    fn fam(&mut self, name: &str) -> Option<&mut Family> {
        self.families.iter_mut().find(|f| f.name == name)
    }

    /// Adds to the (model, engine) child of a counter or gauge.
    fn add(&mut self, name: &str, x: f64) {
        let m = self.model.clone();
        if let Some(f) = self.fam(name) {
            f.child(&[&m, "0"], 0.0).value += x;
        }
    }

    fn set(&mut self, name: &str, x: f64) {
        let m = self.model.clone();
        if let Some(f) = self.fam(name) {
            f.child(&[&m, "0"], 0.0).value = x;
        }
    }

    fn observe(&mut self, name: &str, x: f64) {
        let m = self.model.clone();
        if let Some(f) = self.fam(name) {
            f.observe(&[&m, "0"], x, 0.0);
        }
    }

    /// `vllm:cache_config_info`, registered once the engine has sized its KV pool.
    pub fn engine_initialized(&mut self, cfg: &ServeConfig, now_unix: f64) {
        let mut labels: Vec<(&str, String)> = Vec::new();
        let t = |b: bool| if b { "True".to_string() } else { "False".to_string() };
        let none = || "None".to_string();
        let opt = |o: Option<u32>| o.map_or_else(|| "None".to_string(), |v| v.to_string());
        let hybrid = cfg.hybrid;
        labels.push(("_block_size_resolved", t(true)));
        labels.push(("block_size", cfg.block_size.to_string()));
        labels.push(("cache_dtype", "auto".into()));
        let r = self.release;
        if r == Release::V033 {
            labels.push(("cache_hit_alignment_tokens", none()));
            labels.push(("effective_attention_block_size", if hybrid { cfg.block_size.to_string() } else { none() }));
            labels.push(("enable_mamba_shared_prefix_checkpoint", t(false)));
        }
        if r == Release::V030 {
            labels.push(("enable_mamba_fine_grained_prefix_cache", t(false)));
        }
        labels.push(("enable_prefix_caching", t(true)));
        labels.push(("gpu_memory_utilization", py_repr(cfg.gpu_memory_utilization)));
        if r == Release::V033 {
            labels.push(("hash_block_size", cfg.block_size.to_string()));
        }
        labels.push(("is_attention_free", t(false)));
        labels.push(("kv_cache_dtype_skip_layers", "[]".into()));
        if r != Release::V028 {
            labels.push(("kv_cache_layout", none()));
        }
        labels.push(("kv_cache_max_concurrency", py_repr(cfg.max_concurrency())));
        labels.push(("kv_cache_memory_bytes", none()));
        labels.push(("kv_cache_size_tokens", cfg.kv_cache_tokens().to_string()));
        labels.push(("kv_offloading_backend", "native".into()));
        labels.push(("kv_offloading_size", none()));
        labels.push(("kv_sharing_fast_prefill", t(false)));
        let mamba_block = match (hybrid, r) {
            (false, _) => none(),
            (true, Release::V028) => "16".into(),
            (true, _) => cfg.block_size.to_string(),
        };
        labels.push(("mamba_block_size", mamba_block));
        labels.push(("mamba_cache_dtype", "auto".into()));
        labels.push(("mamba_cache_mode", if hybrid { "align".into() } else { "none".into() }));
        labels.push(("mamba_page_size_padded", none()));
        labels.push(("mamba_ssm_cache_dtype", if hybrid { "float32".into() } else { "auto".into() }));
        labels.push(("num_cpu_blocks", none()));
        labels.push(("num_gpu_blocks", cfg.num_gpu_blocks.to_string()));
        labels.push(("num_gpu_blocks_override", opt(cfg.num_gpu_blocks_override)));
        if r != Release::V028 {
            labels.push(("prefix_cache_retention_interval", "0".into()));
        }
        labels.push(("prefix_caching_hash_algo", "sha256".into()));
        labels.push(("prefix_match_unit", none()));
        labels.push(("replayssm_buffer_len", "16".into()));
        if r == Release::V033 {
            labels.push(("simple_cpu_offload_num_blocks", none()));
        }
        labels.push(("skip_page_size_padded", none()));
        labels.push(("sliding_window", none()));
        if r == Release::V033 {
            labels.push(("swa_bounded_replay", t(true)));
        }
        if r != Release::V028 {
            labels.push(("use_kda_recoverssm", t(false)));
        }
        labels.push(("use_replayssm", t(false)));
        labels.push(("user_specified_block_size", t(cfg.user_block_size.is_some())));
        if r != Release::V033 {
            labels.push(("user_specified_mamba_block_size", t(false)));
        }
        labels.push(("engine", "0".into()));
        let names: Vec<&str> = labels.iter().map(|(k, _)| *k).collect();
        let values: Vec<&str> = labels.iter().map(|(_, v)| v.as_str()).collect();
        let mut fam = Family::new("vllm:cache_config_info", "Information of the LLMEngine CacheConfig", Kind::Gauge, &names);
        fam.child(&values, now_unix).value = 1.0;
        self.cache_info = Some(fam);
    }

    /// The scheduler gauges of the engine's latest step.
    pub fn set_scheduler_state(&mut self, running: u32, waiting: u32, kv_usage: f64) {
        self.set("vllm:num_requests_running", running as f64);
        self.set("vllm:num_requests_waiting", waiting as f64);
        let m = self.model.clone();
        if let Some(f) = self.fam("vllm:num_requests_waiting_by_reason") {
            f.child(&[&m, "0", "capacity"], 0.0).value = waiting as f64;
        }
        self.set("vllm:kv_cache_usage_perc", kv_usage);
    }

    pub fn add_preemptions(&mut self, n: u64) {
        if n > 0 {
            self.add("vllm:num_preemptions", n as f64);
        }
    }

    pub fn observe_iteration_tokens(&mut self, tokens: &[u32]) {
        for &t in tokens {
            self.observe("vllm:iteration_tokens_total", t as f64);
        }
    }

    /// A request's first token reached the frontend: its prompt is counted once, here.
    pub fn first_token(&mut self, prompt_tokens: u32, ttft_s: f64) {
        let p = prompt_tokens as f64;
        self.add("vllm:prompt_tokens", p);
        self.add("vllm:prefix_cache_queries", p);
        let m = self.model.clone();
        if let Some(f) = self.fam("vllm:prompt_tokens_by_source") {
            f.child(&[&m, "0", "local_compute"], 0.0).value += p;
        }
        self.observe("vllm:time_to_first_token_seconds", ttft_s);
    }

    /// New tokens of one request; `itl_s` is one inter-token latency per token after the first.
    pub fn tokens(&mut self, n: u32, itl_s: Option<(u32, f64)>) {
        self.add("vllm:generation_tokens", n as f64);
        if let Some((count, each)) = itl_s {
            for _ in 0..count {
                self.observe("vllm:inter_token_latency_seconds", each);
            }
        }
    }

    pub fn request_finished(&mut self, s: &RequestStats) {
        let m = self.model.clone();
        if let Some(f) = self.fam("vllm:request_success") {
            f.child(&[&m, "0", s.finished_reason], 0.0).value += 1.0;
        }
        if s.finished_reason == "abort" && s.generation_tokens == 0 {
            return;
        }
        self.observe("vllm:e2e_request_latency_seconds", s.e2e_s);
        self.observe("vllm:request_queue_time_seconds", s.queue_s);
        self.observe("vllm:request_prefill_time_seconds", s.prefill_s);
        self.observe("vllm:request_inference_time_seconds", s.inference_s);
        self.observe("vllm:request_decode_time_seconds", s.decode_s);
        self.observe("vllm:request_prompt_tokens", s.prompt_tokens as f64);
        self.observe("vllm:request_generation_tokens", s.generation_tokens as f64);
        self.observe("vllm:request_max_num_generation_tokens", s.max_tokens as f64);
        self.observe("vllm:request_params_n", 1.0);
        self.observe("vllm:request_params_max_tokens", s.max_tokens as f64);
        if s.generation_tokens > 1 {
            self.observe("vllm:request_time_per_output_token_seconds", s.decode_s / (s.generation_tokens - 1) as f64);
        }
        self.observe("vllm:request_num_preemptions", s.num_preemptions as f64);
        self.observe("vllm:request_prefill_kv_computed_tokens", s.prompt_tokens as f64);
    }

    /// A request refused by `--max-num-queued-reqs` (0.33 counts them).
    pub fn admission_rejected(&mut self) {
        let m = self.model.clone();
        if let Some(f) = self.fam("vllm:admission_rejections") {
            f.child(&[&m, "max_num_queued_reqs"], 0.0).value += 1.0;
        }
    }

    /// One HTTP request, as the instrumentator records it once its response is complete.
    pub fn http_request(&mut self, handler: &str, method: &str, status: u16, req_bytes: f64, resp_bytes: f64, secs: f64, now_unix: f64) {
        if UNINSTRUMENTED.contains(&handler) {
            return;
        }
        let group = format!("{}xx", status / 100);
        self.http[0].child(&[method, &group, handler], now_unix).value += 1.0;
        self.http[1].observe(&[handler], req_bytes, now_unix);
        self.http[2].observe(&[handler], resp_bytes, now_unix);
        self.http[3].observe(&[], secs, now_unix);
        self.http[4].observe(&[handler, method], secs, now_unix);
    }

    /// The whole exposition, as `GET /metrics` returns it.
    pub fn render(&mut self) -> String {
        self.scrapes += 1;
        let mut out = String::with_capacity(64 * 1024);
        self.render_collectors(&mut out);
        for fam in &self.families {
            fam.render(&mut out, true);
        }
        if let Some(c) = &self.cache_info {
            c.render(&mut out, true);
        }
        for fam in &self.http {
            fam.render(&mut out, true);
        }
        out
    }

    /// prometheus_client's default collectors: Python GC, Python info and this process.
    fn render_collectors(&self, out: &mut String) {
        use std::fmt::Write;
        let g = self.scrapes;
        let _ = writeln!(out, "# HELP python_gc_objects_collected_total Objects collected during gc\n# TYPE python_gc_objects_collected_total counter");
        for (gen, base) in [(0, 16_825), (1, 4_052), (2, 584)] {
            let _ = writeln!(out, "python_gc_objects_collected_total{{generation=\"{gen}\"}} {}", go_float((base + g * (3 - gen)) as f64));
        }
        let _ = writeln!(out, "# HELP python_gc_objects_uncollectable_total Uncollectable objects found during GC\n# TYPE python_gc_objects_uncollectable_total counter");
        for gen in 0..3 {
            let _ = writeln!(out, "python_gc_objects_uncollectable_total{{generation=\"{gen}\"}} 0.0");
        }
        let _ = writeln!(out, "# HELP python_gc_collections_total Number of times this generation was collected\n# TYPE python_gc_collections_total counter");
        for (gen, base) in [(0, 3_362), (1, 306), (2, 15)] {
            let _ = writeln!(out, "python_gc_collections_total{{generation=\"{gen}\"}} {}", go_float((base + g / (1 + gen * 10)) as f64));
        }
        let _ = writeln!(out, "# HELP python_info Python platform information\n# TYPE python_info gauge");
        let _ = writeln!(out, "python_info{{implementation=\"CPython\",major=\"3\",minor=\"12\",patchlevel=\"14\",version=\"3.12.14\"}} 1.0");
        let p = ProcSelf::read();
        let _ = writeln!(out, "# HELP process_virtual_memory_bytes Virtual memory size in bytes.\n# TYPE process_virtual_memory_bytes gauge\nprocess_virtual_memory_bytes {}", go_float(p.vsize));
        let _ = writeln!(out, "# HELP process_resident_memory_bytes Resident memory size in bytes.\n# TYPE process_resident_memory_bytes gauge\nprocess_resident_memory_bytes {}", go_float(p.rss));
        let _ = writeln!(out, "# HELP process_start_time_seconds Start time of the process since unix epoch in seconds.\n# TYPE process_start_time_seconds gauge\nprocess_start_time_seconds {}", go_float((self.start_unix * 100.0).round() / 100.0));
        let _ = writeln!(out, "# HELP process_cpu_seconds_total Total user and system CPU time spent in seconds.\n# TYPE process_cpu_seconds_total counter\nprocess_cpu_seconds_total {}", go_float(p.cpu_s));
        let _ = writeln!(out, "# HELP process_open_fds Number of open file descriptors.\n# TYPE process_open_fds gauge\nprocess_open_fds {}", go_float(p.open_fds));
        let _ = writeln!(out, "# HELP process_max_fds Maximum number of open file descriptors.\n# TYPE process_max_fds gauge\nprocess_max_fds {}", go_float(p.max_fds));
    }
}

/// This process's numbers for the `process_*` collector (zeros where /proc is unreadable).
struct ProcSelf {
    vsize: f64,
    rss: f64,
    cpu_s: f64,
    open_fds: f64,
    max_fds: f64,
}

impl ProcSelf {
    fn read() -> ProcSelf {
        let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
        let after = stat.rsplit_once(')').map(|(_, a)| a).unwrap_or("");
        // Fields after the comm: state is field 3, so index k here is field k + 3.
        let fields: Vec<&str> = after.split_whitespace().collect();
        let num = |field: usize| fields.get(field - 3).and_then(|s| s.parse::<f64>().ok()).unwrap_or(0.0);
        let ticks = 100.0;
        let page = 4096.0;
        let open_fds = std::fs::read_dir("/proc/self/fd").map(|d| d.count() as f64).unwrap_or(0.0);
        let mut lim = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
        // SAFETY: getrlimit writes into the struct we pass and reads nothing else.
        let max_fds = if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) } == 0 { lim.rlim_cur as f64 } else { 0.0 };
        ProcSelf {
            vsize: num(23),
            rss: num(24) * page,
            cpu_s: ((num(14) + num(15)) / ticks * 100.0).round() / 100.0,
            open_fds,
            max_fds,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sim::config::ServeArgs;
    use clap::Parser;

    #[derive(Parser)]
    struct Wrap {
        #[command(flatten)]
        a: ServeArgs,
    }

    fn registry(args: &[&str]) -> (ServeConfig, Registry) {
        let mut v = vec!["x", "m"];
        v.extend_from_slice(args);
        let cfg = ServeConfig::from_args(&Wrap::parse_from(v).a).unwrap();
        let mut r = Registry::new(&cfg, 1.79e9, 1.79e9 + 1.0);
        r.engine_initialized(&cfg, 1.79e9 + 2.0);
        (cfg, r)
    }

    #[test]
    fn iteration_tokens_keeps_its_total_suffix_and_counters_gain_one() {
        let (_, mut r) = registry(&["--vllm-version", "0.33"]);
        let text = r.render();
        assert!(text.contains("# TYPE vllm:iteration_tokens_total histogram\n"));
        assert!(text.contains("vllm:iteration_tokens_total_bucket{engine=\"0\",le=\"1.0\",model_name=\"m\"} 0.0\n"));
        assert!(text.contains("# TYPE vllm:num_preemptions_total counter\n"));
        assert!(text.contains("vllm:request_success_total{engine=\"0\",finished_reason=\"repetition\",model_name=\"m\"} 0.0\n"));
        assert!(text.contains("vllm:admission_rejections_total{model_name=\"m\",reason=\"max_num_queued_reqs\"} 0.0\n"));
        assert!(!text.contains("vllm:estimated_flops"), "0.33 registers no MFU counters by default");
    }

    #[test]
    fn releases_differ_where_the_recordings_differ() {
        let (_, mut r28) = registry(&["--vllm-version", "0.28"]);
        let (_, mut r30) = registry(&["--vllm-version", "0.30"]);
        let t28 = r28.render();
        let t30 = r30.render();
        assert!(t28.contains("vllm:estimated_flops_per_gpu_total{"));
        assert!(!t28.contains("vllm:request_num_preemptions_bucket"));
        assert!(t30.contains("vllm:request_num_preemptions_bucket"));
        assert!(!t30.contains("vllm:admission_rejections"));
        assert!(t28.contains("user_specified_mamba_block_size=\"False\""));
        assert!(t30.contains("kv_cache_layout=\"None\""));
    }

    #[test]
    fn cache_config_info_carries_the_block_arithmetic() {
        let (cfg, mut r) = registry(&["--hybrid", "--num-gpu-blocks-override", "43", "--max-model-len", "16384"]);
        let text = r.render();
        let line = text.lines().find(|l| l.starts_with("vllm:cache_config_info{")).unwrap();
        assert!(line.contains("num_gpu_blocks=\"43\""));
        assert!(line.contains("block_size=\"784\""));
        assert!(line.contains(&format!("kv_cache_size_tokens=\"{}\"", cfg.kv_cache_tokens())));
        assert!(line.ends_with("} 1.0"));
    }

    #[test]
    fn instrumentator_skips_excluded_handlers_and_groups_status() {
        let (_, mut r) = registry(&[]);
        r.http_request("/metrics", "GET", 200, 0.0, 10.0, 0.01, 1.0);
        r.http_request("/v1/completions", "POST", 503, 100.0, 0.0, 0.2, 1.0);
        let text = r.render();
        assert!(!text.contains("handler=\"/metrics\""));
        assert!(text.contains("http_requests_total{handler=\"/v1/completions\",method=\"POST\",status=\"5xx\"} 1.0\n"));
        assert!(text.contains("http_request_duration_highr_seconds_count 1.0\n"));
    }
}
