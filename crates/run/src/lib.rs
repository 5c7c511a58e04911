//! `inferlint run` (alias `xray`): the supervised benchmark of docs/design/run.md. The run starts
//! the server (or attaches to one), watches it boot, probes it, records it while the load command
//! runs, checks the tripwires, writes the run folder and the report, and stops everything it
//! started, however the run ends.
//!
//! The parts: [`server`] and [`boot`] (the server's output and readiness),
//! [`drive`] (the load and the recording), [`monitor`] and [`live`] (what the terminal shows),
//! [`gate`] (the GPU before and after), [`folder`] and [`redact`] (the run folder), and
//! [`sequence`] (the steps in order), and [`record`] (live metrics into a series). What a run asks
//! the server comes from [`inferlint_http`] (the one HTTP policy, the scrape, T7's probe, the
//! version); what it reads from the machine from [`inferlint_host`] (GPUs, `/proc`, the
//! listener, the neighbours, stale runs).
#![expect(
    missing_docs,
    reason = "173 public items (mostly struct fields and variants) were undocumented when the workspace turned missing_docs on; document them, then drop this"
)]
// The process model's unsafe code (pre_exec, raw fds) lives in inferlint-supervisor.
#![forbid(unsafe_code)]
// No unwrap or expect on what the inputs hold: bad input is an error naming the file and line,
// never a panic. Where an invariant makes one safe, the site allows it and says why.
#![cfg_attr(not(test), warn(clippy::unwrap_used, clippy::expect_used))]

pub mod boot;
pub mod client_cpu;
pub mod deaths;
pub mod drive;
pub mod folder;
pub mod gate;
pub mod gpu_clocks;
pub mod interrupt;
pub mod live;

pub mod monitor;
pub mod nodes;
pub mod proc;
pub mod record;
pub mod redact;
pub mod script_points;
pub mod sequence;
pub mod server;

use std::path::PathBuf;
use std::time::Duration;

use inferlint_core::engine::NamedEngine;
use inferlint_core::result::CheckResult;

pub use interrupt::{Interrupt, Level};
pub use live::{Collect, Sink};
pub use sequence::run;
pub use server::READY_MARKER;

/// Whether the GPU gate (docs/design/run.md#the-gpu-gate) runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GpuCheck {
    /// Strict where NVIDIA GPUs exist (or the simulated GPU is set); where none exists, the
    /// gate checks only that no server process is alive, and says so.
    Auto,
    /// No gate before the server starts (a CPU build, the simulator).
    Off,
}

/// Everything a run is given.
#[derive(Clone, Debug)]
pub struct RunInputs {
    /// The run folder.
    pub out: PathBuf,
    /// The load command (everything after `--`).
    pub load: Vec<String>,
    /// The server's base URL; None derives it from `--serve`.
    pub url: Option<String>,
    /// The command that starts the server; None attaches to a running one.
    pub serve: Option<String>,
    /// A running server's log (attach mode).
    pub boot_log: Option<PathBuf>,
    /// Attach mode: the server is left running when the run ends.
    pub keep_server: bool,
    pub requested: Option<u64>,
    pub bench_result: Option<PathBuf>,
    pub interval: Duration,
    pub ready_timeout: Duration,
    pub probe: bool,
    pub title: Option<String>,
    pub engine: Option<NamedEngine>,
    pub gpu_check: GpuCheck,
    pub junit: Option<PathBuf>,
    /// `--strict`: a WARN fails the run. The exit code and run.json's `exit_code` both follow it.
    pub strict: bool,
    /// How long the server gets after SIGTERM before its group is killed.
    pub stop_grace: Duration,
    /// The T2 gate's timeout before the server starts.
    pub gate_timeout: Duration,
    /// The T2 wait after the server stopped.
    pub teardown_timeout: Duration,
    /// The GPUs the run judges (docs/supervision.md, "Sharing the node").
    pub gpu_scope: inferlint_host::gpu::GpuScope,
    /// What resolving the scope noticed (the ordinal caveat, where CUDA stops parsing),
    /// printed at the gate.
    pub gpu_scope_notes: Vec<String>,
    /// Whether the scope came from `--gpus`: the server is then given those GPUs as
    /// CUDA_VISIBLE_DEVICES (integer ordinals, with CUDA_DEVICE_ORDER=PCI_BUS_ID).
    pub pin_server_gpus: bool,
    /// The probe's settings (its timeouts are injectable for tests).
    pub probe_options: inferlint_http::probe::ProbeOptions,
    /// The program that runs the shepherds (default: this executable's `shepherd`
    /// subcommand; a library user names the inferlint binary here).
    pub shepherd: Option<inferlint_supervisor::ShepherdProgram>,
    /// The server's parts on other nodes (`--serve-node K CMD`), each under a node agent.
    pub serve_nodes: Vec<crate::nodes::NodePart>,
    /// How the node agents are started (needed when `serve_nodes` is not empty).
    pub node_launcher: Option<crate::nodes::Launcher>,
    /// Run the load once per value of one of its options (`--sweep`), each point a window of
    /// its own (docs/design/sweeps.md).
    pub sweep: Option<Sweeping>,
    /// Turn on a vLLM server's development endpoints (`VLLM_SERVER_DEV_MODE=1`) even when it
    /// listens on an address other hosts can reach (`--allow-dev-endpoints`).
    pub allow_dev_endpoints: bool,
}

/// A sweep's setting: which option takes which values, and what is done between points.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Sweeping {
    pub plan: inferlint_core::sweep::Plan,
    pub between: inferlint_core::sweep::Between,
}

impl RunInputs {
    /// The defaults of docs/reference.md#inferlint-run: interval 0.25 s, ready timeout 900 s, probe
    /// on.
    pub fn new(out: PathBuf, load: Vec<String>) -> RunInputs {
        RunInputs {
            out,
            load,
            url: None,
            serve: None,
            boot_log: None,
            keep_server: false,
            requested: None,
            bench_result: None,
            interval: Duration::from_millis(250),
            ready_timeout: Duration::from_secs(900),
            probe: true,
            title: None,
            engine: None,
            gpu_check: GpuCheck::Auto,
            junit: None,
            strict: false,
            stop_grace: Duration::from_secs(30),
            gate_timeout: Duration::from_secs(10),
            teardown_timeout: Duration::from_secs(120),
            gpu_scope: inferlint_host::gpu::GpuScope::all(),
            gpu_scope_notes: Vec::new(),
            pin_server_gpus: false,
            probe_options: inferlint_http::probe::ProbeOptions::default(),
            shepherd: None,
            serve_nodes: Vec::new(),
            node_launcher: None,
            sweep: None,
            allow_dev_endpoints: false,
        }
    }
}

/// Where the run's time went (for the overhead benchmark and `run.json`).
#[derive(Clone, Copy, Debug, Default, PartialEq, serde::Serialize)]
pub struct Timings {
    pub total_s: f64,
    /// The GPU gate before the server starts (two readings, a settle apart on a free card,
    /// else 2 s; docs/supervision.md, "T2 by events").
    pub gate_s: f64,
    /// From starting the server to it being ready.
    pub boot_s: f64,
    /// T7's probe: its requests, answered in the server's own time (real inference on a slow
    /// machine takes tens of seconds), so that inferlint's own share of a run can be told apart.
    pub probe_s: f64,
    /// The load command's own run.
    pub load_s: f64,
    /// Stopping the server, the teardown and its T2 readings.
    pub stop_s: f64,
}

/// What a run ends with.
#[derive(Clone, Debug, Default)]
pub struct Outcome {
    /// The recorded results, in the order they were printed.
    pub results: Vec<CheckResult>,
    pub load_exit: Option<i32>,
    pub report: Option<PathBuf>,
    /// The one-line problem that stopped or spoiled the run.
    pub problem: Option<String>,
    pub interrupted: bool,
    /// "What limited this run", as printed (`{title}. {text}`).
    pub insights: Vec<String>,
    pub out: PathBuf,
    pub timings: Timings,
}

impl Outcome {
    /// 130 if interrupted; 1 if there was a problem, the load exited non-zero, or any FAIL
    /// (or WARN under `strict`); 2 if any UNKNOWN; else 0.
    pub fn exit_code(&self, strict: bool) -> i32 {
        inferlint_core::output::run_exit_code(
            &self.results,
            strict,
            self.interrupted,
            self.problem.is_some(),
            self.load_exit,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use inferlint_core::result::Tripwire;

    #[test]
    fn exit_codes_follow_the_spec() {
        let mut o = Outcome::default();
        assert_eq!(o.exit_code(false), 0);
        o.results.push(CheckResult::warn(Tripwire::T9, "w"));
        assert_eq!(o.exit_code(false), 0);
        assert_eq!(o.exit_code(true), 1);
        o.results.push(CheckResult::unknown(Tripwire::T1, "u"));
        assert_eq!(o.exit_code(false), 2);
        o.load_exit = Some(3);
        assert_eq!(o.exit_code(false), 1);
        o.load_exit = Some(0);
        o.problem = Some("p".into());
        assert_eq!(o.exit_code(false), 1);
        o.interrupted = true;
        assert_eq!(o.exit_code(false), 130);
    }
}
