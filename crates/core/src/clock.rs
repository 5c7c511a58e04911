//! The clocks a reading is stamped with: Unix time for people and files, the monotonic clock for
//! spans (comparable across the processes of one machine, unlike `Instant`). Injected as a trait
//! so tests can give fixed readings.

/// A pair of clock readings: Unix seconds and monotonic nanoseconds.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ClockReading {
    pub wall: f64,
    pub mono_ns: i64,
}

/// The clocks a scrape reads; replaced in tests.
pub trait Clock: Send + Sync {
    fn now(&self) -> ClockReading;
}

/// The system clocks: `SystemTime` and `CLOCK_MONOTONIC`.
#[derive(Clone, Copy, Debug, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> ClockReading {
        ClockReading {
            wall: wall_now(),
            mono_ns: monotonic_ns(),
        }
    }
}

/// Unix time in seconds.
pub fn wall_now() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}

/// `clock_gettime(CLOCK_MONOTONIC)` in nanoseconds: comparable across processes on one machine,
/// unlike `Instant`.
pub fn monotonic_ns() -> i64 {
    // CLOCK_MONOTONIC always exists on Linux, so the call cannot fail there.
    nix::time::clock_gettime(nix::time::ClockId::CLOCK_MONOTONIC)
        .map_or(0, |ts| ts.tv_sec() * 1_000_000_000 + ts.tv_nsec())
}
