//! T16: the same random prompts sent again to a server that keeps its prefix cache — a load of a
//! random dataset repeated with one `--seed` (a loop, or two runs in a row, the default seed
//! included) while nothing between them restarts the server or resets its cache.

use std::collections::BTreeSet;

use inferlint_core::argv::flag_value;
use inferlint_core::load::{intent, LoadTool, Prompts};
use inferlint_core::result::{Status, Tripwire};

use super::super::model::{Cmd, Script};
use super::super::Finding;
use super::{snippet, starts_load, starts_server};

/// The fix points to `run --sweep` first: it runs the points against one server, resets the
/// cache between them and checks the reset took (docs/design/sweeps.md), which a hand-written
/// loop does not.
const FIX: &str = "run the points with 'inferlint run --sweep OPTION=V1,V2,... -- LOAD' (one \
                   server, the cache reset between points and the reset checked, each point \
                   judged), or give each run its own --seed, reset the cache between runs \
                   (curl -X POST $URL/reset_prefix_cache, and check its success), restart the \
                   server, or start it with --no-enable-prefix-caching";

/// The seed a load uses: its `--seed`, else its client's default (vLLM's and TensorRT-LLM's
/// 0, SGLang's 1); None when it is a shell expansion, which may differ from run to run.
fn seed(argv: &[String], tool: LoadTool) -> Option<String> {
    match flag_value(argv, "--seed") {
        Some(v) if v.contains('$') || v.contains('`') => None,
        Some(v) => Some(v),
        None => Some(
            if tool == LoadTool::SglangBench {
                "1"
            } else {
                "0"
            }
            .to_string(),
        ),
    }
}

/// A command that gives the next load a cold cache: a server started, or its cache reset.
fn cools(s: &Script, c: &Cmd) -> bool {
    starts_server(s, c).is_some() || s.argv(c).iter().any(|w| w.contains("reset_prefix_cache"))
}

pub fn check(s: &Script) -> Vec<Finding> {
    let no_cache = s
        .cmds
        .iter()
        .any(|c| s.argv(c).iter().any(|w| w == "--no-enable-prefix-caching"));
    if no_cache {
        return Vec::new();
    }
    // Loads of fresh (random or synthetic) prompts with a seed that stays the same.
    let loads: Vec<(&Cmd, String)> = s
        .cmds
        .iter()
        .filter(|c| starts_load(s, c))
        .filter_map(|c| {
            let i = intent(s.argv(c));
            if i.prompts != Prompts::Fresh {
                return None;
            }
            Some((c, seed(s.argv(c), i.tool?)?))
        })
        .collect();
    let coolers: Vec<&Cmd> = s.cmds.iter().filter(|c| cools(s, c)).collect();
    let cooled_between = |from: usize, to: usize| {
        coolers
            .iter()
            .any(|c| c.pos.offset >= from && c.pos.offset < to)
    };
    let mut lines = BTreeSet::new();
    let mut out = Vec::new();
    let mut push = |c: &Cmd, seed: &str, how: &str, out: &mut Vec<Finding>| {
        if lines.insert(c.pos.line) {
            out.push(Finding::new(
                Tripwire::T16,
                Status::Warn,
                "seed-reuse",
                c.pos,
                snippet(s, c.pos, &c.text),
                format!(
                    "{how} sends the same random prompts (--seed {seed}) to a server that keeps its prefix cache: from the second run on, prompt tokens come from the cache, so TTFT and throughput are those of prompts it has seen (fixed-seed re-runs measured up to 86% faster)"
                ),
                FIX.to_string(),
            ));
        }
    };
    for (c, seed) in &loads {
        // A loop repeats the load; a server started or a reset inside the loop cools each pass.
        let repeated = c
            .loops
            .iter()
            .filter_map(|&l| s.loops.get(l))
            .any(|l| !coolers.iter().any(|k| l.range.contains(&k.pos.offset)));
        if repeated {
            push(c, seed, "this load runs in a loop and", &mut out);
        }
    }
    for pair in loads.windows(2) {
        let ((a, sa), (b, sb)) = (&pair[0], &pair[1]);
        if sa == sb && !cooled_between(a.end, b.pos.offset) {
            push(b, sb, "this load repeats an earlier one and", &mut out);
        }
    }
    out.sort_by_key(|f| f.pos);
    out
}
