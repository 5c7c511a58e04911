//! Reconciliation: processes and cgroups of earlier runs whose owners are all dead (the
//! supervisor and the shepherd were both SIGKILLed, `kill -9 -SID`, OOM of both) are found by
//! their marker variable and by cgroup name (both from the caller's [`Names`]), and torn down
//! with the same staged teardown.
//!
//! The documented limit: a process that cleared its environment and left the process group
//! while no cgroup was in use, after both owners died, is reparented to PID 1 with nothing that
//! ties it to the run. Nothing can find it; only a cgroup (or Slurm's step cgroup) closes that.

use std::collections::BTreeMap;

use crate::cgroup::{self, Cgroup};
use crate::names::{Marker, Names};
use crate::procfs::{ProcId, ProcInfo, ProcScanner};
use crate::teardown::{self, Graces, TeardownReport};
use crate::tree::Tree;
use crate::{sys, StopMode};

/// What an earlier run left behind.
#[derive(Clone, Debug)]
pub struct StaleRun {
    pub run_id: String,
    /// The variable its processes carry the run id in.
    pub marker_env: String,
    /// Its owners (all dead).
    pub owners: Vec<ProcId>,
    /// Live processes carrying its marker or inside its cgroup.
    pub processes: Vec<ProcInfo>,
    pub cgroup: Option<Cgroup>,
}

/// The owners named in a value of the owners variable ([`Names::owners_env`]).
pub fn parse_owners(value: &str) -> Vec<ProcId> {
    value
        .split(',')
        .filter_map(|s| s.trim().parse().ok())
        .collect()
}

/// The run id and owners encoded in a cgroup folder name
/// `<prefix><run id>.s<shepherd pid>-<shepherd start>`, where a generated run id is
/// `<supervisor pid>-<supervisor start>-<random>`.
pub fn parse_cgroup_name(prefix: &str, name: &str) -> Option<(String, Vec<ProcId>)> {
    let rest = name.strip_prefix(prefix)?;
    let (run_id, shep) = rest.rsplit_once(".s")?;
    let mut owners = Vec::new();
    let (p, t) = shep.split_once('-')?;
    owners.push(ProcId {
        pid: p.parse().ok()?,
        starttime: t.parse().ok()?,
    });
    let parts: Vec<&str> = run_id.splitn(3, '-').collect();
    if parts.len() == 3 {
        if let (Ok(pid), Ok(starttime)) = (parts[0].parse(), parts[1].parse()) {
            owners.push(ProcId { pid, starttime });
        }
    }
    Some((run_id.to_string(), owners))
}

/// Finds stale runs. `uid`: only processes of that user (None: everyone readable).
///
/// A run is judged only when its owners can be: every process found must be in this scanner's
/// pid namespace (the pids a marker or a cgroup name records are those of the namespace the
/// run started in; another namespace's run, in a container or a test's own namespace, is left
/// alone), and a marked process must name its owners. A run with any live owner, seen on any
/// of its processes, is live.
pub fn find_stale(scan: &ProcScanner, names: &Names, uid: Option<u32>) -> Vec<StaleRun> {
    let me = sys::getpid();
    let protect = scan.ancestors(me);
    let alive = |o: &ProcId| scan.is_alive(*o);
    let my_ns = scan.pid_namespace(me);
    let same_ns = |pid: i32| my_ns.is_none() || scan.pid_namespace(pid) == my_ns;
    let mut runs: BTreeMap<String, StaleRun> = BTreeMap::new();
    let mut live_runs: std::collections::HashSet<String> = Default::default();

    for p in scan.all() {
        if protect.contains(&p.pid) || p.is_zombie() {
            continue;
        }
        if uid.is_some() && p.uid != uid {
            continue;
        }
        let Some(id) = scan.environ_var(p.pid, &names.marker_env) else {
            continue;
        };
        let owners = scan
            .environ_var(p.pid, &names.owners_env)
            .map(|v| parse_owners(&v))
            .unwrap_or_default();
        if owners.is_empty() || !same_ns(p.pid) || owners.iter().any(alive) {
            // Owners unknown, or counted in another namespace: no judging; keep the run.
            live_runs.insert(id);
            continue;
        }
        let run = runs.entry(id.clone()).or_insert_with(|| StaleRun {
            run_id: id,
            marker_env: names.marker_env.clone(),
            owners: owners.clone(),
            processes: Vec::new(),
            cgroup: None,
        });
        run.processes.push(p);
    }

    for cg in cgroup::find_prefixed(&names.cgroup_prefix) {
        let name = cg
            .path()
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let Some((run_id, owners)) = parse_cgroup_name(&names.cgroup_prefix, &name) else {
            continue;
        };
        if owners.iter().any(alive) || live_runs.contains(&run_id) {
            continue;
        }
        let pids = cg.procs();
        if pids.contains(&0) || !pids.iter().all(|&p| same_ns(p)) {
            // Processes outside our pid namespace show as 0, those of a namespace below ours
            // with our pids: never touch what we cannot judge (the owners' pids in the name
            // are the run's own namespace's).
            continue;
        }
        let members: Vec<ProcInfo> = pids
            .into_iter()
            .filter(|p| !protect.contains(p))
            .filter_map(|p| scan.read(p))
            .filter(|p| uid.is_none() || p.uid == uid)
            .collect();
        if members.is_empty() && uid.is_some() && cg.populated() == Some(true) {
            continue; // someone else's processes
        }
        let run = runs.entry(run_id.clone()).or_insert_with(|| StaleRun {
            run_id,
            marker_env: names.marker_env.clone(),
            owners,
            processes: Vec::new(),
            cgroup: None,
        });
        for m in members {
            if !run.processes.iter().any(|p| p.pid == m.pid) {
                run.processes.push(m);
            }
        }
        run.cgroup = Some(cg);
    }
    runs.into_values()
        .filter(|r| !live_runs.contains(&r.run_id))
        .collect()
}

/// Tears one stale run down (no leader: group-wide SIGTERM, then SIGKILL).
pub fn reap(run: &StaleRun, graces: &Graces) -> TeardownReport {
    let mut tree = Tree::new(ProcScanner::system());
    tree.marker = Some(Marker {
        env: run.marker_env.clone(),
        run_id: run.run_id.clone(),
    });
    tree.cgroup = run.cgroup.clone();
    for p in &run.processes {
        tree.track(p.id());
    }
    let mut never = || None;
    teardown::teardown(&mut tree, StopMode::Graceful, graces, "reap", &mut never)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names() -> Names {
        Names {
            marker_env: "TOOL_RUN_ID".into(),
            owners_env: "TOOL_RUN_OWNERS".into(),
            cgroup_prefix: "tool-".into(),
            shepherd_title: "tool-shep".into(),
        }
    }

    #[test]
    fn cgroup_names_carry_the_owners() {
        let parse_cgroup_name = |name| parse_cgroup_name("tool-", name);
        let (id, owners) = parse_cgroup_name("tool-123-4567-ab12cd34.s130-4570").unwrap();
        assert_eq!(id, "123-4567-ab12cd34");
        assert_eq!(
            owners,
            vec![
                ProcId {
                    pid: 130,
                    starttime: 4570
                },
                ProcId {
                    pid: 123,
                    starttime: 4567
                }
            ]
        );
        let (id, owners) = parse_cgroup_name("tool-custom.s9-1").unwrap();
        assert_eq!(id, "custom");
        assert_eq!(owners.len(), 1);
        assert!(parse_cgroup_name("other-1.s2-3").is_none());
        assert!(parse_cgroup_name("tool-x").is_none());
    }

    /// A synthetic `/proc` entry: its stat (state, start time), environment and namespace.
    fn fake(root: &std::path::Path, pid: i32, starttime: u64, env: &[&str], ns: &str) {
        let dir = root.join(pid.to_string());
        std::fs::create_dir_all(dir.join("ns")).unwrap();
        std::fs::write(
            dir.join("stat"),
            format!("{pid} (x) S 1 {pid} {pid} 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 {starttime} 0 0"),
        )
        .unwrap();
        std::fs::write(dir.join("cmdline"), b"VLLM::EngineCore\0").unwrap();
        let mut environ = Vec::new();
        for e in env {
            environ.extend_from_slice(e.as_bytes());
            environ.push(0);
        }
        std::fs::write(dir.join("environ"), environ).unwrap();
        std::os::unix::fs::symlink(ns, dir.join("ns/pid")).unwrap();
    }

    #[test]
    fn only_runs_whose_owners_can_be_judged_dead_are_stale() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path();
        let here = "pid:[4026531836]";
        fake(root, sys::getpid(), 1, &[], here);
        fake(root, 60, 9, &[], here); // a live owner
        let names = names();
        let run = |id: &str, owners: &str| {
            let mut env = vec![format!("{}={id}", names.marker_env)];
            if !owners.is_empty() {
                env.push(format!("{}={owners}", names.owners_env));
            }
            env
        };
        let put = |pid: i32, env: Vec<String>, ns: &str| {
            let env: Vec<&str> = env.iter().map(String::as_str).collect();
            fake(root, pid, 100, &env, ns);
        };
        put(500, run("dead", "40:7,41:7"), here);
        put(501, run("other-ns", "40:7"), "pid:[4026532999]");
        put(502, run("no-owners", ""), here);
        put(503, run("half", "40:7"), here);
        put(504, run("half", "60:9"), here);
        put(505, run("restarted-owner", "60:8"), here);
        // Another product's run, under its own variables: not ours to judge.
        put(
            506,
            vec![
                "OTHER_RUN_ID=foreign".into(),
                "OTHER_RUN_OWNERS=40:7".into(),
            ],
            here,
        );
        let scan = ProcScanner::new(root);
        let stale: Vec<String> = find_stale(&scan, &names, None)
            .into_iter()
            .map(|r| r.run_id)
            .filter(|id| {
                [
                    "dead",
                    "other-ns",
                    "no-owners",
                    "half",
                    "restarted-owner",
                    "foreign",
                ]
                .contains(&id.as_str())
            })
            .collect();
        // Pid 60 lives but started at 9, not 8: the owner of `restarted-owner` is gone.
        assert_eq!(stale, vec!["dead", "restarted-owner"]);
    }

    #[test]
    fn owners_parse() {
        assert_eq!(
            parse_owners("1:2, 3:4,bad"),
            vec![
                ProcId {
                    pid: 1,
                    starttime: 2
                },
                ProcId {
                    pid: 3,
                    starttime: 4
                }
            ]
        );
    }
}
