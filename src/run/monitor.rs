//! The server's state during the load, from the recording's samples: the live line (running and
//! waiting against the requested concurrency, KV use, generated tokens/s, evictions so far) and
//! the alerts worth interrupting the user for (a preemption, a falling concurrency ceiling, a
//! server that stopped answering or restarted), each with its time into the load.

use std::collections::VecDeque;
use std::time::Duration;

use crate::checks::blocks::predicted_ceiling;
use crate::engine::Engine;
use crate::fmt::g;
use crate::series::SeriesSample;

use super::live::elapsed;

/// A sample is saturated (the cache is what limits it) from this KV use on, as in T9.
const SATURATED: f64 = 0.9;
/// Consecutive failed scrapes before the server is said to have stopped answering.
const FAILED_SCRAPES_ALERT: usize = 3;
/// The window generated tokens/s is measured over.
const RATE_WINDOW_S: f64 = 2.0;
/// After one eviction alert, the next waits this long (the ones between are summed into it).
const EVICTION_ALERT_GAP: Duration = Duration::from_secs(2);

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
        if let Some(r) = s.running {
            self.peak_running = Some(self.peak_running.map_or(r, |p| p.max(r)));
        }
        // A counter that goes down: the server restarted, and every delta across it is void.
        if let Some(tok) = s.generation_tokens {
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
        // Evictions: the counter moved since the last sample. The first is alerted at once;
        // later ones at most every few seconds, summed.
        if let Some(p) = s.preemptions {
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
                    Engine::Trtllm => "",
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
        if let Some(paused) = s.paused.filter(|p| *p > 0.0) {
            if !self.paused_seen {
                self.paused_seen = true;
                alerts.push(format!(
                    "{t} into the load: {} request(s) paused for recompute (TensorRT-LLM counts none)",
                    g(paused)
                ));
            }
        }
        // The ceiling: how many requests of the current size fit, at saturated samples.
        if let (Some(u), Some(r)) = (s.kv_usage, s.running) {
            if u >= SATURATED && r > 0.0 {
                if let Ok(c) = predicted_ceiling(u, r, None) {
                    if let Some(low) = self.lowest_ceiling.filter(|&low| c < low) {
                        alerts.push(format!(
                            "{t} into the load: the concurrency ceiling fell from {low} to {c} (one request now holds {:.1}% of the cache)",
                            100.0 * u / r
                        ));
                    }
                    self.lowest_ceiling = Some(self.lowest_ceiling.map_or(c, |low| low.min(c)));
                }
            }
        }
        // Generated tokens/s over the last few seconds.
        let rate = match (s.generation_tokens, s.t_mono_ns) {
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
        };
        let mut parts = vec![format!("load {t}")];
        let running = s.running.map_or("?".to_string(), g);
        match self.requested {
            Some(n) => parts.push(format!("running {running}/{n}")),
            None => parts.push(format!("running {running}")),
        }
        if let Some(w) = s.waiting {
            parts.push(format!("waiting {}", g(w)));
        }
        if let Some(u) = s.kv_usage {
            parts.push(format!("KV {:.0}%", 100.0 * u));
        }
        if let Some(r) = rate {
            parts.push(format!("{r:.0} tok/s"));
        }
        if let Some(p) = self.preemptions_so_far() {
            parts.push(format!("{} {}", g(p), self.word(2.0)));
        }
        Update {
            status: Some(parts.join("  ")),
            alerts,
        }
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

    fn s(running: f64, waiting: f64, usage: f64, pre: f64, tok: f64, t: f64) -> SeriesSample {
        SeriesSample {
            t_wall: 1000.0 + t,
            t_mono_ns: Some((t * 1e9) as i64),
            running: Some(running),
            waiting: Some(waiting),
            kv_usage: Some(usage),
            preemptions: Some(pre),
            generation_tokens: Some(tok),
            prompt_tokens: Some(0.0),
            paused: None,
            engines: None,
        }
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
