//! A server (or load) piped into `tee` without `set -o pipefail`: the pipeline's status is the
//! last command's, so a server that fails looks like success. Reported under T12 (a failure
//! nobody sees the cause of).

use super::super::model::Script;
use super::super::Finding;
use super::{snippet, starts_load, starts_server, tool};
use inferlint_core::result::{Status, Tripwire};

const FIX: &str = "put 'set -o pipefail' near the top of the script, or write the log with a \
                   redirection (> server.log 2>&1) instead of a pipe; 'inferlint run' keeps the \
                   boot log itself and reports how the server ended";

/// The shell process a unit's commands run in: options like pipefail belong to it.
fn shell_of(s: &Script, mut unit: usize) -> usize {
    while !s.units[unit].own_shell {
        match s.units[unit].parent {
            Some(p) => unit = p,
            None => break,
        }
    }
    unit
}

/// Whether `set -o pipefail` is on at `offset` in the shell of `unit` (textual order).
fn pipefail_at(s: &Script, unit: usize, offset: usize) -> bool {
    let shell = shell_of(s, unit);
    let mut on = false;
    let mut sets: Vec<_> = s
        .cmds
        .iter()
        .filter(|c| c.pos.offset < offset && shell_of(s, c.unit) == shell)
        .filter(|c| matches!(tool(s, c).as_deref(), Some("set" | "shopt")))
        .collect();
    sets.sort_by_key(|c| c.pos.offset);
    for c in sets {
        let argv = s.argv(c);
        for (k, w) in argv.iter().enumerate() {
            if w != "pipefail" || k == 0 {
                continue;
            }
            let prev = &argv[k - 1];
            // `-o pipefail`, `-euo pipefail`, `shopt -so pipefail`; `+o` turns it off.
            if prev.starts_with('-') && prev.ends_with('o') {
                on = true;
            } else if prev.starts_with('+') && prev.ends_with('o') {
                on = false;
            }
        }
    }
    on
}

pub fn check(s: &Script) -> Vec<Finding> {
    let mut out = Vec::new();
    for (p, pl) in s.pipelines.iter().enumerate() {
        if pl.elements < 2 {
            continue;
        }
        let starter = s.cmds.iter().find(|c| {
            c.pipeline
                .is_some_and(|(pp, k)| pp == p && k + 1 < pl.elements)
                && (starts_server(s, c).is_some() || starts_load(s, c))
        });
        let Some(c) = starter else { continue };
        if pipefail_at(s, pl.unit, pl.pos.offset) {
            continue;
        }
        let last = s
            .cmds
            .iter()
            .filter(|x| {
                x.pipeline
                    .is_some_and(|(pp, k)| pp == p && k + 1 == pl.elements)
            })
            .find_map(|x| tool(s, x))
            .unwrap_or_else(|| "the last command".to_string());
        let what = match starts_server(s, c) {
            Some(e) => format!("the {} server", e.name()),
            None => "the load".to_string(),
        };
        let problem = format!(
            "without 'set -o pipefail' this pipeline ends with the status of '{last}', not of \
             {what}: if it fails, $? and wait report {last}'s 0 and the failure goes unseen"
        );
        out.push(Finding::new(
            Tripwire::T12,
            Status::Warn,
            "tee-without-pipefail",
            pl.pos,
            snippet(s, pl.pos, &pl.text),
            problem,
            FIX.to_string(),
        ));
    }
    out
}
