//! Emptying the engines' prefix caches between load points (vLLM's `/reset_prefix_cache`,
//! SGLang's `/flush_cache`; docs/design/engines.md#cache-resets). The front end asks every
//! engine and ANDs the answers, as vLLM's data-parallel client does; each engine decides by
//! what it holds and logs its own lines ([`crate::surface::Surface::reset_prefix_cache`]).

use std::sync::atomic::Ordering;
use std::time::Duration;

use super::front::Front;

/// How often a reset that waits for idle looks again.
const IDLE_POLL: Duration = Duration::from_millis(10);

impl Front {
    /// Asks every engine to empty its prefix cache (after preempting its running requests
    /// with `reset_running`); true when all did. An engine that is gone answers false.
    pub async fn reset_prefix_cache(&self, reset_running: bool) -> bool {
        if self.engine_dead.load(Ordering::SeqCst) {
            return false;
        }
        let asked: Vec<_> = (0..self.to_engine.len())
            .map(|e| self.ask_reset(e, reset_running))
            .collect();
        let mut all = true;
        for answer in asked {
            all &= answer.await.unwrap_or(false);
        }
        all
    }

    /// Waits until no request is in flight, for at most `timeout`; whether it got there.
    pub async fn wait_idle(&self, timeout: Duration) -> bool {
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            if self.lock().in_flight == 0 {
                return true;
            }
            if tokio::time::Instant::now() >= deadline {
                return false;
            }
            tokio::time::sleep(IDLE_POLL).await;
        }
    }
}
