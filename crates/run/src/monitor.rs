//! The server's state during the load, from the recording's samples: the live line (running and
//! waiting against the requested concurrency, KV use, generated tokens/s, evictions so far) and
//! the alerts worth interrupting the user for (a preemption, a falling concurrency ceiling, a
//! server that stopped answering or restarted), each with its time into the load.

use std::collections::{HashMap, VecDeque};
use std::time::Duration;

use inferlint_core::checks::blocks::predicted_ceiling;
use inferlint_core::engine::Engine;
use inferlint_core::fmt::g;
use inferlint_core::series::{EngineGauges, SeriesSample};

use super::live::elapsed;

/// A sample is saturated (the cache is what limits it) from this KV use on: T9's own.
const SATURATED: f64 = inferlint_core::checks::t9::SATURATION;
/// Consecutive failed scrapes before the server is said to have stopped answering.
const FAILED_SCRAPES_ALERT: usize = 3;
/// The window generated tokens/s is measured over.
const RATE_WINDOW_S: f64 = 2.0;
/// After one eviction alert, the next waits this long (the ones between are summed into it).
const EVICTION_ALERT_GAP: Duration = Duration::from_secs(2);

/// How many requests of the current size fit, when the cache is what limits them (usage at
/// or above the saturation threshold, something running).
fn saturated_ceiling(usage: Option<f64>, running: Option<f64>) -> Option<u64> {
    let (u, r) = (usage?, running?);
    if u >= SATURATED && r > 0.0 {
        predicted_ceiling(u, r, None).ok()
    } else {
        None
    }
}

/// What the monitor makes of one event.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Update {
    pub status: Option<String>,
    pub alerts: Vec<String>,
}

/// The state of the load as the recording shows it.
pub struct Monitor {
    engine: Engine,
    requested: Option<u64>,
    first_preemptions: Option<f64>,
    last_preemptions: Option<f64>,
    /// The lowest ceiling seen at a saturated sample: a fall is a new low.
    lowest_ceiling: Option<u64>,
    /// The same for each engine of a data-parallel server.
    lowest_per_engine: HashMap<String, u64>,
    /// When the last eviction alert was given, and evictions since then not yet alerted.
    last_eviction_alert: Option<Duration>,
    unalerted: f64,
    paused_seen: bool,
    failed_in_row: usize,
    dead_alerted: bool,
    /// The generated-token counter at the last sample, and whether a fall was alerted.
    last_generated: Option<f64>,
    restart_alerted: bool,
    window: VecDeque<(f64, f64)>,
    pub peak_running: Option<f64>,
    pub samples: usize,
}

impl Monitor {
    pub fn new(engine: Engine, requested: Option<u64>) -> Monitor {
        Monitor {
            engine,
            requested,
            first_preemptions: None,
            last_preemptions: None,
            lowest_ceiling: None,
            lowest_per_engine: HashMap::new(),
            last_eviction_alert: None,
            unalerted: 0.0,
            paused_seen: false,
            failed_in_row: 0,
            dead_alerted: false,
            last_generated: None,
            restart_alerted: false,
            window: VecDeque::new(),
            peak_running: None,
            samples: 0,
        }
    }

    /// Evictions since the load began, as the counter shows them.
    pub fn preemptions_so_far(&self) -> Option<f64> {
        Some(self.last_preemptions? - self.first_preemptions?)
    }

    fn word(&self, n: f64) -> String {
        let w = self.engine.eviction_word();
        if n == 1.0 {
            w.to_string()
        } else {
            format!("{w}s")
        }
    }

    /// Takes one sample, `at` into the load.
    pub fn sample(&mut self, s: &SeriesSample, at: Duration) -> Update {
        self.samples += 1;
        self.failed_in_row = 0;
        self.dead_alerted = false;
        let mut alerts = Vec::new();
        let t = elapsed(at);
        if let Some(r) = s.running() {
            self.peak_running = Some(self.peak_running.map_or(r, |p| p.max(r)));
        }
        self.note_restart(s, &t, &mut alerts);
        self.note_evictions(s, at, &t, &mut alerts);
        self.note_ceiling(s, &t, &mut alerts);
        let rate = self.token_rate(s);
        Update {
            status: Some(self.status_line(s, &t, rate)),
            alerts,
        }
    }

    /// A counter that goes down: the server restarted, and every delta across it is void.
    fn note_restart(&mut self, s: &SeriesSample, t: &str, alerts: &mut Vec<String>) {
        if let Some(tok) = s.generation_tokens() {
            if let Some(last) = self.last_generated.filter(|&last| tok < last) {
                self.window.clear();
                self.first_preemptions = None;
                self.last_preemptions = None;
                if !self.restart_alerted {
                    self.restart_alerted = true;
                    alerts.push(format!(
                        "{t} into the load: the server's generated-token counter went down ({} -> {}): it restarted, so the run's counts cannot span it",
                        g(last),
                        g(tok)
                    ));
                }
            }
            self.last_generated = Some(tok);
        }
    }

    /// Evictions: the counter moved since the last sample. The first is alerted at once; later
    /// ones at most every few seconds, summed. TensorRT-LLM's paused requests once.
    fn note_evictions(
        &mut self,
        s: &SeriesSample,
        at: Duration,
        t: &str,
        alerts: &mut Vec<String>,
    ) {
        if let Some(p) = s.preemptions() {
            if self.first_preemptions.is_none() {
                self.first_preemptions = Some(p);
            }
            if let Some(prev) = self.last_preemptions {
                self.unalerted += (p - prev).max(0.0);
            }
            let due = self
                .last_eviction_alert
                .is_none_or(|t| at.saturating_sub(t) >= EVICTION_ALERT_GAP);
            if self.unalerted > 0.0 && due {
                let d = self.unalerted;
                let total = p - self.first_preemptions.unwrap_or(p);
                let note = match self.engine {
                    Engine::Vllm => "; vLLM logs nothing for them",
                    Engine::Sglang => "; SGLang logs a warning for each",
                    Engine::Trtllm | Engine::Llamacpp => "",
                };
                alerts.push(format!(
                    "{t} into the load: {} {} ({} so far){note}",
                    g(d),
                    self.word(d),
                    g(total)
                ));
                self.unalerted = 0.0;
                self.last_eviction_alert = Some(at);
            }
            self.last_preemptions = Some(p);
        }
        if let Some(paused) = s.paused().filter(|p| *p > 0.0) {
            if !self.paused_seen {
                self.paused_seen = true;
                alerts.push(format!(
                    "{t} into the load: {} request(s) paused for recompute (TensorRT-LLM counts none)",
                    g(paused)
                ));
            }
        }
    }

    /// The ceiling: how many requests of the current size fit, at saturated samples; for a
    /// data-parallel server, in each engine's own pool.
    fn note_ceiling(&mut self, s: &SeriesSample, t: &str, alerts: &mut Vec<String>) {
        if let Some(c) = saturated_ceiling(s.kv_usage(), s.running()) {
            if let Some(low) = self.lowest_ceiling.filter(|&low| c < low) {
                alerts.push(format!(
                    "{t} into the load: the concurrency ceiling fell from {low} to {c} (one request now holds {:.1}% of the cache)",
                    100.0 * s.kv_usage().unwrap_or(0.0) / s.running().unwrap_or(1.0)
                ));
            }
            self.lowest_ceiling = Some(self.lowest_ceiling.map_or(c, |low| low.min(c)));
        }
        for e in s.per_engine() {
            let Some(c) = saturated_ceiling(e.kv_usage, e.running) else {
                continue;
            };
            let lowest = self.lowest_per_engine.entry(e.engine.clone()).or_insert(c);
            if c < *lowest {
                alerts.push(format!(
                    "{t} into the load: engine {}'s concurrency ceiling fell from {} to {c} (one request now holds {:.1}% of its cache)",
                    e.engine,
                    *lowest,
                    100.0 * e.kv_usage.unwrap_or(0.0) / e.running.unwrap_or(1.0)
                ));
                *lowest = c;
            }
        }
    }

    /// Generated tokens/s over the last few seconds.
    fn token_rate(&mut self, s: &SeriesSample) -> Option<f64> {
        match (s.generation_tokens(), s.t_mono_ns()) {
            (Some(tok), Some(ns)) => {
                let secs = ns as f64 / 1e9;
                self.window.push_back((secs, tok));
                while self
                    .window
                    .front()
                    .is_some_and(|(t0, _)| secs - t0 > RATE_WINDOW_S)
                    && self.window.len() > 2
                {
                    self.window.pop_front();
                }
                match (self.window.front(), self.window.back()) {
                    (Some(&(t0, n0)), Some(&(t1, n1))) if t1 > t0 => Some((n1 - n0) / (t1 - t0)),
                    _ => None,
                }
            }
            _ => None,
        }
    }

    /// The live status line: elapsed, running (of the asked), waiting, KV, tokens/s, evictions.
    fn status_line(&self, s: &SeriesSample, t: &str, rate: Option<f64>) -> String {
        let mut parts = vec![format!("load {t}")];
        let per = s.per_engine();
        let running = s.running().map_or("?".to_string(), g);
        // A data-parallel server: the server's total, then each engine's share in engine order.
        let each = |f: fn(&EngineGauges) -> Option<f64>, sep: &str| -> String {
            let v: Vec<String> = per
                .iter()
                .map(|e| f(e).map_or("?".to_string(), g))
                .collect();
            format!(" ({})", v.join(sep))
        };
        let (run_each, wait_each) = if per.is_empty() {
            (String::new(), String::new())
        } else {
            (each(|e| e.running, "+"), each(|e| e.waiting, "+"))
        };
        match self.requested {
            Some(n) => parts.push(format!("running {running}/{n}{run_each}")),
            None => parts.push(format!("running {running}{run_each}")),
        }
        match s.waiting() {
            Some(w) => parts.push(format!("waiting {}{wait_each}", g(w))),
            None if !per.is_empty() => parts.push(format!("waiting ?{wait_each}")),
            None => {}
        }
        if let Some(u) = s.kv_usage() {
            parts.push(format!("KV {:.0}%", 100.0 * u));
        } else if per.iter().any(|e| e.kv_usage.is_some()) {
            let v: Vec<String> = per
                .iter()
                .map(|e| {
                    e.kv_usage
                        .map_or("?".to_string(), |u| format!("{:.0}%", 100.0 * u))
                })
                .collect();
            parts.push(format!("KV {} per engine", v.join("/")));
        }
        if let Some(r) = rate {
            parts.push(format!("{r:.0} tok/s"));
        }
        if let Some(p) = self.preemptions_so_far() {
            parts.push(format!("{} {}", g(p), self.word(2.0)));
        }
        parts.join("  ")
    }

    /// Takes one failed scrape.
    pub fn scrape_failed(&mut self, error: &str, at: Duration) -> Update {
        self.failed_in_row += 1;
        let mut u = Update::default();
        if self.failed_in_row >= FAILED_SCRAPES_ALERT && !self.dead_alerted {
            self.dead_alerted = true;
            u.alerts.push(format!(
                "{} into the load: the server stopped answering ({} scrapes failed in a row: {error})",
                elapsed(at),
                self.failed_in_row
            ));
        }
        u
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use inferlint_core::series::Readings;

    fn s(running: f64, waiting: f64, usage: f64, pre: f64, tok: f64, t: f64) -> SeriesSample {
        SeriesSample::from(Readings {
            t_wall: 1000.0 + t,
            t_mono_ns: Some((t * 1e9) as i64),
            running: Some(running),
            waiting: Some(waiting),
            kv_usage: Some(usage),
            preemptions: Some(pre),
            generation_tokens: Some(tok),
            prompt_tokens: Some(0.0),
            paused: None,
            finished_requests: None,
        })
    }

    #[test]
    fn status_and_preemption_alerts() {
        let mut m = Monitor::new(Engine::Vllm, Some(32));
        let u = m.sample(&s(10.0, 22.0, 0.5, 3.0, 0.0, 0.0), Duration::from_secs(1));
        assert!(u.alerts.is_empty(), "the counter's start is not an alert");
        let u = m.sample(&s(10.0, 22.0, 0.6, 5.0, 500.0, 1.0), Duration::from_secs(2));
        assert_eq!(
            u.alerts,
            vec!["2.0s into the load: 2 preemptions (2 so far); vLLM logs nothing for them"]
        );
        let status = u.status.unwrap();
        assert!(status.contains("running 10/32"), "{status}");
        assert!(status.contains("waiting 22"));
        assert!(status.contains("KV 60%"));
        assert!(status.contains("500 tok/s"));
        assert!(status.contains("2 preemptions"));
        assert_eq!(m.preemptions_so_far(), Some(2.0));
    }

    #[test]
    fn eviction_alerts_are_summed_between_gaps() {
        let mut m = Monitor::new(Engine::Vllm, None);
        m.sample(&s(1.0, 0.0, 0.1, 0.0, 0.0, 0.0), Duration::from_millis(0));
        let u = m.sample(
            &s(1.0, 0.0, 0.1, 1.0, 0.0, 0.25),
            Duration::from_millis(250),
        );
        assert_eq!(u.alerts.len(), 1);
        // Within the gap: summed, not alerted.
        assert!(m
            .sample(&s(1.0, 0.0, 0.1, 3.0, 0.0, 0.5), Duration::from_millis(500))
            .alerts
            .is_empty());
        assert!(m
            .sample(
                &s(1.0, 0.0, 0.1, 4.0, 0.0, 0.75),
                Duration::from_millis(750)
            )
            .alerts
            .is_empty());
        let u = m.sample(
            &s(1.0, 0.0, 0.1, 4.0, 0.0, 2.5),
            Duration::from_millis(2500),
        );
        assert_eq!(
            u.alerts,
            vec!["2.5s into the load: 3 preemptions (4 so far); vLLM logs nothing for them"]
        );
        assert_eq!(m.preemptions_so_far(), Some(4.0));
    }

    #[test]
    fn ceiling_fall_is_alerted_once_per_fall() {
        let mut m = Monitor::new(Engine::Vllm, None);
        // 10 running at 95%: ceiling 10.
        assert!(m
            .sample(&s(10.0, 0.0, 0.95, 0.0, 0.0, 0.0), Duration::from_secs(1))
            .alerts
            .is_empty());
        // Requests grew: 8 running fill 96%: ceiling 8.
        let u = m.sample(&s(8.0, 2.0, 0.96, 0.0, 0.0, 0.25), Duration::from_secs(2));
        assert_eq!(u.alerts.len(), 1);
        assert!(u.alerts[0].contains("fell from 10 to 8"), "{:?}", u.alerts);
        // Same ceiling again, or back up: no new alert. Unsaturated samples never alert.
        assert!(m
            .sample(&s(8.0, 2.0, 0.97, 0.0, 0.0, 0.5), Duration::from_secs(3))
            .alerts
            .is_empty());
        assert!(m
            .sample(&s(10.0, 2.0, 0.95, 0.0, 0.0, 0.6), Duration::from_secs(3))
            .alerts
            .is_empty());
        assert!(m
            .sample(&s(9.0, 2.0, 0.96, 0.0, 0.0, 0.7), Duration::from_secs(3))
            .alerts
            .is_empty());
        assert!(m
            .sample(&s(2.0, 0.0, 0.5, 0.0, 0.0, 0.75), Duration::from_secs(4))
            .alerts
            .is_empty());
    }

    fn dp(per: &[(f64, f64, f64)], t: f64) -> SeriesSample {
        let mut row = s(0.0, 0.0, 0.0, 0.0, 100.0 * t, t);
        row.set_engines(
            per.iter()
                .enumerate()
                .map(|(i, &(running, waiting, usage))| EngineGauges {
                    engine: i.to_string(),
                    running: Some(running),
                    waiting: Some(waiting),
                    kv_usage: Some(usage),
                })
                .collect(),
        );
        row
    }

    #[test]
    fn a_data_parallel_status_line_shows_each_engine() {
        let mut m = Monitor::new(Engine::Vllm, Some(12));
        let u = m.sample(
            &dp(&[(4.0, 2.0, 0.8), (3.0, 1.0, 0.6)], 0.0),
            Duration::ZERO,
        );
        let status = u.status.unwrap();
        assert!(status.contains("running 7/12 (4+3)"), "{status}");
        assert!(status.contains("waiting 3 (2+1)"), "{status}");
        assert!(status.contains("KV 80%/60% per engine"), "{status}");
        assert_eq!(m.peak_running, Some(7.0));
        // An engine without its gauges yet: unknown, and so is the server's total.
        let mut row = dp(&[(4.0, 2.0, 0.8), (0.0, 0.0, 0.0)], 0.25);
        let mut per = row.per_engine().to_vec();
        per[1] = EngineGauges {
            engine: "1".into(),
            ..EngineGauges::default()
        };
        row.set_engines(per);
        let status = m.sample(&row, Duration::from_secs(1)).status.unwrap();
        assert!(status.contains("running ?/12 (4+?)"), "{status}");
        assert!(status.contains("KV 80%/? per engine"), "{status}");
        // A one-engine server's line is unchanged.
        let status = m
            .sample(&s(10.0, 22.0, 0.5, 0.0, 0.0, 0.5), Duration::from_secs(2))
            .status
            .unwrap();
        assert!(
            status.contains("running 10/12  waiting 22  KV 50%"),
            "{status}"
        );
    }

    #[test]
    fn a_ceiling_fall_in_one_engine_names_it() {
        let mut m = Monitor::new(Engine::Vllm, None);
        let u = m.sample(
            &dp(&[(4.0, 0.0, 0.9), (4.0, 0.0, 0.9)], 0.0),
            Duration::ZERO,
        );
        assert!(u.alerts.is_empty());
        let u = m.sample(
            &dp(&[(4.0, 0.0, 0.9), (3.0, 1.0, 1.0)], 0.25),
            Duration::from_secs(1),
        );
        assert_eq!(
            u.alerts,
            vec!["1.0s into the load: engine 1's concurrency ceiling fell from 4 to 3 (one request now holds 33.3% of its cache)"]
        );
        let u = m.sample(
            &dp(&[(4.0, 0.0, 0.9), (3.0, 1.0, 1.0)], 0.5),
            Duration::from_secs(2),
        );
        assert!(u.alerts.is_empty(), "{:?}", u.alerts);
    }

    #[test]
    fn failed_scrapes_alert_after_three() {
        let mut m = Monitor::new(Engine::Sglang, Some(4));
        assert!(m
            .scrape_failed("refused", Duration::from_secs(1))
            .alerts
            .is_empty());
        assert!(m
            .scrape_failed("refused", Duration::from_secs(2))
            .alerts
            .is_empty());
        let u = m.scrape_failed("refused", Duration::from_secs(3));
        assert_eq!(u.alerts.len(), 1);
        assert!(u.alerts[0].contains("stopped answering"));
        assert!(m
            .scrape_failed("refused", Duration::from_secs(4))
            .alerts
            .is_empty());
    }

    #[test]
    fn a_counter_going_down_is_alerted_once_as_a_restart() {
        let mut m = Monitor::new(Engine::Vllm, Some(3));
        m.sample(&s(3.0, 0.0, 0.2, 2.0, 500.0, 0.0), Duration::from_secs(1));
        let u = m.sample(&s(3.0, 0.0, 0.2, 0.0, 40.0, 0.25), Duration::from_secs(2));
        assert_eq!(
            u.alerts,
            vec!["2.0s into the load: the server's generated-token counter went down (500 -> 40): it restarted, so the run's counts cannot span it"]
        );
        // The reset preemption counter is not a negative eviction count, and the new life's
        // evictions count from its own start.
        assert_eq!(m.preemptions_so_far(), Some(0.0));
        let u = m.sample(&s(3.0, 0.0, 0.2, 1.0, 80.0, 0.5), Duration::from_secs(3));
        assert_eq!(u.alerts.len(), 1, "{:?}", u.alerts);
        assert!(
            u.alerts[0].contains("1 preemption (1 so far)"),
            "{:?}",
            u.alerts
        );
    }

    #[test]
    fn sglang_words() {
        let mut m = Monitor::new(Engine::Sglang, None);
        m.sample(&s(1.0, 0.0, 0.1, 0.0, 0.0, 0.0), Duration::ZERO);
        let u = m.sample(
            &s(1.0, 0.0, 0.1, 1.0, 0.0, 0.25),
            Duration::from_millis(250),
        );
        assert!(
            u.alerts[0].contains("1 retraction (1 so far); SGLang logs a warning"),
            "{:?}",
            u.alerts
        );
    }
}
