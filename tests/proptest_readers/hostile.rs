//! The hostile-byte corpus (docs/design/formats.md#hostile-bytes): real recorded files with one
//! hostile piece put in — Unicode whitespace that `str::trim` takes and JSON does not (U+000C,
//! U+00A0, U+2028, U+FEFF), at the file's start, a line's start or alone on a line; CRLF line
//! ends; NUL; a number replaced by NaN, Infinity, 1e999, -0 or a 20-digit integer; nesting 100,000
//! deep; the text cut anywhere; a 100 MB line. Every reader takes each one to a value or an error
//! that names its file, never a panic, and every command that reads a file exits 0, 1 or 2, never
//! 101, naming the file when it exits 2.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::proptest_support;
use crate::run_support::bin;
use inferlint_core::bench::BenchResult;
use inferlint_core::bootlog;
use inferlint_core::prom::Metrics;
use inferlint_core::series::Series;
use inferlint_core::snapshot::Snapshot;
use proptest::prelude::*;

/// Pieces that readers have mistaken for whitespace or for numbers.
const PIECES: &[&str] = &[
    "\u{000C}",
    "\u{00A0}",
    "\u{2028}",
    "\u{FEFF}",
    "\0",
    "\r",
    "\u{000C}{}",
    "\u{00A0}{}",
    "{}",
    "[]",
    "\"\\ud800\"",
    "\u{FFFD}",
];

/// Numbers a JSON or Prometheus reader can overflow, round or refuse.
const NUMBERS: &[&str] = &[
    "NaN",
    "Infinity",
    "-Infinity",
    "+Inf",
    "1e999",
    "-1e999",
    "1e-999",
    "-0",
    "-0.0",
    "12345678901234567890",
    "-12345678901234567890",
    "123456789012345678901234567890",
];

/// One hostile change to a text.
#[derive(Clone, Debug)]
enum Mutation {
    /// The piece at the very start of the file.
    AtStart(usize),
    /// The piece at the start of line `n` (modulo the line count).
    LineStart(usize, usize),
    /// The piece as a line of its own after line `n`.
    OwnLine(usize, usize),
    /// Every `\n` as `\r\n`.
    Crlf,
    /// The `n`-th number of the text replaced by a hostile one.
    Number(usize, usize),
    /// The whole text inside 100,000 levels of `[`.
    DeepNesting,
    /// The text cut after `n` bytes (modulo its length, on a character boundary).
    Cut(usize),
}

impl Mutation {
    fn apply(&self, text: &str) -> String {
        let lines: Vec<&str> = text.split_inclusive('\n').collect();
        let nth = |n: usize| n % lines.len().max(1);
        match *self {
            Mutation::AtStart(p) => format!("{}{text}", PIECES[p % PIECES.len()]),
            Mutation::LineStart(n, p) => {
                let mut v: Vec<String> = lines.iter().map(|l| l.to_string()).collect();
                if let Some(l) = v.get_mut(nth(n)) {
                    l.insert_str(0, PIECES[p % PIECES.len()]);
                }
                v.concat()
            }
            Mutation::OwnLine(n, p) => {
                let mut v: Vec<String> = lines.iter().map(|l| l.to_string()).collect();
                let at = (nth(n) + 1).min(v.len());
                v.insert(at, format!("{}\n", PIECES[p % PIECES.len()]));
                v.concat()
            }
            Mutation::Crlf => text.replace('\n', "\r\n"),
            Mutation::Number(n, k) => {
                let re = regex::Regex::new(r"-?\d+(\.\d+)?([eE][-+]?\d+)?").unwrap();
                let found: Vec<_> = re.find_iter(text).collect();
                if found.is_empty() {
                    return text.to_string();
                }
                let m = found[n % found.len()];
                format!(
                    "{}{}{}",
                    &text[..m.start()],
                    NUMBERS[k % NUMBERS.len()],
                    &text[m.end()..]
                )
            }
            Mutation::DeepNesting => {
                let depth = 100_000;
                format!("{}{text}{}", "[".repeat(depth), "]".repeat(depth))
            }
            Mutation::Cut(n) => {
                let mut at = n % text.len().max(1);
                while !text.is_char_boundary(at) {
                    at -= 1;
                }
                text[..at].to_string()
            }
        }
    }
}

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        any::<usize>().prop_map(Mutation::AtStart),
        (any::<usize>(), any::<usize>()).prop_map(|(n, p)| Mutation::LineStart(n, p)),
        (any::<usize>(), any::<usize>()).prop_map(|(n, p)| Mutation::OwnLine(n, p)),
        Just(Mutation::Crlf),
        (any::<usize>(), any::<usize>()).prop_map(|(n, k)| Mutation::Number(n, k)),
        Just(Mutation::DeepNesting),
        any::<usize>().prop_map(Mutation::Cut),
    ]
}

/// The fixed mutations the commands are run on: each piece at the start and on a line of its
/// own, CRLF, each hostile number in place of the first and a later number, deep nesting and a
/// cut in the middle.
fn every_mutation() -> Vec<Mutation> {
    let mut v = Vec::new();
    for p in 0..PIECES.len() {
        v.push(Mutation::AtStart(p));
        v.push(Mutation::OwnLine(0, p));
        v.push(Mutation::LineStart(3, p));
    }
    v.push(Mutation::Crlf);
    for k in 0..NUMBERS.len() {
        v.push(Mutation::Number(0, k));
        v.push(Mutation::Number(7, k));
    }
    v.push(Mutation::DeepNesting);
    v.push(Mutation::Cut(usize::MAX / 2 + 12_345));
    v
}

fn fixture(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(rel)
}

fn read(rel: &str) -> String {
    let p = fixture(rel);
    std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

/// A reader over a text: Ok(()) when it read a value, Err(message) when it refused the text.
type Reader = fn(&str) -> Result<(), String>;

const SOURCE: &str = "hostile-input";

fn bench_reader(t: &str) -> Result<(), String> {
    BenchResult::from_text(t, SOURCE)
        .map(|_| ())
        .map_err(|e| e.to_string())
}
fn snapshot_reader(t: &str) -> Result<(), String> {
    Snapshot::from_text(t, SOURCE)
        .map(|_| ())
        .map_err(|e| e.to_string())
}
fn series_reader(t: &str) -> Result<(), String> {
    Series::from_text(t, SOURCE)
        .map(|_| ())
        .map_err(|e| e.to_string())
}
fn prom_reader(t: &str) -> Result<(), String> {
    // The parser's errors name a line of the text; the snapshot reader puts the file in front.
    Metrics::parse(t)
        .map(|_| ())
        .map_err(|e| format!("{SOURCE}: {e}"))
}
fn bootlog_reader(t: &str) -> Result<(), String> {
    let facts = bootlog::parse_text(t, None);
    let _ = inferlint_core::checks::t12::check(t, &facts);
    Ok(())
}
fn script_reader(t: &str) -> Result<(), String> {
    inferlint_lintscript::lint_source(t, SOURCE)
        .map(|_| ())
        .map_err(|e| e.to_string())
}

/// Each reader and the recorded file it starts from.
const READERS: &[(&str, Reader, &str)] = &[
    ("bench", bench_reader, "vllm-0.28/xray/bench.json"),
    (
        "bench-jsonl",
        bench_reader,
        "vllm-0.32-cpu/bench-serve-result.json",
    ),
    (
        "snapshot",
        snapshot_reader,
        "vllm-0.28/xray/before.snapshot.json",
    ),
    (
        "snapshot-prom",
        snapshot_reader,
        "vllm-0.32-cpu/metrics.prom",
    ),
    (
        "prom",
        prom_reader,
        "vllm-0.32-cpu/metrics-after-bench.prom",
    ),
    ("series", series_reader, "vllm-0.28/xray/run.series.jsonl"),
    ("bootlog", bootlog_reader, "vllm-0.32-cpu/boot.log"),
    (
        "script",
        script_reader,
        "../../examples/campaigns/good-campaign.sh",
    ),
];

/// Runs `reader` on `text`: a panic is a failure naming the reader and the mutation.
fn never_panics(name: &str, reader: Reader, text: &str, m: &Mutation) -> Result<(), TestCaseError> {
    match catch_unwind(AssertUnwindSafe(|| reader(text))) {
        Ok(Ok(())) => Ok(()),
        Ok(Err(msg)) => {
            prop_assert!(
                msg.contains(SOURCE),
                "{name} on {m:?}: the error does not name its input: {msg}"
            );
            Ok(())
        }
        Err(_) => Err(TestCaseError::fail(format!("{name} panicked on {m:?}"))),
    }
}

proptest! {
    #![proptest_config(proptest_support::config(64, "tests/proptest-regressions/hostile_bytes.txt"))]

    /// Every reader, on every recorded base file, with a random hostile change.
    #[test]
    fn every_reader_is_total_on_hostile_bytes(which in 0..READERS.len(), m in mutation()) {
        let (name, reader, rel) = READERS[which];
        let text = m.apply(&read(rel));
        never_panics(name, reader, &text, &m)?;
    }
}

/// Every fixed mutation through every reader (the corpus the commands below also read).
#[test]
fn every_reader_takes_the_whole_corpus() {
    for (name, reader, rel) in READERS {
        let base = read(rel);
        for m in every_mutation() {
            never_panics(name, *reader, &m.apply(&base), &m).unwrap();
        }
    }
}

/// The issue's example: `{}` then a line of only a form feed, or a no-break space before `{}`,
/// is one JSON document to a reader that trims as JSON does, never a panic.
#[test]
fn a_result_of_braces_and_unicode_whitespace_is_read_or_refused() {
    for text in [
        "{}\n\u{000C}\n",
        "\u{00A0}{}\n",
        "{}\n\u{2028}\n{}",
        "\u{FEFF}{}\n{}\n",
    ] {
        let r = catch_unwind(|| BenchResult::from_text(text, SOURCE));
        assert!(r.is_ok(), "panicked on {text:?}");
    }
}

/// A 100 MB line in each reader's format: read or refused, never a panic, in bounded memory.
#[test]
fn a_100_mb_line_is_read_or_refused() {
    let big = "x".repeat(100 << 20);
    let cases: Vec<(&str, Reader, String)> = vec![
        ("bench", bench_reader, format!("{{\"model\": \"{big}\"}}\n")),
        (
            "series",
            series_reader,
            format!("{{\"schema\": \"{big}\"}}\n"),
        ),
        (
            "snapshot",
            snapshot_reader,
            format!("vllm:x{{a=\"{big}\"}} 1\n"),
        ),
        ("prom", prom_reader, format!("# HELP x {big}\nx 1\n")),
        ("bootlog", bootlog_reader, format!("INFO {big}\n")),
    ];
    for (name, reader, text) in cases {
        never_panics(name, reader, &text, &Mutation::AtStart(0)).unwrap();
    }
}

/// A command and the file of it that is made hostile.
struct Case {
    /// Its arguments; `{}` is the hostile file, `{dir}` the run folder copied around it.
    args: &'static [&'static str],
    /// The recorded file the hostile one starts from, and its name in the run folder.
    base: &'static str,
    name: &'static str,
}

const CASES: &[Case] = &[
    Case {
        args: &["report", "{dir}", "-o", "{dir}/r.html"],
        base: "vllm-0.28/xray/bench.json",
        name: "bench.json",
    },
    Case {
        args: &["report", "{dir}", "-o", "{dir}/r.html"],
        base: "vllm-0.28/xray/run.series.jsonl",
        name: "run.series.jsonl",
    },
    Case {
        args: &["report", "{dir}", "-o", "{dir}/r.html"],
        base: "vllm-0.28/xray/after.snapshot.json",
        name: "after.snapshot.json",
    },
    Case {
        args: &[
            "window",
            "{dir}/before.snapshot.json",
            "{}",
            "--bench-result",
            "{dir}/bench.json",
        ],
        base: "vllm-0.28/xray/after.snapshot.json",
        name: "after.snapshot.json",
    },
    Case {
        args: &[
            "window",
            "{dir}/before.snapshot.json",
            "{dir}/after.snapshot.json",
            "--bench-result",
            "{}",
        ],
        base: "vllm-0.28/xray/bench.json",
        name: "bench.json",
    },
    Case {
        args: &["preemption", "{}", "{dir}/after.snapshot.json"],
        base: "vllm-0.28/xray/before.snapshot.json",
        name: "before.snapshot.json",
    },
    Case {
        args: &["rate", "{dir}/before.snapshot.json", "{}"],
        base: "vllm-0.32-cpu/metrics-after-bench.prom",
        name: "after.prom",
    },
    Case {
        args: &["series", "{}"],
        base: "vllm-0.28/xray/run.series.jsonl",
        name: "run.series.jsonl",
    },
    Case {
        args: &["check-log", "{}"],
        base: "vllm-0.32-cpu/boot.log",
        name: "boot.log",
    },
    Case {
        args: &["boot-facts", "{}"],
        base: "vllm-0.32-cpu/boot.log",
        name: "boot.log",
    },
    Case {
        args: &["lint-script", "{}"],
        base: "../../examples/campaigns/good-campaign.sh",
        name: "campaign.sh",
    },
];

/// A copy of the recorded run folder with `name` replaced by `text`.
fn run_folder(name: &str, text: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for f in std::fs::read_dir(fixture("vllm-0.28/xray")).unwrap() {
        let f = f.unwrap().path();
        std::fs::copy(&f, dir.path().join(f.file_name().unwrap())).unwrap();
    }
    std::fs::write(dir.path().join(name), text).unwrap();
    dir
}

/// Every command that reads a file, on every fixed mutation of it: exit 0, 1 or 2, no panic,
/// and on exit 2 the hostile file named on standard error.
#[test]
fn every_command_exits_0_1_or_2_on_the_corpus_and_names_the_file() {
    let mut runs = 0;
    for case in CASES {
        let base = read(case.base);
        for m in every_mutation() {
            let text = m.apply(&base);
            let dir = run_folder(case.name, &text);
            let d = dir.path().display().to_string();
            let hostile = format!("{d}/{}", case.name);
            let args: Vec<String> = case
                .args
                .iter()
                .map(|a| a.replace("{dir}", &d).replace("{}", &hostile))
                .collect();
            let out = Command::new(bin())
                .args(&args)
                .env("NO_COLOR", "1")
                .output()
                .unwrap();
            runs += 1;
            let stderr = String::from_utf8_lossy(&out.stderr);
            let stdout = String::from_utf8_lossy(&out.stdout);
            let code = out.status.code();
            assert!(
                matches!(code, Some(0..=2)),
                "inferlint {} on {m:?} of {}: exit {code:?}\n{stderr}",
                case.args.join(" "),
                case.name
            );
            assert!(!stderr.contains("panicked"), "{m:?}: {stderr}");
            // Exit 2 is an error naming the file, or a verdict that can't tell (`????`).
            if code == Some(2) {
                assert!(
                    stderr.contains(case.name) || stdout.contains("] ????  "),
                    "inferlint {} on {m:?}: exit 2 without naming {} or a verdict: {stderr}\n{stdout}",
                    case.args.join(" "),
                    case.name
                );
            }
        }
    }
    assert_eq!(runs, CASES.len() * every_mutation().len());
}
