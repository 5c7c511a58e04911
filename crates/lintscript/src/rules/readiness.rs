//! T13: a readiness wait that trusts whatever answers. A loop polling a fixed port with a
//! `trap … EXIT` cleanup adopts the next campaign's server and its deferred cleanup kills it; a
//! `sleep N` after starting the server checks nothing at all.

use std::sync::LazyLock;

use regex::Regex;

use super::super::model::{Cmd, Loop, Script};
use super::super::word::{Seg, Word};
use super::super::Finding;
use super::{does, is_probe, kills, snippet, starts_server};
use inferlint_core::result::{Status, Tripwire};

pub fn check(s: &Script) -> Vec<Finding> {
    let mut out = stale_waiters(s);
    out.extend(sleeps(s));
    out
}

/// A value that differs from one run to the next (so a port or a model name made of it is this
/// run's own).
fn unique_source(text: &str) -> bool {
    #[allow(clippy::expect_used, reason = "a constant pattern, tested")]
    static UNIQUE: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(
            r"(?i)SLURM_(ARRAY_)?JOB_ID|SLURM_ARRAY_TASK_ID|SLURM_STEP_ID|SLURM_PROCID|SLURM_LOCALID|RANDOM|BASHPID|\$\$|\$\(|`|uuid|RUN_?ID|EPOCH|mktemp|date",
        )
        .expect("valid regex")
    });
    UNIQUE.is_match(text)
}

/// True when the word, or a variable it reads (through assignments), comes from a unique source.
fn word_is_unique(s: &Script, w: &Word, depth: usize) -> bool {
    if unique_source(&w.raw) {
        return true;
    }
    if depth == 0 {
        return false;
    }
    w.segs.iter().any(|seg| match seg {
        Seg::Var { name, .. } => {
            unique_source(name)
                || s.vars
                    .assigned(name)
                    .iter()
                    .any(|v| word_is_unique(s, v, depth - 1))
        }
        Seg::Special(c) => c == "$",
        _ => false,
    })
}

/// The address a probe asks, and whether its port is fixed (the same for every run).
fn probe_target(s: &Script, c: &Cmd) -> Option<(String, bool)> {
    c.words.iter().skip(1).find_map(|w| {
        let text = s.vars.approx(w);
        let url_like = !text.starts_with('-')
            && (text.contains("://") || text.contains("localhost") || text.contains("127.0.0.1"));
        url_like.then(|| (text, !word_is_unique(s, w, 4)))
    })
}

/// The loops that wait for a server: they run a probe (directly or through a function).
fn readiness_loops(s: &Script) -> Vec<(&Loop, String, bool)> {
    let mut out = Vec::new();
    for (li, l) in s.loops.iter().enumerate() {
        // The innermost loop around the probe is the waiting one.
        let probe = s
            .cmds_in(&l.range)
            .filter(|(_, c)| c.loops.last() == Some(&li))
            .find(|(_, c)| does(s, c, &|s, x| is_probe(s, x)));
        let Some((_, pc)) = probe else { continue };
        // The probe may sit in a function the loop calls: read its target there.
        let target = probe_target(s, pc).or_else(|| {
            let f = super::called(s, pc)?;
            s.cmds_in(&f.range)
                .filter(|(_, x)| is_probe(s, x))
                .find_map(|(_, x)| probe_target(s, x))
        });
        let Some((url, fixed)) = target else { continue };
        out.push((l, url, fixed));
    }
    out
}

/// `kill -0 $PID`, `ps -p $PID`, `/proc/$PID`: the loop checks its own server is alive.
fn checks_pid(s: &Script, c: &Cmd) -> bool {
    let argv = s.argv(c);
    let name = argv.first().map(String::as_str).unwrap_or("");
    (name == "kill" && argv.iter().any(|w| w == "-0" || w == "0"))
        || (name == "ps" && argv.iter().any(|w| w == "-p" || w.starts_with("--pid")))
        || c.words.iter().any(|w| w.raw.contains("/proc/$"))
        || (name == "wait" && argv.iter().any(|w| w == "-n"))
}

/// The script gives its server a name of its own (`--served-model-name "m-$SLURM_JOB_ID"`).
fn unique_served_name(s: &Script) -> bool {
    s.cmds
        .iter()
        .filter(|c| starts_server(s, c).is_some())
        .any(|c| {
            c.words.iter().enumerate().any(|(k, w)| {
                let raw = w.raw.as_str();
                if let Some(v) = raw.strip_prefix("--served-model-name=") {
                    return unique_source(v) || word_is_unique(s, w, 4);
                }
                raw == "--served-model-name"
                    && c.words.get(k + 1).is_some_and(|v| word_is_unique(s, v, 4))
            })
        })
}

/// Traps whose handler kills something, with the line they are set on.
fn killing_traps(s: &Script) -> Vec<usize> {
    s.traps
        .iter()
        .filter(|t| {
            t.conditions
                .iter()
                .any(|c| matches!(c.as_str(), "EXIT" | "TERM" | "INT" | "HUP"))
        })
        .filter(|t| {
            let by_unit = t.unit.is_some_and(|u| {
                s.cmds
                    .iter()
                    .filter(|c| c.unit == u)
                    .any(|c| does(s, c, &|s, x| kills(s, x)))
            });
            let by_function = t
                .function
                .as_deref()
                .and_then(|f| s.function(f))
                .is_some_and(|f| {
                    s.cmds_in(&f.range)
                        .any(|(_, c)| does(s, c, &|s, x| kills(s, x)))
                });
            by_unit || by_function
        })
        .map(|t| t.pos.line)
        .collect()
}

fn stale_waiters(s: &Script) -> Vec<Finding> {
    let traps = killing_traps(s);
    let Some(&trap_line) = traps.first() else {
        return Vec::new();
    };
    let named = unique_served_name(s);
    let mut out = Vec::new();
    for (l, url, fixed) in readiness_loops(s) {
        if !fixed {
            continue;
        }
        // Where the loop lives: its own body, and the function around it.
        let mut scope = vec![l.range.clone()];
        if let Some(f) = l.function.as_deref().and_then(|f| s.function(f)) {
            scope.push(f.range.clone());
        }
        let in_scope: Vec<&Cmd> = scope
            .iter()
            .flat_map(|r| s.cmds_in(r).map(|(_, c)| c))
            .collect();
        if in_scope
            .iter()
            .any(|c| does(s, c, &|s, x| checks_pid(s, x)))
        {
            continue;
        }
        let asks_models = in_scope
            .iter()
            .any(|c| s.argv(c).iter().any(|w| w.contains("/v1/models")));
        if named && asks_models {
            continue;
        }
        let problem = format!(
            "this readiness loop polls {url} and takes whatever server answers on that fixed \
             port as its own; if the script is killed while it waits, bash runs the trap of \
             line {trap_line} only after the loop, which by then may have adopted the next \
             campaign's server, and the cleanup kills that one"
        );
        let fix = "check in the loop that the server answering is yours: kill -0 \"$SERVER_PID\" \
                   || exit 1, or a unique --served-model-name (e.g. with $SLURM_JOB_ID) looked \
                   for in /v1/models; or give each campaign its own port; 'inferlint run' \
                   waits for its own child's ready line and /health";
        out.push(Finding::new(
            Tripwire::T13,
            Status::Fail,
            "stale-waiter",
            l.pos,
            snippet(s, l.pos, s.line_text(l.pos.line)),
            problem,
            fix.to_string(),
        ));
    }
    out
}

/// Trivial commands between starting the server and waiting for it.
fn trivial(s: &Script, c: &Cmd) -> bool {
    let name = s.name(c).unwrap_or_default();
    matches!(
        name.as_str(),
        "echo"
            | "printf"
            | "true"
            | ":"
            | "disown"
            | "cd"
            | "mkdir"
            | "touch"
            | "export"
            | "set"
            | "trap"
            | "date"
            | "logger"
            | "local"
            | "declare"
            | "readonly"
    )
}

fn sleeps(s: &Script) -> Vec<Finding> {
    // Starts: background statements that start a server, and calls of functions that do.
    let mut starts: Vec<(usize, usize, Option<String>, usize)> = Vec::new(); // (end offset, unit, function, line)
    for b in &s.backgrounds {
        let has = s
            .cmds_in(&b.range)
            .any(|(_, c)| does(s, c, &|s, x| starts_server(s, x).is_some()));
        if has {
            starts.push((b.range.end, b.unit, b.function.clone(), b.pos.line));
        }
    }
    for c in &s.cmds {
        if c.background.is_some() {
            continue;
        }
        if let Some(f) = super::called(s, c) {
            let starts_bg = s.backgrounds.iter().any(|b| {
                f.range.contains(&b.range.start)
                    && s.cmds_in(&b.range)
                        .any(|(_, x)| starts_server(s, x).is_some())
            });
            if starts_bg {
                starts.push((c.end, c.unit, c.function.clone(), c.pos.line));
            }
        }
    }
    let mut out = Vec::new();
    for (end, unit, function, line) in starts {
        let mut after: Vec<&Cmd> = s
            .cmds
            .iter()
            .filter(|c| c.pos.offset >= end && c.unit == unit && c.function == function)
            .filter(|c| c.background.is_none() && c.inside.is_none())
            .collect();
        after.sort_by_key(|c| c.pos.offset);
        let mut candidate: Option<&Cmd> = None;
        let mut used = false;
        for c in after {
            if trivial(s, c) {
                continue;
            }
            let in_wait_loop = c.loops.iter().any(|&l| {
                s.cmds_in(&s.loops[l].range)
                    .any(|(_, x)| does(s, x, &|s, y| is_probe(s, y)))
            });
            if in_wait_loop || does(s, c, &|s, x| is_probe(s, x)) {
                candidate = None;
                break;
            }
            if s.name(c).as_deref() == Some("sleep") {
                candidate.get_or_insert(c);
                continue;
            }
            // A sleep before stopping the server is a run time, not a wait for readiness.
            let stops = does(s, c, &|s, x| kills(s, x))
                || matches!(s.name(c).as_deref(), Some("wait" | "exit" | "return"));
            used = !stops;
            break;
        }
        if let (Some(c), true) = (candidate, used) {
            let what = super::command_text(c);
            out.push(Finding::new(
                Tripwire::T13,
                Status::Warn,
                "sleep-as-readiness",
                c.pos,
                snippet(s, c.pos, &c.text),
                format!(
                    "'{what}' is the only wait for the server started on line {line}: a slower \
                     start (cold compile cache, bigger model) sends the load to a server that \
                     is not up, or to another one still answering on the port"
                ),
                "poll /health until it answers and check the server is yours (kill -0 \
                 \"$SERVER_PID\"); 'inferlint run' waits for the ready line and /health of the \
                 server it started"
                    .to_string(),
            ));
        }
    }
    out
}
