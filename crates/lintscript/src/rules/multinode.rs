//! Multi-node campaigns (Slurm steps, Ray clusters, vLLM's data parallel), under T2 — what
//! they leave on a node for the next run (../docs/orchestration.md#5-multi-node):
//! - `ray start` without `--block` under `srun`: it daemonizes and returns, so the step ends
//!   at once, with the Ray daemons either killed with it or left running outside any step;
//! - vLLM started multi-node or data parallel by a script that never removes `/dev/shm/vllm-*`:
//!   a run that ends badly leaves its segments, and the next one waits on them;
//! - `kill` of an `srun`'s pid: it signals the srun client, not the step's processes.

use super::super::argv::{basename, strip_launchers};
use super::super::model::{Cmd, Script};
use super::super::Finding;
use super::cleanup::{kill_targets, last_pid_targets, probes_only};
use super::{command_text, snippet, starts_server, tool};
use inferlint_core::argv::{flag_value, has_flag};
use inferlint_core::engine::Engine;
use inferlint_core::result::{Status, Tripwire};

const RAY_FIX: &str = "run it as 'srun … ray start --block …' in the background (the step then \
                       lives as long as the node's Ray, and ending the step ends Ray), or use \
                       'ray symmetric-run'";

const SHM_FIX: &str = "remove the run's segments on every node when it ends and before the next \
                       one starts, e.g. 'srun --ntasks-per-node=1 rm -f /dev/shm/vllm-*' in the \
                       cleanup (trap … EXIT)";

const SRUN_FIX: &str = "end the step with 'scancel --signal=TERM JOBID.STEPID' (or scancel \
                        JOBID.STEPID), which signals every process of the step on every node; \
                        or run 'srun inferlint run …' so the step's task is a supervisor that \
                        tears the whole tree down";

pub fn check(s: &Script) -> Vec<Finding> {
    let mut out = ray_without_block(s);
    out.extend(shm_not_cleaned(s));
    out.extend(kill_of_srun(s));
    out
}

/// Whether an argv runs under `srun` (as one of its launchers).
fn srun_launched(argv: &[String]) -> bool {
    strip_launchers(argv)
        .parents
        .iter()
        .any(|&p| basename(&argv[p]) == "srun")
}

/// Whether the command runs in a step: `srun` launches it, or a shell string that `srun` runs
/// holds it (`srun bash -c '… ray start …'`).
fn in_srun_step(s: &Script, c: &Cmd) -> bool {
    if srun_launched(s.argv(c)) {
        return true;
    }
    let mut unit = Some(c.unit);
    while let Some(u) = unit {
        let holds = s.units[u].holders.iter().any(|h| {
            let words: Vec<String> = h.split_whitespace().map(str::to_string).collect();
            words.first().is_some_and(|w| basename(w) == "srun") || srun_launched(&words)
        });
        if holds {
            return true;
        }
        unit = s.units[u].parent;
    }
    false
}

fn ray_without_block(s: &Script) -> Vec<Finding> {
    let mut out = Vec::new();
    for c in &s.cmds {
        let argv = s.argv(c);
        let rest = &argv[strip_launchers(argv).start..];
        let is_ray_start = rest.first().is_some_and(|w| basename(w) == "ray")
            && rest.get(1).map(String::as_str) == Some("start");
        if !is_ray_start || has_flag(rest, "--block") || !in_srun_step(s, c) {
            continue;
        }
        let node = if has_flag(rest, "--head") {
            "head"
        } else {
            "worker node"
        };
        let problem = format!(
            "'{}' has no --block: ray start daemonizes the {node}'s gcs_server/raylet and \
             returns, so the srun step ends at once; Slurm then either kills the Ray daemons \
             with the step (the cluster is gone before the server uses it) or leaves them \
             running outside any step, reparented to PID 1, holding the node's GPUs after the \
             job (Ray PR 62591)",
            command_text(c)
        );
        out.push(Finding::new(
            Tripwire::T2,
            Status::Fail,
            "ray-start-without-block",
            c.pos,
            snippet(s, c.pos, &c.text),
            problem,
            RAY_FIX.to_string(),
        ));
    }
    out
}

/// A vLLM server started across nodes or data parallel: `--headless`, `--nnodes`/`--node-rank`,
/// a data-parallel size above one, or a data-parallel address, start rank or backend.
fn multi_node_vllm(s: &Script, c: &Cmd) -> Option<&'static str> {
    if starts_server(s, c) != Some(Engine::Vllm) {
        return None;
    }
    let argv = s.argv(c);
    let above_one = |flag: &str| {
        flag_value(argv, flag).is_some_and(|v| v.parse::<u64>().map_or(true, |n| n > 1))
    };
    if has_flag(argv, "--headless") || above_one("--nnodes") || has_flag(argv, "--node-rank") {
        return Some("multi-node");
    }
    let dp = ["--data-parallel-size", "-dp"].iter().any(|f| above_one(f))
        || [
            "--data-parallel-address",
            "--data-parallel-start-rank",
            "--data-parallel-size-local",
            "--data-parallel-backend",
        ]
        .iter()
        .any(|f| has_flag(argv, f));
    dp.then_some("data-parallel")
}

/// `rm … /dev/shm/…` or `find /dev/shm … -delete|-exec rm`, anywhere in the script.
fn cleans_shm(s: &Script, c: &Cmd) -> bool {
    let argv = s.argv(c);
    let rest = &argv[strip_launchers(argv).start..];
    let shm = |w: &String| w.trim_matches(['"', '\'']).starts_with("/dev/shm");
    match rest.first().map(|w| basename(w)) {
        Some("rm") => rest.iter().skip(1).any(shm),
        Some("find") => {
            rest.iter().skip(1).any(shm)
                && rest
                    .iter()
                    .any(|w| w == "-delete" || w == "-exec" || w == "-execdir")
        }
        _ => false,
    }
}

fn shm_not_cleaned(s: &Script) -> Vec<Finding> {
    if s.cmds.iter().any(|c| cleans_shm(s, c)) {
        return Vec::new();
    }
    let Some((c, how)) = s
        .cmds
        .iter()
        .find_map(|c| multi_node_vllm(s, c).map(|how| (c, how)))
    else {
        return Vec::new();
    };
    let problem = format!(
        "this script starts a {how} vLLM ('{}') and never removes /dev/shm/vllm-*: a run that \
         ends badly (scancel, a time limit, a crash) leaves its shared-memory segments on the \
         node, and the next run on it can hang at \"Waiting for READY message from DP \
         Coordinator\" (prime-rl PR 2331)",
        command_text(c)
    );
    vec![Finding::new(
        Tripwire::T2,
        Status::Warn,
        "shm-not-cleaned",
        c.pos,
        snippet(s, c.pos, &c.text),
        problem,
        SHM_FIX.to_string(),
    )]
}

/// Whether a background statement runs `srun` (its first command, after other launchers).
pub(super) fn srun_background(s: &Script, b: usize) -> bool {
    s.cmds_in(&s.backgrounds[b].range)
        .next()
        .is_some_and(|(_, c)| {
            let argv = s.argv(c);
            srun_launched(argv) || argv.first().is_some_and(|w| basename(w) == "srun")
        })
}

fn kill_of_srun(s: &Script) -> Vec<Finding> {
    let mut out = Vec::new();
    for c in &s.cmds {
        if tool(s, c).as_deref() != Some("kill") {
            continue;
        }
        let argv = s.argv(c);
        let rest = &argv[strip_launchers(argv).start..];
        let targets = kill_targets(rest);
        if probes_only(rest) || targets.is_empty() {
            continue;
        }
        // A scancel beside the kill (same function or handler) ends the step itself.
        let scancel_beside = s.cmds.iter().any(|x| {
            x.unit == c.unit && x.function == c.function && tool(s, x).as_deref() == Some("scancel")
        });
        if scancel_beside {
            continue;
        }
        let words = &c.words[c.words.len() - targets.len()..];
        let Some(b) = words
            .iter()
            .filter_map(|w| last_pid_targets(s, c, w))
            .flatten()
            .find(|&b| srun_background(s, b))
        else {
            continue;
        };
        let problem = format!(
            "'{}' signals the srun started on line {}, not the step's processes: srun relays \
             a signal only to the step's tasks (a shell wrapper, not the server inside it), a \
             SIGKILL ends srun alone, and the step's processes keep running on their node \
             (NVIDIA cloudai PR 942)",
            command_text(c),
            s.backgrounds[b].pos.line
        );
        out.push(Finding::new(
            Tripwire::T2,
            Status::Fail,
            "kill-of-srun",
            c.pos,
            snippet(s, c.pos, &c.text),
            problem,
            SRUN_FIX.to_string(),
        ));
    }
    out
}
