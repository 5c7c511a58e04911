//! The clock every timed step reads: the scrapes (a wall and a monotonic reading around each
//! GET) and the waits for a clear card (seconds elapsed, and sleeping between readings). Tests
//! replace it with a virtual one.

use std::time::Duration;

/// A pair of clock readings: Unix seconds and monotonic nanoseconds.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ClockReading {
    pub wall: f64,
    pub mono_ns: i64,
}

impl ClockReading {
    /// A reading `secs` seconds after both clocks' origins (for virtual clocks).
    pub fn at(secs: f64) -> ClockReading {
        ClockReading {
            wall: secs,
            mono_ns: (secs * 1e9).round() as i64,
        }
    }

    /// The monotonic reading in seconds (origin arbitrary: only differences mean anything).
    pub fn mono_s(&self) -> f64 {
        self.mono_ns as f64 / 1e9
    }
}

/// A clock: read, and slept on.
pub trait Clock {
    fn now(&self) -> ClockReading;

    /// Waits `secs` seconds (none when negative); a virtual clock advances instead.
    fn sleep(&mut self, secs: f64) {
        std::thread::sleep(Duration::from_secs_f64(secs.max(0.0)));
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn readings_at_seconds_round_trip() {
        let r = ClockReading::at(100.5);
        assert_eq!(r.mono_ns, 100_500_000_000);
        assert_eq!(r.mono_s(), 100.5);
        assert_eq!(r.wall, 100.5);
    }

    #[test]
    fn the_system_clock_moves_forward() {
        let mut c = SystemClock;
        let a = c.now();
        c.sleep(0.01);
        let b = c.now();
        assert!(b.mono_ns - a.mono_ns >= 10_000_000, "{a:?} {b:?}");
        assert!(b.wall > 1.6e9);
    }
}
