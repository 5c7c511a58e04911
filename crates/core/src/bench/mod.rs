//! Load-tool result files: `vllm bench serve`'s JSON, SGLang `bench_serving`'s JSON lines (the last
//! line is the latest run) and TensorRT-LLM's benchmark_serving JSON (vLLM's format), and the
//! untimed requests a load tool announces in its output (docs/design/formats.md#load-tool-results,
//! docs/design/tripwires.md#t15).
//!
//! Every field is optional: a missing or non-numeric key is None (a boolean is not a number), so
//! a file without `completed` still loads and T15 says it can't tell.

pub mod foreign;

use std::path::Path;

use serde_json::{Map, Value};

pub use crate::snapshot::ReadError;
use crate::snapshot::{parse_python_json, read_text};

/// The numbers of one benchmark run, as the load tool reported them.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct BenchResult {
    pub completed: Option<f64>,
    pub failed: Option<f64>,
    pub total_input_tokens: Option<f64>,
    pub total_output_tokens: Option<f64>,
    /// Seconds.
    pub duration: Option<f64>,
    /// Output tokens per second.
    pub output_throughput: Option<f64>,
    pub max_concurrency: Option<f64>,
    pub num_prompts: Option<f64>,
    pub backend: Option<String>,
    pub mean_ttft_ms: Option<f64>,
    pub median_ttft_ms: Option<f64>,
    pub p99_ttft_ms: Option<f64>,
    pub mean_tpot_ms: Option<f64>,
    pub median_tpot_ms: Option<f64>,
    /// The mean gap between two streamed chunks, as the client reports it.
    pub mean_itl_ms: Option<f64>,
    /// The first non-empty entry of the per-request `errors` (`--save-detailed`).
    pub first_error: Option<String>,
    /// The per-request output lengths (`--save-detailed`), failed requests included as 0;
    /// empty when the file has none.
    pub output_lens: Vec<f64>,
    /// The per-request TTFTs in seconds (`--save-detailed`; a failed request's is 0), in the
    /// order of `start_times` where the file has those.
    pub ttfts: Vec<f64>,
    /// When each request was sent, seconds on the client's clock (`--save-detailed`, vLLM
    /// 0.15+); empty when the file has none.
    pub start_times: Vec<f64>,
    /// The per-request prompt lengths in tokens (`--save-detailed`).
    pub input_lens: Vec<f64>,
    /// The chunks each request's stream arrived in: its inter-chunk gaps (`itls`,
    /// `--save-detailed`) plus the first; 0 for a request that streamed nothing.
    pub chunks: Vec<f64>,
    /// The request rate asked for, requests per second; None for `"inf"` (all at once) or
    /// when the file does not say.
    pub request_rate: Option<f64>,
    /// The file it was read from.
    pub path: String,
}

impl BenchResult {
    /// The numbers of a result object; `path` names it.
    pub fn from_object(obj: &Map<String, Value>, path: &str) -> BenchResult {
        let num = |key: &str| match obj.get(key) {
            Some(Value::Number(n)) => n.as_f64(),
            _ => None,
        };
        BenchResult {
            completed: num("completed"),
            failed: num("failed"),
            total_input_tokens: num("total_input_tokens"),
            total_output_tokens: num("total_output_tokens"),
            duration: num("duration"),
            output_throughput: num("output_throughput"),
            max_concurrency: num("max_concurrency"),
            num_prompts: num("num_prompts"),
            backend: obj
                .get("backend")
                .and_then(Value::as_str)
                .map(str::to_string),
            mean_ttft_ms: num("mean_ttft_ms"),
            median_ttft_ms: num("median_ttft_ms"),
            p99_ttft_ms: num("p99_ttft_ms"),
            mean_tpot_ms: num("mean_tpot_ms"),
            median_tpot_ms: num("median_tpot_ms"),
            mean_itl_ms: num("mean_itl_ms"),
            first_error: obj
                .get("errors")
                .and_then(Value::as_array)
                .and_then(|e| {
                    e.iter()
                        .filter_map(Value::as_str)
                        .find(|s| !s.trim().is_empty())
                })
                .map(str::to_string),
            output_lens: numbers(obj, "output_lens"),
            ttfts: numbers(obj, "ttfts"),
            start_times: numbers(obj, "start_times"),
            input_lens: numbers(obj, "input_lens"),
            chunks: chunk_counts(obj),
            request_rate: num("request_rate").filter(|r| r.is_finite() && *r > 0.0),
            path: path.to_string(),
        }
    }

    /// Reads a result from text: one JSON document, or JSON lines whose last line is the latest
    /// run. `source` names it in messages.
    pub fn from_text(text: &str, source: &str) -> Result<BenchResult, ReadError> {
        let obj = result_object(text, source)?;
        Ok(BenchResult::from_object(&obj, source))
    }

    /// Whether it holds the counts T15 compares (completed and output tokens).
    pub fn has_counts(&self) -> bool {
        self.completed.is_some() && self.total_output_tokens.is_some()
    }
}

/// A per-request list of numbers; its entries that are not numbers are left out, so a list
/// whose length differs from the request count is read as not per-request by its users.
fn numbers(obj: &Map<String, Value>, key: &str) -> Vec<f64> {
    obj.get(key)
        .and_then(Value::as_array)
        .map(|l| l.iter().filter_map(Value::as_f64).collect())
        .unwrap_or_default()
}

/// Each request's chunk count from its `itls` (one gap per chunk after the first); a request
/// with no output streamed none. Empty when the file has no per-request lists.
fn chunk_counts(obj: &Map<String, Value>) -> Vec<f64> {
    let (Some(itls), Some(outs)) = (
        obj.get("itls").and_then(Value::as_array),
        obj.get("output_lens").and_then(Value::as_array),
    ) else {
        return Vec::new();
    };
    if itls.len() != outs.len() {
        return Vec::new();
    }
    itls.iter()
        .zip(outs)
        .map(|(gaps, out)| match (gaps.as_array(), out.as_f64()) {
            (Some(g), Some(o)) if o > 0.0 => g.len() as f64 + 1.0,
            _ => 0.0,
        })
        .collect()
}

/// Loads a result file (a JSON document, or JSON lines: the last line is the latest run).
pub fn load(path: &Path) -> Result<BenchResult, ReadError> {
    let text = read_text(path)?;
    BenchResult::from_text(&text, &path.display().to_string())
}

fn result_object(text: &str, source: &str) -> Result<Map<String, Value>, ReadError> {
    let not_object = |line: usize| {
        let at = if line > 0 {
            format!("line {line}: ")
        } else {
            String::new()
        };
        ReadError::format(
            source,
            format!("{at}not a load-tool result (a JSON object was expected)"),
        )
    };
    let whole = parse_python_json(text);
    let whole_err = match whole {
        Ok(Value::Object(obj)) => return Ok(obj),
        Ok(_) => return Err(not_object(0)),
        Err(e) => e,
    };
    // JSON lines: each line that is not blank is one run; the last one is the latest. Blank
    // means JSON's own whitespace: `str::trim` would also drop a line of U+000C or U+00A0,
    // which JSON rejects, and leave one line that did not parse as the whole.
    let mut lines = text
        .split('\n')
        .enumerate()
        .filter(|(_, l)| !l.trim_matches(is_json_whitespace).is_empty());
    let first_is_object = lines
        .next()
        .is_some_and(|(_, l)| matches!(parse_python_json(l), Ok(Value::Object(_))));
    if !first_is_object {
        return Err(ReadError::json(source, &whole_err, 0));
    }
    // One object line alone would have parsed as the whole; should it not, the whole's error
    // is the one to report.
    let Some((idx, last)) = lines.last() else {
        return Err(ReadError::json(source, &whole_err, 0));
    };
    match parse_python_json(last) {
        Ok(Value::Object(obj)) => Ok(obj),
        Ok(_) => Err(not_object(idx + 1)),
        Err(e) => Err(ReadError::json(source, &e, idx)),
    }
}

/// The whitespace JSON allows between tokens (RFC 8259, section 2).
fn is_json_whitespace(c: char) -> bool {
    matches!(c, ' ' | '\t' | '\n' | '\r')
}

/// The requests a load tool sends before it starts timing, read from its output: a test request
/// (`Initial test run completed.`), warm-up requests (`Warming up with N requests`) and SGLang's
/// warm-up (`Warmup completed with N sequences.`). They reach the server but not the result file.
pub fn untimed_requests(load_output: &str) -> u64 {
    let mut n: u64 = 0;
    for line in load_output.lines() {
        if line.contains("Initial test run completed.") {
            n = n.saturating_add(1);
        }
        if let Some(k) = number_between(line, "Warming up with ", " request") {
            n = n.saturating_add(k);
        }
        if let Some(k) = number_between(line, "Warmup completed with ", " sequence") {
            n = n.saturating_add(k);
        }
    }
    n
}

/// The first exception a Python load tool printed for a failed request, read from its output
/// where its result file names none: `vllm bench serve` saves its failed requests' tracebacks
/// only with `--save-detailed`, but prints the first ten (`Error 0: Traceback …`), each ending
/// in a line such as `aiohttp.client_exceptions.ServerDisconnectedError: Server disconnected`.
pub fn client_error(load_output: &str) -> Option<String> {
    let mut in_traceback = false;
    for line in load_output.lines() {
        // A load run under `inferlint run` may be quoted with a prefix (`    | `).
        let line = line.trim_start_matches([' ', '|']);
        if line.ends_with("Traceback (most recent call last):") {
            in_traceback = true;
            continue;
        }
        if in_traceback && is_exception_line(line) {
            return Some(line.trim_end().to_string());
        }
    }
    None
}

/// Names the first failure of `result` from the load tool's output where the result file names
/// none (the one rule `run` and `report` share, so both print the same T17).
pub fn name_failures(result: &mut BenchResult, load_output: &str) {
    if result.failed.is_some_and(|n| n > 0.0) && result.first_error.is_none() {
        result.first_error = client_error(load_output);
    }
}

/// A traceback's last line: a dotted exception name ending in `Error` or `Exception`, then `:`
/// and its message (or nothing).
fn is_exception_line(line: &str) -> bool {
    let name = line.split(':').next().unwrap_or("");
    !name.is_empty()
        && !name.starts_with(char::is_whitespace)
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.')
        && (name.ends_with("Error") || name.ends_with("Exception"))
}

/// The integer between `before` and `after` on a line, e.g. `Warming up with 3 requests...`.
fn number_between(line: &str, before: &str, after: &str) -> Option<u64> {
    let start = line.find(before)? + before.len();
    let rest = &line[start..];
    let end = rest.find(after)?;
    rest[..end].trim().parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_load_tools_first_exception_is_read_from_its_output() {
        let Some(text) = crate::testkit::evidence_text("llamacpp-0.6-cpu/np2-c4/inferlint-run.txt")
        else {
            return;
        };
        assert_eq!(
            client_error(&text).as_deref(),
            Some("aiohttp.client_exceptions.ServerDisconnectedError: Server disconnected")
        );
        // The frames inside a traceback are not its exception, and output without one has none.
        assert_eq!(
            client_error(
                "Traceback (most recent call last):\n  File \"x.py\", line 1\n    raise\n"
            ),
            None
        );
        assert_eq!(
            client_error("Maximum request concurrency: 4\nValueError: x\n"),
            None
        );
    }

    #[test]
    fn untimed_request_lines() {
        assert_eq!(untimed_requests("Skipping endpoint ready check.\n"), 0);
        assert_eq!(
            untimed_requests("Starting initial single prompt test run...\nInitial test run completed. Starting main benchmark run...\n"),
            1
        );
        assert_eq!(
            untimed_requests("Initial test run completed.\nWarming up with 3 requests...\n"),
            4
        );
        assert_eq!(
            untimed_requests("Starting warmup with 1 sequences...\nWarmup completed with 1 sequences. Starting main benchmark run...\n"),
            1
        );
        assert_eq!(untimed_requests(""), 0);
    }

    #[test]
    fn a_boolean_is_not_a_number() {
        let r = BenchResult::from_text(
            r#"{"completed": true, "failed": 0, "backend": "vllm"}"#,
            "r.json",
        )
        .unwrap();
        assert_eq!(r.completed, None);
        assert_eq!(r.failed, Some(0.0));
        assert_eq!(r.backend.as_deref(), Some("vllm"));
        assert!(!r.has_counts());
    }

    #[test]
    fn json_lines_last_line_wins() {
        let r = BenchResult::from_text("{\"completed\": 99}\n{\"completed\": 6}\n\n", "b.jsonl")
            .unwrap();
        assert_eq!(r.completed, Some(6.0));
    }

    /// Lines that `str::trim` calls blank but JSON does not: an error naming the line, never a
    /// panic.
    #[test]
    fn unicode_whitespace_lines_are_errors_with_their_line() {
        for bad in [
            "{}\n\u{c}",
            "{}\n\u{a0}",
            "{}\n\u{2028}",
            "{}\n\u{feff}",
            "{}\r\n\u{c}\r\n",
        ] {
            let e = BenchResult::from_text(bad, "bench.json").unwrap_err();
            assert!(
                e.to_string().starts_with("bench.json: line 2"),
                "{bad:?}: {e}"
            );
        }
        for bad in ["\u{a0}{}", "\u{c}{}\n", "\u{feff}{}"] {
            let e = BenchResult::from_text(bad, "bench.json").unwrap_err();
            assert!(
                e.to_string().starts_with("bench.json: line 1"),
                "{bad:?}: {e}"
            );
        }
        // JSON's own whitespace around the lines is still blank.
        let r = BenchResult::from_text(
            " \t{\"completed\": 2}\r\n\t\r\n{\"completed\": 5} \n",
            "b.jsonl",
        )
        .unwrap();
        assert_eq!(r.completed, Some(5.0));
    }

    #[test]
    fn truncated_documents_name_file_and_line() {
        let e =
            BenchResult::from_text("{\"completed\": 1}\n{\"completed\": ", "b.jsonl").unwrap_err();
        assert!(e.to_string().starts_with("b.jsonl: line 2, column"), "{e}");
        let e = BenchResult::from_text("{\n \"completed\": 3,\n \"fa", "b.json").unwrap_err();
        assert!(e.to_string().starts_with("b.json: line 3, column"), "{e}");
        let e = BenchResult::from_text("[1, 2]", "b.json").unwrap_err();
        assert!(e.to_string().contains("not a load-tool result"), "{e}");
    }
}
