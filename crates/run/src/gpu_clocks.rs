//! The run's cards read every second while the load runs (T27, docs/design/gpus.md#clocks), on
//! a thread of its own: nvidia-smi takes tens of milliseconds a reading and must not hold up the
//! async loop that feeds the live line. The readings go to run.json's `during_load`.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use inferlint_core::gpu::clocks::ClockSample;
use inferlint_core::observed::LoadObserved;
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
    thread: JoinHandle<Sampled>,
}

/// What the thread read: the readings, and the last reading's error (a reading that failed).
#[derive(Default)]
struct Sampled {
    readings: Vec<ClockSample>,
    error: Option<String>,
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

    /// Stops the thread and records its readings in `observed`: the readings where any
    /// succeeded, else why the last one failed (T27 then cannot tell, and says why).
    pub fn finish(self, observed: &mut LoadObserved) {
        self.stop.store(true, Ordering::SeqCst);
        let s = self.thread.join().unwrap_or_else(|_| Sampled {
            error: Some("the thread that read the cards panicked".into()),
            ..Default::default()
        });
        if s.readings.is_empty() {
            observed.gpu_clocks_error = s.error;
        } else {
            observed.gpu_clocks = Some(s.readings);
        }
    }
}

fn sample(source: &GpuSource, scope: &GpuScope, stop: &AtomicBool) -> Sampled {
    let mut out = Sampled::default();
    let mut next = Instant::now();
    while !stop.load(Ordering::SeqCst) {
        if Instant::now() >= next {
            // A failed reading is skipped: T27 judges the readings it has, and says why when
            // there are none.
            match read_clocks(source, scope) {
                Ok(r) => {
                    out.readings.extend(r);
                    out.readings.truncate(MAX_READINGS);
                }
                Err(e) => out.error = Some(e.to_string()),
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
        let mut o = LoadObserved::default();
        s.finish(&mut o);
        let r = o.gpu_clocks.unwrap();
        assert!(!r.is_empty());
        assert!(r
            .iter()
            .all(|x| x.reasons == Some(inferlint_core::gpu::clocks::SW_POWER_CAP)));
    }

    #[test]
    fn a_bad_clocks_file_is_named_and_t27_cannot_tell_why() {
        let dir = tempfile::tempdir().unwrap();
        inferlint_core::gpu::simdir::set_cards(dir.path(), 1).unwrap();
        std::fs::write(dir.path().join("clocks.json"), "{not json").unwrap();
        let s =
            ClockSampler::start(GpuSource::Sim(dir.path().to_path_buf()), GpuScope::all()).unwrap();
        std::thread::sleep(Duration::from_millis(200));
        let mut o = LoadObserved::default();
        s.finish(&mut o);
        assert!(o.gpu_clocks.is_none());
        let why = o.gpu_clocks_error.clone().expect("the error");
        assert!(why.contains("clocks.json"), "{why}");
        let r = inferlint_core::checks::t27::judge(&o).expect("T27 judged");
        assert_eq!(r.status, inferlint_core::Status::Unknown);
        assert!(r.message.contains("clocks.json"), "{}", r.message);
    }
}
