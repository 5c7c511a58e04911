//! T3 (a kill pattern that matches the script's own shell) and T2 (a cleanup that finds the
//! server by name, or kills only `$!`, and so leaves the engine process holding the GPU).

use super::super::argv::{basename, strip_launchers};
use super::super::killer::{killer, KillTool, Killer};
use super::super::model::{Cmd, Script};
use super::super::procs::{engine_coverage, Matcher, Proc, Role, SERVER_PROCS};
use super::super::Finding;
use super::{command_text, does, snippet, starts_server, tool};
use inferlint_core::engine::Engine;
use inferlint_core::result::{Status, Tripwire};

pub fn check(s: &Script, script_name: &str) -> Vec<Finding> {
    let mut out = self_kills(s, script_name);
    out.extend(name_only(s));
    out.extend(last_pid_only(s));
    out
}

/// The processes whose command line exists while `c` runs and which a kill by `c` must spare:
/// the script, every shell string around it, and launchers that stay (`sudo`, `timeout`).
fn own_processes(s: &Script, c: &Cmd, script_name: &str) -> Vec<(Proc, String)> {
    let mut out = Vec::new();
    let argv = s.argv(c);
    for p in strip_launchers(argv).parents {
        let cmdline = argv[p..].join(" ");
        out.push((
            Proc::new(&cmdline),
            format!("the '{}' process that runs it", basename(&argv[p])),
        ));
    }
    let mut unit = Some(c.unit);
    let mut local = true;
    while let Some(u) = unit {
        let un = &s.units[u];
        for h in &un.holders {
            let what = if un.remote {
                "the remote shell that ssh starts for it".to_string()
            } else {
                "the shell running it".to_string()
            };
            out.push((Proc::new(h), what));
        }
        local &= !un.remote;
        unit = un.parent;
    }
    if local {
        let base = basename(script_name);
        out.push((
            Proc::named(&format!("bash {base}"), "bash"),
            "this script's own command line".to_string(),
        ));
        out.push((
            Proc::named(&format!("/bin/bash ./{base}"), base),
            "this script's own command line".to_string(),
        ));
    }
    out
}

/// Whitespace runs (newlines of a multi-line string) as single spaces.
fn one_line(t: &str) -> String {
    t.split_whitespace().collect::<Vec<_>>().join(" ")
}

fn killers(s: &Script) -> Vec<(usize, Killer)> {
    s.cmds
        .iter()
        .enumerate()
        .filter_map(|(i, c)| killer(s.argv(c)).map(|k| (i, k)))
        .filter(|(_, k)| !k.inverted)
        .collect()
}

fn self_kills(s: &Script, script_name: &str) -> Vec<Finding> {
    let mut out = Vec::new();
    for (i, k) in killers(s) {
        let c = &s.cmds[i];
        for &pi in &k.patterns {
            let Some(pattern) = s.vars.value(&c.words[pi]) else {
                continue;
            };
            let m = Matcher::new(&k, &pattern);
            let own = own_processes(s, c, script_name);
            let Some((hit, what)) = own.iter().find(|(p, _)| m.hits(p)) else {
                continue;
            };
            let shown = inferlint_core::fmt::shorten(&one_line(&hit.cmdline), 80);
            let tool = k.tool.name();
            let problem = format!(
                "{tool} pattern '{pattern}' also matches {what} ({shown}), so the cleanup kills \
                 its own shell (exit 143) and nothing after it runs"
            );
            let fix = self_kill_fix(&k, &pattern, &own, &m);
            out.push(Finding::new(
                Tripwire::T3,
                Status::Fail,
                "self-kill",
                c.pos,
                snippet(s, c.pos, &c.text),
                problem,
                fix,
            ));
            break;
        }
    }
    out
}

/// `vllm serve` → `vllm[ ]serve`, `vllm` → `[v]llm`: the same processes, not its own text.
fn bracketed(pattern: &str) -> Option<String> {
    if let Some(i) = pattern.find(' ') {
        return Some(format!("{}[ ]{}", &pattern[..i], &pattern[i + 1..]));
    }
    let first = pattern.chars().next()?;
    first
        .is_ascii_alphanumeric()
        .then(|| format!("[{first}]{}", &pattern[first.len_utf8()..]))
}

fn self_kill_fix(k: &Killer, pattern: &str, own: &[(Proc, String)], m: &Matcher) -> String {
    let teardown = "run the test under 'inferlint run', which stops exactly the processes it \
                    started (or use 'inferlint teardown', which never matches by substring)";
    if k.tool == KillTool::Killall || !k.full {
        return format!("name the server, not the shell; better: {teardown}");
    }
    let Some(b) = bracketed(pattern) else {
        return teardown.to_string();
    };
    // Would the bracketed pattern still hit one of our own processes (a one-liner that also
    // starts the server)?
    let fixed = Matcher::new(k, &b);
    let still = own
        .iter()
        .filter(|(p, _)| m.hits(p))
        .any(|(p, _)| fixed.hits(&Proc::named(&p.cmdline.replace(pattern, &b), &p.comm)));
    if still {
        format!(
            "the same command line also starts the server, so no pattern for the server can \
             avoid it: start the server and clean up in separate commands; better: {teardown}"
        )
    } else {
        format!(
            "write the pattern so it cannot match its own text, e.g. {} -f \"{b}\" (this fixes \
             T3 only: a name still misses the engine process, T2); better: {teardown}",
            k.tool.name()
        )
    }
}

/// Scripts that clean up by structure: a process group, the whole session, or inferlint.
fn structural_cleanup(s: &Script) -> bool {
    s.cmds.iter().any(|c| {
        let argv = s.argv(c);
        let st = strip_launchers(argv);
        let rest = &argv[st.start..];
        match rest.first().map(|w| basename(w)) {
            Some("kill") => kill_targets(rest)
                .iter()
                .any(|t| t.starts_with('-') || t == "0"),
            Some("pkill" | "pgrep") => rest
                .iter()
                .any(|w| matches!(w.as_str(), "-g" | "-s" | "--pgroup" | "--session")),
            Some("inferlint") => matches!(
                rest.get(1).map(String::as_str),
                Some("teardown" | "reap" | "run" | "xray")
            ),
            _ => false,
        }
    })
}

/// `kill -0 PID`, `kill -s 0 PID`, `kill -l`: asks, signals nothing.
pub(super) fn probes_only(argv: &[String]) -> bool {
    argv.iter()
        .skip(1)
        .any(|w| w == "-0" || w == "-l" || w == "-L")
        || argv.windows(2).any(|p| p[0] == "-s" && p[1] == "0")
}

/// The pid operands of `kill` (after its options; `-- -PGID` keeps the minus).
pub(super) fn kill_targets(argv: &[String]) -> Vec<String> {
    let mut out = Vec::new();
    let mut i = 1;
    let mut done = false;
    while i < argv.len() {
        let w = &argv[i];
        if !done {
            if w == "--" {
                done = true;
                i += 1;
                continue;
            }
            if w == "-s" || w == "-n" {
                i += 2;
                continue;
            }
            if w.starts_with('-') && !w.starts_with("-$") && w.len() > 1 {
                i += 1;
                continue;
            }
        }
        out.push(w.clone());
        i += 1;
    }
    out
}

/// Which tool stops an engine's processes by name, and what they miss.
fn name_only(s: &Script) -> Vec<Finding> {
    if structural_cleanup(s) {
        return Vec::new();
    }
    let ks: Vec<(usize, Killer, Vec<Matcher>)> = killers(s)
        .into_iter()
        .filter(|(i, k)| k.tool != KillTool::Pgrep || feeds_kill(s, *i))
        .map(|(i, k)| {
            let c = &s.cmds[i];
            let ms = k
                .patterns
                .iter()
                .filter_map(|&pi| s.vars.pattern_superset(&c.words[pi]))
                .map(|p| Matcher::new(&k, &p))
                .collect();
            (i, k, ms)
        })
        .collect();
    let all: Vec<&Matcher> = ks.iter().flat_map(|(_, _, ms)| ms.iter()).collect();
    let union = engine_coverage(&all);
    let mut out = Vec::new();
    let started: Vec<Engine> = s.cmds.iter().filter_map(|c| starts_server(s, c)).collect();
    for (i, k, ms) in &ks {
        let mine: Vec<&Matcher> = ms.iter().collect();
        // A pattern that also hits everyday processes (`python`) is not aimed at a server,
        // unless the script starts one it would hit.
        let generic = BYSTANDERS
            .iter()
            .any(|b| mine.iter().any(|m| m.hits(&Proc::new(b))));
        for (engine, hits) in engine_coverage(&mine) {
            if generic && !started.contains(&engine) {
                continue;
            }
            let missed: Vec<&str> = union
                .iter()
                .find(|(e, _)| *e == engine)
                .map(|(_, h)| h.engines_missed.clone())
                .unwrap_or_default();
            if missed.is_empty() {
                continue;
            }
            let c = &s.cmds[*i];
            let problem = format!(
                "{} finds the {} server by name ({}) and misses {}, which {} the server and \
                 {} the GPU memory",
                k.tool.name(),
                engine.name(),
                hits.servers_hit.join(", "),
                missed.join(" and "),
                if missed.len() == 1 {
                    "outlives"
                } else {
                    "outlive"
                },
                if missed.len() == 1 { "keeps" } else { "keep" },
            );
            out.push(Finding::new(
                Tripwire::T2,
                Status::Fail,
                "name-only-cleanup",
                c.pos,
                snippet(s, c.pos, &c.text),
                problem,
                TREE_FIX.to_string(),
            ));
            break;
        }
    }
    out
}

/// Processes that are not servers, to tell a pattern aimed at servers from a generic one.
const BYSTANDERS: &[&str] = &[
    "python3 train.py --epochs 3",
    "/usr/bin/python3 -m pytest",
    "bash ./run.sh",
];

const TREE_FIX: &str = "run the test under 'inferlint run', which owns the server's whole \
                        process tree; or start the server with setsid, kill its process group \
                        (kill -- -$PGID) and wait until 'inferlint gpu-inspect' passes; \
                        'inferlint teardown' finds leftovers by structure";

/// pgrep whose output goes to `kill` (`kill $(pgrep …)`, `pgrep … | xargs kill`).
fn feeds_kill(s: &Script, i: usize) -> bool {
    let c = &s.cmds[i];
    if let Some(outer) = c.inside {
        if tool(s, &s.cmds[outer]).as_deref() == Some("kill") {
            return true;
        }
    }
    if let Some((p, k)) = c.pipeline {
        return s.cmds.iter().any(|o| {
            o.pipeline.is_some_and(|(p2, k2)| p2 == p && k2 > k)
                && s.argv(o).iter().any(|w| w == "kill")
        });
    }
    // `PIDS=$(pgrep …)` then `kill $PIDS`: assume the listing is for killing.
    c.inside.is_none()
        && c.pipeline.is_none()
        && s.cmds.iter().any(|o| tool(s, o).as_deref() == Some("kill"))
}

/// The background statement `$!` names when read at `offset` (`in_handler`: read at exit, so
/// the last one started).
fn last_background(s: &Script, offset: usize, at_exit: bool) -> Option<usize> {
    let before = s
        .backgrounds
        .iter()
        .enumerate()
        .filter(|(_, b)| b.range.end <= offset)
        .map(|(i, _)| i)
        .next_back();
    if at_exit || before.is_none() {
        return s.backgrounds.len().checked_sub(1).or(before);
    }
    before
}

/// The background statements a `kill` operand refers to, if it only names `$!`.
pub(super) fn last_pid_targets(
    s: &Script,
    c: &Cmd,
    operand: &super::super::word::Word,
) -> Option<Vec<usize>> {
    let at_exit = c.function.is_some() || s.traps.iter().any(|t| t.unit == Some(c.unit));
    if operand.is_last_pid() {
        return Some(
            last_background(s, c.pos.offset, at_exit)
                .into_iter()
                .collect(),
        );
    }
    let raw = operand.raw.trim_matches('"');
    if let Some(job) = raw.strip_prefix('%') {
        let n = match job {
            "" | "%" | "+" => s.backgrounds.len(),
            "-" => s.backgrounds.len().saturating_sub(1),
            n => n.parse().ok()?,
        };
        return Some(
            n.checked_sub(1)
                .filter(|&i| i < s.backgrounds.len())
                .into_iter()
                .collect(),
        );
    }
    let name = operand.sole_var()?;
    let assigns: Vec<_> = s.assigns.iter().filter(|a| a.name == name).collect();
    if assigns.is_empty() || !assigns.iter().all(|a| a.value.is_last_pid()) {
        return None;
    }
    Some(
        assigns
            .iter()
            .filter_map(|a| last_background(s, a.pos.offset, false))
            .collect(),
    )
}

/// The engine a background statement starts, and the command that starts it.
fn server_in(s: &Script, b: usize) -> Option<(Engine, usize)> {
    let bg = &s.backgrounds[b];
    s.cmds_in(&bg.range).find_map(|(i, c)| {
        let engine = starts_server(s, c).or_else(|| {
            let found = std::cell::Cell::new(None);
            does(s, c, &|s, x| {
                found.set(found.get().or(starts_server(s, x)));
                found.get().is_some()
            });
            found.get()
        })?;
        Some((engine, i))
    })
}

fn last_pid_only(s: &Script) -> Vec<Finding> {
    if structural_cleanup(s) {
        return Vec::new();
    }
    let matchers: Vec<(Killer, Vec<Matcher>)> = killers(s)
        .into_iter()
        .map(|(i, k)| {
            let c = &s.cmds[i];
            let ms = k
                .patterns
                .iter()
                .filter_map(|&pi| s.vars.pattern_superset(&c.words[pi]))
                .map(|p| Matcher::new(&k, &p))
                .collect();
            (k, ms)
        })
        .collect();
    let all: Vec<&Matcher> = matchers.iter().flat_map(|(_, ms)| ms.iter()).collect();
    let covered = |engine: Engine| {
        engine_coverage(&all)
            .iter()
            .any(|(e, h)| *e == engine && h.engines_missed.is_empty())
    };
    let mut out = Vec::new();
    for c in &s.cmds {
        if tool(s, c).as_deref() != Some("kill") {
            continue;
        }
        let argv = s.argv(c);
        let st = strip_launchers(argv);
        if probes_only(&argv[st.start..]) {
            continue;
        }
        let targets = kill_targets(&argv[st.start..]);
        if targets.is_empty() {
            continue;
        }
        // Map each operand back to its word to read `$!` and `$VAR`.
        let words = &c.words[c.words.len() - targets.len()..];
        let mut bgs = Vec::new();
        let mut only_last = true;
        for w in words {
            match last_pid_targets(s, c, w) {
                Some(b) => bgs.extend(b),
                None => only_last = false,
            }
        }
        // A kill of an srun is multinode.rs's: what it misses is the step, not the engine.
        if !only_last
            || bgs.is_empty()
            || bgs.iter().any(|&b| super::multinode::srun_background(s, b))
        {
            continue;
        }
        let Some((b, (engine, server))) = bgs.iter().find_map(|&b| server_in(s, b).map(|x| (b, x)))
        else {
            continue;
        };
        if covered(engine) {
            continue;
        }
        let problem = last_pid_problem(s, c, b, engine, server);
        out.push(Finding::new(
            Tripwire::T2,
            Status::Fail,
            "kills-only-last-pid",
            c.pos,
            snippet(s, c.pos, &c.text),
            problem,
            TREE_FIX.to_string(),
        ));
    }
    out
}

fn last_pid_problem(s: &Script, c: &Cmd, b: usize, engine: Engine, server: usize) -> String {
    let bg = &s.backgrounds[b];
    let kill = command_text(c);
    let engines: Vec<&str> = SERVER_PROCS
        .iter()
        .filter(|p| p.engine == engine && p.role == Role::Engine)
        .map(|p| p.label)
        .collect();
    let engine_procs = engines.join(" and ");
    if let Some(p) = bg.pipeline {
        let last = s
            .cmds
            .iter()
            .filter(|x| {
                x.pipeline
                    .is_some_and(|(pp, k)| pp == p && k + 1 == s.pipelines[p].elements)
            })
            .find_map(|x| tool(s, x));
        let server_last = s.cmds[server]
            .pipeline
            .is_some_and(|(pp, k)| pp == p && k + 1 == s.pipelines[p].elements);
        if !server_last {
            return format!(
                "'{kill}' signals '{}', the last command of the pipeline started on line {}, \
                 not the server: the {} server and its {engine_procs} keep running and keep \
                 the GPU",
                last.unwrap_or_else(|| "?".into()),
                bg.pos.line,
                engine.name(),
            );
        }
    }
    let server_unit = s.cmds[server].unit;
    if server_unit != bg.unit && s.units[server_unit].own_shell {
        let runner = s.units[server_unit].runner.clone().unwrap_or_default();
        return format!(
            "'{kill}' signals the shell started on line {} ({}), not the server inside it: \
             the {} server and its {engine_procs} keep running and keep the GPU",
            bg.pos.line,
            inferlint_core::fmt::shorten(&runner, 60),
            engine.name(),
        );
    }
    format!(
        "'{kill}' signals only the process started on line {}; the {} server's engine \
         processes ({}) are separate processes that outlive it when it is killed with -9, \
         hangs or dies first, and nothing here waits for the GPU to be released before the \
         next test",
        bg.pos.line,
        engine.name(),
        engines.join(", "),
    )
}
