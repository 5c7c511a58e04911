//! The CPU the load's own processes use while the server is busy, and the CPU they may use at
//! all: what T21 decides whether the client kept up on (docs/design/tripwires.md#t21).
//!
//! Read at each of the recorder's samples from `/proc/PID/stat` (each live member's own user
//! and system time: a parent's count of its reaped children would count them twice). An
//! interval counts when the server was busy at both of its ends. A process's last partial
//! interval before it exits is lost; at one sample a second that is under a second of CPU.
//! Beside its CPU time, each process's time runnable but waiting for a CPU (the second field of
//! `/proc/PID/schedstat`): a client that an oversubscribed node keeps off the CPU wants a whole
//! core as surely as one that uses it.

use std::collections::HashMap;
use std::fs;
use std::path::Path;

use inferlint_core::observed::ClientCpu;
use inferlint_supervisor::{ProcId, ProcScanner};
use tokio::time::Instant;

/// What the meter knows of one process.
struct Tracked {
    ticks: u64,
    busy_ticks: u64,
    /// Run-queue wait in ns at the last reading, and over the busy intervals (None once a
    /// reading lacked it).
    wait_ns: Option<u64>,
    busy_wait_ns: Option<u64>,
    command: String,
}

/// The load tree's CPU over the server's busy intervals.
pub struct CpuMeter {
    scanner: ProcScanner,
    tick_s: f64,
    procs: HashMap<ProcId, Tracked>,
    last: Option<(Instant, bool)>,
    busy_s: f64,
    limit_cores: Option<f64>,
}

impl CpuMeter {
    /// A meter for a tree whose leader is `leader` (its CPU limit is read now).
    pub fn new(leader: i32) -> CpuMeter {
        let tick = nix::unistd::sysconf(nix::unistd::SysconfVar::CLK_TCK)
            .ok()
            .flatten()
            .filter(|t| *t > 0)
            .unwrap_or(100);
        CpuMeter {
            scanner: ProcScanner::system(),
            tick_s: 1.0 / tick as f64,
            procs: HashMap::new(),
            last: None,
            busy_s: 0.0,
            limit_cores: cpu_limit(Path::new("/proc"), leader),
        }
    }

    /// One reading of the tree's members (pid, start time, command) at `at`, the server busy or
    /// not. The first reading is the baseline: what the client used before it is not counted.
    pub fn reading(&mut self, members: &[(ProcId, String)], at: Instant, busy: bool) {
        let first = self.last.is_none();
        let counts = self.last.is_some_and(|(_, was)| was && busy);
        if let (true, Some((then, _))) = (counts, self.last) {
            self.busy_s += at.duration_since(then).as_secs_f64();
        }
        for (id, command) in members {
            let Some(stat) = self.scanner.stat(id.pid) else {
                continue;
            };
            if stat.starttime != id.starttime {
                continue;
            }
            let wait = run_queue_wait_ns(self.scanner.root(), id.pid);
            let t = self.procs.entry(*id).or_insert_with(|| Tracked {
                // A process first seen after the baseline started since: all its time is new.
                ticks: if first { stat.cpu_ticks } else { 0 },
                busy_ticks: 0,
                wait_ns: if first { wait } else { Some(0) },
                busy_wait_ns: Some(0),
                command: command.clone(),
            });
            let delta = stat.cpu_ticks.saturating_sub(t.ticks);
            t.ticks = stat.cpu_ticks;
            let waited = wait
                .zip(t.wait_ns)
                .map(|(now, then)| now.saturating_sub(then));
            t.wait_ns = wait;
            if counts {
                t.busy_ticks += delta;
                t.busy_wait_ns = t.busy_wait_ns.zip(waited).map(|(sum, d)| sum + d);
            }
        }
        self.last = Some((at, busy));
    }

    /// The result; None before a busy interval was read.
    pub fn result(&self) -> Option<ClientCpu> {
        if self.busy_s <= 0.0 {
            return None;
        }
        let hottest = self.procs.values().max_by_key(|t| t.busy_ticks);
        Some(ClientCpu {
            busy_s: self.busy_s,
            tree_cpu_s: self.procs.values().map(|t| t.busy_ticks).sum::<u64>() as f64 * self.tick_s,
            hottest_cpu_s: hottest.map_or(0.0, |t| t.busy_ticks as f64 * self.tick_s),
            hottest: hottest.map(|t| t.command.clone()),
            limit_cores: self.limit_cores,
            hottest_wait_s: hottest
                .and_then(|t| t.busy_wait_ns)
                .map(|ns| ns as f64 / 1e9),
        })
    }
}

/// Nanoseconds `pid` has spent runnable, waiting for a CPU (`/proc/PID/schedstat`: run time,
/// run-queue wait, time slices); None where the kernel keeps no schedstat.
fn run_queue_wait_ns(proc_root: &Path, pid: i32) -> Option<u64> {
    let text = fs::read_to_string(proc_root.join(pid.to_string()).join("schedstat")).ok()?;
    text.split_whitespace().nth(1)?.parse().ok()
}

/// The CPU `pid` may use, in cores: the lowest CPU quota on its cgroup's path (v2 `cpu.max`,
/// v1 `cpu.cfs_quota_us` / `cpu.cfs_period_us`), or fewer CPUs in its affinity than the host
/// has online, whichever is less. None when neither limits it or neither can be read.
pub fn cpu_limit(proc_root: &Path, pid: i32) -> Option<f64> {
    let dir = proc_root.join(pid.to_string());
    let quota = fs::read_to_string(dir.join("cgroup"))
        .ok()
        .and_then(|c| quota_cores(&c, &fs::read_to_string(dir.join("mountinfo")).ok()?));
    let affinity = fs::read_to_string(dir.join("status"))
        .ok()
        .and_then(|s| allowed_cpus(&s))
        .filter(|n| {
            fs::read_to_string("/sys/devices/system/cpu/online")
                .ok()
                .and_then(|o| cpu_list_len(o.trim()))
                .is_some_and(|online| *n < online)
        })
        .map(|n| n as f64);
    match (quota, affinity) {
        (Some(q), Some(a)) => Some(q.min(a)),
        (q, a) => q.or(a),
    }
}

/// The lowest quota on a process's cgroup path, in cores, given its `/proc/PID/cgroup` and
/// `/proc/PID/mountinfo` (whose mount points say where each hierarchy is).
fn quota_cores(cgroup: &str, mountinfo: &str) -> Option<f64> {
    let mut lowest: Option<f64> = None;
    for line in cgroup.lines() {
        let mut parts = line.splitn(3, ':');
        let (_, controllers, path) = (parts.next()?, parts.next()?, parts.next()?);
        let v2 = controllers.is_empty();
        if !v2 && !controllers.split(',').any(|c| c == "cpu") {
            continue;
        }
        let Some(mount) = mount_of(mountinfo, v2) else {
            continue;
        };
        for d in Path::new(path.trim_start_matches('/')).ancestors() {
            let at = Path::new(&mount).join(d);
            let q = if v2 {
                fs::read_to_string(at.join("cpu.max"))
                    .ok()
                    .and_then(|t| parse_cpu_max(&t))
            } else {
                let read = |f: &str| fs::read_to_string(at.join(f)).ok();
                read("cpu.cfs_quota_us")
                    .zip(read("cpu.cfs_period_us"))
                    .and_then(|(q, p)| parse_cfs(&q, &p))
            };
            if let Some(q) = q {
                lowest = Some(lowest.map_or(q, |l| l.min(q)));
            }
        }
    }
    lowest
}

/// The mount point of the cgroup2 hierarchy, or of the v1 hierarchy with the `cpu` controller.
fn mount_of(mountinfo: &str, v2: bool) -> Option<String> {
    mountinfo.lines().find_map(|line| {
        let (left, right) = line.split_once(" - ")?;
        let mut r = right.split_whitespace();
        let fstype = r.next()?;
        let superopts = r.nth(1).unwrap_or_default();
        let ok = if v2 {
            fstype == "cgroup2"
        } else {
            fstype == "cgroup" && superopts.split(',').any(|o| o == "cpu")
        };
        ok.then(|| left.split_whitespace().nth(4).map(str::to_string))
            .flatten()
    })
}

/// `cpu.max`: `max 100000` (no quota) or `10000 100000` (0.1 cores).
fn parse_cpu_max(text: &str) -> Option<f64> {
    let mut w = text.split_whitespace();
    let quota: f64 = w.next()?.parse().ok()?;
    let period: f64 = w.next()?.parse().ok()?;
    (quota > 0.0 && period > 0.0).then(|| quota / period)
}

/// v1's quota (`-1`: none) over its period.
fn parse_cfs(quota: &str, period: &str) -> Option<f64> {
    let q: f64 = quota.trim().parse().ok()?;
    let p: f64 = period.trim().parse().ok()?;
    (q > 0.0 && p > 0.0).then(|| q / p)
}

/// `Cpus_allowed_list:` of `/proc/PID/status`, counted.
fn allowed_cpus(status: &str) -> Option<usize> {
    let list = status
        .lines()
        .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))?;
    cpu_list_len(list.trim())
}

/// How many CPUs a list such as `0-3,8,10-11` names.
fn cpu_list_len(list: &str) -> Option<usize> {
    let mut n = 0;
    for part in list.split(',').filter(|p| !p.is_empty()) {
        n += match part.split_once('-') {
            Some((a, b)) => {
                let (a, b): (usize, usize) = (a.parse().ok()?, b.parse().ok()?);
                b.checked_sub(a)? + 1
            }
            None => {
                part.parse::<usize>().ok()?;
                1
            }
        };
    }
    (n > 0).then_some(n)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quotas_and_cpu_lists_read_as_cores() {
        assert_eq!(parse_cpu_max("10000 100000\n"), Some(0.1));
        assert_eq!(parse_cpu_max("max 100000\n"), None);
        assert_eq!(parse_cfs("10000\n", "100000\n"), Some(0.1));
        assert_eq!(parse_cfs("-1\n", "100000\n"), None);
        assert_eq!(cpu_list_len("0-3,8,10-11"), Some(7));
        assert_eq!(cpu_list_len("1"), Some(1));
        assert_eq!(cpu_list_len("3-1"), None);
        assert_eq!(allowed_cpus("Name:\tx\nCpus_allowed_list:\t1\n"), Some(1));
    }

    #[test]
    fn the_v1_cpu_hierarchy_is_found_by_its_controller() {
        let info = "30 25 0:26 / /sys/fs/cgroup/unified rw - cgroup2 cgroup2 rw\n\
                    31 25 0:27 / /sys/fs/cgroup/cpu,cpuacct rw - cgroup cgroup rw,cpu,cpuacct\n";
        assert_eq!(
            mount_of(info, false).as_deref(),
            Some("/sys/fs/cgroup/cpu,cpuacct")
        );
        assert_eq!(
            mount_of(info, true).as_deref(),
            Some("/sys/fs/cgroup/unified")
        );
    }

    #[test]
    fn a_quota_on_a_temporary_hierarchy_is_the_lowest_on_the_path() {
        let root = tempfile::tempdir().unwrap();
        let leaf = root.path().join("a/b");
        fs::create_dir_all(&leaf).unwrap();
        fs::write(root.path().join("a/cpu.max"), "50000 100000\n").unwrap();
        fs::write(leaf.join("cpu.max"), "max 100000\n").unwrap();
        let info = format!(
            "30 25 0:26 / {} rw - cgroup2 cgroup2 rw\n",
            root.path().display()
        );
        assert_eq!(quota_cores("0::/a/b\n", &info), Some(0.5));
        assert_eq!(quota_cores("0::/\n", &info), None);
    }

    #[test]
    fn busy_intervals_count_and_idle_ones_do_not() {
        let me = std::process::id() as i32;
        let stat = ProcScanner::system().stat(me).unwrap();
        let id = ProcId {
            pid: me,
            starttime: stat.starttime,
        };
        let members = vec![(id, "the test".to_string())];
        let mut m = CpuMeter::new(me);
        let t0 = Instant::now();
        m.reading(&members, t0, true);
        // Burn CPU for a while so the busy interval has ticks in it.
        let spin = std::time::Instant::now();
        let mut x = 0u64;
        while spin.elapsed() < std::time::Duration::from_millis(300) {
            x = x.wrapping_mul(31).wrapping_add(1);
        }
        std::hint::black_box(x);
        m.reading(&members, t0 + std::time::Duration::from_millis(300), true);
        m.reading(&members, t0 + std::time::Duration::from_millis(600), false);
        let r = m.result().unwrap();
        assert!((r.busy_s - 0.3).abs() < 1e-9, "{r:?}");
        assert!(r.hottest_cpu_s > 0.1, "{r:?}");
        assert_eq!(r.hottest.as_deref(), Some("the test"));
        // This kernel keeps schedstat: the wait is measured, whatever it was.
        if Path::new("/proc/self/schedstat").exists() {
            assert!(r.hottest_wait_s.is_some_and(|w| w >= 0.0), "{r:?}");
        }
    }

    #[test]
    fn the_run_queue_wait_is_schedstats_second_field() {
        let root = tempfile::tempdir().unwrap();
        fs::create_dir_all(root.path().join("42")).unwrap();
        fs::write(root.path().join("42/schedstat"), "1918446 734000 12\n").unwrap();
        assert_eq!(run_queue_wait_ns(root.path(), 42), Some(734_000));
        assert_eq!(run_queue_wait_ns(root.path(), 43), None);
        fs::write(root.path().join("42/schedstat"), "1918446\n").unwrap();
        assert_eq!(run_queue_wait_ns(root.path(), 42), None);
    }
}
