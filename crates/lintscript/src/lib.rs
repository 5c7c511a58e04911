//! `lint-script`: reads the shell scripts that drive benchmark campaigns and reports the traps
//! that silently spoil them, each with its file, line and fix.
//!
//! Scripts are parsed with tree-sitter-bash ([`model`]), never matched line by line; strings run
//! by a shell (`bash -c '…'`, trap handlers, `ssh host '…'`) are parsed as code too. The rules
//! ([`rules`]) report under the tripwire whose damage they cause:
//!
//! | tripwire | rule | status |
//! |---|---|---|
//! | T2 | a cleanup that finds the server by name (misses `VLLM::EngineCore`) or kills only `$!` | FAIL |
//! | T2 | `ray start` without `--block` under `srun`; `kill` of an `srun`'s pid | FAIL |
//! | T2 | a data-parallel or multi-node vLLM with no cleanup of `/dev/shm/vllm-*` | WARN |
//! | T3 | a `pkill -f`/`pgrep -f`/`killall` pattern that also matches the script's own shell | FAIL |
//! | T10 | a duration from `date +%s` (or `$SECONDS`) differences | WARN |
//! | T12 | a server or load piped into `tee` without `set -o pipefail` | WARN |
//! | T13 | a readiness loop on a fixed port with a killing `trap … EXIT`, not checking the server is its own | FAIL |
//! | T13 | `sleep N` as the only wait after starting a server | WARN |
#![expect(
    missing_docs,
    reason = "117 public items (mostly struct fields and variants) were undocumented when the workspace turned missing_docs on; document them, then drop this"
)]
#![forbid(unsafe_code)]
// No unwrap or expect on what the inputs hold: bad input is an error naming the file and line,
// never a panic. Where an invariant makes one safe, the site allows it and says why.
#![cfg_attr(not(test), warn(clippy::unwrap_used, clippy::expect_used))]

pub mod argv;
pub mod killer;
pub mod model;
pub mod procs;
mod rules;
pub mod word;

use std::path::Path;

use inferlint_core::checks::script::{self, ScriptFinding};
use inferlint_core::result::{CheckResult, Status, Tripwire};
use model::{Pos, Script};

/// The tripwires `lint-script` checks, in the order it prints them.
pub const CHECKED: [Tripwire; 6] = [
    Tripwire::T2,
    Tripwire::T3,
    Tripwire::T10,
    Tripwire::T12,
    Tripwire::T13,
    Tripwire::T16,
];

/// One trap found in a script.
#[derive(Debug, Clone, PartialEq)]
pub struct Finding {
    pub tripwire: Tripwire,
    pub status: Status,
    /// A short name of the rule (`self-kill`, `stale-waiter`…), stable for scripts.
    pub rule: &'static str,
    pub pos: Pos,
    /// The line (or command) the finding is about.
    pub snippet: String,
    /// What goes wrong.
    pub problem: String,
    /// How to fix it.
    pub fix: String,
}

impl Finding {
    pub fn new(
        tripwire: Tripwire,
        status: Status,
        rule: &'static str,
        pos: Pos,
        snippet: String,
        problem: String,
        fix: String,
    ) -> Finding {
        Finding {
            tripwire,
            status,
            rule,
            pos,
            snippet,
            problem,
            fix,
        }
    }

    /// The verdict for this finding (core's [`script::finding`]).
    pub fn result(&self, file: &str) -> CheckResult {
        script::finding(
            file,
            &ScriptFinding {
                tripwire: self.tripwire,
                status: self.status,
                rule: self.rule,
                line: self.pos.line,
                column: self.pos.column,
                snippet: &self.snippet,
                problem: &self.problem,
                fix: &self.fix,
            },
        )
    }
}

/// Why a file could not be checked. Each names the file (and the line when there is one).
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum LintError {
    #[error("{file}: {reason}")]
    Unreadable { file: String, reason: String },
    #[error("{file}:{line}: binary data (a NUL byte), not a shell script")]
    Binary { file: String, line: usize },
    #[error("{file}:{line}: not UTF-8 text, not a shell script")]
    NotText { file: String, line: usize },
    #[error("{file}: no shell commands in it (empty, or only comments)")]
    Empty { file: String },
    #[error("{file}:{line}:{column}: bash syntax the parser cannot read: {snippet}")]
    Syntax {
        file: String,
        line: usize,
        column: usize,
        snippet: String,
    },
}

/// The line (1-based) holding byte `at`.
fn line_of(bytes: &[u8], at: usize) -> usize {
    bytes[..at].iter().filter(|&&b| b == b'\n').count() + 1
}

/// Checks a script given as bytes; `file` names it in messages (and its base name is what the
/// script's own command line contains).
pub fn lint_bytes(bytes: &[u8], file: &str) -> Result<Vec<Finding>, LintError> {
    if let Some(at) = bytes.iter().position(|&b| b == 0) {
        return Err(LintError::Binary {
            file: file.to_string(),
            line: line_of(bytes, at),
        });
    }
    let text = std::str::from_utf8(bytes).map_err(|e| LintError::NotText {
        file: file.to_string(),
        line: line_of(bytes, e.valid_up_to()),
    })?;
    lint_source(text, file)
}

pub fn lint_source(text: &str, file: &str) -> Result<Vec<Finding>, LintError> {
    let script = Script::parse(text).map_err(|e| LintError::Syntax {
        file: file.to_string(),
        line: e.line,
        column: e.column,
        snippet: e.snippet,
    })?;
    if script.cmds.is_empty() && script.assigns.is_empty() {
        return Err(LintError::Empty {
            file: file.to_string(),
        });
    }
    let mut findings = rules::check(&script, file);
    findings.sort_by_key(|f| {
        (
            CHECKED.iter().position(|t| *t == f.tripwire),
            f.pos.offset,
            f.rule,
        )
    });
    findings.dedup_by(|a, b| a.tripwire == b.tripwire && a.pos == b.pos && a.rule == b.rule);
    Ok(findings)
}

pub fn lint_file(path: &Path) -> Result<Vec<Finding>, LintError> {
    let file = path.display().to_string();
    let bytes = std::fs::read(path).map_err(|e| LintError::Unreadable {
        file: file.clone(),
        reason: if path.is_dir() {
            "a folder, not a shell script".to_string()
        } else {
            e.to_string()
        },
    })?;
    lint_bytes(&bytes, &file)
}

/// The verdicts for one file: its findings in tripwire order, and a PASS line (`FILE: what was
/// checked`) for each checked tripwire without a finding.
pub fn results(file: &str, findings: &[Finding]) -> Vec<CheckResult> {
    let mut out = Vec::new();
    for t in CHECKED {
        let mine: Vec<&Finding> = findings.iter().filter(|f| f.tripwire == t).collect();
        if mine.is_empty() {
            out.push(script::clean(file, t));
        } else {
            out.extend(mine.iter().map(|f| f.result(file)));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_finding_is_one_greppable_line() {
        let f = Finding::new(
            Tripwire::T3,
            Status::Fail,
            "self-kill",
            Pos {
                offset: 0,
                line: 7,
                column: 3,
            },
            "pkill -f x".into(),
            "it kills itself".into(),
            "don't".into(),
        );
        let r = f.result("run.sh");
        assert_eq!(
            r.line(),
            "[ T3] TRIPWIRE-FAILED  run.sh:7: it kills itself; fix: don't"
        );
        assert_eq!(r.evidence_json()["line"], 7);
        assert_eq!(r.evidence_json()["column"], 3);
        assert_eq!(r.evidence_json()["snippet"], "pkill -f x");
    }

    #[test]
    fn bad_input_names_file_and_line() {
        assert_eq!(
            lint_bytes(b"echo a\necho \x00b\n", "x.sh"),
            Err(LintError::Binary {
                file: "x.sh".into(),
                line: 2
            })
        );
        assert_eq!(
            lint_bytes(b"echo a\n\necho \xff\n", "x.sh"),
            Err(LintError::NotText {
                file: "x.sh".into(),
                line: 3
            })
        );
        assert!(matches!(
            lint_bytes(b"# only a comment\n\n", "x.sh"),
            Err(LintError::Empty { .. })
        ));
        assert!(matches!(
            lint_bytes(b"", "x.sh"),
            Err(LintError::Empty { .. })
        ));
        let e = lint_bytes(b"echo ok\nfi fi ((( }\n", "x.sh").unwrap_err();
        assert!(e.to_string().starts_with("x.sh:2:"), "{e}");
    }

    #[test]
    fn clean_script_gets_a_pass_per_tripwire() {
        let f = lint_source("echo hello\n", "ok.sh").unwrap();
        let r = results("ok.sh", &f);
        assert_eq!(r.len(), CHECKED.len());
        assert!(r.iter().all(|x| x.status == Status::Pass));
        assert_eq!(
            r[1].line(),
            "[ T3] PASS  ok.sh: no pkill -f/pgrep -f/killall pattern that matches the script's own shell"
        );
    }
}
