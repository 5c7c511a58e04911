//! The verdicts of `lint-script`: a campaign script's findings (the rules live in the
//! lintscript crate, which reads the script's structure) turned into results under the tripwire
//! whose damage each one causes, and the PASS line of a tripwire with no finding.

use crate::evidence::ScriptEvidence;
use crate::result::{CheckResult, Status, Tripwire};

/// One finding of a script rule, as the rule reports it.
#[derive(Clone, Copy, Debug)]
pub struct ScriptFinding<'a> {
    pub tripwire: Tripwire,
    pub status: Status,
    /// The rule's name (`self-kill`, `stale-waiter`, ...).
    pub rule: &'a str,
    /// Where it is (1-based).
    pub line: usize,
    pub column: usize,
    /// The script's text there.
    pub snippet: &'a str,
    /// What goes wrong.
    pub problem: &'a str,
    /// How to fix it.
    pub fix: &'a str,
}

/// What each tripwire's PASS line says was checked.
const CHECKED: [(Tripwire, &str); 6] = [
    (
        Tripwire::T2,
        "no cleanup that finds the server by name or kills only $! (or an srun's pid), no \
         ray start without --block under srun, no data-parallel vLLM without a cleanup of \
         /dev/shm/vllm-*",
    ),
    (
        Tripwire::T3,
        "no pkill -f/pgrep -f/killall pattern that matches the script's own shell",
    ),
    (
        Tripwire::T10,
        "no duration from whole-second date +%s stamps",
    ),
    (
        Tripwire::T12,
        "no server or load piped into tee without set -o pipefail",
    ),
    (
        Tripwire::T13,
        "no readiness wait that takes any server on a fixed port, and no sleep as the wait",
    ),
    (
        Tripwire::T16,
        "no random-dataset load repeated with one --seed against a warm server",
    ),
];

/// A finding's verdict: message `FILE:LINE: PROBLEM; fix: FIX`, evidence `file`, `line`,
/// `column`, `snippet`, `rule`, `fix`.
pub fn finding(file: &str, f: &ScriptFinding<'_>) -> CheckResult {
    CheckResult::new(
        f.tripwire,
        f.status,
        format!("{file}:{}: {}; fix: {}", f.line, f.problem, f.fix),
    )
    .with_evidence(ScriptEvidence {
        file: Some(file.to_string()),
        line: Some(f.line as u64),
        column: Some(f.column as u64),
        snippet: Some(f.snippet.to_string()),
        rule: Some(f.rule.to_string()),
        fix: Some(f.fix.to_string()),
    })
}

/// The PASS line of a checked tripwire with no finding in `file`: `FILE: what was checked`.
pub fn clean(file: &str, t: Tripwire) -> CheckResult {
    let what = CHECKED
        .iter()
        .find(|(c, _)| *c == t)
        .map_or("checked", |(_, w)| w);
    CheckResult::pass(t, format!("{file}: {what}")).with_evidence(ScriptEvidence {
        file: Some(file.to_string()),
        ..Default::default()
    })
}
