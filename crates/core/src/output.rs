//! What the verdict-printing commands print: verdict lines, the `--json` array, the counts line
//! and the exit status (docs/design/formats.md#exit-status).

use std::io::{self, Write};

use serde::Serialize;

use crate::result::{CheckResult, Status};

/// JSON indented by one space per level, as every inferlint JSON file and `--json` output is.
#[allow(
    clippy::expect_used,
    reason = "the library's types serialize to memory without error, and serde_json writes UTF-8"
)]
pub fn to_json_string<T: Serialize + ?Sized>(value: &T) -> String {
    let mut buf = Vec::new();
    let fmt = serde_json::ser::PrettyFormatter::with_indent(b" ");
    let mut ser = serde_json::Serializer::with_formatter(&mut buf, fmt);
    value
        .serialize(&mut ser)
        .expect("serializing to memory cannot fail");
    String::from_utf8(buf).expect("serde_json writes UTF-8")
}

/// Prints results as verdict lines, or as one JSON array with `json`.
pub fn print_results(out: &mut dyn Write, results: &[CheckResult], json: bool) -> io::Result<()> {
    if json {
        writeln!(out, "{}", to_json_string(results))
    } else {
        for r in results {
            writeln!(out, "{}", r.line())?;
        }
        Ok(())
    }
}

/// 1 if any FAIL (or WARN under `strict`); else 2 if any UNKNOWN; else 0. N/A never counts.
pub fn exit_code(results: &[CheckResult], strict: bool) -> i32 {
    let has = |s: Status| results.iter().any(|r| r.status == s);
    if has(Status::Fail) || (strict && has(Status::Warn)) {
        1
    } else if has(Status::Unknown) {
        2
    } else {
        0
    }
}

/// A run's exit status (docs/design/run.md#exit-code): 130 if interrupted; 1 if there was a
/// problem or the load exited non-zero; else the results' own status ([`exit_code`]).
pub fn run_exit_code(
    results: &[CheckResult],
    strict: bool,
    interrupted: bool,
    problem: bool,
    load_exit: Option<i32>,
) -> i32 {
    if interrupted {
        130
    } else if problem || load_exit.is_some_and(|c| c != 0) {
        1
    } else {
        exit_code(results, strict)
    }
}

/// `12 checks (8 pass, 2 warn, 2 tripwire-failed)`; N/A results are left out of the count and
/// appended as `; 1 does not apply`.
pub fn counts_line(results: &[CheckResult]) -> String {
    let count = |s: Status| results.iter().filter(|r| r.status == s).count();
    let parts: Vec<String> = [
        (Status::Pass, "pass"),
        (Status::Warn, "warn"),
        (Status::Fail, "tripwire-failed"),
        (Status::Unknown, "unknown"),
    ]
    .iter()
    .filter_map(|&(s, word)| {
        let n = count(s);
        (n > 0).then(|| format!("{n} {word}"))
    })
    .collect();
    let na = count(Status::NotApplicable);
    let n = results.len() - na;
    let mut line = if parts.is_empty() {
        format!("{n} checks")
    } else {
        format!("{n} checks ({})", parts.join(", "))
    };
    match na {
        0 => {}
        1 => line.push_str("; 1 does not apply"),
        k => line.push_str(&format!("; {k} do not apply")),
    }
    line
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::result::Tripwire;

    fn r(s: Status) -> CheckResult {
        CheckResult::new(Tripwire::T1, s, "m")
    }

    #[test]
    fn exit_codes() {
        assert_eq!(exit_code(&[r(Status::Pass)], false), 0);
        assert_eq!(exit_code(&[r(Status::Pass), r(Status::Unknown)], false), 2);
        assert_eq!(exit_code(&[r(Status::Unknown), r(Status::Fail)], false), 1);
        assert_eq!(exit_code(&[r(Status::Warn)], false), 0);
        assert_eq!(exit_code(&[r(Status::Warn)], true), 1);
        assert_eq!(exit_code(&[r(Status::NotApplicable)], true), 0);
        assert_eq!(exit_code(&[], false), 0);
    }

    #[test]
    fn counts() {
        let mut v: Vec<CheckResult> = (0..8).map(|_| r(Status::Pass)).collect();
        v.extend((0..2).map(|_| r(Status::Warn)));
        v.extend((0..2).map(|_| r(Status::Fail)));
        assert_eq!(
            counts_line(&v),
            "12 checks (8 pass, 2 warn, 2 tripwire-failed)"
        );
        v.push(r(Status::NotApplicable));
        assert_eq!(
            counts_line(&v),
            "12 checks (8 pass, 2 warn, 2 tripwire-failed); 1 does not apply"
        );
        v.push(r(Status::NotApplicable));
        v.push(r(Status::Unknown));
        assert_eq!(
            counts_line(&v),
            "13 checks (8 pass, 2 warn, 2 tripwire-failed, 1 unknown); 2 do not apply"
        );
    }

    #[test]
    fn json_is_indented_by_one_space() {
        let res =
            vec![
                CheckResult::fail(Tripwire::T8, "m").with_evidence(crate::evidence::T8Evidence {
                    requested: Some(32),
                    ..Default::default()
                }),
            ];
        let s = to_json_string(&res);
        assert_eq!(
            s,
            "[\n {\n  \"tripwire\": \"T8\",\n  \"status\": \"fail\",\n  \"message\": \"m\",\n  \"evidence\": {\n   \"requested\": 32\n  }\n }\n]"
        );
    }
}
