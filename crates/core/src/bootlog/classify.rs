//! The failure classifier (docs/design/bootlog.md#the-failure-classifier), written to run as the
//! lines arrive: its state after any line is exactly the verdict on the log up to that line, so the
//! live supervisor learns of a failure at the line that shows it and the verdict on a whole file
//! follows that rule to the letter.
//!
//! Why incremental works: a rule's winner is "the first matching line after the last line that
//! shows the server kept working" (with a ready line) or "the first matching line" (without one),
//! and both can be kept up to date line by line with one slot per rule.

use std::fmt;
use std::sync::LazyLock;

use regex::Regex;
use serde::{Deserialize, Serialize};

use super::phrases::{Found, Phrase};
use crate::fmt::first_chars;

/// What kind of failure a log shows, in the classifier's priority order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FailureKind {
    JitToolchain,
    OutOfMemory,
    KvCacheTooSmall,
    AcceleratorError,
    CudaError,
    Assertion,
    ValueError,
    RuntimeError,
    UnclassifiedException,
    /// llama.cpp could not load its model file (`failed to load model`).
    ModelLoad,
    EngineDead,
}

impl FailureKind {
    pub fn as_str(self) -> &'static str {
        match self {
            FailureKind::JitToolchain => "jit_toolchain",
            FailureKind::OutOfMemory => "out_of_memory",
            FailureKind::KvCacheTooSmall => "kv_cache_too_small",
            FailureKind::AcceleratorError => "accelerator_error",
            FailureKind::CudaError => "cuda_error",
            FailureKind::Assertion => "assertion",
            FailureKind::ValueError => "value_error",
            FailureKind::RuntimeError => "runtime_error",
            FailureKind::UnclassifiedException => "unclassified_exception",
            FailureKind::ModelLoad => "model_load",
            FailureKind::EngineDead => "engine_dead",
        }
    }
}

impl fmt::Display for FailureKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Whether the failure came before the server was ready or while it served.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Phase {
    Boot,
    Serving,
}

impl Phase {
    pub fn as_str(self) -> &'static str {
        match self {
            Phase::Boot => "boot",
            Phase::Serving => "serving",
        }
    }
}

/// A failure found in a log.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Failure {
    pub kind: FailureKind,
    pub phase: Phase,
    /// 1-based line number of the line that shows it.
    pub lineno: usize,
    /// That line with its prefixes stripped, at most 300 characters.
    pub line: String,
    /// The cause in the line's own words, at most 200 characters (empty when the rule takes the
    /// whole line).
    pub detail: String,
}

impl Failure {
    /// `{kind} during {boot|serving}: {detail or line}`
    pub fn summary(&self) -> String {
        let what = if self.detail.is_empty() {
            &self.line
        } else {
            &self.detail
        };
        format!("{} during {}: {what}", self.kind, self.phase.as_str())
    }
}

/// The classifier rules (docs/design/bootlog.md#the-failure-classifier), in priority order (index =
/// priority).
const RULES: usize = 15;

fn rule_kind(rule: usize) -> FailureKind {
    match rule {
        0..=4 => FailureKind::JitToolchain,
        5 => FailureKind::OutOfMemory,
        6 => FailureKind::KvCacheTooSmall,
        7 => FailureKind::AcceleratorError,
        8 => FailureKind::CudaError,
        9 => FailureKind::Assertion,
        10 => FailureKind::ValueError,
        11 => FailureKind::RuntimeError,
        12 => FailureKind::UnclassifiedException,
        13 => FailureKind::ModelLoad,
        _ => FailureKind::EngineDead,
    }
}

/// llama.cpp's line prefix: its elapsed-time stamp and one-letter level (`0.00.004.369 E `).
static LLAMA_PREFIX: LazyLock<Regex> = LazyLock::new(|| {
    #[allow(
        clippy::expect_used,
        reason = "a constant pattern; the classifier's tests run it"
    )]
    Regex::new(r"^\s*\d+\.\d+\.\d+\.\d+ [DIWE] ").expect("valid regex")
});

/// How far above an exception line its context may be
/// (docs/design/bootlog.md#the-failure-classifier).
const ASSERT_WINDOW: usize = 3;
const FRAME_WINDOW: usize = 6;

/// A line above an exception that rules 10 and 13 read.
#[derive(Clone, Debug)]
enum Context {
    Assert(String),
    Frame {
        func: String,
        file: String,
        line: String,
    },
}

/// What the classifier's verdict did at a line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Change {
    /// The verdict on the log so far is now this failure (first, or a higher-priority cause).
    Found(Failure),
    /// The verdict was withdrawn: the server became ready or kept serving after it.
    Cleared,
}

/// The incremental classifier. Feed it every line with its stripped text and phrase set.
#[derive(Clone, Debug, Default)]
pub struct Classifier {
    /// A `[shutdown]` line was seen: nothing after it counts (teardown noise).
    cut: bool,
    ready: bool,
    in_ignored_block: bool,
    slots: [Option<Failure>; RULES],
    /// Recent assert lines and traceback frames, newest last, with their line numbers.
    context: Vec<(usize, Context)>,
    shutdown_lineno: Option<usize>,
}

impl Classifier {
    pub fn new() -> Self {
        Self::default()
    }

    /// The line number of the first `[shutdown]` line.
    pub fn shutdown_lineno(&self) -> Option<usize> {
        self.shutdown_lineno
    }

    /// The verdict on the lines fed so far.
    pub fn verdict(&self) -> Option<&Failure> {
        self.slots.iter().flatten().next()
    }

    /// Feeds one line: `text` has colour codes and every engine's prefix stripped; `found` holds
    /// the phrases of the whole line. Returns how the verdict changed, if it did.
    pub fn feed(&mut self, lineno: usize, text: &str, found: Found) -> Option<Change> {
        if self.cut {
            return None;
        }
        if found.has(Phrase::Shutdown) {
            self.cut = true;
            self.shutdown_lineno = Some(lineno);
            return None;
        }
        if self.in_ignored_block {
            if found.has(Phrase::EndOf) && text.contains("traceback]") {
                self.in_ignored_block = false;
            }
            return None;
        }
        if found.has(Phrase::StartOf) && text.contains("traceback]") {
            self.in_ignored_block = true;
            return None;
        }
        if found.has(Phrase::IgnoreImport) && text.starts_with("Ignore import error") {
            return None;
        }
        let before = self.verdict_key();
        if found.any(&[Phrase::Ready, Phrase::LlamaListening]) && !self.ready {
            // With a ready line only what comes after it counts.
            self.ready = true;
            self.slots = Default::default();
        } else if self.ready && shows_work(text, found) {
            // The server kept working after every match so far: none of them killed it.
            self.slots = Default::default();
        } else if let Some((rule, detail)) = self.match_rules(lineno, text, found) {
            if self.slots[rule].is_none() {
                self.slots[rule] = Some(Failure {
                    kind: rule_kind(rule),
                    phase: if self.ready {
                        Phase::Serving
                    } else {
                        Phase::Boot
                    },
                    lineno,
                    line: first_chars(text, 300).to_string(),
                    detail: first_chars(&detail, 200).to_string(),
                });
            }
        }
        self.remember_context(lineno, text, found);
        let after = self.verdict_key();
        if before == after {
            return None;
        }
        Some(match self.verdict() {
            Some(f) => Change::Found(f.clone()),
            None => Change::Cleared,
        })
    }

    fn verdict_key(&self) -> Option<(usize, usize)> {
        self.slots
            .iter()
            .enumerate()
            .find_map(|(rule, f)| f.as_ref().map(|f| (rule, f.lineno)))
    }

    /// The highest-priority rule this line matches, with its detail. A line matches at most one
    /// slot worth keeping: a lower rule's slot can only matter if no higher slot ever fills, and a
    /// higher match on the same line already fills the higher slot.
    fn match_rules(&self, lineno: usize, text: &str, found: Found) -> Option<(usize, String)> {
        use Phrase as P;
        if found.has(P::Incompatible) {
            return Some((
                0,
                "CUDA compiler and CUDA toolkit headers are incompatible".to_string(),
            ));
        }
        if found.has(P::Ptxas) {
            if let Some(c) = PTXAS.captures(text) {
                return Some((1, c[1].trim_end().to_string()));
            }
        }
        if found.has(P::NvccFatal) {
            if let Some(c) = NVCC.captures(text) {
                return Some((2, c[1].trim_end().to_string()));
            }
        }
        if found.has(P::LdCannotFind) {
            if let Some(i) = text.find("ld: cannot find") {
                return Some((3, text[i + 4..].trim_end().to_string()));
            }
        }
        if found.any(&[P::NinjaFailed, P::NinjaStopped]) {
            return Some((4, String::new()));
        }
        if found.any(&[P::OomError, P::CudaOom]) {
            return Some((5, String::new()));
        }
        if found.any(&[P::NoCacheMemory, P::KvTooSmall]) {
            return Some((6, String::new()));
        }
        if found.has(P::Accelerator) {
            if let Some(i) = text.find("AcceleratorError: ") {
                return Some((7, text[i + 18..].trim_end().to_string()));
            }
        }
        if found.has(P::CudaError) {
            if let Some(i) = text.find("CUDA error: ") {
                return Some((8, text[i + 12..].trim_end().to_string()));
            }
        }
        if found.any(&[P::Error, P::Exception]) {
            if let Some((class, message)) = exception_line(text) {
                if class == "AssertionError" {
                    let detail = match message {
                        Some(m) if !m.trim().is_empty() => m.trim().to_string(),
                        _ => self.nearest_assert(lineno).unwrap_or_default(),
                    };
                    return Some((9, detail));
                }
                if let Some(m) = message {
                    let m = m.trim_end();
                    match class {
                        "ValueError" => return Some((10, m.to_string())),
                        "RuntimeError" => return Some((11, m.to_string())),
                        "EngineDeadError" => {}
                        _ => {
                            let mut detail = m.to_string();
                            if let Some((func, file, line)) = self.last_frame(lineno) {
                                detail.push_str(&format!(" (in {func}, {file}:{line})"));
                            }
                            return Some((12, detail));
                        }
                    }
                }
            }
        }
        if found.any(&[P::LlamaGgufOpen, P::LlamaLoadFailed]) {
            // The first such line names the cause (`gguf_init_from_file: failed to open GGUF
            // file 'PATH' (No such file or directory)`); llama.cpp's stamp and level go.
            return Some((13, LLAMA_PREFIX.replace(text, "").trim().to_string()));
        }
        if found.any(&[P::EngineDead, P::EngineFatal]) {
            return Some((14, String::new()));
        }
        None
    }

    fn remember_context(&mut self, lineno: usize, text: &str, found: Found) {
        let trimmed = text.trim();
        let ctx = if found.has(Phrase::Assert) && trimmed.starts_with("assert ") {
            Some(Context::Assert(trimmed.to_string()))
        } else if found.has(Phrase::FileFrame) {
            FRAME.captures(text).map(|c| Context::Frame {
                file: c[1].rsplit(['/', '\\']).next().unwrap_or(&c[1]).to_string(),
                line: c[2].to_string(),
                func: c[3].to_string(),
            })
        } else {
            None
        };
        if let Some(ctx) = ctx {
            self.context.push((lineno, ctx));
            if self.context.len() > 8 {
                self.context.remove(0);
            }
        }
    }

    /// The nearest `assert …` line within 3 lines above the current one.
    fn nearest_assert(&self, lineno: usize) -> Option<String> {
        self.context.iter().rev().find_map(|(n, c)| match c {
            Context::Assert(s) if lineno > *n && lineno - n <= ASSERT_WINDOW => Some(s.clone()),
            _ => None,
        })
    }

    /// The last traceback frame within 6 lines above the current one.
    fn last_frame(&self, lineno: usize) -> Option<(String, String, String)> {
        self.context.iter().rev().find_map(|(n, c)| match c {
            Context::Frame { func, file, line } if lineno > *n && lineno - n <= FRAME_WINDOW => {
                Some((func.clone(), file.clone(), line.clone()))
            }
            _ => None,
        })
    }
}

/// Whether a line shows the server kept working: an answered POST or a scheduler batch line
/// (docs/design/bootlog.md#the-failure-classifier), or vLLM's periodic stats line with tokens
/// generated since the last one (vLLM's counterpart of SGLang's `Decode batch`: a request rejected
/// by admission control logs a traceback, and the engine goes on generating).
fn shows_work(text: &str, found: Found) -> bool {
    (found.has(Phrase::Post) && is_answered_post(text))
        || (found.any(&[Phrase::PrefillBatch, Phrase::DecodeBatch])
            && (text.starts_with("Prefill batch") || text.starts_with("Decode batch")))
        || (found.has(Phrase::VllmStats) && generated_tokens(text))
}

/// `Engine 000: … Avg generation throughput: 23.1 tokens/s, …` with a rate above zero.
fn generated_tokens(text: &str) -> bool {
    let Some(i) = text.find("Avg generation throughput: ") else {
        return false;
    };
    let rest = &text[i + 27..];
    let end = rest
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(rest.len());
    rest[..end].parse::<f64>().is_ok_and(|x| x > 0.0)
}

/// `"POST /… HTTP/x" 200`: an access-log line of a request that was answered.
pub fn is_answered_post(line: &str) -> bool {
    let mut rest = line;
    while let Some(i) = rest.find("\"POST /") {
        let after = &rest[i + 7..];
        if let Some(close) = after.find('"') {
            let request = &after[..close];
            if request.contains(" HTTP/") && after[close + 1..].starts_with(" 200") {
                return true;
            }
        }
        rest = after;
    }
    false
}

/// `[mod.]ClassError[: message]` at the start of a line: the class name and the message (None
/// when the line is the bare class name).
fn exception_line(text: &str) -> Option<(&str, Option<&str>)> {
    let b = text.as_bytes();
    let mut i = 0;
    let mut class_start;
    loop {
        class_start = i;
        if i < b.len() && (b[i].is_ascii_alphabetic() || b[i] == b'_') {
            i += 1;
        } else {
            return None;
        }
        while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_') {
            i += 1;
        }
        if i < b.len() && b[i] == b'.' {
            i += 1;
            continue;
        }
        break;
    }
    let class = &text[class_start..i];
    if !(class.ends_with("Error") || class.ends_with("Exception")) {
        return None;
    }
    let rest = &text[i..];
    if rest.trim().is_empty() {
        return Some((class, None));
    }
    let message = rest.strip_prefix(':')?;
    Some((class, Some(message.strip_prefix(' ').unwrap_or(message))))
}

#[allow(
    clippy::expect_used,
    reason = "a constant pattern; the tests compile it"
)]
static PTXAS: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"ptxas\b.*?\bfatal\s*:\s*(.+)").expect("valid regex"));
#[allow(
    clippy::expect_used,
    reason = "a constant pattern; the tests compile it"
)]
static NVCC: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"nvcc fatal\s*:\s*(.+)").expect("valid regex"));
#[allow(
    clippy::expect_used,
    reason = "a constant pattern; the tests compile it"
)]
static FRAME: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r#"File "([^"]+)", line (\d+), in (\S+)"#).expect("valid regex"));

#[cfg(test)]
#[path = "classify_tests.rs"]
mod tests;
