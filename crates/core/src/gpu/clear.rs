//! "N consecutive clear readings": the rule that decides whether a card is free after a
//! teardown (T2), with the readings and the clock injected so that it runs on recorded or
//! synthetic readings.

use crate::clock::Clock;

use serde_json::{json, Value};

use super::DEFAULT_MAX_USED_MIB;

/// Settings of the waiter.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ClearOptions {
    pub max_used_mib: u64,
    pub consecutive: u32,
    pub timeout_s: f64,
    pub interval_s: f64,
    /// False when no GPU can be read at all: then only the processes decide, and the result
    /// can never be a pass (see [`ClearResult::gpu_unreadable`]).
    pub require_gpu: bool,
}

impl Default for ClearOptions {
    fn default() -> Self {
        ClearOptions {
            max_used_mib: DEFAULT_MAX_USED_MIB,
            consecutive: 2,
            timeout_s: 120.0,
            interval_s: 2.0,
            require_gpu: true,
        }
    }
}

/// One reading: seconds since the start, the largest used MiB (None = unreadable), and the
/// number of live server processes.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Reading {
    pub elapsed_s: f64,
    pub used: Option<u64>,
    pub n_live: usize,
}

impl Reading {
    /// `[elapsed rounded to ms, used or null, n_live]`.
    pub fn to_json(&self) -> Value {
        json!([
            crate::result::json_f64((self.elapsed_s * 1000.0).round() / 1000.0),
            self.used,
            self.n_live
        ])
    }

    pub fn is_clear(&self, max_used_mib: u64) -> bool {
        self.n_live == 0 && self.used.is_some_and(|u| u <= max_used_mib)
    }
}

/// The waiter's outcome.
#[derive(Clone, Debug, PartialEq)]
pub struct ClearResult {
    pub clear: bool,
    pub readings: Vec<Reading>,
    /// `2 consecutive clear readings`, or `not clear after 10s: last reading 21768 MiB used,
    /// 1 server processes alive`.
    pub reason: String,
    /// No GPU could be read (the waiter judged the processes only).
    pub gpu_unreadable: bool,
}

impl ClearResult {
    pub fn readings_json(&self) -> Value {
        Value::Array(self.readings.iter().map(Reading::to_json).collect())
    }
}

/// `--consecutive` below 1.
#[derive(Debug, thiserror::Error)]
#[error("--consecutive must be at least 1 (got {0})")]
pub struct BadConsecutive(pub u32);

/// Takes readings every `interval_s` until `consecutive` clear ones in a row (any unclear
/// reading resets the count), or until `timeout_s` has elapsed. At least one reading is taken.
pub fn wait_until_clear(
    opts: &ClearOptions,
    n_live: &mut dyn FnMut() -> usize,
    used: &mut dyn FnMut() -> Option<u64>,
    clock: &mut dyn Clock,
) -> Result<ClearResult, BadConsecutive> {
    if opts.consecutive < 1 {
        return Err(BadConsecutive(opts.consecutive));
    }
    let start = clock.now().mono_s();
    let elapsed = |clock: &dyn Clock| clock.now().mono_s() - start;
    let mut readings = Vec::new();
    let mut run = 0;
    loop {
        let r = Reading {
            elapsed_s: elapsed(clock),
            used: used(),
            n_live: n_live(),
        };
        readings.push(r);
        let clear = if opts.require_gpu {
            r.is_clear(opts.max_used_mib)
        } else {
            r.n_live == 0
        };
        run = if clear { run + 1 } else { 0 };
        if run >= opts.consecutive {
            return Ok(ClearResult {
                clear: opts.require_gpu,
                readings,
                reason: format!("{} consecutive clear readings", opts.consecutive),
                gpu_unreadable: !opts.require_gpu,
            });
        }
        if elapsed(clock) >= opts.timeout_s {
            return Ok(ClearResult {
                clear: false,
                reason: not_clear_reason(opts.timeout_s, &r),
                readings,
                gpu_unreadable: !opts.require_gpu,
            });
        }
        let left = opts.timeout_s - elapsed(clock);
        clock.sleep(opts.interval_s.min(left.max(0.0)));
    }
}

/// T2's FAIL reason once the wait ran out: `not clear after 10s: last reading 21768 MiB used, 1
/// server processes alive` (docs/tripwires.md#t2-orphaned-engine: scripts read it).
pub fn not_clear_reason(timeout_s: f64, last: &Reading) -> String {
    let used = last.used.map_or("?".to_string(), |u| u.to_string());
    format!(
        "not clear after {}s: last reading {used} MiB used, {} server processes alive",
        crate::fmt::g(timeout_s),
        last.n_live
    )
}
