//! SGLang's `/metrics` (with `--enable-metrics`): the recorded families ([`super::families`])
//! with the children and values the simulated server gives them. SGLang always runs
//! prometheus_client in multiprocess mode (docs/design/engines.md#the-simulated-sglang): no `_created` samples, no Python or
//! process collectors, a histogram's `_sum` before its buckets and `_count`, and a family only
//! once a sample of it exists (so `num_retracted_requests_total` appears with the first
//! retraction, `inter_token_latency_seconds` with the first streamed token, as recorded).
//!
//! Scheduler metrics carry `engine_type, model_name, moe_ep_rank, pp_rank, tp_rank` (plus
//! `dp_rank` with data parallelism); the tokenizer's request metrics `engine_type,
//! is_streaming, model_name`, counted when a request finishes (SGLang's token counters move
//! at the finish, `Engine::token_counter_at_finish` in core).

use super::boot::Memory;
use super::families::{Spec, FAMILIES};
use crate::expo::{Child, Family, Kind};
use crate::metrics::{Exposition, HttpRequest, RequestStats};
use crate::os::mono_now;
use crate::settings::ServeConfig;

const GRAPH_PHASES: [&str; 6] = [
    "prefill",
    "decode",
    "target_verify",
    "draft_prefill",
    "draft_decode",
    "draft_extend",
];
const ROUTING_BUCKETS: [(&str, &str); 11] = [
    ("0", "1"),
    ("1", "2"),
    ("2", "3"),
    ("3", "5"),
    ("5", "7"),
    ("7", "10"),
    ("10", "20"),
    ("20", "50"),
    ("50", "100"),
    ("100", "200"),
    ("200", "+Inf"),
];
const STAGES: [&str; 9] = [
    "other",
    "recv_requests",
    "process_input_requests",
    "get_next_batch_to_run",
    "process_queue",
    "run_batch",
    "process_batch_result",
    "sanity_check_cache",
    "idle",
];

/// One engine's (data-parallel rank's) running numbers behind its gauges.
#[derive(Clone, Debug, Default)]
struct Rank {
    /// Tokens of finished requests the radix cache still holds (evictable).
    held: f64,
    prefix_queries: f64,
    prefix_hits: f64,
    /// Generated tokens since `window_start`, for `gen_throughput`.
    window_tokens: f64,
    window_start: f64,
    idle_since: Option<f64>,
    idle_total: f64,
}

pub struct SglangRegistry {
    model: String,
    pool: f64,
    dp: u32,
    cudagraphs: bool,
    families: Vec<Family>,
    ranks: Vec<Rank>,
    pids: Vec<u32>,
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

/// Whether `f` is the family exposed as `name` (a counter's name comes without `_total`).
fn named(f: &Family, name: &str) -> bool {
    f.name == name || (f.kind == Kind::Counter && name.strip_suffix("_total") == Some(&f.name))
}

/// Whether a family is a scheduler's (labelled by rank).
fn is_scheduler(f: &Family) -> bool {
    f.label_names.iter().any(|l| l == "tp_rank")
}

impl SglangRegistry {
    pub fn new(cfg: &ServeConfig, now_unix: f64) -> SglangRegistry {
        let _ = now_unix;
        let families = FAMILIES
            .iter()
            .map(|s| {
                let mut labels: Vec<&str> = s.labels.to_vec();
                if cfg.dp > 1 && labels.contains(&"tp_rank") {
                    labels.push("dp_rank");
                    labels.sort_unstable();
                }
                Family::new(s.name, s.help, kind_of(s), &labels)
            })
            .collect();
        let now = mono_now();
        let mut r = SglangRegistry {
            model: cfg.model_name().to_string(),
            pool: cfg.pool_tokens() as f64,
            dp: cfg.dp.max(1),
            cudagraphs: !cfg.enforce_eager,
            families,
            ranks: vec![
                Rank {
                    window_start: now,
                    idle_since: Some(now),
                    ..Rank::default()
                };
                cfg.dp.max(1) as usize
            ],
            pids: Vec::new(),
        };
        r.precreate();
        r
    }

    fn fam(&mut self, name: &str) -> Option<&mut Family> {
        self.families.iter_mut().find(|f| named(f, name))
    }

    /// The scheduler labels of rank `e`.
    fn sched_pairs(&self, e: usize) -> Vec<(String, String)> {
        let mut v: Vec<(String, String)> = vec![
            ("engine_type".into(), "unified".into()),
            ("model_name".into(), self.model.clone()),
            ("moe_ep_rank".into(), "0".into()),
            ("pp_rank".into(), "0".into()),
            ("tp_rank".into(), "0".into()),
        ];
        if self.dp > 1 {
            v.push(("dp_rank".into(), e.to_string()));
        }
        v
    }

    /// The child of family `name` for rank `e`: a scheduler family's rank labels, or the
    /// tokenizer's `engine_type` and `model_name`, plus `extra`.
    fn at(&mut self, name: &str, e: usize, extra: &[(&'static str, String)]) -> Option<&mut Child> {
        let mut pairs = self.sched_pairs(e);
        let f = self.families.iter_mut().find(|f| named(f, name))?;
        if !is_scheduler(f) {
            pairs.retain(|(k, _)| k == "engine_type" || k == "model_name");
        }
        pairs.extend(extra.iter().map(|(k, x)| (k.to_string(), x.clone())));
        let refs: Vec<(&str, &str)> = pairs
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect();
        Some(child(f, &refs))
    }

    fn set(&mut self, name: &str, e: usize, x: f64) {
        if let Some(c) = self.at(name, e, &[]) {
            c.value = x;
        }
    }

    fn add(&mut self, name: &str, e: usize, extra: &[(&'static str, String)], x: f64) {
        if let Some(c) = self.at(name, e, extra) {
            c.value += x;
        }
    }

    fn observe(&mut self, name: &str, e: usize, extra: &[(&'static str, String)], x: f64) {
        let Some(Kind::Histogram(bounds)) = self.fam(name).map(|f| f.kind.clone()) else {
            return;
        };
        if let Some(c) = self.at(name, e, extra) {
            c.count += 1;
            c.sum += x;
            let i = bounds
                .iter()
                .position(|&le| x <= le)
                .unwrap_or(bounds.len());
            c.buckets[i] += 1;
        }
    }

    /// The children a scheduler creates when it starts: every scheduler gauge at 0 (the
    /// `pid`-labelled ones wait for [`Exposition::engine_pids`]), the per-stage counters and
    /// the routing-key distributions, for every rank.
    fn precreate(&mut self) {
        let names: Vec<(String, bool)> = self
            .families
            .iter()
            .filter(|f| is_scheduler(f) && !f.label_names.iter().any(|l| l == "pid"))
            .map(|f| (f.name.clone(), f.kind == Kind::Gauge))
            .collect();
        for e in 0..self.dp as usize {
            for (name, gauge) in &names {
                let plain = match name.as_str() {
                    "sglang:graph_memory_usage_gb"
                    | "sglang:routing_key_running_req_count"
                    | "sglang:routing_key_all_req_count"
                    | "sglang:scheduler_stage_seconds_total"
                    | "sglang:prefill_effective_tokens_total" => false,
                    // Counters are named without `_total` inside.
                    "sglang:scheduler_idle_seconds" | "sglang:scheduler_process_cpu_seconds" => {
                        true
                    }
                    _ => *gauge,
                };
                if plain {
                    self.add(name, e, &[], 0.0);
                }
            }
            for phase in GRAPH_PHASES {
                self.add(
                    "sglang:graph_memory_usage_gb",
                    e,
                    &[("phase", phase.into())],
                    0.0,
                );
            }
            for (gt, le) in ROUTING_BUCKETS {
                for name in [
                    "sglang:routing_key_running_req_count",
                    "sglang:routing_key_all_req_count",
                ] {
                    self.add(name, e, &[("gt", gt.into()), ("le", le.into())], 0.0);
                }
            }
            for cat in STAGES {
                let extra = [("category", cat.to_string())];
                self.add("sglang:scheduler_stage_seconds_total", e, &extra, 0.0);
            }
            for mode in ["input", "device_hit", "host_hit", "storage_hit"] {
                let extra = [("mode", mode.to_string())];
                self.add("sglang:prefill_effective_tokens_total", e, &extra, 0.0);
            }
            self.set("sglang:fwd_occupancy", e, f64::NAN);
        }
        if let Some(f) = self.fam("sglang:routing_keys_active") {
            child(f, &[]);
        }
    }

    /// `component`'s CPU seconds (`/proc/PID/stat` utime + stime).
    fn cpu_seconds(pid: u32) -> Option<f64> {
        let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
        let (_, rest) = text.rsplit_once(')')?;
        let f: Vec<&str> = rest.split_whitespace().collect();
        let ticks: f64 = f.get(11)?.parse::<f64>().ok()? + f.get(12)?.parse::<f64>().ok()?;
        // SAFETY: sysconf only reads a system constant.
        let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as f64;
        Some(ticks / hz)
    }

    /// The process counters read at each scrape, as SGLang's collectors read theirs.
    fn refresh_processes(&mut self) {
        let now = mono_now();
        if let Some(cpu) = SglangRegistry::cpu_seconds(std::process::id()) {
            if let Some(f) = self.fam("sglang:process_cpu_seconds_total") {
                child(f, &[("component", "tokenizer")]).value = cpu;
            }
        }
        for (e, pid) in self.pids.clone().into_iter().enumerate() {
            if let Some(cpu) = SglangRegistry::cpu_seconds(pid) {
                self.set("sglang:scheduler_process_cpu_seconds_total", e, cpu);
            }
            let r = &self.ranks[e.min(self.ranks.len() - 1)];
            let idle = r.idle_total + r.idle_since.map_or(0.0, |t| now - t);
            self.set("sglang:scheduler_idle_seconds_total", e, idle);
        }
    }
}

impl Exposition for SglangRegistry {
    fn restart(&mut self, cfg: &ServeConfig, now_unix: f64) {
        let pids = std::mem::take(&mut self.pids);
        *self = SglangRegistry::new(cfg, now_unix);
        self.engine_initialized(cfg, now_unix);
        self.engine_pids(&pids);
    }

    /// The scheduler's start-up gauges, from the same numbers its boot lines print.
    fn engine_initialized(&mut self, cfg: &ServeConfig, _now_unix: f64) {
        let m = Memory::of(cfg);
        let share = cfg.boot_secs * 0.8 / 8.0;
        for e in 0..self.dp as usize {
            self.set("sglang:max_total_num_tokens", e, self.pool);
            self.set("sglang:page_size", e, f64::from(cfg.block_size));
            self.set("sglang:num_pages", e, f64::from(cfg.num_gpu_blocks));
            self.set("sglang:context_len", e, f64::from(cfg.max_model_len));
            self.set("sglang:kv_available_tokens", e, self.pool);
            self.set("sglang:startup_available_gpu_memory_gb", e, m.available());
            self.set("sglang:weight_memory_usage_gb", e, m.weights);
            self.set("sglang:kv_cache_memory_usage_gb", e, 2.0 * m.k_size);
            // SGLang's init_new_token_ratio: 0.7 × schedule_conservativeness (1.0).
            self.set("sglang:new_token_ratio", e, 0.7);
            for (phase, gib) in [("prefill", m.graph_prefill), ("decode", m.graph_decode)] {
                self.add(
                    "sglang:graph_memory_usage_gb",
                    e,
                    &[("phase", phase.into())],
                    gib,
                );
            }
        }
        let tok = |p: &'static str| [("phase", p.to_string())];
        for (phase, s) in [
            ("load_weight", share * 2.0),
            ("kv_cache_allocation", 0.01),
            ("scheduler_e2e", cfg.boot_secs * 0.8),
            ("tokenizer_e2e", cfg.boot_secs * 0.9),
        ] {
            self.add("sglang:startup_time_seconds", 0, &tok(phase), s);
        }
        for phase in GRAPH_PHASES {
            let s = match phase {
                "prefill" if self.cudagraphs => share,
                "decode" if self.cudagraphs => share / 4.0,
                _ => 0.0,
            };
            self.add("sglang:startup_cuda_graph_time_seconds", 0, &tok(phase), s);
        }
    }

    fn engine_pids(&mut self, pids: &[u32]) {
        self.pids = pids.to_vec();
        for (e, pid) in pids.iter().enumerate() {
            for name in ["sglang:num_retracted_reqs", "sglang:num_paused_reqs"] {
                self.add(name, e, &[("pid", pid.to_string())], 0.0);
            }
        }
    }

    fn set_scheduler_state(&mut self, e: usize, running: u32, waiting: u32, kv_usage: f64) {
        let used = (kv_usage * self.pool).round();
        let now = mono_now();
        let pool = self.pool;
        let r = &mut self.ranks[e.min(self.dp as usize - 1)];
        let evictable = r.held.min(pool - used).max(0.0);
        match (running + waiting == 0, r.idle_since) {
            (true, None) => r.idle_since = Some(now),
            (false, Some(t)) => {
                r.idle_total += now - t;
                r.idle_since = None;
            }
            _ => {}
        }
        self.set("sglang:num_running_reqs", e, f64::from(running));
        self.set("sglang:num_queue_reqs", e, f64::from(waiting));
        for name in ["sglang:token_usage", "sglang:full_token_usage"] {
            self.set(name, e, kv_usage);
        }
        for name in ["sglang:num_used_tokens", "sglang:kv_used_tokens"] {
            self.set(name, e, used);
        }
        self.set("sglang:kv_evictable_tokens", e, evictable);
        self.set("sglang:kv_available_tokens", e, pool - used - evictable);
        let graph = running > 0 && self.cudagraphs;
        self.set("sglang:is_cuda_graph", e, if graph { 1.0 } else { 0.0 });
        if running == 0 {
            self.set("sglang:gen_throughput", e, 0.0);
        }
        if let Some(pid) = self.pids.get(e).copied() {
            let extra = [("pid", pid.to_string())];
            if let Some(c) = self.at("sglang:num_retracted_reqs", e, &extra) {
                c.value = 0.0;
            }
        }
    }

    fn spec(&mut self, _e: usize, _c: &crate::spec::SpecCounts) {}

    /// SGLang's retraction: the counters appear with the first one (the token counts are not
    /// shipped by the simulated engine, so they stay at 0).
    fn add_preemptions(&mut self, e: usize, n: u64) {
        if n == 0 {
            return;
        }
        self.add("sglang:num_retracted_requests_total", e, &[], n as f64);
        self.add("sglang:num_retracted_input_tokens_total", e, &[], 0.0);
        self.add("sglang:num_retracted_output_tokens_total", e, &[], 0.0);
        if let Some(pid) = self.pids.get(e).copied() {
            let extra = [("pid", pid.to_string())];
            self.add("sglang:num_retracted_reqs", e, &extra, n as f64);
        }
    }

    fn observe_iteration_tokens(&mut self, e: usize, tokens: &[u32]) {
        if tokens.is_empty() {
            return;
        }
        let mode = if self.cudagraphs {
            "decode_cuda_graph"
        } else {
            "decode_none"
        };
        let extra = [("mode", mode.to_string())];
        self.add(
            "sglang:cuda_graph_passes_total",
            e,
            &extra,
            tokens.len() as f64,
        );
    }

    fn first_token(&mut self, e: usize, prompt_tokens: u32, cached: u32, _ttft_s: f64) {
        let p = f64::from(prompt_tokens);
        let c = f64::from(cached.min(prompt_tokens));
        let mode = if self.cudagraphs {
            "prefill_cuda_graph"
        } else {
            "prefill_none"
        };
        self.add(
            "sglang:cuda_graph_passes_total",
            e,
            &[("mode", mode.into())],
            1.0,
        );
        let rt = "sglang:realtime_tokens_total";
        self.add(rt, e, &[("mode", "prefill_compute".into())], p - c);
        self.add(rt, e, &[("mode", "prefill_cache".into())], c);
        let pe = "sglang:prefill_effective_tokens_total";
        self.add(pe, e, &[("mode", "input".into())], p - c);
        self.add(pe, e, &[("mode", "device_hit".into())], c);
        let r = &mut self.ranks[e.min(self.dp as usize - 1)];
        r.prefix_queries += p;
        r.prefix_hits += c;
        let rate = r.prefix_hits / r.prefix_queries.max(1.0);
        self.set("sglang:cache_hit_rate", e, rate);
    }

    /// SGLang's tokenizer times the gaps between a stream's chunks only (the recordings show
    /// no `inter_token_latency_seconds` until a stream has run).
    fn tokens(&mut self, e: usize, n: u32, itl_s: Option<(u32, f64)>, streaming: bool) {
        let x = f64::from(n);
        self.add(
            "sglang:realtime_tokens_total",
            e,
            &[("mode", "decode".into())],
            x,
        );
        if let Some((count, each)) = itl_s.filter(|_| streaming) {
            for _ in 0..count {
                self.observe("sglang:inter_token_latency_seconds", e, &[], each);
            }
        }
        let now = mono_now();
        let r = &mut self.ranks[e.min(self.dp as usize - 1)];
        r.window_tokens += x;
        let span = now - r.window_start;
        if span >= 1.0 {
            let rate = r.window_tokens / span;
            r.window_tokens = 0.0;
            r.window_start = now;
            self.set("sglang:gen_throughput", e, rate);
        }
    }

    fn request_finished(&mut self, e: usize, s: &RequestStats) {
        if s.finished_reason == "abort" && s.generation_tokens == 0 {
            return;
        }
        let stream = [(
            "is_streaming",
            if s.streaming { "true" } else { "false" }.to_string(),
        )];
        let (p, g) = (f64::from(s.prompt_tokens), f64::from(s.generation_tokens));
        let cached = f64::from(s.cached_tokens.min(s.prompt_tokens));
        self.add("sglang:prompt_tokens_total", e, &stream, p);
        self.add("sglang:generation_tokens_total", e, &stream, g);
        self.add("sglang:num_requests_total", e, &stream, 1.0);
        if cached > 0.0 {
            let src = [("cache_source", "device".to_string())];
            self.add("sglang:cached_tokens_total", e, &src, cached);
        }
        if s.ttft_s > 0.0 {
            self.observe("sglang:time_to_first_token_seconds", e, &stream, s.ttft_s);
        }
        self.observe("sglang:e2e_request_latency_seconds", e, &stream, s.e2e_s);
        self.observe("sglang:prompt_tokens_histogram", e, &[], p);
        self.observe(
            "sglang:uncached_prompt_tokens_histogram",
            e,
            &[],
            p - cached,
        );
        self.observe("sglang:generation_tokens_histogram", e, &[], g);
        self.observe("sglang:queue_time_seconds", e, &[], s.queue_s);
        let stage = |x: &str| [("stage", x.to_string())];
        let ps = "sglang:per_stage_req_latency_seconds";
        self.observe(ps, e, &stage("request_process"), 1e-5);
        self.observe(ps, e, &stage("prefill_forward"), s.prefill_s);
        let pool = self.pool;
        let r = &mut self.ranks[e.min(self.dp as usize - 1)];
        r.held = (r.held + p + g).min(pool);
    }

    fn admission_rejected(&mut self) {}

    fn http_started(&mut self, r: &HttpRequest) {
        let pairs = [
            ("endpoint", r.handler.as_str()),
            ("method", r.method.as_str()),
        ];
        for name in ["sglang:http_requests_total", "sglang:http_requests_active"] {
            if let Some(f) = self.fam(name) {
                child(f, &pairs).value += 1.0;
            }
        }
    }

    fn http_request(&mut self, r: &HttpRequest, _now_unix: f64) {
        let pairs = [
            ("endpoint", r.handler.as_str()),
            ("method", r.method.as_str()),
        ];
        if let Some(f) = self.fam("sglang:http_requests_active") {
            let c = child(f, &pairs);
            c.value = (c.value - 1.0).max(0.0);
        }
        let code = r.status.to_string();
        let with_code = [pairs[0], pairs[1], ("status_code", code.as_str())];
        if let Some(f) = self.fam("sglang:http_responses_total") {
            child(f, &with_code).value += 1.0;
        }
    }

    fn render(&mut self) -> String {
        self.refresh_processes();
        let mut out = String::with_capacity(64 * 1024);
        for f in &self.families {
            f.render_multiprocess(&mut out);
        }
        out
    }
}

#[cfg(test)]
#[path = "metrics_tests.rs"]
mod tests;
