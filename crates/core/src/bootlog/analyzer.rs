//! The one boot-log reader: fed the server's output a line (or any chunk of bytes) at a time, it
//! reports each event at the line that causes it, and [`Analyzer::finish`] gives the facts.
//! Reading a file is feeding it every line.

use std::borrow::Cow;

use super::classify::{Change, Classifier, Failure};
pub use super::events::{BootEvent, BootEventKind};
use super::facts::BootFacts;
use super::lines::{
    decode, is_progress_bar, split_vllm, stamp_seconds, strip_ansi, strip_other_stamps,
    LineSplitter, RawLine,
};
use super::phrases::{scan, Found, Phrase};
use super::state::State;
use super::{llamacpp, sglang, trtllm, vllm};
use crate::engine::Engine;
use crate::fmt::first_chars;

/// Engine markers are looked for in a log's first 200,000 characters
/// (docs/design/engines.md#auto-detection).
const HEAD_CHARS: usize = 200_000;

/// The incremental boot-log analyzer.
#[derive(Debug)]
pub struct Analyzer {
    hint: Option<Engine>,
    splitter: LineSplitter,
    lineno: usize,
    st: State,
    classifier: Classifier,
    head_chars: usize,
    markers: Markers,
    detected: Option<Engine>,
    /// None for a batch reader, which has no terminal to show it on.
    last_line: Option<String>,
}

/// Which engines' markers the head of the log has shown.
#[derive(Clone, Copy, Debug, Default)]
struct Markers {
    trtllm: bool,
    sglang: bool,
    vllm: bool,
    llamacpp: bool,
}

impl Markers {
    fn engine(self) -> Option<Engine> {
        if self.trtllm {
            Some(Engine::Trtllm)
        } else if self.llamacpp {
            Some(Engine::Llamacpp)
        } else if self.sglang {
            Some(Engine::Sglang)
        } else if self.vllm {
            Some(Engine::Vllm)
        } else {
            None
        }
    }
}

impl Analyzer {
    /// An analyzer for a live server's output, keeping the last line worth showing.
    /// `hint`: the engine the user named; the log's own markers win over it.
    pub fn new(hint: Option<Engine>) -> Self {
        Analyzer {
            hint,
            splitter: LineSplitter::new(),
            lineno: 0,
            st: State::default(),
            classifier: Classifier::new(),
            head_chars: 0,
            markers: Markers::default(),
            detected: None,
            last_line: Some(String::new()),
        }
    }

    /// An analyzer for a whole log read at once: the same facts and events, without the last
    /// line to show (what a terminal needs costs a file reader about a tenth of its time).
    pub fn batch(hint: Option<Engine>) -> Self {
        Analyzer {
            last_line: None,
            ..Analyzer::new(hint)
        }
    }

    /// Feeds one line. A trailing line end is allowed; line ends inside (`\n`, `\r\n`, a bare
    /// `\r`) split it as they would in a file. A supervisor reading stdout and stderr apart
    /// should feed each stream's whole lines here, so that the two never mix inside a line.
    pub fn feed_line(&mut self, line: &str) -> Vec<BootEvent> {
        let mut events = Vec::new();
        let b = line.as_bytes();
        if !self.splitter.has_pending() && memchr::memchr2(b'\n', b'\r', b).is_none() {
            self.splitter.line_fed_whole();
            self.line(
                RawLine {
                    bytes: b,
                    cut: false,
                },
                &mut events,
            );
            return events;
        }
        self.feed_bytes_into(b, &mut events);
        let ended = matches!(b.last(), Some(b'\n' | b'\r'));
        if self.splitter.has_pending() || !ended {
            self.end_pending(&mut events);
        }
        events
    }

    /// Feeds a chunk of raw output, split anywhere (mid-line, mid-character).
    pub fn feed_bytes(&mut self, data: &[u8]) -> Vec<BootEvent> {
        let mut events = Vec::new();
        self.feed_bytes_into(data, &mut events);
        events
    }

    fn feed_bytes_into(&mut self, data: &[u8], events: &mut Vec<BootEvent>) {
        let mut splitter = std::mem::take(&mut self.splitter);
        splitter.feed(data, &mut |raw| self.line(raw, events));
        self.splitter = splitter;
    }

    fn end_pending(&mut self, events: &mut Vec<BootEvent>) {
        let mut splitter = std::mem::take(&mut self.splitter);
        if splitter.has_pending() {
            splitter.flush(&mut |raw| self.line(raw, events));
        } else {
            self.line(
                RawLine {
                    bytes: b"",
                    cut: false,
                },
                events,
            );
        }
        self.splitter = splitter;
    }

    /// Lines read so far.
    pub fn lines(&self) -> usize {
        self.lineno
    }

    /// The last line worth showing on a live terminal (prefixes stripped, progress bars and
    /// blank lines skipped, at most 300 characters); empty for a [`Analyzer::batch`] reader.
    pub fn last_line(&self) -> &str {
        self.last_line.as_deref().unwrap_or_default()
    }

    /// The engine the log's own markers name so far.
    pub fn log_engine(&self) -> Option<Engine> {
        self.detected
    }

    /// The failure verdict on the lines so far.
    pub fn failure(&self) -> Option<&Failure> {
        self.classifier.verdict()
    }

    /// The line number of the first `[shutdown]` line so far.
    pub fn shutdown_lineno(&self) -> Option<usize> {
        self.classifier.shutdown_lineno()
    }

    /// The facts as they stand (a partial last line is not included until [`Analyzer::finish`]).
    pub fn facts(&self) -> BootFacts {
        let engine = self.detected.or(self.hint);
        let mut f = self.st.facts(engine, self.classifier.verdict());
        f.lines = self.lineno as u64;
        f.log_engine = self.detected;
        f.shutdown_lineno = self.classifier.shutdown_lineno();
        f
    }

    /// Ends the input (a last line without a line end counts) and returns the facts.
    pub fn finish(mut self) -> BootFacts {
        let mut events = Vec::new();
        let mut splitter = std::mem::take(&mut self.splitter);
        splitter.flush(&mut |raw| self.line(raw, &mut events));
        self.facts()
    }

    /// Ends the input and returns the events of a last line without a line end, then the facts.
    pub fn finish_with_events(mut self) -> (Vec<BootEvent>, BootFacts) {
        let mut events = Vec::new();
        let mut splitter = std::mem::take(&mut self.splitter);
        splitter.flush(&mut |raw| self.line(raw, &mut events));
        let facts = self.facts();
        (events, facts)
    }

    fn line(&mut self, raw: RawLine<'_>, events: &mut Vec<BootEvent>) {
        self.lineno += 1;
        let lineno = self.lineno;
        if raw.cut {
            self.st.f.lines_cut += 1;
        }
        let (mut text, lossy) = decode(raw.bytes, raw.cut);
        if lossy {
            self.st.f.lines_lossy += 1;
        }
        // One pass tells whether the line needs cleaning at all (most need none).
        let dirty = memchr::memchr2(0, 0x1b, text.as_bytes()).is_some();
        if dirty && memchr::memchr(0, text.as_bytes()).is_some() {
            // NUL runs come from files truncated while written (copytruncate); they carry nothing.
            text = Cow::Owned(text.replace('\0', ""));
        }
        let clean: Cow<'_, str> = if dirty {
            strip_ansi(&text)
        } else {
            Cow::Borrowed(&text)
        };
        let parts = split_vllm(&clean);
        if let Some((name, pid)) = parts.process {
            self.st.record_process(name, pid);
        }
        let in_head = self.head_chars < HEAD_CHARS;
        let found = scan(&clean, in_head);
        if in_head {
            self.head_chars += clean.chars().count() + 1;
            self.read_markers(&clean, found, lineno, events);
        }
        let msg = parts.message;
        let ready = found.any(READY);
        if !self.st.f.ready && !ready {
            let stamp = match parts.stamp {
                Some(s) => stamp_seconds(s),
                None => stamp_seconds(msg),
            };
            if let Some(s) = stamp {
                self.st.first_stamp.get_or_insert(s);
                self.st.last_stamp_before_ready = Some(s);
            }
        }
        if self.st.expect_llm_args {
            trtllm::read(&mut self.st, lineno, msg, found, events);
        } else if !found.is_empty() {
            trtllm::read(&mut self.st, lineno, msg, found, events);
            vllm::read(&mut self.st, lineno, msg, found, events);
            sglang::read(&mut self.st, lineno, msg, found, events);
            llamacpp::read(&mut self.st, lineno, msg, found, events);
        }
        if ready && !self.st.f.ready {
            self.st.f.ready = true;
            self.st.f.ready_lineno = Some(lineno);
            events.push(BootEvent {
                lineno,
                kind: BootEventKind::Ready,
            });
        }
        if self.st.f.ready && found.any(WARMUP_WORK) {
            events.push(BootEvent {
                lineno,
                kind: BootEventKind::WarmupWork {
                    line: first_chars(strip_other_stamps(msg).trim(), 300).to_string(),
                },
            });
        }
        // A line with no phrase can match no rule, end no ignored block and be no context.
        if !found.is_empty() {
            match self.classifier.feed(lineno, strip_other_stamps(msg), found) {
                Some(Change::Found(failure)) => events.push(BootEvent {
                    lineno,
                    kind: BootEventKind::FailureFound { failure },
                }),
                Some(Change::Cleared) => events.push(BootEvent {
                    lineno,
                    kind: BootEventKind::FailureCleared,
                }),
                None => {}
            }
        }
        if let Some(last) = &mut self.last_line {
            let shown = strip_other_stamps(msg).trim();
            if !shown.is_empty() && !is_progress_bar(shown) {
                last.clear();
                last.push_str(first_chars(shown, 300));
            }
        }
    }

    fn read_markers(
        &mut self,
        line: &str,
        found: Found,
        lineno: usize,
        events: &mut Vec<BootEvent>,
    ) {
        use Phrase as P;
        let m = &mut self.markers;
        if found.any(&[P::MarkTrtTag, P::MarkTrtServe, P::MarkTrtPath]) {
            m.trtllm |= found.has(P::MarkTrtTag)
                || (found.has(P::MarkTrtServe) && contains_word(line, "trtllm-serve"))
                || ["llmapi/", "serve/", "_torch/", "commands/"]
                    .iter()
                    .any(|sub| line.contains(&format!("tensorrt_llm/{sub}")));
        }
        m.sglang |= found.any(&[
            P::ServerArgs,
            P::MarkSglangDot,
            P::MarkSglangSlash,
            P::MarkSglangColons,
        ]);
        m.vllm |= found.any(&[
            P::MarkVllmInit,
            P::MarkVllmDot,
            P::MarkVllmSlash,
            P::MarkVllmColons,
            P::MarkEngineCore,
        ]);
        m.llamacpp |= found.has(P::MarkLlamaServer);
        let engine = m.engine();
        if engine != self.detected {
            self.detected = engine;
            if let Some(engine) = engine {
                events.push(BootEvent {
                    lineno,
                    kind: BootEventKind::EngineDetected { engine },
                });
            }
        }
    }
}

/// The lines that say the server is ready: uvicorn's for vLLM, SGLang and TensorRT-LLM,
/// llama-server's own.
const READY: &[Phrase] = &[Phrase::Ready, Phrase::LlamaListening];

/// The phrases of warm-up work: a graph compiled (vLLM's torch.compile lines) or CUDA graphs
/// captured (vLLM's and SGLang's end-of-capture lines; docs/design/tripwires.md#t20).
const WARMUP_WORK: &[Phrase] = &[
    Phrase::CompilingGraph,
    Phrase::TorchCompile,
    Phrase::GraphCaptured,
    Phrase::GraphEnd,
    Phrase::GraphEndLower,
];

fn contains_word(hay: &str, word: &str) -> bool {
    let is_word = |c: char| c.is_ascii_alphanumeric() || c == '_' || c == '-';
    hay.match_indices(word).any(|(i, _)| {
        let before = hay[..i].chars().next_back();
        let after = hay[i + word.len()..].chars().next();
        !before.is_some_and(is_word) && !after.is_some_and(is_word)
    })
}
