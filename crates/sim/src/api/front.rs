//! The API server's state: the requests in flight, the metrics registry, and what the engine's
//! batches do to both (vLLM's output processor and stat loggers).

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use tokio::sync::{mpsc, oneshot};

use crate::logline::Logger;
use crate::metrics::{Exposition, RequestStats};
use crate::os::mono_now;
use crate::proto::{Batch, ToEngine};
use crate::sched::Finish;
use crate::settings::ServeConfig;
use crate::spec::{Drafter, SpecCounts};

use super::offload::Offload;
use super::prefix::PrefixCache;

/// What a request's handler hears from the engine.
#[derive(Debug, Clone, PartialEq)]
pub enum Ev {
    /// New tokens, and the finish reason when this is the request's last output.
    Tokens { n: u32, finish: Option<Finish> },
    /// The engine is gone or the server is stopping: (HTTP status, message).
    Failed(u16, String),
}

#[derive(Debug)]
struct Pending {
    /// The engine (data-parallel rank) serving it.
    engine: usize,
    tx: mpsc::UnboundedSender<Ev>,
    arrival: f64,
    prompt: u32,
    /// Its leading tokens the prefix cache served.
    cached: u32,
    /// Its tokens after those that KV offloading loaded back.
    offloaded: u32,
    max_tokens: u32,
    first_token: Option<f64>,
    last_token: f64,
    /// The n-gram drafter of a speculative server.
    drafter: Option<Drafter>,
    /// The client asked for a stream.
    streaming: bool,
}

/// Counts for the periodic stats line.
#[derive(Debug, Default, Clone)]
pub struct Interval {
    pub prompt_tokens: u64,
    pub generation_tokens: u64,
    pub preemptions: u64,
    pub prefix_queries: u64,
}

/// One engine's prefix-cache counts since it started, for the stats line's hit rate.
#[derive(Debug, Default, Clone, Copy)]
pub struct PrefixTotals {
    pub queries: u64,
    pub hits: u64,
}

/// One engine's scheduler gauges, from its latest batch.
#[derive(Debug, Default, Clone, Copy)]
pub struct EngineState {
    pub running: u32,
    pub waiting: u32,
    pub kv_usage: f64,
    /// Requests sent to it and not finished (the load balancer's measure).
    pub assigned: u32,
}

pub struct State {
    pub reg: Box<dyn Exposition>,
    pending: HashMap<u64, Pending>,
    pub in_flight: u32,
    /// The server's totals: running and waiting summed over the engines, KV use their mean
    /// (the pools are the same size).
    pub running: u32,
    pub waiting: u32,
    pub kv_usage: f64,
    pub engines: Vec<EngineState>,
    /// Counts for each engine's periodic stats line, in rank order.
    pub interval: Vec<Interval>,
    /// Each engine's prefix cache and its totals, in rank order.
    prefix: Vec<PrefixCache>,
    pub prefix_totals: Vec<PrefixTotals>,
    /// Each engine's KV offload pool, in rank order; empty without offloading.
    offload: Vec<Offload>,
    /// Each engine's prefix-cache resets awaiting its answer, in the order asked.
    resets: Vec<VecDeque<oneshot::Sender<bool>>>,
}

impl State {
    /// Engine `e`'s scheduler gauges and counters from its batch, and the server's totals.
    fn scheduler_state(&mut self, e: usize, iv: usize, b: &Batch) {
        if let Some(es) = self.engines.get_mut(e) {
            es.running = b.running;
            es.waiting = b.waiting;
            es.kv_usage = b.kv_usage;
        }
        self.running = self.engines.iter().map(|x| x.running).sum();
        self.waiting = self.engines.iter().map(|x| x.waiting).sum();
        self.kv_usage =
            self.engines.iter().map(|x| x.kv_usage).sum::<f64>() / self.engines.len().max(1) as f64;
        self.reg
            .set_scheduler_state(e, b.running, b.waiting, b.kv_usage);
        self.reg.add_preemptions(e, b.preemptions);
        self.interval[iv].preemptions += b.preemptions;
        self.reg.observe_iteration_tokens(e, &b.iteration_tokens);
    }

    /// The batch's new tokens to their requests' handlers, timed (`k`: draft tokens per step).
    fn deliver_tokens(&mut self, e: usize, iv: usize, b: &Batch, k: u32, now: f64) {
        let finishing: HashMap<u64, Finish> = b.finished.iter().map(|f| (f.id, f.reason)).collect();
        let mut drafted = SpecCounts::default();
        for &(id, n) in &b.tokens {
            let Some(p) = self.pending.get_mut(&id) else {
                continue;
            };
            if let Some(d) = p.drafter.as_mut() {
                d.tokens(n, k, &mut drafted);
            }
            let mut first = None;
            let itl = match p.first_token {
                None => {
                    p.first_token = Some(now);
                    first = Some((p.prompt, p.cached, now - p.arrival));
                    // Tokens that arrive together with the first one came 0 s after it.
                    (n > 1).then_some((n - 1, 0.0))
                }
                Some(_) => Some((n, (now - p.last_token) / n as f64)),
            };
            p.last_token = now;
            let streaming = p.streaming;
            let _ = p.tx.send(Ev::Tokens {
                n,
                finish: finishing.get(&id).copied(),
            });
            if let Some((prompt, cached, ttft)) = first {
                self.reg.first_token(e, prompt, cached, ttft);
                self.interval[iv].prompt_tokens += prompt as u64;
                self.interval[iv].prefix_queries += prompt as u64;
                if let Some(t) = self.prefix_totals.get_mut(e) {
                    t.queries += u64::from(prompt);
                    t.hits += u64::from(cached);
                }
            }
            self.reg.tokens(e, n, itl, streaming);
            self.interval[iv].generation_tokens += n as u64;
        }
        self.reg.spec(e, &drafted);
    }

    /// The batch's finished requests: their last event and their metrics.
    fn finish_requests(&mut self, e: usize, b: &Batch, now: f64) {
        for f in &b.finished {
            let Some(p) = self.pending.remove(&f.id) else {
                continue;
            };
            self.in_flight = self.in_flight.saturating_sub(1);
            if let Some(es) = self.engines.get_mut(p.engine) {
                es.assigned = es.assigned.saturating_sub(1);
            }
            if !b.tokens.iter().any(|&(id, _)| id == f.id) {
                let _ = p.tx.send(Ev::Tokens {
                    n: 0,
                    finish: Some(f.reason),
                });
            }
            let sched = f.scheduled_ts.unwrap_or(f.queued_ts);
            let first = f.first_token_ts.unwrap_or(sched);
            let last = f.last_token_ts.unwrap_or(first);
            self.reg.request_finished(
                e,
                &RequestStats {
                    finished_reason: f.reason.label(),
                    streaming: p.streaming,
                    cached_tokens: p.cached,
                    ttft_s: p.first_token.map_or(0.0, |t| t - p.arrival),
                    prompt_tokens: f.prompt_tokens,
                    generation_tokens: f.output_tokens,
                    max_tokens: p.max_tokens,
                    e2e_s: now - p.arrival,
                    queue_s: sched - f.queued_ts,
                    prefill_s: first - sched,
                    decode_s: last - first,
                    inference_s: last - sched,
                    num_preemptions: f.num_preemptions,
                },
            );
        }
    }
}

pub struct Front {
    pub cfg: ServeConfig,
    pub log: Logger,
    pub state: Mutex<State>,
    /// One channel per engine, in rank order.
    pub to_engine: Vec<mpsc::UnboundedSender<ToEngine>>,
    next_id: AtomicU64,
    /// `/metrics` answers given so far (`--metrics-fault-after` counts them).
    pub metrics_answers: AtomicU64,
    pub engine_dead: AtomicBool,
    pub stopping: AtomicBool,
    /// The server has warmed up: always for vLLM; for SGLang once its launcher's own warm-up
    /// request is answered (its `/health` is 503 until then).
    pub warmed: AtomicBool,
    /// The instrumentator labels every path as its handler (SGLang), not only the routes.
    pub label_every_path: bool,
    /// The engine's routes beyond the shared ones, named as handlers too.
    pub more_routes: &'static [(&'static str, &'static str)],
}

/// How the engine's API server behaves where the shared frontend cannot tell by itself.
#[derive(Clone, Copy, Debug)]
pub struct Quirks {
    /// Requests are served before the launcher's own warm-up has run.
    pub starts_warm: bool,
    /// The instrumentator labels every path as its handler, not only the routes.
    pub label_every_path: bool,
    /// Routes beyond the shared ones that the instrumentator names.
    pub more_routes: &'static [(&'static str, &'static str)],
}

/// Why a request was not admitted.
pub enum Refused {
    QueueFull { current: u32, max: u32 },
    EngineDead,
}

/// One request as the API server hands it to [`Front::submit`]: its prompt's length and block
/// hashes ([`super::prefix::block_hashes`]), what it asks for, and the data-parallel rank its
/// `X-data-parallel-rank` header pins it to.
pub struct Ask<'a> {
    pub prompt: u32,
    pub blocks: &'a [u64],
    pub max_tokens: u32,
    pub ignore_eos: bool,
    /// The prompt repeats itself with a period (the n-gram drafter's drafts then hold).
    pub periodic: bool,
    pub streaming: bool,
    pub rank: Option<usize>,
}

impl Front {
    pub fn new(
        cfg: ServeConfig,
        log: Logger,
        to_engine: Vec<mpsc::UnboundedSender<ToEngine>>,
        reg: Box<dyn Exposition>,
        quirks: Quirks,
    ) -> Arc<Front> {
        let engines = vec![EngineState::default(); to_engine.len()];
        let interval = vec![Interval::default(); to_engine.len()];
        // The cache holds at most a pool's worth of blocks; off, it holds none.
        let capacity = if cfg.prefix_caching {
            cfg.num_gpu_blocks.saturating_sub(1) as usize
        } else {
            0
        };
        let prefix = (0..to_engine.len())
            .map(|_| PrefixCache::new(capacity))
            .collect();
        let prefix_totals = vec![PrefixTotals::default(); to_engine.len()];
        let offload = cfg
            .kv_offloading_size
            .map(|gib| {
                (0..to_engine.len())
                    .map(|_| Offload::new(gib, cfg.block_size, cfg.kv_offload_never_loads))
                    .collect()
            })
            .unwrap_or_default();
        Arc::new(Front {
            cfg,
            log,
            state: Mutex::new(State {
                reg,
                pending: HashMap::new(),
                in_flight: 0,
                running: 0,
                waiting: 0,
                kv_usage: 0.0,
                engines,
                interval,
                prefix,
                prefix_totals,
                offload,
                resets: (0..to_engine.len()).map(|_| VecDeque::new()).collect(),
            }),
            to_engine,
            next_id: AtomicU64::new(1),
            metrics_answers: AtomicU64::new(0),
            engine_dead: AtomicBool::new(false),
            stopping: AtomicBool::new(false),
            warmed: AtomicBool::new(quirks.starts_warm),
            label_every_path: quirks.label_every_path,
            more_routes: quirks.more_routes,
        })
    }

    pub fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Admits a request (admission control as vLLM 0.30's `check_admission`) and sends it to
    /// the engine its `X-data-parallel-rank` header names, else to the one with the fewest;
    /// the receiver hears its tokens.
    pub fn submit(self: &Arc<Front>, ask: Ask<'_>) -> Result<Submitted, Refused> {
        let Ask {
            prompt,
            blocks,
            max_tokens,
            ignore_eos,
            periodic,
            streaming,
            rank,
        } = ask;
        if self.engine_dead.load(Ordering::SeqCst) || self.stopping.load(Ordering::SeqCst) {
            return Err(Refused::EngineDead);
        }
        let (tx, rx) = mpsc::unbounded_channel();
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        {
            let mut st = self.lock();
            if let Some(max) = self.cfg.max_num_queued_reqs {
                if st.in_flight >= max {
                    st.reg.admission_rejected();
                    return Err(Refused::QueueFull {
                        current: st.in_flight,
                        max,
                    });
                }
            }
            st.in_flight += 1;
            // vLLM's data-parallel load balancing: the rank the client pinned, else the engine
            // with the fewest requests. (vLLM refuses a rank out of range; the simulator, which
            // is not about that error, balances it.)
            let engine = rank.filter(|r| *r < st.engines.len()).unwrap_or_else(|| {
                (0..st.engines.len())
                    .min_by_key(|&i| st.engines[i].assigned)
                    .unwrap_or(0)
            });
            st.engines[engine].assigned += 1;
            let cached = st.prefix[engine].lookup_and_insert(blocks, prompt, self.cfg.block_size);
            let offloaded = match st.offload.get_mut(engine) {
                Some(pool) => {
                    let step = pool.admit(blocks, prompt, self.cfg.block_size, cached);
                    st.reg.kv_offload(engine, &step);
                    step.hit_tokens
                }
                None => 0,
            };
            st.pending.insert(
                id,
                Pending {
                    engine,
                    tx,
                    arrival: mono_now(),
                    prompt,
                    cached,
                    offloaded,
                    max_tokens,
                    first_token: None,
                    last_token: 0.0,
                    drafter: self.cfg.spec.as_ref().map(|_| {
                        let eos = if ignore_eos { None } else { self.cfg.eos_after };
                        Drafter::new(periodic, eos.map_or(max_tokens, |e| e.min(max_tokens)))
                    }),
                    streaming,
                },
            );
        }
        let eos_after = if ignore_eos { None } else { self.cfg.eos_after };
        let (engine, cached) = self
            .lock()
            .pending
            .get(&id)
            .map_or((0, 0), |p| (p.engine, p.cached + p.offloaded));
        let _ = self.to_engine[engine].send(ToEngine::Add {
            id,
            prompt,
            max_tokens,
            eos_after,
            cached,
        });
        Ok(Submitted {
            front: self.clone(),
            id,
            rx,
            done: false,
        })
    }

    /// Applies one batch of engine `e`: gauges, counters, histograms, each request's tokens.
    pub fn apply(&self, e: usize, b: Batch) {
        let now = mono_now();
        let mut st = self.lock();
        let st = &mut *st;
        let iv = e.min(st.interval.len() - 1);
        st.scheduler_state(e, iv, &b);
        let k = self
            .cfg
            .spec
            .as_ref()
            .map_or(0, |s| s.num_speculative_tokens);
        st.deliver_tokens(e, iv, &b, k, now);
        st.finish_requests(e, &b, now);
    }

    /// Fails every request in flight (engine gone, or the server stopping).
    pub fn fail_all(&self, status: u16, message: &str) {
        let mut st = self.lock();
        for (_, p) in st.pending.drain() {
            let _ = p.tx.send(Ev::Failed(status, message.to_string()));
        }
        st.in_flight = 0;
        for es in &mut st.engines {
            es.assigned = 0;
        }
        // No engine answers a reset any more: its waiter hears a failure.
        st.resets.iter_mut().for_each(VecDeque::clear);
    }

    /// Asks engine `e` to empty its prefix cache; the receiver hears whether it did.
    pub fn ask_reset(&self, e: usize, reset_running: bool) -> oneshot::Receiver<bool> {
        let (tx, rx) = oneshot::channel();
        let mut st = self.lock();
        if self.to_engine[e]
            .send(ToEngine::ResetPrefixCache { reset_running })
            .is_ok()
        {
            st.resets[e].push_back(tx);
        }
        rx
    }

    /// Engine `e`'s answer to its oldest reset: on success its blocks are forgotten here too,
    /// so the next identical prompts miss (the hit and query counters go on growing).
    pub fn reset_answered(&self, e: usize, success: bool) {
        let mut st = self.lock();
        if success {
            if let Some(c) = st.prefix.get_mut(e) {
                c.clear();
            }
        }
        if let Some(tx) = st.resets.get_mut(e).and_then(VecDeque::pop_front) {
            let _ = tx.send(success);
        }
    }

    fn abandon(&self, id: u64) {
        let st = self.lock();
        if let Some(engine) = st.pending.get(&id).map(|p| p.engine) {
            drop(st);
            let _ = self.to_engine[engine].send(ToEngine::Abort { id });
        }
    }
}

/// A request in flight; dropping it before its last token aborts it in the engine (the client
/// went away), as vLLM does.
pub struct Submitted {
    front: Arc<Front>,
    pub id: u64,
    pub rx: mpsc::UnboundedReceiver<Ev>,
    pub done: bool,
}

impl Drop for Submitted {
    fn drop(&mut self) {
        if !self.done {
            self.front.abandon(self.id);
        }
    }
}
