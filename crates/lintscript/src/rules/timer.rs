//! T10: a duration computed from whole-second stamps (`date +%s`, `$SECONDS`), off by up to
//! ±1 s at each end.

use std::collections::BTreeSet;

use std::sync::LazyLock;

use regex::Regex;

use super::super::model::{Operand, Pos, Script};
use super::super::Finding;
use super::{snippet, tool};
use inferlint_core::result::{Status, Tripwire};

const PROBLEM: &str = "a duration from whole-second stamps (date +%s, $SECONDS) is off by up \
                       to ±1 s at each end: ±3.5 % on a 29 s run, and tokens/s inherit the error";
const FIX: &str = "stamp with date +%s.%N (or $EPOCHREALTIME) and subtract with awk or bc; \
                   better: 'inferlint run' (or 'inferlint rate before.json after.json') times the \
                   run from the server's counters on a monotonic clock";

pub fn check(s: &Script) -> Vec<Finding> {
    let whole = |o: &Operand| match o {
        Operand::DateSeconds => true,
        Operand::Var(v) => s.vars.holds_whole_seconds(v),
        Operand::Other => false,
    };
    let mut lines = BTreeSet::new();
    let mut out = Vec::new();
    let mut push = |pos: Pos, out: &mut Vec<Finding>| {
        if lines.insert(pos.line) {
            out.push(Finding::new(
                Tripwire::T10,
                Status::Warn,
                "integer-second-timer",
                pos,
                snippet(s, pos, ""),
                PROBLEM.to_string(),
                FIX.to_string(),
            ));
        }
    };
    for sub in &s.subtractions {
        if whole(&sub.left) || whole(&sub.right) {
            push(sub.pos, &mut out);
        }
    }
    // `let "d = end - start"`, `expr $end - $start`, `echo "$end - $start" | bc`.
    #[allow(clippy::expect_used, reason = "a constant pattern, tested")]
    static DIFFERENCE: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(r"\$?\{?([A-Za-z_][A-Za-z0-9_]*)\}?\s*-\s*\$?\{?([A-Za-z_][A-Za-z0-9_]*)\}?")
            .expect("valid regex")
    });
    let re = &*DIFFERENCE;
    for c in &s.cmds {
        let name = tool(s, c);
        let piped_to_calc = c.pipeline.is_some_and(|(p, k)| {
            s.cmds.iter().any(|o| {
                o.pipeline == Some((p, k + 1))
                    && matches!(
                        tool(s, o).as_deref(),
                        Some("bc" | "awk" | "python" | "python3")
                    )
            })
        });
        if !matches!(name.as_deref(), Some("let" | "expr")) && !piped_to_calc {
            continue;
        }
        let text: String = c
            .words
            .iter()
            .skip(1)
            .map(|w| w.raw.as_str())
            .collect::<Vec<_>>()
            .join(" ");
        let hit = re
            .captures_iter(&text)
            .any(|cap| s.vars.holds_whole_seconds(&cap[1]) || s.vars.holds_whole_seconds(&cap[2]))
            || c.words.iter().any(|w| w.has_date_seconds()) && text.contains(" - ");
        if hit {
            push(c.pos, &mut out);
        }
    }
    out.sort_by_key(|f| f.pos);
    out
}
