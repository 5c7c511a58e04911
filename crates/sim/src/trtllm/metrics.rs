//! TensorRT-LLM's `/prometheus/metrics` (with `return_perf_metrics: true`) and `/metrics`
//! iteration stats (with `enable_iter_perf_stats: true`): the recorded families
//! ([`super::families`]) with the children and values the simulated server gives them.
//!
//! As recorded (tests/fixtures/trtllm-1.3/, docs/design/engines.md#the-simulated-tensorrt-llm):
//! prometheus_client in multiprocess mode (no `_created`, `_sum` before the buckets); the
//! configuration gauges and iteration gauges carry `engine_type, model_name, pid` (the
//! launcher's pid), the request counters and histograms `engine_type, model_name`; the request
//! families appear with the first finished request, a block counter with its first block; and
//! the iteration gauges only move when a request completes, to the state of the iteration before
//! it (the recorded after-load scrape still shows 32 running), which is why core reads
//! TensorRT-LLM's gauges as lagging (`Engine::gauges_lag`).

use std::collections::VecDeque;

use serde_json::{json, Value};

use super::families::{Spec, FAMILIES};
use crate::expo::{py_repr, Child, Family, Kind};
use crate::metrics::{Exposition, HttpRequest, RequestStats};
use crate::settings::ServeConfig;

/// The iteration stats kept for `/metrics` between reads (TensorRT-LLM's
/// `iter_stats_max_iterations` default).
const MAX_ITERATION_STATS: usize = 1000;

/// The scheduler's state after one iteration.
#[derive(Clone, Copy, Debug, Default)]
struct SchedState {
    running: u32,
    waiting: u32,
    kv_usage: f64,
}

pub struct TrtllmRegistry {
    model_name: String,
    model: String,
    pid: String,
    tp: u32,
    max_blocks: f64,
    tokens_per_block: f64,
    max_batch: f64,
    free_fraction: String,
    block_reuse: bool,
    gpu_bytes: f64,
    step_secs: f64,
    iteration_stats: bool,
    families: Vec<Family>,
    /// Whether each family is fed by iteration stats.
    iteration_family: Vec<bool>,
    /// The last iteration's state, and the one before it (what a completion publishes).
    latest: SchedState,
    before: SchedState,
    iter: u64,
    missed: f64,
    reused: f64,
    stats: VecDeque<Value>,
}

fn kind_of(s: &Spec) -> Kind {
    match s.kind {
        "counter" => Kind::Counter,
        "histogram" => Kind::Histogram(s.buckets.to_vec()),
        _ => Kind::Gauge,
    }
}

/// The child of `f` with these label values, by name (a label not named gets "").
fn child<'a>(f: &'a mut Family, pairs: &[(&str, &str)]) -> &'a mut Child {
    let values: Vec<String> = f
        .label_names
        .iter()
        .map(|n| {
            pairs
                .iter()
                .find(|(k, _)| k == n)
                .map_or(String::new(), |(_, v)| v.to_string())
        })
        .collect();
    let refs: Vec<&str> = values.iter().map(String::as_str).collect();
    f.child(&refs, 0.0)
}

impl TrtllmRegistry {
    pub fn new(cfg: &ServeConfig) -> TrtllmRegistry {
        let families = FAMILIES
            .iter()
            .map(|s| Family::new(s.name, s.help, kind_of(s), s.labels))
            .collect();
        TrtllmRegistry {
            model_name: cfg.model_name().to_string(),
            model: cfg.model.clone(),
            pid: std::process::id().to_string(),
            tp: cfg.tp,
            max_blocks: f64::from(cfg.num_gpu_blocks),
            tokens_per_block: f64::from(cfg.block_size),
            max_batch: f64::from(cfg.max_num_seqs),
            free_fraction: py_repr(cfg.gpu_memory_utilization),
            block_reuse: cfg.prefix_caching,
            gpu_bytes: (cfg.gpu_mib * (1 << 20)) as f64,
            step_secs: cfg.step_secs(),
            iteration_stats: cfg.options.enable_iter_perf_stats,
            families,
            iteration_family: FAMILIES.iter().map(|s| s.iteration).collect(),
            latest: SchedState::default(),
            before: SchedState::default(),
            iter: 0,
            missed: 0.0,
            reused: 0.0,
            stats: VecDeque::new(),
        }
    }

    /// The child of family `name` with the labels its family has among `engine_type`,
    /// `model_name`, `pid` and `extra`.
    fn at(&mut self, name: &str, extra: &[(&str, &str)]) -> Option<&mut Child> {
        let mut pairs: Vec<(&str, &str)> = vec![
            ("engine_type", "pytorch"),
            ("model_name", &self.model_name),
            ("pid", &self.pid),
        ];
        pairs.extend_from_slice(extra);
        let owned: Vec<(String, String)> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        let f = self.families.iter_mut().find(|f| {
            f.name == name
                || (f.kind == Kind::Counter && name.strip_suffix("_total") == Some(&f.name))
        })?;
        let refs: Vec<(&str, &str)> = owned
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect();
        Some(child(f, &refs))
    }

    fn set(&mut self, name: &str, x: f64) {
        if let Some(c) = self.at(name, &[]) {
            c.value = x;
        }
    }

    fn add(&mut self, name: &str, extra: &[(&str, &str)], x: f64) {
        if let Some(c) = self.at(name, extra) {
            c.value += x;
        }
    }

    /// An iteration-stats counter moves by `x` (its child exists once it has moved).
    fn add_iteration(&mut self, name: &str, x: f64) {
        if self.iteration_stats && x > 0.0 {
            self.add(name, &[], x);
        }
    }

    fn observe(&mut self, name: &str, x: f64) {
        let bounds = match self
            .families
            .iter()
            .find(|f| f.name == name)
            .map(|f| &f.kind)
        {
            Some(Kind::Histogram(b)) => b.clone(),
            _ => return,
        };
        if let Some(c) = self.at(name, &[]) {
            c.count += 1;
            c.sum += x;
            let i = bounds
                .iter()
                .position(|&le| x <= le)
                .unwrap_or(bounds.len());
            c.buckets[i] += 1;
        }
    }

    fn used_blocks(&self, s: SchedState) -> f64 {
        (s.kv_usage * self.max_blocks).round()
    }

    fn hit_rate(&self) -> f64 {
        let all = self.missed + self.reused;
        if all > 0.0 {
            self.reused / all
        } else {
            0.0
        }
    }

    /// The iteration gauges, set to state `s` (at a completion: the iteration before it).
    fn publish(&mut self, s: SchedState) {
        if !self.iteration_stats {
            return;
        }
        let used = self.used_blocks(s);
        let running = f64::from(s.running);
        let values = [
            ("trtllm_num_requests_running", running),
            ("trtllm_num_requests_waiting", f64::from(s.waiting)),
            ("trtllm_max_num_active_requests", self.max_batch),
            ("trtllm_iteration_latency_seconds", self.step_secs),
            ("trtllm_gpu_memory_usage_bytes", self.gpu_bytes),
            ("trtllm_cpu_memory_usage_bytes", 0.0),
            ("trtllm_pinned_memory_usage_bytes", 0.0),
            ("trtllm_max_batch_size_static", 0.0),
            ("trtllm_max_batch_size_runtime", 0.0),
            ("trtllm_max_num_tokens_runtime", 0.0),
            ("trtllm_kv_cache_hit_rate", self.hit_rate()),
            ("trtllm_kv_cache_utilization", s.kv_usage),
            ("trtllm_kv_cache_max_blocks", self.max_blocks),
            ("trtllm_kv_cache_free_blocks", self.max_blocks - used),
            ("trtllm_kv_cache_used_blocks", used),
            ("trtllm_kv_cache_tokens_per_block", self.tokens_per_block),
            ("trtllm_num_context_requests", 0.0),
            ("trtllm_num_generation_requests", running),
            ("trtllm_num_paused_requests", 0.0),
            ("trtllm_num_scheduled_requests", running),
            ("trtllm_total_context_tokens", 0.0),
            ("trtllm_avg_decoded_tokens_per_iter", 0.0),
            ("trtllm_prefill_batch_occupancy", 0.0),
            ("trtllm_kv_cache_iter_reuse_rate", 0.0),
        ];
        for (name, x) in values {
            self.set(name, x);
        }
    }

    /// One entry of `/metrics`' JSON list, in the keys of TensorRT-LLM's iteration stats
    /// (docs/design/engines.md#the-simulated-tensorrt-llm).
    fn iteration_entry(&self, s: SchedState) -> Value {
        let used = self.used_blocks(s);
        json!({
            "cpuMemUsage": 0,
            "gpuMemUsage": self.gpu_bytes,
            "inflightBatchingStats": {
                "numContextRequests": 0,
                "numGenRequests": s.running,
                "numPausedRequests": 0,
                "numScheduledRequests": s.running,
            },
            "iter": self.iter,
            "iterLatencyMS": self.step_secs * 1000.0,
            "kvCacheStats": {
                "allocNewBlocks": 0,
                "allocTotalBlocks": used,
                "cacheHitRate": self.hit_rate(),
                "freeNumBlocks": self.max_blocks - used,
                "maxNumBlocks": self.max_blocks,
                "missedBlocks": self.missed,
                "reusedBlocks": self.reused,
                "tokensPerBlock": self.tokens_per_block,
                "usedNumBlocks": used,
            },
            "maxNumActiveRequests": self.max_batch,
            "numActiveRequests": s.running,
            "numQueuedRequests": s.waiting,
            "pinnedMemUsage": 0,
        })
    }
}

impl Exposition for TrtllmRegistry {
    fn restart(&mut self, cfg: &ServeConfig, now_unix: f64) {
        *self = TrtllmRegistry::new(cfg);
        self.engine_initialized(cfg, now_unix);
    }

    /// The configuration gauges, set when the executor is up.
    fn engine_initialized(&mut self, cfg: &ServeConfig, _now_unix: f64) {
        let max_len = cfg.max_model_len.to_string();
        let (tp, model, served) = (
            self.tp.to_string(),
            self.model.clone(),
            self.model_name.clone(),
        );
        let reuse = if self.block_reuse { "True" } else { "False" };
        let fraction = self.free_fraction.clone();
        let info: [(&str, Vec<(&str, &str)>); 3] = [
            (
                "trtllm_model_config_info",
                vec![
                    ("dtype", "auto"),
                    ("gpu_type", "Simulated GPU"),
                    ("max_model_len", &max_len),
                    ("model", &model),
                    ("quantization", "none"),
                    ("served_model_name", &served),
                ],
            ),
            (
                "trtllm_parallel_config_info",
                vec![
                    ("context_parallel_size", "1"),
                    ("gpu_count", &tp),
                    ("pipeline_parallel_size", "1"),
                    ("tensor_parallel_size", &tp),
                ],
            ),
            (
                "trtllm_kv_cache_config_info",
                vec![
                    ("cache_dtype", "auto"),
                    ("enable_block_reuse", reuse),
                    ("enable_partial_reuse", reuse),
                    ("free_gpu_memory_fraction", &fraction),
                ],
            ),
        ];
        for (name, extra) in info {
            if let Some(c) = self.at(name, &extra) {
                c.value = 1.0;
            }
        }
    }

    fn set_scheduler_state(&mut self, _e: usize, running: u32, waiting: u32, kv_usage: f64) {
        self.before = self.latest;
        self.latest = SchedState {
            running,
            waiting,
            kv_usage,
        };
        self.iter += 1;
        if self.iteration_stats {
            if self.stats.len() == MAX_ITERATION_STATS {
                self.stats.pop_front();
            }
            let entry = self.iteration_entry(self.latest);
            self.stats.push_back(entry);
        }
    }

    fn spec(&mut self, _e: usize, _c: &crate::spec::SpecCounts) {}

    fn add_preemptions(&mut self, _e: usize, _n: u64) {}

    fn observe_iteration_tokens(&mut self, _e: usize, _tokens: &[u32]) {}

    /// A request's context phase ran: its blocks found in the cache and those computed.
    fn first_token(&mut self, _e: usize, prompt_tokens: u32, cached: u32, _ttft_s: f64) {
        let tpb = self.tokens_per_block.max(1.0);
        let reused = (f64::from(cached) / tpb).floor();
        let missed = (f64::from(prompt_tokens) / tpb).ceil() - reused;
        self.missed += missed;
        self.reused += reused;
        for name in [
            "trtllm_kv_cache_missed_blocks_total",
            "trtllm_kv_cache_iter_missed_blocks_total",
        ] {
            self.add_iteration(name, missed);
        }
        for name in [
            "trtllm_kv_cache_reused_blocks_total",
            "trtllm_kv_cache_iter_reused_blocks_total",
            "trtllm_kv_cache_iter_partial_reused_blocks_total",
        ] {
            self.add_iteration(name, reused);
        }
        if self.iteration_stats {
            self.observe(
                "trtllm_prefill_batch_tokens",
                f64::from(prompt_tokens - cached.min(prompt_tokens)),
            );
        }
    }

    fn tokens(&mut self, _e: usize, _n: u32, _itl_s: Option<(u32, f64)>, _streaming: bool) {}

    fn request_finished(&mut self, _e: usize, s: &RequestStats) {
        let reason = [("finished_reason", s.finished_reason)];
        self.add("trtllm_request_success_total", &reason, 1.0);
        self.add(
            "trtllm_prompt_tokens_total",
            &[],
            f64::from(s.prompt_tokens),
        );
        self.add(
            "trtllm_generation_tokens_total",
            &[],
            f64::from(s.generation_tokens),
        );
        self.add(
            "trtllm_prompt_cached_tokens_total",
            &[],
            f64::from(s.cached_tokens),
        );
        let tpot = if s.generation_tokens > 1 {
            (s.e2e_s - s.ttft_s) / f64::from(s.generation_tokens - 1)
        } else {
            0.0
        };
        for (name, x) in [
            ("trtllm_e2e_request_latency_seconds", s.e2e_s),
            ("trtllm_time_to_first_token_seconds", s.ttft_s),
            ("trtllm_time_per_output_token_seconds", tpot),
            ("trtllm_request_queue_time_seconds", s.queue_s),
            ("trtllm_request_prefill_time_seconds", s.prefill_s),
            ("trtllm_request_decode_time_seconds", s.decode_s),
            ("trtllm_request_inference_time_seconds", s.inference_s),
            (
                "trtllm_prompt_cached_tokens_per_request",
                f64::from(s.cached_tokens),
            ),
        ] {
            self.observe(name, x);
        }
        self.add_iteration("trtllm_num_requests_completed_total", 1.0);
        let gen_blocks = (f64::from(s.generation_tokens) / self.tokens_per_block.max(1.0)).ceil();
        self.add_iteration("trtllm_kv_cache_gen_alloc_blocks_total", gen_blocks);
        self.publish(self.before);
    }

    fn admission_rejected(&mut self) {}

    fn http_request(&mut self, _r: &HttpRequest, _now_unix: f64) {}

    fn render(&mut self) -> String {
        let mut out = String::new();
        // Without iteration stats their families are never registered.
        for (f, iteration) in self.families.iter().zip(&self.iteration_family) {
            if self.iteration_stats || !iteration {
                f.render_multiprocess(&mut out);
            }
        }
        out
    }

    fn drain_iteration_stats(&mut self) -> Option<Vec<Value>> {
        Some(self.stats.drain(..).collect())
    }
}
