//! The run's cards read every second while the load runs (T27, docs/design/gpus.md#clocks), on
//! a thread of its own: nvidia-smi takes tens of milliseconds a reading and must not hold up the
//! async loop that feeds the live line. The readings go to run.json's `during_load`.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use inferlint_core::gpu::clocks::ClockSample;
use inferlint_host::gpu::{read_clocks, GpuScope, GpuSource};

/// One reading a second: a throttled stretch shorter than that is too short to move a
/// benchmark's figures.
pub const EVERY: Duration = Duration::from_secs(1);
/// At most this many readings are kept (a day of one card at one a second): a load that runs
/// longer keeps its first day.
const MAX_READINGS: usize = 86_400;
/// How often the thread looks whether it should stop, so that the load's end is not delayed.
const TICK: Duration = Duration::from_millis(50);

/// The sampler while the load runs.
pub struct ClockSampler {
    stop: Arc<AtomicBool>,
    thread: JoinHandle<Vec<ClockSample>>,
}

impl ClockSampler {
    /// Starts reading the scope's cards; None where no GPU source is there (no NVML, no
    /// nvidia-smi, no simulated GPU): T27 is then left out.
    pub fn start(source: GpuSource, scope: GpuScope) -> Option<ClockSampler> {
        if source == GpuSource::None {
            return None;
        }
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let thread = std::thread::Builder::new()
            .name("gpu-clocks".into())
            .spawn(move || sample(&source, &scope, &flag))
            .ok()?;
        Some(ClockSampler { stop, thread })
    }

    /// Stops the thread and returns its readings; None when no reading succeeded.
    pub fn finish(self) -> Option<Vec<ClockSample>> {
        self.stop.store(true, Ordering::SeqCst);
        let readings = self.thread.join().ok()?;
        (!readings.is_empty()).then_some(readings)
    }
}

fn sample(source: &GpuSource, scope: &GpuScope, stop: &AtomicBool) -> Vec<ClockSample> {
    let mut out = Vec::new();
    let mut next = Instant::now();
    while !stop.load(Ordering::SeqCst) {
        if Instant::now() >= next {
            // A failed reading is skipped: T27 judges the readings it has, and says so when
            // there are none.
            if let Ok(r) = read_clocks(source, scope) {
                out.extend(r);
                out.truncate(MAX_READINGS);
            }
            next = next_due(next, Instant::now());
        }
        std::thread::sleep(TICK);
    }
    out
}

/// When the reading after one due at `due` is, the reading having ended at `now`: a second
/// after the last one due, or now where a slow reading (nvidia-smi waits up to its timeout) has
/// passed that, so that late readings are not taken back to back to catch up.
fn next_due(due: Instant, now: Instant) -> Instant {
    (due + EVERY).max(now)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_slow_reading_is_not_followed_by_readings_back_to_back() {
        let t0 = Instant::now();
        assert_eq!(next_due(t0, t0 + Duration::from_millis(40)), t0 + EVERY);
        let late = t0 + Duration::from_secs(5);
        assert_eq!(next_due(t0, late), late);
    }

    #[test]
    fn no_source_no_sampler_and_a_throttled_simulated_card_is_read() {
        assert!(ClockSampler::start(GpuSource::None, GpuScope::all()).is_none());
        let dir = tempfile::tempdir().unwrap();
        let throttled = inferlint_core::gpu::simdir::SimClocks {
            reasons: inferlint_core::gpu::clocks::SW_POWER_CAP,
            ..Default::default()
        };
        inferlint_core::gpu::simdir::write_sim_clocks(dir.path(), &throttled).unwrap();
        let s =
            ClockSampler::start(GpuSource::Sim(dir.path().to_path_buf()), GpuScope::all()).unwrap();
        std::thread::sleep(Duration::from_millis(300));
        let r = s.finish().unwrap();
        assert!(!r.is_empty());
        assert!(r
            .iter()
            .all(|x| x.reasons == Some(inferlint_core::gpu::clocks::SW_POWER_CAP)));
    }
}
