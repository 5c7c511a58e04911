//! "Never panics" properties for the readers, on arbitrary strings and on inputs built from the
//! formats' own pieces (which reach deeper than random text): the Prometheus parser, the snapshot,
//! series and result-file readers, and the boot-log analyzer. The series reader is also checked
//! against an independent classification of every line (docs/design/formats.md#series: blank lines
//! skipped, damaged rows counted, the first row with a `schema` key is the header).
//!
//! The fuzz targets in fuzz/ cover the same readers for hours; these run in seconds under
//! `cargo test`. For a long run: `PROPTEST_CASES=100000 cargo test --release --test proptests proptest_readers::`.

use crate::proptest_support;

use inferlint_core::bench::{self, BenchResult};
use inferlint_core::bootlog::{self, Analyzer};
use inferlint_core::prom::{Metrics, PromError};
use inferlint_core::series::Series;
use inferlint_core::snapshot::Snapshot;
use inferlint_core::Engine;
use proptest::prelude::*;

fn cases(default: u32) -> ProptestConfig {
    proptest_support::config(default, "tests/proptest-regressions/proptest_readers.txt")
}

/// Pieces of Prometheus exposition, joined at random into lines.
fn prom_text() -> impl Strategy<Value = String> {
    let piece = prop_oneof![
        Just("vllm:num_requests_running".to_string()),
        Just("x_total".to_string()),
        Just("{".to_string()),
        Just("}".to_string()),
        Just("=".to_string()),
        Just("\"".to_string()),
        Just("\\".to_string()),
        Just(",".to_string()),
        Just(" ".to_string()),
        Just("\t".to_string()),
        Just("#".to_string()),
        Just("# TYPE x counter".to_string()),
        Just("NaN".to_string()),
        Just("+Inf".to_string()),
        Just("-Inf".to_string()),
        Just("1e308".to_string()),
        Just("1.5e-7".to_string()),
        Just("\r".to_string()),
        Just("\n".to_string()),
        Just("engine=\"0\"".to_string()),
        Just("le=\"+Inf\"".to_string()),
        Just("\\n".to_string()),
        Just("\u{e9}\u{1f600}".to_string()),
        "[a-z_:]{1,12}",
        "-?[0-9]{1,20}(\\.[0-9]{0,10})?",
        any::<String>(),
    ];
    prop::collection::vec(piece, 0..60).prop_map(|v| v.concat())
}

/// Values of every JSON type, and a few that JSON readers handle badly.
fn json_value() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("null".to_string()),
        Just("true".to_string()),
        Just("NaN".to_string()),
        Just("Infinity".to_string()),
        Just("-Infinity".to_string()),
        Just("1e400".to_string()),
        Just("-0.0".to_string()),
        Just("18446744073709551616".to_string()),
        Just("-9223372036854775809".to_string()),
        Just("[]".to_string()),
        Just("{\"a\": [1, {\"b\": null}]}".to_string()),
        Just("\"\\u0000\\ud800\"".to_string()),
        any::<f64>().prop_map(|f| format!("{f:?}")),
        any::<i64>().prop_map(|i| i.to_string()),
        any::<String>().prop_map(|s| serde_json::to_string(&s).unwrap()),
    ]
}

/// A JSON object with some of `keys` (and maybe a key twice) set to arbitrary values.
fn json_object(keys: &'static [&'static str]) -> impl Strategy<Value = String> {
    prop::collection::vec((0..keys.len(), json_value()), 0..10).prop_map(move |fields| {
        let body: Vec<String> = fields
            .iter()
            .map(|(k, v)| format!("\"{}\": {v}", keys[*k]))
            .collect();
        format!("{{{}}}", body.join(", "))
    })
}

const SNAPSHOT_KEYS: &[&str] = &["schema", "url", "t_wall", "t_mono_ns", "latency_s", "text"];
const BENCH_KEYS: &[&str] = &[
    "completed",
    "failed",
    "total_input_tokens",
    "total_output_tokens",
    "duration",
    "output_throughput",
    "max_concurrency",
    "num_prompts",
    "backend",
    "mean_ttft_ms",
];

/// What a series line is, and so what the reader must do with it.
#[derive(Clone, Debug)]
enum Line {
    Blank(String),
    /// A valid header naming `engine` (None: an older recording without the key).
    Header(Option<Engine>),
    /// A row with a `schema` key that is not a valid header.
    BadHeader(String),
    Sample(String),
    /// Unparsable, not an object, truncated, or a row with a value of the wrong type.
    Damaged(String),
}

impl Line {
    fn text(&self) -> String {
        match self {
            Line::Blank(s) | Line::BadHeader(s) | Line::Sample(s) | Line::Damaged(s) => s.clone(),
            Line::Header(None) => {
                "{\"schema\": \"inferlint.series/1\", \"url\": \"http://127.0.0.1:8000\", \"interval_s\": 0.25}".into()
            }
            Line::Header(Some(e)) => format!(
                "{{\"schema\": \"inferlint.series/1\", \"url\": \"http://127.0.0.1:8000\", \"interval_s\": 0.25, \"engine\": \"{}\"}}",
                e.key()
            ),
        }
    }
}

fn number_or_null() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("null".to_string()),
        Just("NaN".to_string()),
        (0u32..1000).prop_map(|i| format!("{i}.0")),
        any::<f64>()
            .prop_filter("finite", |f| f.is_finite())
            .prop_map(|f| format!("{f:?}")),
    ]
}

fn sample_row() -> impl Strategy<Value = String> {
    (
        1.7e9f64..1.8e9,
        prop::option::of(0i64..i64::MAX),
        prop::collection::vec(
            (
                prop::sample::select(vec![
                    "running",
                    "waiting",
                    "kv_usage",
                    "preemptions",
                    "generation_tokens",
                    "prompt_tokens",
                    "paused",
                    "finished_requests",
                ]),
                number_or_null(),
            ),
            0..8,
        ),
    )
        .prop_map(|(t, mono, fields)| {
            let mut row = format!("{{\"t_wall\": {t:?}");
            if let Some(m) = mono {
                row.push_str(&format!(", \"t_mono_ns\": {m}"));
            }
            let mut seen = std::collections::HashSet::new();
            for (k, v) in fields {
                if seen.insert(k) {
                    row.push_str(&format!(", \"{k}\": {v}"));
                }
            }
            row.push('}');
            row
        })
}

fn series_line() -> impl Strategy<Value = Line> {
    prop_oneof![
        prop::sample::select(vec!["", " ", "\t", "\r"]).prop_map(|s| Line::Blank(s.to_string())),
        prop::option::of(prop::sample::select(Engine::ALL.to_vec())).prop_map(Line::Header),
        prop_oneof![
            Just("{\"schema\": \"inferlint.snapshot/1\"}".to_string()),
            Just("{\"schema\": \"inferlint.series/1\", \"url\": \"u\"}".to_string()),
            Just(
                "{\"schema\": \"inferlint.series/1\", \"interval_s\": 0.5, \"engine\": \"tgi\"}"
                    .to_string()
            ),
            Just(
                "{\"schema\": \"inferlint.series/1\", \"interval_s\": 0.5, \"url\": 3}".to_string()
            ),
            Just("{\"schema\": 1, \"interval_s\": 0.5}".to_string()),
            // Any row with a `schema` key is the header, even a null one
            // (docs/design/formats.md#series).
            Just("{\"schema\": null, \"t_wall\": 1.0, \"running\": 1.0}".to_string()),
        ]
        .prop_map(Line::BadHeader),
        sample_row().prop_map(Line::Sample),
        prop_oneof![
            // A killed recorder's last line: any proper prefix of a row.
            (sample_row(), any::<prop::sample::Index>()).prop_map(|(row, i)| {
                let cut = 1 + i.index(row.len() - 1);
                row[..cut].to_string()
            }),
            Just("[1, 2]".to_string()),
            Just("42".to_string()),
            Just("\"text\"".to_string()),
            Just("{\"running\": 1.0}".to_string()),
            Just("{\"t_wall\": \"1.0\"}".to_string()),
            Just("{\"t_wall\": 1.0, \"running\": true}".to_string()),
            Just("{\"t_wall\": 1.0, \"kv_usage\": \"0.5\"}".to_string()),
            Just("{\"t_wall\": 1.0, \"t_mono_ns\": \"5\"}".to_string()),
            "[^{}\\[\\]\"\\n]{1,40}".prop_filter("not blank, not JSON", |s| {
                !s.trim().is_empty()
                    && serde_json::from_str::<serde_json::Value>(s.trim()).is_err()
                    && !["NaN", "Infinity", "-Infinity"].contains(&s.trim())
            }),
        ]
        .prop_map(Line::Damaged),
    ]
}

/// The chunked analyzer's facts, as JSON (NaN-safe to compare).
fn chunked_facts(bytes: &[u8], cuts: &[usize], hint: Option<Engine>) -> serde_json::Value {
    let mut a = Analyzer::new(hint);
    let mut rest = bytes;
    for &c in cuts {
        let (chunk, tail) = rest.split_at(c.min(rest.len()));
        a.feed_bytes(chunk);
        rest = tail;
    }
    a.feed_bytes(rest);
    serde_json::to_value(a.finish()).unwrap()
}

/// Pieces of server output: the phrases the boot-log reader looks for, and the bytes that break
/// naive line handling.
fn log_text() -> impl Strategy<Value = String> {
    let piece = prop_oneof![
        Just("INFO 05-06 10:00:00 [core.py:1] ".to_string()),
        Just("(EngineCore pid=12) ".to_string()),
        Just("(APIServer pid=11) ".to_string()),
        Just("Application startup complete.".to_string()),
        Just("Traceback (most recent call last):".to_string()),
        Just("torch.OutOfMemoryError: CUDA out of memory".to_string()),
        Just("Available KV cache memory: 12.5 GiB".to_string()),
        Just("GPU KV cache size: 26,093 tokens".to_string()),
        Just("Maximum concurrency for 4,096 tokens per request: 6.37x".to_string()),
        Just("non-default args: {'model': 'm', 'max_num_seqs': 8}".to_string()),
        Just("server_args=ServerArgs(model_path='m', ".to_string()),
        Just("[TensorRT-LLM] TensorRT LLM version: 1.3.0rc29".to_string()),
        Just("Allocated 3.2 GiB for max tokens in paged KV cache (4096)".to_string()),
        Just("KV cache pool is full. Retract requests. #retracted_reqs: 1".to_string()),
        Just("[shutdown]".to_string()),
        Just("\"POST /v1/completions HTTP/1.1\" 200 OK".to_string()),
        Just("\u{1b}[32m".to_string()),
        Just("\r".to_string()),
        Just("\n".to_string()),
        Just("\r\n".to_string()),
        Just("\0".to_string()),
        "[0-9.,]{1,12}",
        any::<String>(),
    ];
    prop::collection::vec(piece, 0..40).prop_map(|v| v.concat())
}

proptest! {
    #![proptest_config(cases(256))]

    /// The Prometheus parser returns samples or an error naming a line of the text.
    #[test]
    fn prom_parser_never_panics(text in prop_oneof![prom_text(), any::<String>()]) {
        match Metrics::parse(&text) {
            Ok(m) => {
                let n: usize = m.names().map(|name| m.series(name, &[]).len()).sum();
                prop_assert_eq!(n, m.samples().len());
            }
            Err(PromError::NotASample { line, .. } | PromError::MalformedLabels { line, .. }) => {
                prop_assert!(line >= 1 && line <= text.split('\n').count());
            }
            Err(e) => prop_assert!(false, "parse gave a lookup error: {}", e),
        }
    }

    /// The snapshot reader takes any text; what it loads saves and loads back.
    #[test]
    fn snapshot_reader_never_panics(
        text in prop_oneof![
            any::<String>(),
            prom_text(),
            json_object(SNAPSHOT_KEYS),
            json_object(SNAPSHOT_KEYS).prop_map(|o| o.replacen('{', "{\"schema\": \"inferlint.snapshot/1\", \"text\": \"x 1\\n\", ", 1)),
        ],
    ) {
        if let Ok(s) = Snapshot::from_text(&text, "s.json") {
            let back = Snapshot::from_text(&s.to_json(), "s.json");
            prop_assert!(back.is_ok(), "{:?}", back.err());
            let back = back.unwrap();
            prop_assert_eq!(back.text, s.text);
            prop_assert_eq!(back.t_mono_ns, s.t_mono_ns);
        }
    }

    /// The result-file reader takes any text, a document or JSON lines, and the last line wins.
    #[test]
    fn bench_reader_never_panics(
        text in prop_oneof![any::<String>(), json_object(BENCH_KEYS)],
        lines in prop::collection::vec(json_object(BENCH_KEYS), 0..5),
    ) {
        let _ = BenchResult::from_text(&text, "b.json");
        let _ = bench::untimed_requests(&text);
        let jsonl = lines.join("\n");
        let _ = BenchResult::from_text(&jsonl, "b.jsonl");
        let mut numbered: Vec<String> = (0..3).map(|i| format!("{{\"completed\": {i}}}")).collect();
        numbered.extend(lines.iter().map(|l| l.replace("\"completed\"", "\"other\"")));
        numbered.push("{\"completed\": 99}".into());
        let r = BenchResult::from_text(&numbered.join("\n"), "b.jsonl");
        prop_assert_eq!(r.map(|r| r.completed).ok(), Some(Some(99.0)));
    }

    /// The series reader on any sequence of lines: the first row with a `schema` key decides
    /// whether the text is a recording; every other non-blank row is a sample or a skipped line.
    /// The file path (`load`) decides as the text path does.
    #[test]
    fn series_reader_classifies_every_line(
        lines in prop::collection::vec(series_line(), 0..30),
        crlf in any::<bool>(),
        final_newline in any::<bool>(),
    ) {
        let mut text = lines.iter().map(Line::text).collect::<Vec<_>>().join(if crlf { "\r\n" } else { "\n" });
        if final_newline {
            text.push('\n');
        }
        let got = Series::from_text(&text, "r.series.jsonl");
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("r.series.jsonl");
        std::fs::write(&path, &text).unwrap();
        let from_file = Series::load(&path);

        let header = lines.iter().find(|l| matches!(l, Line::Header(_) | Line::BadHeader(_)));
        match header {
            Some(Line::Header(engine)) => {
                let s = got.map_err(|e| TestCaseError::fail(e.to_string()))?;
                let samples = lines.iter().filter(|l| matches!(l, Line::Sample(_))).count();
                let damaged = lines.iter().filter(|l| matches!(l, Line::Damaged(_))).count();
                prop_assert_eq!(s.samples.len(), samples);
                prop_assert_eq!(s.skipped_lines, damaged);
                prop_assert_eq!(s.header.engine, *engine);
                let f = from_file.map_err(|e| TestCaseError::fail(e.to_string()))?;
                prop_assert_eq!(f.samples, s.samples);
                prop_assert_eq!(f.skipped_lines, s.skipped_lines);
            }
            _ => {
                let e = got.expect_err("no valid header, so not a recording");
                prop_assert!(e.to_string().starts_with("r.series.jsonl"), "{}", e);
                prop_assert!(from_file.is_err());
            }
        }
    }

    /// The series reader takes any text at all.
    #[test]
    fn series_reader_never_panics(text in any::<String>()) {
        let _ = Series::from_text(&text, "r.series.jsonl");
    }

    /// The boot-log analyzer takes any output, and its facts do not depend on where the output
    /// was cut into chunks (mid-line, mid-character), nor on reading it whole.
    #[test]
    fn bootlog_analyzer_never_panics_and_ignores_chunking(
        text in prop_oneof![log_text(), any::<String>()],
        garbage in prop::collection::vec(any::<u8>(), 0..8),
        cuts in prop::collection::vec(0usize..64, 0..20),
        hint in prop::option::of(prop::sample::select(Engine::ALL.to_vec())),
    ) {
        let mut bytes = text.into_bytes();
        let at = bytes.len() / 2;
        bytes.splice(at..at, garbage);
        let whole = serde_json::to_value(bootlog::parse_bytes(&bytes, hint)).unwrap();
        prop_assert_eq!(chunked_facts(&bytes, &cuts, hint), whole.clone());
        let one_byte_cuts = vec![1; bytes.len()];
        prop_assert_eq!(chunked_facts(&bytes, &one_byte_cuts, hint), whole);
        let text = String::from_utf8_lossy(&bytes);
        let _ = bootlog::classify_failure(&text);
        let _ = inferlint_core::checks::t12::check(&text, &bootlog::parse_text(&text, hint));
    }
}

#[path = "proptest_readers/hostile.rs"]
mod hostile;
