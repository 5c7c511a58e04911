//! Inference-server processes in `/proc`, found by structure
//! (docs/design/processes.md#finding-server-processes), and the attach-mode
//! teardown that stops them and waits for a clear card (docs/design/processes.md#stopping).
//!
//! A process is a server of engine E by the shape of its argument vector, never by a substring
//! of the whole command line, so `bash -c "vllm serve m; pkill -f 'vllm serve'"`, `tail -f
//! "vllm serve.log"` and `vllm bench serve` are left alone while a renamed `VLLM::EngineCore`
//! with a wiped argv is found. The servers are the matches plus all their descendants, never
//! inferlint itself or any of its ancestors. The listing comes from the supervisor crate's
//! scanner, on the real `/proc` or a synthetic root.

use std::cell::RefCell;
use std::collections::{BTreeSet, HashMap, HashSet};
use std::path::Path;

pub use nix::sys::signal::Signal;
use regex::Regex;
use serde::Serialize;

use crate::gpu::{self, ClearOptions, ClearResult, GpuSource};
use inferlint_core::clock::{Clock, ClockReading, SystemClock};
use inferlint_core::engine::Engine;

pub use inferlint_supervisor::procfs::{ancestors_in, ProcInfo, ProcScanner};

/// Every process under a `/proc`-style root; None when the root is missing (not Linux).
/// Zombies are left out: they hold nothing.
pub fn list_processes(root: &Path) -> Option<Vec<ProcInfo>> {
    let scan = ProcScanner::new(root);
    if !scan.available() {
        return None;
    }
    Some(scan.all().into_iter().filter(|p| !p.is_zombie()).collect())
}

/// The engine a process serves, by the rules of docs/design/processes.md#finding-server-processes
/// ([`inferlint_core::argv::process_engine`]); None for anything else.
pub fn server_engine(p: &ProcInfo) -> Option<Engine> {
    inferlint_core::argv::process_engine(&p.comm, &p.argv)
}

/// Whether a process is an inference server process by itself (not counting descendants).
pub fn is_server(p: &ProcInfo) -> bool {
    server_engine(p).is_some()
}

/// A server process found in the table.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Target {
    pub pid: i32,
    pub ppid: i32,
    pub starttime: u64,
    pub engine: Engine,
    /// The space-joined argument vector (`[comm]` when empty).
    pub cmdline: String,
    /// Included as a descendant of a matched server, not matched by itself.
    pub descendant: bool,
    pub uid: Option<u32>,
}

impl Target {
    /// `target  pid={pid:<8} {cmdline[:100]}`
    pub fn line(&self) -> String {
        let cmd = inferlint_core::fmt::first_chars(&self.cmdline, 100);
        format!("target  pid={:<8} {cmd}", self.pid)
    }
}

/// Which servers a teardown acts on, and which it leaves alone.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Selection {
    pub targets: Vec<Target>,
    /// Servers of other engines than the one named.
    pub other_engines: Vec<Target>,
    /// Servers of other users (without `--all-users`).
    pub other_users: Vec<Target>,
}

/// Every server process (matches plus descendants), never `self_pid` or its ancestors.
pub fn all_servers(procs: &[ProcInfo], self_pid: i32) -> Vec<Target> {
    let protected: HashSet<i32> = ancestors_in(procs, self_pid).into_iter().collect();
    let mut children: HashMap<i32, Vec<&ProcInfo>> = HashMap::new();
    for p in procs {
        children.entry(p.ppid).or_default().push(p);
    }
    let mut engine_of: HashMap<i32, (Engine, bool)> = HashMap::new();
    for p in procs {
        if protected.contains(&p.pid) {
            continue;
        }
        let Some(e) = server_engine(p) else { continue };
        engine_of.insert(p.pid, (e, false));
        // Descendants inherit the engine of the server above them.
        let mut stack: Vec<i32> = vec![p.pid];
        while let Some(pid) = stack.pop() {
            for c in children.get(&pid).map(Vec::as_slice).unwrap_or(&[]) {
                if protected.contains(&c.pid) || engine_of.contains_key(&c.pid) {
                    continue;
                }
                let own = server_engine(c);
                engine_of.insert(c.pid, (own.unwrap_or(e), own.is_none()));
                stack.push(c.pid);
            }
        }
    }
    let mut out: Vec<Target> = procs
        .iter()
        .filter_map(|p| {
            let &(engine, descendant) = engine_of.get(&p.pid)?;
            Some(Target {
                pid: p.pid,
                ppid: p.ppid,
                starttime: p.starttime,
                engine,
                cmdline: p.cmdline(),
                descendant,
                uid: p.uid,
            })
        })
        .collect();
    out.sort_by_key(|t| t.pid);
    out
}

/// The servers to act on: of engine `engine` when named, of user `uid` when given.
pub fn select_servers(
    procs: &[ProcInfo],
    self_pid: i32,
    engine: Option<Engine>,
    uid: Option<u32>,
) -> Selection {
    let mut sel = Selection::default();
    for t in all_servers(procs, self_pid) {
        if engine.is_some_and(|e| e != t.engine) {
            sel.other_engines.push(t);
        } else if uid.is_some() && t.uid != uid {
            sel.other_users.push(t);
        } else {
            sel.targets.push(t);
        }
    }
    sel
}

/// `no server processes found (vLLM, SGLang or TensorRT-LLM)` or `(… the named engine)`.
pub fn none_found_line(engine: Option<Engine>) -> String {
    match engine {
        Some(e) => format!("no server processes found ({})", e.name()),
        None => "no server processes found (vLLM, SGLang or TensorRT-LLM)".to_string(),
    }
}

/// `left alone (--engine trtllm): 4 processes of SGLang and vLLM servers`
pub fn left_alone_line(why: &str, left: &[Target]) -> Option<String> {
    if left.is_empty() {
        return None;
    }
    let names: BTreeSet<&str> = left.iter().map(|t| t.engine.name()).collect();
    let names: Vec<&str> = names.into_iter().collect();
    let engines = match names.len() {
        1 => names[0].to_string(),
        n => format!("{} and {}", names[..n - 1].join(", "), names[n - 1]),
    };
    let n = left.len();
    let noun = if n == 1 { "process" } else { "processes" };
    Some(format!(
        "left alone ({why}): {n} {noun} of {engines} servers"
    ))
}

/// The pattern a script would usually `pkill -f` for these targets: `trtllm-serve` if any
/// TensorRT-LLM target; for SGLang `sglang.launch_server` when launched as that module, else
/// `sglang serve`; else `vllm serve`.
pub fn usual_pkill_pattern(targets: &[Target]) -> &'static str {
    if targets.iter().any(|t| t.engine == Engine::Trtllm) {
        return "trtllm-serve";
    }
    let sglang: Vec<&Target> = targets
        .iter()
        .filter(|t| t.engine == Engine::Sglang)
        .collect();
    if !sglang.is_empty() && !targets.iter().any(|t| t.engine == Engine::Vllm) {
        if sglang
            .iter()
            .any(|t| t.cmdline.contains("sglang.launch_server"))
        {
            return "sglang.launch_server";
        }
        return "sglang serve";
    }
    DEFAULT_PKILL_PATTERN
}

/// The pattern scripts usually clean up with (and the default of [`pkill_hits`]' callers).
pub const DEFAULT_PKILL_PATTERN: &str = "vllm serve";

/// The pids `pkill -f PATTERN` would signal: a regex search on every process's space-joined
/// argument vector. An invalid pattern matches nothing.
pub fn pkill_hits(procs: &[ProcInfo], pattern: &str) -> Vec<i32> {
    let Ok(re) = Regex::new(pattern) else {
        return Vec::new();
    };
    procs
        .iter()
        .filter(|p| !p.argv.is_empty() && re.is_match(&p.argv.join(" ")))
        .map(|p| p.pid)
        .collect()
}

/// What the usual cleanup would have done.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PkillComparison {
    pub pattern: String,
    /// Targets the pattern does not match (renamed engines).
    pub missed: Vec<i32>,
    /// Processes it matches that are no server (shells, `tail -f`, inferlint's ancestors).
    pub wrongly_hit: Vec<i32>,
}

impl PkillComparison {
    /// `(pkill -f 'vllm serve' would miss 1 and wrongly hit 0)`, only when it would be wrong.
    pub fn line(&self) -> Option<String> {
        if self.missed.is_empty() && self.wrongly_hit.is_empty() {
            return None;
        }
        Some(format!(
            "(pkill -f '{}' would miss {} and wrongly hit {})",
            self.pattern,
            self.missed.len(),
            self.wrongly_hit.len()
        ))
    }
}

/// Compares `pkill -f pattern` with the selection.
pub fn pkill_comparison(procs: &[ProcInfo], sel: &Selection, pattern: &str) -> PkillComparison {
    let hits: HashSet<i32> = pkill_hits(procs, pattern).into_iter().collect();
    let targets: HashSet<i32> = sel.targets.iter().map(|t| t.pid).collect();
    let servers: HashSet<i32> = sel
        .targets
        .iter()
        .chain(&sel.other_engines)
        .chain(&sel.other_users)
        .map(|t| t.pid)
        .collect();
    let mut missed: Vec<i32> = targets.difference(&hits).copied().collect();
    let mut wrongly_hit: Vec<i32> = hits.difference(&servers).copied().collect();
    missed.sort_unstable();
    wrongly_hit.sort_unstable();
    PkillComparison {
        pattern: pattern.to_string(),
        missed,
        wrongly_hit,
    }
}

// ---------------------------------------------------------------------------------------------
// The attach-mode teardown (docs/design/processes.md#stopping)

/// Everything the teardown reads and does to the machine, substitutable in tests.
pub trait System {
    /// The process table (None: no `/proc`).
    fn processes(&mut self) -> Option<Vec<ProcInfo>>;
    /// Sends `sig` to a target; false when it is gone.
    fn signal(&mut self, target: &Target, sig: Signal) -> bool;
    /// Sends `sig` to each target, in one call where the machine takes several at once (a
    /// Python `kill(pids, sig)` hook); whether each was signalled.
    fn signal_all(&mut self, targets: &[Target], sig: Signal) -> Vec<bool> {
        targets.iter().map(|t| self.signal(t, sig)).collect()
    }
    /// The largest used MiB over all GPUs (None: unreadable or no GPU).
    fn gpu_used_mib(&mut self) -> Option<u64>;
    fn now(&self) -> f64;
    fn sleep(&mut self, secs: f64);
}

/// The real machine: a `/proc` root, the GPU source, the system clock. Signals are sent only
/// when the root is the real `/proc` (never to pids read from a synthetic table), by pidfd after
/// checking the start time, so a recycled pid is never hit.
#[derive(Debug)]
pub struct RealSystem {
    pub scan: ProcScanner,
    pub gpu: GpuSource,
    clock: SystemClock,
}

impl RealSystem {
    pub fn new(proc_root: &Path, gpu: GpuSource) -> Self {
        RealSystem {
            scan: ProcScanner::new(proc_root),
            gpu,
            clock: SystemClock,
        }
    }

    fn live(&self) -> bool {
        self.scan.root() == Path::new("/proc")
    }
}

impl System for RealSystem {
    fn processes(&mut self) -> Option<Vec<ProcInfo>> {
        list_processes(self.scan.root())
    }

    fn signal(&mut self, target: &Target, sig: Signal) -> bool {
        if !self.live() {
            return false;
        }
        let id = inferlint_supervisor::ProcId {
            pid: target.pid,
            starttime: target.starttime,
        };
        inferlint_supervisor::Tracked::open(&self.scan, id)
            .is_some_and(|t| t.signal(&self.scan, sig))
    }

    fn gpu_used_mib(&mut self) -> Option<u64> {
        gpu::max_used_mib(&self.gpu)
    }

    fn now(&self) -> f64 {
        self.clock.now().mono_s()
    }

    fn sleep(&mut self, secs: f64) {
        self.clock.sleep(secs);
    }
}

/// Settings of a teardown.
#[derive(Clone, Debug, PartialEq)]
pub struct TeardownOptions {
    pub engine: Option<Engine>,
    /// inferlint's own pid: it and its ancestors are never targets.
    pub self_pid: i32,
    /// Only this user's processes are targets (None: `--all-users`).
    pub uid: Option<u32>,
    /// How long targets get after SIGTERM (default 15 s).
    pub grace_s: f64,
    /// How often the targets are looked at during the grace (default 0.5 s).
    pub poll_s: f64,
    pub clear: ClearOptions,
    pub dry_run: bool,
}

impl Default for TeardownOptions {
    fn default() -> Self {
        TeardownOptions {
            engine: None,
            self_pid: std::process::id() as i32,
            uid: None,
            grace_s: 15.0,
            poll_s: 0.5,
            clear: ClearOptions::default(),
            dry_run: false,
        }
    }
}

/// What a teardown did.
#[derive(Clone, Debug, PartialEq)]
pub struct TeardownOutcome {
    pub selection: Selection,
    pub pkill: PkillComparison,
    /// Every signal delivered, in order: `(pid, signal)`.
    pub signals: Vec<(i32, Signal)>,
    /// None on a dry run.
    pub clear: Option<ClearResult>,
}

/// No `/proc` here.
#[derive(Debug, thiserror::Error)]
pub enum TeardownError {
    #[error("no /proc")]
    NoProc,
    #[error(transparent)]
    Consecutive(#[from] gpu::BadConsecutive),
}

/// SIGTERM every target → poll every `poll_s` up to `grace_s` while any target remains →
/// SIGKILL the survivors → wait for `consecutive` clear readings, where "live" counts server
/// processes of any engine and any user.
pub fn teardown(
    system: &mut dyn System,
    opts: &TeardownOptions,
) -> Result<TeardownOutcome, TeardownError> {
    if opts.clear.consecutive < 1 {
        return Err(gpu::BadConsecutive(opts.clear.consecutive).into());
    }
    let procs = system.processes().ok_or(TeardownError::NoProc)?;
    let selection = select_servers(&procs, opts.self_pid, opts.engine, opts.uid);
    let pattern = usual_pkill_pattern(&selection.targets);
    let pkill = pkill_comparison(&procs, &selection, pattern);
    let mut signals = Vec::new();
    if opts.dry_run {
        return Ok(TeardownOutcome {
            selection,
            pkill,
            signals,
            clear: None,
        });
    }
    for (t, sent) in selection
        .targets
        .iter()
        .zip(system.signal_all(&selection.targets, Signal::SIGTERM))
    {
        if sent {
            signals.push((t.pid, Signal::SIGTERM));
        }
    }
    let start = system.now();
    let mut survivors = remaining(system, &selection.targets);
    while !survivors.is_empty() && system.now() - start < opts.grace_s {
        let left = opts.grace_s - (system.now() - start);
        system.sleep(opts.poll_s.min(left.max(0.0)));
        survivors = remaining(system, &selection.targets);
    }
    for (t, sent) in survivors
        .iter()
        .zip(system.signal_all(&survivors, Signal::SIGKILL))
    {
        if sent {
            signals.push((t.pid, Signal::SIGKILL));
        }
    }
    let clear = wait_clear(system, opts.self_pid, &opts.clear)?;
    Ok(TeardownOutcome {
        selection,
        pkill,
        signals,
        clear: Some(clear),
    })
}

/// The targets still running (same pid and start time).
fn remaining(system: &mut dyn System, targets: &[Target]) -> Vec<Target> {
    let Some(procs) = system.processes() else {
        return Vec::new();
    };
    let now: HashSet<(i32, u64)> = procs.iter().map(|p| (p.pid, p.starttime)).collect();
    targets
        .iter()
        .filter(|t| now.contains(&(t.pid, t.starttime)))
        .cloned()
        .collect()
}

/// Waits for clear readings on `system` (docs/design/gpus.md#two-consecutive-clear-readings):
/// `n_live` = server processes of any engine and
/// any user, excluding `self_pid` and its ancestors.
pub fn wait_clear(
    system: &mut dyn System,
    self_pid: i32,
    opts: &ClearOptions,
) -> Result<ClearResult, gpu::BadConsecutive> {
    let sys = RefCell::new(system);
    let mut n_live = || {
        sys.borrow_mut()
            .processes()
            .map(|p| all_servers(&p, self_pid).len())
            .unwrap_or(0)
    };
    let mut used = || sys.borrow_mut().gpu_used_mib();
    let mut clock = SystemClockOf(&sys);
    gpu::wait_until_clear(opts, &mut n_live, &mut used, &mut clock)
}

struct SystemClockOf<'a, 'b>(&'a RefCell<&'b mut dyn System>);

impl Clock for SystemClockOf<'_, '_> {
    fn now(&self) -> ClockReading {
        ClockReading::at(self.0.borrow().now())
    }
    fn sleep(&mut self, secs: f64) {
        self.0.borrow_mut().sleep(secs);
    }
}
