//! The data inside the page: results, summary, insights and boot facts as JSON in
//! `<script type="application/json" id="inferlint-data">`, so the page is also the archive, and
//! reading them back from a saved page (`report --from-html`).

use serde::{Deserialize, Serialize};
use serde_json::Value;

use inferlint_core::result::CheckResult;

use super::{Insight, Report, Summary};

/// The schema name of the embedded data.
pub const SCHEMA: &str = "inferlint.report/1";

/// The element id of the data block.
pub const DATA_ID: &str = "inferlint-data";

/// What a page carries about its run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Embedded {
    pub schema: String,
    pub inferlint: String,
    pub title: String,
    pub engine: inferlint_core::engine::Engine,
    pub version: Option<String>,
    pub requested: Option<u64>,
    pub results: Vec<CheckResult>,
    pub summary: Summary,
    pub insights: Vec<Insight>,
    pub usable_blocks: Option<u64>,
    pub sources: Vec<String>,
    /// Boot facts per log: `{"label": …, "facts": {…}}`.
    pub boot: Vec<Value>,
    /// The load tool's figures, when a result file was read.
    pub load_tool: Option<Value>,
}

impl Embedded {
    pub fn of(report: &Report) -> Embedded {
        let load_tool = report.inputs().bench.as_ref().map(|b| {
            serde_json::json!({
                "completed": b.completed, "failed": b.failed,
                "total_input_tokens": b.total_input_tokens, "total_output_tokens": b.total_output_tokens,
                "duration": b.duration, "output_throughput": b.output_throughput,
                "max_concurrency": b.max_concurrency, "num_prompts": b.num_prompts,
                "median_ttft_ms": b.median_ttft_ms, "p99_ttft_ms": b.p99_ttft_ms,
                "mean_ttft_ms": b.mean_ttft_ms, "mean_tpot_ms": b.mean_tpot_ms,
            })
        });
        Embedded {
            schema: SCHEMA.to_string(),
            inferlint: inferlint_core::VERSION.to_string(),
            title: report.title(),
            engine: report.engine(),
            version: report.version(),
            requested: report.inputs().requested,
            results: report.results().to_vec(),
            summary: report.summary().clone(),
            insights: report.insights().to_vec(),
            usable_blocks: report.usable_blocks(),
            sources: report.inputs().sources.clone(),
            boot: report
                .facts()
                .iter()
                .map(|(label, f)| serde_json::json!({"label": label, "facts": f}))
                .collect(),
            load_tool,
        }
    }
}

/// JSON that is safe inside a `<script>` element: `<`, `>` and `&` are written as `\u003c`,
/// `\u003e` and `\u0026` (so no `</script>` can end the element early), and the line
/// separators U+2028/U+2029 as escapes. JSON readers decode them back.
pub fn json_for_script(value: &impl Serialize) -> String {
    #[allow(
        clippy::expect_used,
        reason = "the page's values are plain structs with string keys, serialized to memory"
    )]
    let raw = serde_json::to_string(value).expect("serializing to memory cannot fail");
    let mut out = String::with_capacity(raw.len() + 16);
    for ch in raw.chars() {
        match ch {
            '<' => out.push_str("\\u003c"),
            '>' => out.push_str("\\u003e"),
            '&' => out.push_str("\\u0026"),
            '\u{2028}' => out.push_str("\\u2028"),
            '\u{2029}' => out.push_str("\\u2029"),
            c => out.push(c),
        }
    }
    out
}

/// The page's data block, escaped for a script element.
pub fn data_block(report: &Report) -> String {
    json_for_script(&Embedded::of(report))
}

/// Why a page's data could not be read back.
#[derive(Debug, thiserror::Error)]
pub enum ReadBackError {
    #[error("{path}: no inferlint data in the page (no <script id=\"inferlint-data\">); was it written by inferlint report?")]
    NoData { path: String },
    #[error("{path}: the inferlint data block is not closed")]
    Unclosed { path: String },
    #[error("{path}: the inferlint data is not valid: {message}")]
    Invalid { path: String, message: String },
}

/// Reads the embedded data of a page written by [`Report::render_page`]. `path` names the page
/// in errors.
pub fn read_back(html: &str, path: &str) -> Result<Embedded, ReadBackError> {
    let marker = format!("id=\"{DATA_ID}\"");
    let at = html.find(&marker).ok_or_else(|| ReadBackError::NoData {
        path: path.to_string(),
    })?;
    let open_end =
        html[at..]
            .find('>')
            .map(|i| at + i + 1)
            .ok_or_else(|| ReadBackError::Unclosed {
                path: path.to_string(),
            })?;
    let close = html[open_end..]
        .find("</script>")
        .map(|i| open_end + i)
        .ok_or_else(|| ReadBackError::Unclosed {
            path: path.to_string(),
        })?;
    serde_json::from_str(&html[open_end..close]).map_err(|e| ReadBackError::Invalid {
        path: path.to_string(),
        message: e.to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn script_json_cannot_close_its_element() {
        let v = serde_json::json!({"model": "</script><img src=x onerror=alert(1)>", "a": "x & y\u{2028}"});
        let s = json_for_script(&v);
        assert!(!s.contains("</"), "{s}");
        assert!(!s.contains('<') && !s.contains('>') && !s.contains('&'));
        assert!(s.contains("\\u003c/script\\u003e"));
        let back: Value = serde_json::from_str(&s).unwrap();
        assert_eq!(back, v);
    }

    #[test]
    fn read_back_names_the_file_when_there_is_no_data() {
        let err = read_back("<html></html>", "x.html").unwrap_err();
        assert!(err.to_string().starts_with("x.html: no inferlint data"));
        let err = read_back("<script id=\"inferlint-data\">{", "x.html").unwrap_err();
        assert!(err.to_string().contains("not closed"));
        let err = read_back("<script id=\"inferlint-data\">{]</script>", "x.html").unwrap_err();
        assert!(err.to_string().contains("not valid"));
    }
}
