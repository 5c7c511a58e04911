//! Steps 1 and 4 of the run: the engine it is about, from the name given, the `--serve`
//! command, and the server's metrics, which must all agree.

use super::{serve_engine, Run};
use inferlint_core::engine::Engine;
use inferlint_core::snapshot::SCRAPE_TIMEOUT;

impl Run {
    /// Step 1: the engine named and the one the `--serve` command starts; false (a problem)
    /// when they differ.
    pub(super) fn engine_step(&mut self) -> bool {
        let named = self.named();
        let from_serve = self.serve_argv.as_deref().and_then(serve_engine);
        if let (Some(n), Some(s)) = (named, from_serve) {
            if n != s {
                self.set_problem(format!(
                    "the engine named is {}, but the --serve command is {}'s",
                    n.name(),
                    s.name()
                ));
                return false;
            }
        }
        if let Some(n) = named {
            self.line(&format!("== engine: {}", n.name()));
            self.engine = Some(n);
        } else if let Some(s) = from_serve {
            self.line(&format!(
                "== engine: {} (from the --serve command)",
                s.name()
            ));
            self.engine = Some(s);
        }
        true
    }

    /// Step 4: one scrape to learn the engine from the metric names.
    pub(super) async fn metrics_step(&mut self) -> bool {
        let snap = self.scraper.scrape(&self.url, None, SCRAPE_TIMEOUT).await;
        let (detected, error) = match &snap {
            Ok(s) => (s.engine(), None),
            Err(e) => (None, Some(e.to_string())),
        };
        let Some(actual) = detected else {
            let known = self.engine;
            let fix = match known {
                Some(e) => e.metrics_hint().to_string(),
                None => Engine::ALL
                    .iter()
                    .map(|e| format!("for {}, {}", e.name(), e.metrics_hint()))
                    .collect::<Vec<_>>()
                    .join("; "),
            };
            let err = error.map(|e| format!(" ({e})")).unwrap_or_default();
            self.set_problem(format!(
                "no vLLM, SGLang, TensorRT-LLM or llama.cpp metrics at {}{err}: {fix}",
                self.url
            ));
            return false;
        };
        if let Some(n) = self.named().filter(|&n| n != actual) {
            self.set_problem(format!(
                "the engine named is {}, but the server at {} is {}'s",
                n.name(),
                self.url,
                actual.name()
            ));
            return false;
        }
        // The server answering is not the one the run started (another server on the port).
        let started = self.serve_argv.as_deref().and_then(serve_engine);
        if let Some(s) = started.filter(|&s| s != actual) {
            self.set_problem(format!(
                "the --serve command is {}'s, but the server at {} is {}'s",
                s.name(),
                self.url,
                actual.name()
            ));
            return false;
        }
        if self.engine.is_none() {
            self.line(&format!("== engine: {} (from its metrics)", actual.name()));
        }
        self.engine = Some(actual);
        self.record.engine = Some(actual.key().to_string());
        true
    }
}
