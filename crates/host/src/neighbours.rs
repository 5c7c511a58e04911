//! The run on a shared node (docs/supervision.md, "Sharing the node"): the T2 readings judge
//! only the run's GPUs and the run's own processes; every other server process is a neighbour,
//! listed and never signalled.
//!
//! A reading is clear (docs/design/gpus.md#which-gpus-a-run-judges) when none of the run's own
//! processes is alive, no server process holds memory on the run's cards, and every one of those
//! cards uses at most 800 MiB. Clear readings are counted as
//! docs/design/gpus.md#two-consecutive-clear-readings counts them (one unclear reading resets the
//! count). What changes is the time between them: after a clear reading taken when the run's tree
//! is verified gone and the driver lists no process at all on the run's cards, the next reading
//! comes after a short settle instead of 2 s. Why that is safe against the driver's memory-release
//! lag is written down in docs/supervision.md ("T2 by events").

use serde::Serialize;
use std::collections::{BTreeSet, HashMap, HashSet};

use crate::gpu::{self, BadConsecutive, ClearResult, GpuScope, GpuSource, Reading};
use crate::gpu::{GpuHolder, ScopeReading};
use crate::procs::{self, ProcInfo, ProcScanner};
use inferlint_core::clock::{Clock, SystemClock};

/// The settle between two clear readings on the fast path.
pub const SETTLE_S: f64 = 0.1;
/// On the fast path the used memory may exceed the idle baseline (the gate's reading) by this
/// much: a driver's own bookkeeping moves by a few MiB; a model's weights are gigabytes.
pub const BASELINE_SLACK_MIB: u64 = 64;

/// The run's own processes, as far as the readings need them.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Own {
    /// The run's marker (`INFERLINT_RUN_ID` in its server's environment); None before a
    /// server started.
    pub run_id: Option<String>,
    /// What the server's teardown reported left over.
    pub leftovers: Vec<i32>,
    /// The run's tree is verified gone (its teardown found nothing left and the output pipes
    /// at end of file), or nothing was started yet.
    pub tree_gone: bool,
}

/// What the readings read, substitutable in tests.
pub trait Node {
    /// Every live process (None: no `/proc`).
    fn processes(&mut self) -> Option<Vec<ProcInfo>>;
    /// A process's `INFERLINT_RUN_ID`, when readable.
    fn run_id_of(&mut self, pid: i32) -> Option<String>;
    /// The run's cards and their holders; None when no GPU can be read.
    fn scope(&mut self) -> Option<ScopeReading>;
    /// A user's login name.
    fn user_name(&mut self, uid: u32) -> Option<String>;
    fn now(&self) -> f64;
    fn sleep(&mut self, secs: f64);
}

/// The real node: `/proc`, the GPU source, the run's scope, the system clock.
pub struct RealNode {
    scan: ProcScanner,
    source: GpuSource,
    scope: GpuScope,
    clock: SystemClock,
    users: HashMap<u32, Option<String>>,
}

impl RealNode {
    pub fn new(source: GpuSource, scope: GpuScope) -> RealNode {
        RealNode {
            scan: ProcScanner::new("/proc"),
            source,
            scope,
            clock: SystemClock,
            users: HashMap::new(),
        }
    }

    /// Whether any GPU can be read at all.
    pub fn readable(&self) -> bool {
        !matches!(self.source, GpuSource::None)
    }
}

impl Node for RealNode {
    fn processes(&mut self) -> Option<Vec<ProcInfo>> {
        procs::list_processes(self.scan.root())
    }
    fn run_id_of(&mut self, pid: i32) -> Option<String> {
        self.scan.environ_var(pid, crate::names::RUN_ID_ENV)
    }
    fn scope(&mut self) -> Option<ScopeReading> {
        if matches!(self.source, GpuSource::None) {
            return None;
        }
        gpu::read_scope(&self.source, &self.scope).ok()
    }
    fn user_name(&mut self, uid: u32) -> Option<String> {
        gpu::user_name_cached(&mut self.users, uid)
    }
    fn now(&self) -> f64 {
        self.clock.now().mono_s()
    }
    fn sleep(&mut self, secs: f64) {
        self.clock.sleep(secs)
    }
}

/// A server process that is not the run's: reported, never signalled.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Neighbour {
    pub pid: i32,
    pub uid: Option<u32>,
    pub user: Option<String>,
    pub command: String,
    /// `(card, MiB)` it holds on the run's cards, when the GPU reading attributes memory.
    pub gpu: Vec<(u32, Option<u64>)>,
}

impl Neighbour {
    /// `left alone: pid=4711     alice  vllm serve m  (21768 MiB on GPU 1) (not started by
    /// this run)`
    pub fn line(&self) -> String {
        let cmd = inferlint_core::fmt::first_chars(&self.command, 100);
        let user = match (&self.user, self.uid) {
            (Some(u), _) => u.clone(),
            (None, Some(uid)) => format!("uid {uid}"),
            (None, None) => "user ?".to_string(),
        };
        let gpu: Vec<String> = self
            .gpu
            .iter()
            .map(|(g, m)| match m {
                Some(m) => format!("{m} MiB on GPU {g}"),
                None => format!("memory on GPU {g}"),
            })
            .collect();
        let gpu = if gpu.is_empty() {
            String::new()
        } else {
            format!("  ({})", gpu.join(", "))
        };
        format!(
            "left alone: pid={:<8} {user}  {cmd}{gpu} (not started by this run)",
            self.pid
        )
    }
}

/// Settings of the scoped wait.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct WaitOptions {
    pub max_used_mib: u64,
    pub consecutive: u32,
    pub timeout_s: f64,
    /// The 2 s between readings of docs/design/gpus.md#two-consecutive-clear-readings.
    pub interval_s: f64,
    /// The fast path's settle ([`SETTLE_S`]); None keeps the 2 s interval always.
    pub settle_s: Option<f64>,
    /// False when no GPU can be read: only the run's own processes decide.
    pub require_gpu: bool,
    /// The used MiB the gate saw before the run's server started (the idle baseline).
    pub baseline_mib: Option<u64>,
    /// inferlint's pid: it and its ancestors are never servers.
    pub self_pid: i32,
    /// At the stop: end as soon as `consecutive` readings, a settle apart, find the run's
    /// tree gone and its cards' memory held only by live processes it did not start
    /// (docs/design/gpus.md#held-by-others). The gate keeps waiting: those may be ending.
    pub end_when_others_hold: bool,
}

/// The outcome of a scoped wait.
#[derive(Clone, Debug, PartialEq)]
pub struct Judged {
    pub clear: ClearResult,
    /// The last reading of the run's cards (None: no GPU could be read).
    pub last: Option<ScopeReading>,
    /// Server processes that are not the run's, as the last reading saw them.
    pub neighbours: Vec<Neighbour>,
    /// Holders on the run's cards that are not the run's (any process, server or not).
    pub other_holders: Vec<GpuHolder>,
    /// The run's own processes alive at the last reading.
    pub own_alive: Vec<i32>,
    /// Whether the clear readings were taken a settle apart (the fast path).
    pub fast: bool,
    /// The wait ended because only processes the run did not start held its cards.
    pub held_by_others: bool,
}

impl Judged {
    /// The T2 evidence this adds: the run's cards and who else held them.
    pub fn fill_evidence(&self, scope: &GpuScope, e: &mut inferlint_core::evidence::T2Evidence) {
        let cards: Vec<u32> = self
            .last
            .as_ref()
            .map(|r| r.gpus.iter().map(|g| g.index).collect())
            .unwrap_or_default();
        let others: Vec<String> = self.other_holders.iter().map(GpuHolder::describe).collect();
        let left: Vec<String> = self.neighbours.iter().map(Neighbour::line).collect();
        e.gpus_judged = Some(scope.describe());
        e.cards = Some(cards);
        e.others_holding_these_gpus = Some(others);
        e.servers_left_alone = Some(left);
    }
}

/// What one reading found.
struct Seen {
    reading: Reading,
    last: Option<ScopeReading>,
    neighbours: Vec<Neighbour>,
    other_holders: Vec<GpuHolder>,
    own_alive: Vec<i32>,
    no_holder: bool,
    /// The run's tree is gone and its cards' memory is held only by live processes (or ones
    /// outside this pid namespace) that are not the run's.
    only_others: bool,
}

fn read_once(node: &mut dyn Node, own: &Own, opts: &WaitOptions, elapsed_s: f64) -> Seen {
    let procs = node.processes().unwrap_or_default();
    let alive: HashSet<i32> = procs.iter().map(|p| p.pid).collect();
    let servers = procs::all_servers(&procs, opts.self_pid);
    let mut own_alive: BTreeSet<i32> = own
        .leftovers
        .iter()
        .copied()
        .filter(|p| alive.contains(p))
        .collect();
    let mut others = Vec::new();
    for t in &servers {
        let mine = own_alive.contains(&t.pid)
            || own
                .run_id
                .as_ref()
                .is_some_and(|id| node.run_id_of(t.pid).as_ref() == Some(id));
        if mine {
            own_alive.insert(t.pid);
        } else {
            others.push(t);
        }
    }
    let last = node.scope();
    let used = last.as_ref().and_then(ScopeReading::max_used_mib);
    let holders: Option<&Vec<GpuHolder>> = last.as_ref().and_then(|r| r.holders.as_ref());
    let server_pids: HashSet<i32> = servers.iter().map(|t| t.pid).collect();
    let mut live = own_alive.clone();
    let mut other_holders = Vec::new();
    for h in holders.into_iter().flatten() {
        let pid = h.pid as i32;
        if h.visible && server_pids.contains(&pid) {
            live.insert(pid);
        }
        if !(h.visible && own_alive.contains(&pid)) {
            other_holders.push(h.clone());
        }
    }
    let neighbours = others
        .into_iter()
        .map(|t| {
            let gpu = holders
                .into_iter()
                .flatten()
                .filter(|h| h.visible && h.pid as i32 == t.pid)
                .map(|h| (h.gpu, h.used_mib))
                .collect();
            Neighbour {
                pid: t.pid,
                uid: t.uid,
                user: t.uid.and_then(|u| node.user_name(u)),
                command: t.cmdline.clone(),
                gpu,
            }
        })
        .collect();
    let only_others = own.tree_gone
        && own_alive.is_empty()
        && holders.is_some_and(|h| {
            !h.is_empty()
                && h.iter()
                    .all(|h| !h.visible || alive.contains(&(h.pid as i32)))
        })
        && last
            .as_ref()
            .is_some_and(|r| r.attributed_within(opts.max_used_mib));
    Seen {
        only_others,
        reading: Reading {
            elapsed_s,
            used,
            n_live: live.len(),
        },
        no_holder: holders.is_some_and(|h| h.is_empty()),
        last,
        neighbours,
        other_holders,
        own_alive: own_alive.into_iter().collect(),
    }
}

/// Takes readings until `consecutive` clear ones in a row or the timeout (at least one). The
/// next reading after a clear one comes after the settle when the fast path holds: the run's
/// tree verified gone, none of its processes seen, and, with a GPU, the driver listing no
/// process on the run's cards and their used memory within the idle baseline. Otherwise, and
/// after any unclear reading, the 2 s interval (docs/design/gpus.md#the-fast-path).
pub fn wait_clear(
    node: &mut dyn Node,
    own: &Own,
    opts: &WaitOptions,
) -> Result<Judged, BadConsecutive> {
    if opts.consecutive < 1 {
        return Err(BadConsecutive(opts.consecutive));
    }
    let start = node.now();
    let mut readings = Vec::new();
    let mut run = 0;
    let mut others_run = 0;
    // Whether the pause before the latest reading was a settle.
    let mut settled = false;
    loop {
        let elapsed = node.now() - start;
        let seen = read_once(node, own, opts, elapsed);
        let r = seen.reading;
        readings.push(r);
        let clear = if opts.require_gpu {
            r.is_clear(opts.max_used_mib)
        } else {
            r.n_live == 0
        };
        let fast_limit = opts.baseline_mib.map_or(opts.max_used_mib, |b| {
            (b + BASELINE_SLACK_MIB).min(opts.max_used_mib)
        });
        let fast = opts.settle_s.is_some()
            && own.tree_gone
            && seen.own_alive.is_empty()
            && (!opts.require_gpu || (seen.no_holder && r.used.is_some_and(|u| u <= fast_limit)));
        run = if clear { run + 1 } else { 0 };
        others_run = if opts.end_when_others_hold && !clear && seen.only_others {
            others_run + 1
        } else {
            0
        };
        let done = |clear_result: ClearResult, seen: Seen, fast: bool| Judged {
            held_by_others: others_run >= opts.consecutive,
            clear: clear_result,
            last: seen.last,
            neighbours: seen.neighbours,
            other_holders: seen.other_holders,
            own_alive: seen.own_alive,
            fast,
        };
        if run >= opts.consecutive {
            let c = ClearResult {
                clear: opts.require_gpu,
                readings,
                reason: format!("{} consecutive clear readings", opts.consecutive),
                gpu_unreadable: !opts.require_gpu,
            };
            return Ok(done(c, seen, settled));
        }
        if others_run >= opts.consecutive {
            let c = ClearResult {
                clear: false,
                reason: format!(
                    "{} consecutive readings held only by processes not started by this run",
                    opts.consecutive
                ),
                readings,
                gpu_unreadable: false,
            };
            return Ok(done(c, seen, true));
        }
        if node.now() - start >= opts.timeout_s {
            let c = ClearResult {
                clear: false,
                reason: crate::gpu::not_clear_reason(opts.timeout_s, &r),
                readings,
                gpu_unreadable: !opts.require_gpu,
            };
            return Ok(done(c, seen, false));
        }
        settled = (clear && fast) || others_run > 0;
        let pause = match opts.settle_s {
            Some(s) if settled => s,
            _ => opts.interval_s,
        };
        let left = opts.timeout_s - (node.now() - start);
        node.sleep(pause.min(left.max(0.0)));
    }
}

/// The server processes that are not the run's, from one look at `/proc` (for the lines of a
/// failed start, where no reading is taken).
pub fn neighbours_now(node: &mut dyn Node, own: &Own, self_pid: i32) -> Vec<Neighbour> {
    let opts = WaitOptions {
        max_used_mib: gpu::DEFAULT_MAX_USED_MIB,
        consecutive: 1,
        timeout_s: 0.0,
        interval_s: 0.0,
        settle_s: None,
        require_gpu: false,
        baseline_mib: None,
        self_pid,
        end_when_others_hold: false,
    };
    read_once(node, own, &opts, 0.0).neighbours
}

#[cfg(test)]
mod tests;
