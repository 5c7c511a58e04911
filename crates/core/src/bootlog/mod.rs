//! Everything inferlint learns from a server's own output (docs/design/bootlog.md): the boot facts,
//! the start-up or serving failure, and the events a live supervisor shows as they happen.
//!
//! There is one reader, [`Analyzer`]: it is fed lines (or raw byte chunks) as they arrive and
//! reports each event at its line. Parsing a file or a text is feeding it everything.

pub mod analyzer;
pub mod classify;
mod events;
pub mod facts;
mod labels;
pub mod lines;
mod llamacpp;
mod phrases;
pub mod pyliteral;
mod sglang;
mod state;
mod trtllm;
mod vllm;

use std::borrow::Cow;
use std::io::Read;
use std::path::{Path, PathBuf};

use serde_json::{json, Value};

pub use analyzer::{Analyzer, BootEvent, BootEventKind};
pub use classify::{Failure, FailureKind, Phase};
pub use facts::{BootFacts, Unparsed};
pub use labels::log_labels;
pub use lines::LINE_CAP;

use crate::engine::Engine;

/// The vLLM release series the parser was verified on.
pub const TESTED_VLLM_VERSIONS: [&str; 3] = ["0.28", "0.29", "0.30"];

/// A boot log that could not be read.
#[derive(Debug, thiserror::Error)]
#[error("cannot read the boot log {path}: {source}")]
pub struct BootLogError {
    pub path: String,
    #[source]
    pub source: std::io::Error,
}

/// Parses a log's text into facts; `hint` is the engine the user named (the log's own markers
/// win over it).
pub fn parse_text(text: &str, hint: Option<Engine>) -> BootFacts {
    parse_bytes(text.as_bytes(), hint)
}

/// Parses a log's raw bytes (invalid UTF-8 is read lossily and counted).
pub fn parse_bytes(bytes: &[u8], hint: Option<Engine>) -> BootFacts {
    let mut a = Analyzer::batch(hint);
    a.feed_bytes(bytes);
    a.finish()
}

/// Parses a log file, reading it in chunks so that memory stays bounded whatever its size.
pub fn parse_file(path: &Path, hint: Option<Engine>) -> Result<BootFacts, BootLogError> {
    let err = |source| BootLogError {
        path: path.display().to_string(),
        source,
    };
    let mut file = std::fs::File::open(path).map_err(err)?;
    let mut a = Analyzer::batch(hint);
    let mut buf = vec![0u8; 256 * 1024];
    loop {
        let n = match file.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(err(e)),
        };
        a.feed_bytes(&buf[..n]);
    }
    Ok(a.finish())
}

/// As [`parse_file`], also returning the engine the log's own markers name (None when the log
/// names none and the facts' engine is the hint).
pub fn parse_file_with_markers(
    path: &Path,
    hint: Option<Engine>,
) -> Result<(BootFacts, Option<Engine>), BootLogError> {
    let facts = parse_file(path, hint)?;
    let own = facts.log_engine;
    Ok((facts, own))
}

/// The failure a log's text shows (docs/design/bootlog.md#the-failure-classifier), or None.
pub fn classify_failure(text: &str) -> Option<Failure> {
    parse_text(text, None).failure
}

/// The failure a log file shows, or None.
pub fn classify_failure_file(path: &Path) -> Result<Option<Failure>, BootLogError> {
    Ok(parse_file(path, None)?.failure)
}

/// The 1-based line number of a log's first `[shutdown]` line (vLLM tags every step of an
/// orderly stop with it; the classifier ignores what follows).
pub fn shutdown_lineno(text: &str) -> Option<usize> {
    parse_text(text, None).shutdown_lineno
}

/// A line without colour codes and without vLLM's process prefix and logging header:
/// `(EngineCore pid=3475) ERROR 09-05 23:33:11 [core.py:1348] message` → `message`.
pub fn strip_vllm_prefix(line: &str) -> Cow<'_, str> {
    match lines::strip_ansi(line) {
        Cow::Borrowed(s) => Cow::Borrowed(lines::strip_vllm_prefix(s)),
        Cow::Owned(s) => Cow::Owned(lines::strip_vllm_prefix(&s).to_string()),
    }
}

/// The version the facts name for their engine: the log's, else the live server's.
fn version_of(facts: &BootFacts) -> Option<&str> {
    facts
        .vllm_version
        .as_deref()
        .or(facts.engine_version.as_deref())
        .or(facts.server_version.as_deref())
}

/// The untested-version warning as a sentence (`SGLang 0.6.1 is not a tested version …`),
/// without the `note: ` the terminal puts before it; None for a tested or unknown version.
pub fn untested_version_sentence(facts: &BootFacts) -> Option<String> {
    untested_version_note(facts).map(|n| match n.strip_prefix("note: ") {
        Some(rest) => rest.to_string(),
        None => n,
    })
}

/// The untested-version warning (docs/design/bootlog.md#untested-versions), or None for a tested or
/// unknown version.
/// A note where vLLM's custom all-reduce is off on a tensor-parallel server of GPUs: its
/// steps use NCCL's all-reduce, reported 7–12 % slower in decode on PCIe GPUs
/// (docs/design/bootlog.md#vllm-lines). None where it is on, unsaid, or off for want of the
/// library (a server without GPUs).
pub fn allreduce_note(facts: &BootFacts) -> Option<String> {
    let why = facts.custom_allreduce_off.as_deref()?;
    if why == "no custom all-reduce library" {
        return None;
    }
    Some(format!(
        "note: vLLM's custom all-reduce is off ({why}): tensor-parallel steps use NCCL's all-reduce, which has been measured 7-12% slower in decode on PCIe GPUs; the figures are those of this setting"
    ))
}

pub fn untested_version_note(facts: &BootFacts) -> Option<String> {
    let engine = facts.engine.unwrap_or(Engine::Vllm);
    let v = version_of(facts)?;
    let gpu = engine.tested_versions();
    let cpu = engine.tested_on_cpu_build();
    if gpu
        .iter()
        .chain(cpu)
        .any(|t| v == *t || v.starts_with(&format!("{t}.")))
    {
        return None;
    }
    let mut how = format!("{} on recorded GPU runs", gpu.join(", "));
    if !cpu.is_empty() {
        how.push_str(&format!("; {} live on the CPU build", cpu.join(", ")));
    }
    Some(format!(
        "note: {} {v} is not a tested version (tested: {how}). If a check says Can't tell or a value looks wrong, a log line or metric may have changed: please report it.",
        engine.name(),
    ))
}

/// The `boot` block of an `rv.result/1` record, for users to keep with their results
/// (docs/design/bootlog.md#the-result-block).
pub fn result_block(facts: &BootFacts) -> Value {
    json!({
        "engine": facts.engine.map(Engine::key),
        "runtime_version": version_of(facts),
        "kv_pool_tokens": facts.kv_pool_tokens,
        "attention_block_size": facts.attention_block_size,
        "backend_requested": facts.requested_backend,
        "backend_selected": facts.selected_backends.last(),
        "drafter_backend": facts.drafter_backends.last(),
        "available_kv_cache_gib": facts.available_kv_cache_gib,
        "cudagraph_actual_gib": facts.cudagraph_actual_gib,
        "cudagraphs": facts.cudagraphs,
        "speculative": facts.speculative,
        "unparsed_lines": facts.unparsed.len() as u64 + facts.unparsed_more,
    })
}

impl BootFacts {
    /// Fills in the version the live server reports (`/version`, `/get_server_info`) and the
    /// derived `version`.
    pub fn set_server_version(&mut self, version: impl Into<String>) {
        self.server_version = Some(version.into());
        self.version = version_of(self).map(str::to_string);
    }

    /// Number of lines whose key phrase was found but whose value did not parse.
    pub fn unparsed_count(&self) -> u64 {
        self.unparsed.len() as u64 + self.unparsed_more
    }
}

/// Reads paths into labelled facts, in order (for T4/T11 across starts).
pub fn parse_files_labelled(
    paths: &[PathBuf],
    hint: Option<Engine>,
) -> Result<Vec<(String, BootFacts)>, BootLogError> {
    let labels = log_labels(paths);
    paths
        .iter()
        .zip(labels)
        .map(|(p, label)| Ok((label, parse_file(p, hint)?)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_sentence_is_the_note_without_its_prefix() {
        let mut f = BootFacts {
            engine: Some(crate::Engine::Sglang),
            server_version: Some("0.6.1".into()),
            ..Default::default()
        };
        let s = untested_version_sentence(&f).expect("untested");
        assert!(s.starts_with("SGLang 0.6.1 is not a tested version"), "{s}");
        assert_eq!(untested_version_note(&f), Some(format!("note: {s}")));
        f.server_version = None;
        assert_eq!(untested_version_sentence(&f), None);
    }

    /// vLLM 0.32's warnings (`custom_all_reduce.py`), each as a worker prints it on a
    /// tensor-parallel server; the note names the reason and only where GPUs are in play.
    #[test]
    fn custom_all_reduce_off_is_a_fact_and_a_note() {
        let line = |msg: &str| {
            format!(
                "(Worker_TP0 pid=4242) WARNING 12-05 10:00:00 [custom_all_reduce.py:271] {msg}\n"
            )
        };
        let pcie = line("Custom allreduce is disabled because it's not supported on more than two PCIe-only GPUs. To silence this warning, specify disable_custom_all_reduce=True explicitly.");
        let f = parse_text(&pcie, Some(crate::Engine::Vllm));
        assert_eq!(
            f.custom_allreduce_off.as_deref(),
            Some("more than two PCIe-only GPUs")
        );
        let note = allreduce_note(&f).expect("a note");
        assert!(
            note.starts_with(
                "note: vLLM's custom all-reduce is off (more than two PCIe-only GPUs)"
            ),
            "{note}"
        );
        let p2p = line("Custom allreduce is disabled because your platform lacks GPU P2P capability or P2P test failed. To silence this warning, specify disable_custom_all_reduce=True explicitly.");
        let f = parse_text(&p2p, Some(crate::Engine::Vllm));
        assert_eq!(
            f.custom_allreduce_off.as_deref(),
            Some("no GPU peer-to-peer access")
        );
        // Without the library (no GPU) there is nothing to note; a log without the line says
        // nothing either.
        let lib = line("Custom allreduce is disabled because of missing custom allreduce library");
        assert_eq!(
            allreduce_note(&parse_text(&lib, Some(crate::Engine::Vllm))),
            None
        );
        assert_eq!(
            parse_text("hello\n", Some(crate::Engine::Vllm)).custom_allreduce_off,
            None
        );
    }
}
