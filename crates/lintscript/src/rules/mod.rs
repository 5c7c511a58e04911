//! The rules, one file per trap. Each reads a parsed [`Script`] and returns its findings.

mod cleanup;
mod multinode;
mod pipefail;
mod readiness;
mod seed;
mod timer;

use super::argv::{basename, is_load, server_engine, strip_launchers};
use super::model::{Cmd, Pos, Script};
use super::Finding;
use inferlint_core::engine::Engine;
use inferlint_core::fmt::shorten;

/// Every finding in a script. `script_name` is the file's name, which its own command line
/// contains when it runs.
pub fn check(s: &Script, script_name: &str) -> Vec<Finding> {
    let mut out = Vec::new();
    out.extend(cleanup::check(s, script_name));
    out.extend(timer::check(s));
    out.extend(pipefail::check(s));
    out.extend(readiness::check(s));
    out.extend(seed::check(s));
    out.extend(multinode::check(s));
    out
}

/// A snippet for a finding: the command's own text when it is one line, else its first line.
fn snippet(s: &Script, pos: Pos, text: &str) -> String {
    let first = text.lines().next().unwrap_or("").trim();
    let t = if first.is_empty() {
        s.line_text(pos.line)
    } else {
        first
    };
    shorten(t, 120)
}

/// The command's name after its launchers (`sudo kill` → `kill`).
fn tool(s: &Script, c: &Cmd) -> Option<String> {
    let argv = s.argv(c);
    let st = strip_launchers(argv);
    argv.get(st.start).map(|w| basename(w).to_string())
}

/// Nesting of function calls followed when asking what a command does.
const CALL_DEPTH: usize = 4;

/// The function a command calls, when it calls one defined in the script.
fn called<'a>(s: &'a Script, c: &Cmd) -> Option<&'a super::model::Function> {
    let name = s.name(c)?;
    s.function(&name)
        .filter(|f| !f.range.contains(&c.pos.offset))
}

/// True when `pred` holds for the command, or for a command of a function it calls (transitively).
fn does(s: &Script, c: &Cmd, pred: &dyn Fn(&Script, &Cmd) -> bool) -> bool {
    does_depth(s, c, pred, CALL_DEPTH)
}

fn does_depth(s: &Script, c: &Cmd, pred: &dyn Fn(&Script, &Cmd) -> bool, depth: usize) -> bool {
    if pred(s, c) {
        return true;
    }
    if depth == 0 {
        return false;
    }
    match called(s, c) {
        Some(f) => s
            .cmds_in(&f.range)
            .any(|(_, inner)| does_depth(s, inner, pred, depth - 1)),
        None => false,
    }
}

/// The engine whose server the command starts.
fn starts_server(s: &Script, c: &Cmd) -> Option<Engine> {
    server_engine(s.argv(c))
}

fn starts_load(s: &Script, c: &Cmd) -> bool {
    is_load(s.argv(c))
}

/// `curl`, `wget`, `nc -z`, `inferlint probe`: a command that asks a server whether it answers.
fn is_probe(s: &Script, c: &Cmd) -> bool {
    let argv = s.argv(c);
    let st = strip_launchers(argv);
    let rest = &argv[st.start..];
    match rest.first().map(|w| basename(w)) {
        Some("curl" | "wget" | "http" | "xh") => true,
        Some("nc" | "ncat") => rest.iter().any(|w| w.starts_with('-') && w.contains('z')),
        Some("inferlint") => rest.get(1).map(String::as_str) == Some("probe"),
        _ => false,
    }
}

/// Commands that start a process-killing action: `kill`, `pkill`, `killall`, `docker stop`,
/// `scancel`, `inferlint teardown`.
fn kills(s: &Script, c: &Cmd) -> bool {
    let argv = s.argv(c);
    let st = strip_launchers(argv);
    let rest = &argv[st.start..];
    match rest.first().map(|w| basename(w)) {
        Some("kill") => !cleanup::probes_only(rest),
        Some("pkill" | "killall" | "scancel" | "fuser") => true,
        Some("docker" | "podman") => matches!(
            rest.get(1).map(String::as_str),
            Some("stop" | "kill" | "rm")
        ),
        Some("inferlint") => matches!(rest.get(1).map(String::as_str), Some("teardown" | "reap")),
        _ => false,
    }
}

/// Text of a known launcher-free command for messages: `pkill -f "vllm serve"`.
fn command_text(c: &Cmd) -> String {
    shorten(c.text.lines().next().unwrap_or("").trim(), 80)
}
