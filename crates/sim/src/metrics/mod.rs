//! The API server's /metrics: the families each vLLM release registers (names, HELP, labels,
//! buckets, pre-created children, order; docs/design/engines.md#metrics-exposition and the recorded
//! 0.28/0.30 scrapes), the default Python collectors, and prometheus-fastapi-instrumentator's
//! `http_*` families.
//!
//! Like vLLM, the frontend owns every metric; the engine ships per-step numbers to it. The
//! frontend talks to an [`Exposition`]: vLLM's [`Registry`] here, SGLang's
//! ([`crate::sglang::metrics`]) under `--engine sglang`, TensorRT-LLM's
//! ([`crate::trtllm::metrics`]) under `--engine trtllm`.

mod cache_info;
mod collectors;
mod families;
mod offload;

use super::expo::Family;
use super::settings::ServeConfig;

/// Handlers prometheus-fastapi-instrumentator leaves out (vLLM's `excluded_handlers`).
pub const UNINSTRUMENTED: &[&str] = &[
    "/metrics",
    "/health",
    "/load",
    "/ping",
    "/version",
    "/server_info",
];

/// One finished request as the frontend saw it, for the per-request histograms.
#[derive(Clone, Debug, Default)]
pub struct RequestStats {
    pub finished_reason: &'static str,
    /// Whether the client asked for a stream (SGLang labels its request metrics with it).
    pub streaming: bool,
    /// Prompt tokens the prefix cache served.
    pub cached_tokens: u32,
    /// Arrival to first token (0 when none came).
    pub ttft_s: f64,
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

/// One HTTP request as the instrumentator sees it: the route template (`none` when no route
/// matched), the status, the Content-Length of request and response, and its duration.
#[derive(Clone, Debug, Default)]
pub struct HttpRequest {
    pub handler: String,
    pub method: String,
    pub status: u16,
    pub req_bytes: f64,
    pub resp_bytes: f64,
    pub secs: f64,
}

/// What the frontend records, whatever the engine: each method is one thing the API server saw
/// happen, in the engine's own vocabulary once inside.
pub trait Exposition: Send {
    /// The server restarted (`--metrics-fault restart`): counters back to zero.
    fn restart(&mut self, cfg: &ServeConfig, now_unix: f64);
    /// The engines are ready (they sized their KV pools).
    fn engine_initialized(&mut self, cfg: &ServeConfig, now_unix: f64);
    /// The engines' own pids, from their hello (SGLang labels some gauges with them).
    fn engine_pids(&mut self, _pids: &[u32]) {}
    fn set_scheduler_state(&mut self, e: usize, running: u32, waiting: u32, kv_usage: f64);
    fn spec(&mut self, e: usize, c: &crate::spec::SpecCounts);
    fn add_preemptions(&mut self, e: usize, n: u64);
    fn observe_iteration_tokens(&mut self, e: usize, tokens: &[u32]);
    fn first_token(&mut self, e: usize, prompt_tokens: u32, cached: u32, ttft_s: f64);
    /// New tokens of one request (of a stream when `streaming`).
    fn tokens(&mut self, e: usize, n: u32, itl_s: Option<(u32, f64)>, streaming: bool);
    fn request_finished(&mut self, e: usize, s: &RequestStats);
    fn admission_rejected(&mut self);
    /// KV offloading moved blocks for one admitted request (vLLM's connector metrics).
    fn kv_offload(&mut self, _e: usize, _s: &crate::api::offload::OffloadStep) {}
    /// An HTTP request arrived (SGLang counts it, and the ones in progress, from here).
    fn http_started(&mut self, _r: &HttpRequest) {}
    fn http_request(&mut self, r: &HttpRequest, now_unix: f64);
    fn render(&mut self) -> String;
    /// TensorRT-LLM's `/metrics`: the iteration stats since the last read, drained (None for
    /// the engines whose `/metrics` is Prometheus text).
    fn drain_iteration_stats(&mut self) -> Option<Vec<serde_json::Value>> {
        None
    }
}

impl Exposition for Registry {
    fn restart(&mut self, cfg: &ServeConfig, now_unix: f64) {
        Registry::restart(self, cfg, now_unix);
    }
    fn engine_initialized(&mut self, cfg: &ServeConfig, now_unix: f64) {
        Registry::engine_initialized(self, cfg, now_unix);
    }
    fn set_scheduler_state(&mut self, e: usize, running: u32, waiting: u32, kv_usage: f64) {
        Registry::set_scheduler_state(self, e, running, waiting, kv_usage);
    }
    fn spec(&mut self, e: usize, c: &crate::spec::SpecCounts) {
        Registry::spec(self, e, c);
    }
    fn add_preemptions(&mut self, e: usize, n: u64) {
        Registry::add_preemptions(self, e, n);
    }
    fn observe_iteration_tokens(&mut self, e: usize, tokens: &[u32]) {
        Registry::observe_iteration_tokens(self, e, tokens);
    }
    fn first_token(&mut self, e: usize, prompt_tokens: u32, cached: u32, ttft_s: f64) {
        Registry::first_token(self, e, prompt_tokens, cached, ttft_s);
    }
    fn tokens(&mut self, e: usize, n: u32, itl_s: Option<(u32, f64)>, _streaming: bool) {
        Registry::tokens(self, e, n, itl_s);
    }
    fn request_finished(&mut self, e: usize, s: &RequestStats) {
        Registry::request_finished(self, e, s);
    }
    fn admission_rejected(&mut self) {
        Registry::admission_rejected(self);
    }
    fn kv_offload(&mut self, e: usize, s: &crate::api::offload::OffloadStep) {
        offload::record(self, e, s);
    }
    fn http_request(&mut self, r: &HttpRequest, now_unix: f64) {
        Registry::http_request(self, r, now_unix);
    }
    fn render(&mut self) -> String {
        Registry::render(self)
    }
}

/// vLLM's exposition.
pub struct Registry {
    model: String,
    /// The `engine` label of each engine (data-parallel rank), `"0"` alone without DP.
    engines: Vec<String>,
    /// Several engines: vLLM's API servers then run prometheus_client in multiprocess mode
    /// (the recorded `vllm-0.32-cpu/dp2` scrapes): no `_created` series, no Python and process
    /// collectors, families grouped counters, histograms, gauges, and each engine's scheduler
    /// gauges absent until its first step.
    multiprocess: bool,
    start_unix: f64,
    families: Vec<Family>,
    cache_info: Option<Family>,
    http: Vec<Family>,
    /// Scrapes served, to move the fake Python GC counters a little.
    scrapes: u64,
}

impl Registry {
    pub fn new(cfg: &ServeConfig, start_unix: f64, now_unix: f64) -> Registry {
        Registry {
            model: cfg.model_name().to_string(),
            engines: (0..cfg.dp.max(1)).map(|e| e.to_string()).collect(),
            multiprocess: cfg.dp > 1,
            start_unix,
            families: {
                let mut f = families::vllm(cfg);
                f.extend(offload::families(cfg, cfg.model_name()));
                f
            },
            cache_info: None,
            http: families::http(now_unix),
            scrapes: 0,
        }
    }

    fn fam(&mut self, name: &str) -> Option<&mut Family> {
        self.families.iter_mut().find(|f| f.name == name)
    }

    fn label(&self, e: usize) -> String {
        self.engines
            .get(e)
            .cloned()
            .unwrap_or_else(|| e.to_string())
    }

    /// Adds to engine `e`'s (model, engine) child of a counter or gauge.
    fn add(&mut self, e: usize, name: &str, x: f64) {
        let (m, l) = (self.model.clone(), self.label(e));
        if let Some(f) = self.fam(name) {
            f.child(&[&m, &l], 0.0).value += x;
        }
    }

    fn set(&mut self, e: usize, name: &str, x: f64) {
        let (m, l) = (self.model.clone(), self.label(e));
        if let Some(f) = self.fam(name) {
            f.child(&[&m, &l], 0.0).value = x;
        }
    }

    fn observe(&mut self, e: usize, name: &str, x: f64) {
        let (m, l) = (self.model.clone(), self.label(e));
        if let Some(f) = self.fam(name) {
            f.observe(&[&m, &l], x, 0.0);
        }
    }

    /// The server restarted (`--metrics-fault restart`): a new process's registry, every
    /// counter at zero and every `_created` stamp (and the process start time) at `now_unix`.
    pub fn restart(&mut self, cfg: &ServeConfig, now_unix: f64) {
        *self = Registry::new(cfg, now_unix, now_unix);
        self.engine_initialized(cfg, now_unix);
    }

    /// `vllm:cache_config_info`, registered once the engine has sized its KV pool.
    pub fn engine_initialized(&mut self, cfg: &ServeConfig, now_unix: f64) {
        self.cache_info = Some(cache_info::family(cfg, now_unix));
    }

    /// The scheduler gauges of engine `e`'s latest step.
    pub fn set_scheduler_state(&mut self, e: usize, running: u32, waiting: u32, kv_usage: f64) {
        self.set(e, "vllm:num_requests_running", running as f64);
        self.set(e, "vllm:num_requests_waiting", waiting as f64);
        let (m, l) = (self.model.clone(), self.label(e));
        if let Some(f) = self.fam("vllm:num_requests_waiting_by_reason") {
            f.child(&[&m, &l, "capacity"], 0.0).value = waiting as f64;
            f.child(&[&m, &l, "deferred"], 0.0);
        }
        self.set(e, "vllm:kv_cache_usage_perc", kv_usage);
    }

    /// The n-gram drafter's counts behind engine `e`'s latest tokens.
    pub fn spec(&mut self, e: usize, c: &crate::spec::SpecCounts) {
        if c.drafts == 0 {
            return;
        }
        self.add(e, "vllm:spec_decode_num_drafts", c.drafts as f64);
        self.add(
            e,
            "vllm:spec_decode_num_draft_tokens",
            c.draft_tokens as f64,
        );
        self.add(e, "vllm:spec_decode_num_accepted_tokens", c.accepted as f64);
        let (m, l) = (self.model.clone(), self.label(e));
        if let Some(f) = self.fam(families::SPEC_PER_POS) {
            for (pos, n) in c.per_pos.iter().enumerate() {
                f.child(&[&m, &l, &pos.to_string()], 0.0).value += *n as f64;
            }
        }
    }

    pub fn add_preemptions(&mut self, e: usize, n: u64) {
        if n > 0 {
            self.add(e, "vllm:num_preemptions", n as f64);
        }
    }

    pub fn observe_iteration_tokens(&mut self, e: usize, tokens: &[u32]) {
        for &t in tokens {
            self.observe(e, "vllm:iteration_tokens_total", t as f64);
        }
    }

    /// A request's first token reached the frontend: its prompt is counted once, here, with
    /// the `cached` tokens of it the prefix cache served.
    pub fn first_token(&mut self, e: usize, prompt_tokens: u32, cached: u32, ttft_s: f64) {
        let p = prompt_tokens as f64;
        let c = f64::from(cached.min(prompt_tokens));
        self.add(e, "vllm:prompt_tokens", p);
        self.add(e, "vllm:prefix_cache_queries", p);
        if c > 0.0 {
            self.add(e, "vllm:prefix_cache_hits", c);
            self.add(e, "vllm:prompt_tokens_cached", c);
        }
        let (m, l) = (self.model.clone(), self.label(e));
        if let Some(f) = self.fam("vllm:prompt_tokens_by_source") {
            f.child(&[&m, &l, "local_compute"], 0.0).value += p - c;
            if c > 0.0 {
                f.child(&[&m, &l, "local_cache_hit"], 0.0).value += c;
            }
        }
        if c > 0.0 {
            if let Some(f) = self.fam("vllm:prompt_tokens_cached_by_source") {
                f.child(&[&m, &l, "device"], 0.0).value += c;
            }
        }
        self.observe(e, "vllm:time_to_first_token_seconds", ttft_s);
    }

    /// New tokens of one request; `itl_s` is one inter-token latency per token after the first.
    pub fn tokens(&mut self, e: usize, n: u32, itl_s: Option<(u32, f64)>) {
        self.add(e, "vllm:generation_tokens", n as f64);
        if let Some((count, each)) = itl_s {
            for _ in 0..count {
                self.observe(e, "vllm:inter_token_latency_seconds", each);
            }
        }
    }

    pub fn request_finished(&mut self, e: usize, s: &RequestStats) {
        let (m, l) = (self.model.clone(), self.label(e));
        if let Some(f) = self.fam("vllm:request_success") {
            f.child(&[&m, &l, s.finished_reason], 0.0).value += 1.0;
        }
        if s.finished_reason == "abort" && s.generation_tokens == 0 {
            return;
        }
        self.observe(e, "vllm:e2e_request_latency_seconds", s.e2e_s);
        self.observe(e, "vllm:request_queue_time_seconds", s.queue_s);
        self.observe(e, "vllm:request_prefill_time_seconds", s.prefill_s);
        self.observe(e, "vllm:request_inference_time_seconds", s.inference_s);
        self.observe(e, "vllm:request_decode_time_seconds", s.decode_s);
        self.observe(e, "vllm:request_prompt_tokens", s.prompt_tokens as f64);
        self.observe(
            e,
            "vllm:request_generation_tokens",
            s.generation_tokens as f64,
        );
        self.observe(
            e,
            "vllm:request_max_num_generation_tokens",
            s.max_tokens as f64,
        );
        self.observe(e, "vllm:request_params_n", 1.0);
        self.observe(e, "vllm:request_params_max_tokens", s.max_tokens as f64);
        if s.generation_tokens > 1 {
            self.observe(
                e,
                "vllm:request_time_per_output_token_seconds",
                s.decode_s / (s.generation_tokens - 1) as f64,
            );
        }
        self.observe(e, "vllm:request_num_preemptions", s.num_preemptions as f64);
        self.observe(
            e,
            "vllm:request_prefill_kv_computed_tokens",
            s.prompt_tokens as f64,
        );
    }

    /// A request refused by `--max-num-queued-reqs` (0.33 counts them).
    pub fn admission_rejected(&mut self) {
        let m = self.model.clone();
        if let Some(f) = self.fam("vllm:admission_rejections") {
            f.child(&[&m, "max_num_queued_reqs"], 0.0).value += 1.0;
        }
    }

    /// One HTTP request, as the instrumentator records it once its response is complete.
    pub fn http_request(&mut self, r: &HttpRequest, now_unix: f64) {
        let (handler, method) = (r.handler.as_str(), r.method.as_str());
        if UNINSTRUMENTED.contains(&handler) {
            return;
        }
        let group = format!("{}xx", r.status / 100);
        self.http[0]
            .child(&[method, &group, handler], now_unix)
            .value += 1.0;
        self.http[1].observe(&[handler], r.req_bytes, now_unix);
        self.http[2].observe(&[handler], r.resp_bytes, now_unix);
        self.http[3].observe(&[], r.secs, now_unix);
        self.http[4].observe(&[handler, method], r.secs, now_unix);
    }

    /// The whole exposition, as `GET /metrics` returns it.
    pub fn render(&mut self) -> String {
        self.scrapes += 1;
        let mut out = String::with_capacity(64 * 1024);
        if self.multiprocess {
            self.render_multiprocess(&mut out);
            return out;
        }
        collectors::render(&mut out, self.start_unix, self.scrapes);
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

    /// prometheus_client's multiprocess collector: every family read back from the processes'
    /// files, grouped by kind (counters and summaries, histograms, gauges), no `_created`.
    fn render_multiprocess(&self, out: &mut String) {
        use super::expo::Kind;
        let rank = |f: &Family| match f.kind {
            Kind::Counter | Kind::Summary => 0,
            Kind::Histogram(_) => 1,
            Kind::Gauge => 2,
        };
        let mut all: Vec<&Family> = self
            .families
            .iter()
            .chain(&self.http)
            .chain(self.cache_info.as_ref())
            .collect();
        all.sort_by_key(|f| rank(f));
        for fam in all {
            fam.render(out, false);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::test_config;

    fn registry(args: &[&str]) -> (ServeConfig, Registry) {
        let mut v = vec!["m"];
        v.extend_from_slice(args);
        let cfg = test_config(&v);
        let mut r = Registry::new(&cfg, 1.79e9, 1.79e9 + 1.0);
        r.engine_initialized(&cfg, 1.79e9 + 2.0);
        (cfg, r)
    }

    #[test]
    fn iteration_tokens_keeps_its_total_suffix_and_counters_gain_one() {
        let (_, mut r) = registry(&["--vllm-version", "0.33"]);
        let text = r.render();
        assert!(text.contains("# TYPE vllm:iteration_tokens_total histogram\n"));
        assert!(text.contains(
            "vllm:iteration_tokens_total_bucket{engine=\"0\",le=\"1.0\",model_name=\"m\"} 0.0\n"
        ));
        assert!(text.contains("# TYPE vllm:num_preemptions_total counter\n"));
        assert!(text.contains("vllm:request_success_total{engine=\"0\",finished_reason=\"repetition\",model_name=\"m\"} 0.0\n"));
        assert!(text.contains("vllm:admission_rejections_total{model_name=\"m\",reason=\"max_num_queued_reqs\"} 0.0\n"));
        assert!(
            !text.contains("vllm:estimated_flops"),
            "0.33 registers no MFU counters by default"
        );
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
        let (cfg, mut r) = registry(&[
            "--hybrid",
            "--num-gpu-blocks-override",
            "43",
            "--max-model-len",
            "16384",
        ]);
        let text = r.render();
        let line = text
            .lines()
            .find(|l| l.starts_with("vllm:cache_config_info{"))
            .unwrap();
        assert!(line.contains("num_gpu_blocks=\"43\""));
        assert!(line.contains("block_size=\"784\""));
        assert!(line.contains(&format!(
            "kv_cache_size_tokens=\"{}\"",
            cfg.kv_cache_tokens()
        )));
        assert!(line.ends_with("} 1.0"));
    }

    #[test]
    fn instrumentator_skips_excluded_handlers_and_groups_status() {
        let (_, mut r) = registry(&[]);
        let req = |handler: &str, method: &str, status| HttpRequest {
            handler: handler.into(),
            method: method.into(),
            status,
            req_bytes: 100.0,
            resp_bytes: 0.0,
            secs: 0.2,
        };
        r.http_request(&req("/metrics", "GET", 200), 1.0);
        r.http_request(&req("/v1/completions", "POST", 503), 1.0);
        let text = r.render();
        assert!(!text.contains("handler=\"/metrics\""));
        assert!(text.contains(
            "http_requests_total{handler=\"/v1/completions\",method=\"POST\",status=\"5xx\"} 1.0\n"
        ));
        assert!(text.contains("http_request_duration_highr_seconds_count 1.0\n"));
    }
}
