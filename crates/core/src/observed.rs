//! What `run` saw of the load while it ran, beyond the server's counters: the warm-up work the
//! server's log showed, the CPU the load's own processes used and the cards' clocks. `run` records it in run.json
//! (`during_load`, docs/design/formats.md#runjson) so that the report decides T20 and T21 on
//! the same facts as the live run (docs/design/tripwires.md#t20, #t21).

use serde::{Deserialize, Serialize};

/// The load as `run` watched it. Each part is None when it was not watched (a server the run
/// did not start has no log to read; a load that never started has no processes).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct LoadObserved {
    /// The warm-up lines the server logged while the load ran (a graph compiled, CUDA graphs
    /// captured), in order, prefixes stripped.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub warmup_work: Option<Vec<String>>,
    /// The CPU the load's processes used while the server was busy.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub client_cpu: Option<ClientCpu>,
    /// The run's cards read during the load (T27); None where no GPU could be read.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gpu_clocks: Option<Vec<crate::gpu::clocks::ClockSample>>,
    /// Why no reading of the cards succeeded during the load, where a GPU source was there but
    /// every reading failed (T27 then says it cannot tell, and why, instead of being left out).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gpu_clocks_error: Option<String>,
}

/// The CPU the load's process tree used over the recorder's busy intervals (those in which
/// the server had requests running or waiting at both ends).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct ClientCpu {
    /// Seconds of wall time the busy intervals cover.
    pub busy_s: f64,
    /// CPU seconds the whole tree used in them.
    pub tree_cpu_s: f64,
    /// CPU seconds of the tree's busiest process in them, and its command.
    pub hottest_cpu_s: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hottest: Option<String>,
    /// The CPU the load may use, in cores: its cgroup's quota (the lowest on its path) or the
    /// CPUs its affinity allows, whichever is less; None when neither limits it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub limit_cores: Option<f64>,
    /// Seconds the busiest process spent runnable but waiting for a CPU in the busy intervals
    /// (`/proc/PID/schedstat`); None where the kernel does not keep it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hottest_wait_s: Option<f64>,
}

impl ClientCpu {
    /// The busiest process's share of one core over the busy intervals.
    pub fn hottest_share(&self) -> Option<f64> {
        (self.busy_s > 0.0).then(|| self.hottest_cpu_s / self.busy_s)
    }

    /// The busiest process's share of the busy intervals spent running or waiting to run: near
    /// 1 it wanted a whole core, whether or not an oversubscribed node gave it one.
    pub fn hottest_demand_share(&self) -> Option<f64> {
        let wait = self.hottest_wait_s?;
        (self.busy_s > 0.0).then(|| (self.hottest_cpu_s + wait) / self.busy_s)
    }

    /// The tree's share of its CPU limit over the busy intervals (None without a limit).
    pub fn limit_share(&self) -> Option<f64> {
        let cores = self.limit_cores.filter(|c| *c > 0.0)?;
        (self.busy_s > 0.0).then(|| self.tree_cpu_s / (self.busy_s * cores))
    }
}
