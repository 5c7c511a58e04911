//! The key phrases that identify the lines worth reading, and the search that tells which of them
//! a line holds. Nearly every line of a serving log holds none, so that search is most of what
//! reading a log costs (docs/design/bootlog.md#speed).
//!
//! The search looks for a few short *anchors* (each phrase holds at least one) with a SIMD packed
//! searcher (Teddy, from the `aho-corasick` crate), and checks each anchor hit against the phrases
//! that hold it. One overlapping pass of an Aho-Corasick DFA over all the phrases gives the same
//! answer about three times slower (its table does not fit in the L1 cache); it is kept for CPUs
//! without Teddy (no SSSE3) and as the reference the tests compare against.

use std::sync::LazyLock;

use aho_corasick::packed;
use aho_corasick::{AhoCorasick, AhoCorasickKind, MatchKind, Span};

macro_rules! phrases {
    ($($name:ident = $text:expr,)*) => {
        /// A key phrase. The discriminant is its bit in a [`Found`] set.
        #[derive(Clone, Copy, Debug, PartialEq, Eq)]
        #[repr(u8)]
        pub enum Phrase { $($name,)* }

        const PHRASES: &[(Phrase, &str)] = &[$((Phrase::$name, $text),)*];
    };
}

phrases! {
    // vLLM 0.10-0.33 (docs/design/bootlog.md#vllm-lines)
    EngineInit = "Initializing a V1 LLM engine (v",
    ApiServerVersion = "vLLM API server version ",
    ServerVersion = "vLLM server version ",
    LogoVersion = "\u{2588}  version ",
    NonDefaultArgs = "non-default args: ",
    BackendOutOf = "attention backend out of potential backends",
    BackendDot = " backend.",
    BackendOnV1 = " backend on V1 engine.",
    BlockSize = "Setting attention block size to ",
    Padding = "Padding mamba page size by ",
    KvCacheSize = "KV cache size: ",
    MaxConcurrency = "Maximum concurrency for ",
    AvailableKv = "Available KV cache memory: ",
    ModelLoading = "Model loading took ",
    EstimatedGraph = "Estimated CUDA graph memory: ",
    GraphPool = "CUDA graph pool memory: ",
    GraphCaptured = "Graph capturing finished in ",
    ActualUsage = "Actual usage is ",
    TorchCompile = "torch.compile t",
    SpecDowngrade = "is not supported with spec-decode",
    EagerMode = "Cudagraph is disabled under eager mode",
    CompilingGraph = "Compiling a graph for ",
    LoadAot = "Directly load AOT compilation",
    Drafter = "Loading drafter model",
    AllreduceOff = "Custom allreduce is disabled",
    // SGLang (docs/design/bootlog.md#sglang-lines)
    ServerArgs = "server_args={",
    KvAllocated = "KV Cache is allocated.",
    LoadWeightEnd = "Load weight end.",
    GraphEnd = "CUDA graph end.",
    GraphEndLower = "cuda graph end.",
    DecodeGraphBegin = "decode CUDA graph begin",
    RunningCapped = "max_running_requests is capped to ",
    MaxTotalTokens = "max_total_num_tokens=",
    DefaultBackend = "Attention backend not specified. Use ",
    // TensorRT-LLM (docs/design/bootlog.md#tensorrt-llm-lines)
    TrtVersion = "TensorRT LLM version: ",
    TrtVersionDash = "TensorRT-LLM version: ",
    PagedKv = "for max tokens in paged KV cache (",
    TokensPerBlock = "tokens per block=",
    MaxNumRequests = "max_num_requests=",
    WeightsLoaded = "after loading weights (inside torch) in memory usage profiling: ",
    LlmArgs = "LLM Args:",
    Pause = "-> pause",
    TrtInfo = "[TRT-LLM] [I]",
    // llama.cpp's llama-server (docs/design/bootlog.md#llamacpp-lines)
    LlamaLoadingModel = "load_model: loading model '",
    LlamaSlots = "initializing, n_slots = ",
    LlamaListening = "llama_server: listening on ",
    LlamaLoadFailed = "failed to load model",
    LlamaGgufOpen = "failed to open GGUF file",
    // Every engine
    Ready = "Application startup complete",
    Post = "\"POST /",
    // The failure classifier (docs/design/bootlog.md#the-failure-classifier)
    Shutdown = "[shutdown]",
    IgnoreImport = "Ignore import error",
    StartOf = "[start of ",
    EndOf = "[end of ",
    Incompatible = "CUDA compiler and CUDA toolkit headers are incompatible",
    Ptxas = "ptxas",
    NvccFatal = "nvcc fatal",
    LdCannotFind = "ld: cannot find",
    NinjaFailed = "Ninja build failed",
    NinjaStopped = "ninja: build stopped",
    OomError = "OutOfMemoryError",
    CudaOom = "CUDA out of memory",
    NoCacheMemory = "No available memory for the cache blocks",
    KvTooSmall = "KV cache is needed, which is larger than the available KV cache memory",
    Accelerator = "AcceleratorError: ",
    CudaError = "CUDA error: ",
    Error = "Error",
    Exception = "Exception",
    EngineDead = "EngineDeadError",
    EngineFatal = "EngineCore encountered a fatal error",
    Assert = "assert ",
    FileFrame = "File \"",
    PrefillBatch = "Prefill batch",
    DecodeBatch = "Decode batch",
    VllmStats = "Avg generation throughput: ",
    // Engine markers, looked for in a log's first 200,000 characters only
    // (docs/design/engines.md#auto-detection)
    MarkTrtTag = "[TensorRT-LLM]",
    MarkTrtServe = "trtllm-serve",
    MarkTrtPath = "tensorrt_llm/",
    MarkSglangDot = "sglang.",
    MarkSglangSlash = "sglang/",
    MarkSglangColons = "sglang::",
    MarkVllmInit = "Initializing a V1 LLM engine",
    MarkVllmDot = "vllm.",
    MarkVllmSlash = "vllm/",
    MarkVllmColons = "VLLM::",
    MarkEngineCore = "(EngineCore pid=",
    MarkLlamaServer = "llama_server: ",
}

/// The first marker phrase: phrases from here on are only looked for in a log's head.
const FIRST_MARKER: Phrase = Phrase::MarkTrtTag;

/// The set of phrases found in a line.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Found(u128);

impl Found {
    pub fn has(self, p: Phrase) -> bool {
        self.0 & (1u128 << p as u8) != 0
    }

    pub fn any(self, ps: &[Phrase]) -> bool {
        ps.iter().any(|p| self.has(*p))
    }

    pub fn is_empty(self) -> bool {
        self.0 == 0
    }

    fn insert(&mut self, p: Phrase) {
        self.0 |= 1u128 << p as u8;
    }
}

/// The anchors: short strings, rare in a serving log's ordinary lines, such that every phrase
/// holds one (the first listed that it holds is its anchor). Fewer anchors make the packed search
/// faster; a rarer anchor makes fewer hits to check. A phrase that holds none becomes its own
/// anchor, which costs speed, not correctness (`every_phrase_has_an_anchor` fails on it).
const ANCHORS: &[&str] = &[
    "LLM",
    "\u{2588}",
    "args",
    "backend",
    " block",
    "Padding",
    "KV ",
    "concurrency",
    "oading",
    "CUDA",
    "raph ",
    "Actual",
    "ompil",
    "spec-decode",
    "Cudagraph",
    "allreduce",
    "weight",
    "max_",
    "-> p",
    "startup",
    "POST",
    "[sh",
    "[st",
    "[en",
    "Ignore",
    "ptxas",
    "fatal",
    "ld: ",
    "inja",
    "Error",
    "Exception",
    "assert",
    "File",
    " batch",
    "Avg ",
    // Engine markers (the head of a log only)
    "trtllm",
    "rt_llm",
    "sglang",
    "vllm",
    "EngineCore",
    "llama_",
    "n_slots",
    "to load",
    "GGUF",
];

/// A search for one set of phrases.
enum Search {
    /// Teddy over the anchors; `holders[a]` lists each phrase holding anchor `a`, with the
    /// anchor's offset in it (once per place it holds it), and also the holders of every shorter
    /// anchor that `a` starts with: at a place where several anchors match, leftmost-longest
    /// search reports only the longest.
    Anchored {
        teddy: packed::Searcher,
        holders: Vec<Vec<(Phrase, &'static str, usize)>>,
    },
    /// One overlapping pass of an Aho-Corasick DFA; `ids[pattern]` is the phrase.
    Automaton { ac: AhoCorasick, ids: Vec<Phrase> },
}

impl Search {
    fn new(set: &[(Phrase, &'static str)]) -> Search {
        Search::anchored(set).unwrap_or_else(|| Search::automaton(set))
    }

    #[allow(
        clippy::expect_used,
        reason = "the phrase tables are constants; the tests build each"
    )]
    fn automaton(set: &[(Phrase, &'static str)]) -> Search {
        let ac = AhoCorasick::builder()
            .match_kind(MatchKind::Standard)
            .kind(Some(AhoCorasickKind::DFA))
            .build(set.iter().map(|(_, t)| t))
            .expect("the phrase table builds");
        Search::Automaton {
            ac,
            ids: set.iter().map(|(p, _)| *p).collect(),
        }
    }

    /// None where the CPU has no packed searcher.
    fn anchored(set: &[(Phrase, &'static str)]) -> Option<Search> {
        let mut anchors: Vec<&'static str> = Vec::new();
        let mut holders: Vec<Vec<(Phrase, &'static str, usize)>> = Vec::new();
        for &(phrase, text) in set {
            let anchor = anchor_of(text).unwrap_or(text);
            let a = match anchors.iter().position(|x| *x == anchor) {
                Some(a) => a,
                None => {
                    anchors.push(anchor);
                    holders.push(Vec::new());
                    anchors.len() - 1
                }
            };
            holders[a].extend(
                text.match_indices(anchor)
                    .map(|(off, _)| (phrase, text, off)),
            );
        }
        let own = holders.clone();
        for (a, long) in anchors.iter().enumerate() {
            for (b, short) in anchors.iter().enumerate() {
                if a != b && long.starts_with(short) {
                    holders[a].extend_from_slice(&own[b]);
                }
            }
        }
        let teddy = packed::Config::new()
            .match_kind(packed::MatchKind::LeftmostLongest)
            .builder()
            .extend(&anchors)
            .build()?;
        Some(Search::Anchored { teddy, holders })
    }

    fn scan(&self, line: &str) -> Found {
        let mut found = Found::default();
        match self {
            Search::Anchored { teddy, holders } => {
                let b = line.as_bytes();
                let mut at = 0;
                // Every place an anchor starts: after a hit at i, the next search starts at i + 1,
                // so overlapping anchors are all seen.
                while let Some(m) = teddy.find_in(b, Span::from(at..b.len())) {
                    let i = m.start();
                    for &(phrase, text, off) in &holders[m.pattern().as_usize()] {
                        if i >= off && b[i - off..].starts_with(text.as_bytes()) {
                            found.insert(phrase);
                        }
                    }
                    at = i + 1;
                }
            }
            Search::Automaton { ac, ids } => {
                for m in ac.find_overlapping_iter(line) {
                    found.insert(ids[m.pattern().as_usize()]);
                }
            }
        }
        found
    }
}

/// The first anchor a phrase holds.
fn anchor_of(text: &str) -> Option<&'static str> {
    ANCHORS.iter().copied().find(|a| text.contains(a))
}

/// Phrases with their texts.
type PhraseSet = Vec<(Phrase, &'static str)>;

/// The phrases looked for in a log's head (all) and in the rest (all but the engine markers).
fn sets() -> (PhraseSet, PhraseSet) {
    let body = PHRASES
        .iter()
        .copied()
        .filter(|(p, _)| (*p as u8) < FIRST_MARKER as u8)
        .collect();
    (PHRASES.to_vec(), body)
}

static SEARCHES: LazyLock<(Search, Search)> = LazyLock::new(|| {
    let (all, body) = sets();
    (Search::new(&all), Search::new(&body))
});

/// The phrases in `line`; engine markers too when `with_markers`.
pub fn scan(line: &str, with_markers: bool) -> Found {
    let (all, body) = &*SEARCHES;
    if with_markers { all } else { body }.scan(line)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_overlapping_phrases() {
        let f = scan(
            "(EngineCore pid=1) ERROR torch.OutOfMemoryError: CUDA out of memory.",
            true,
        );
        assert!(f.has(Phrase::OomError));
        assert!(f.has(Phrase::CudaOom));
        assert!(f.has(Phrase::Error));
        assert!(f.has(Phrase::MarkEngineCore));
        let f = scan("(EngineCore pid=1) ERROR x", false);
        assert!(!f.has(Phrase::MarkEngineCore), "markers only in the head");
        assert!(scan("nothing here", true).is_empty());
        assert!(PHRASES.len() <= 128);
    }

    #[test]
    fn every_phrase_has_an_anchor() {
        for (p, text) in PHRASES {
            assert!(
                anchor_of(text).is_some(),
                "{p:?} ({text:?}) holds none of ANCHORS: add one it holds"
            );
        }
    }

    /// Both searches of one phrase set.
    fn both(set: &[(Phrase, &'static str)]) -> (Search, Search) {
        let anchored = Search::anchored(set).expect("this CPU has a packed searcher");
        (anchored, Search::automaton(set))
    }

    fn agree(searches: &(Search, Search), line: &str, origin: &str) {
        assert_eq!(
            searches.0.scan(line),
            searches.1.scan(line),
            "the anchored search and the automaton disagree on {origin}: {line:?}"
        );
    }

    #[test]
    fn a_phrase_without_an_anchor_is_its_own_and_shorter_anchors_are_not_hidden() {
        // Neither text holds an anchor, so each is its own, and "zq" starts "zqw": where "zqw"
        // is found, leftmost-longest reports only it, and "zq" must come from its holders.
        let set = [
            (Phrase::Ready, "zq"),
            (Phrase::Post, "zqw"),
            (Phrase::Error, "Error"),
        ];
        let (anchored, automaton) = both(&set);
        for line in ["zqw", "a zq b", "zzqw Error", "zq", "qw", "Erro"] {
            assert_eq!(anchored.scan(line), automaton.scan(line), "{line}");
        }
        let f = anchored.scan("xzqwx");
        assert!(f.has(Phrase::Ready) && f.has(Phrase::Post) && !f.has(Phrase::Error));
    }

    #[test]
    fn the_anchored_search_agrees_with_the_automaton_on_recorded_logs() {
        let (all, body) = sets();
        let (all, body) = (both(&all), both(&body));
        let mut logs = Vec::new();
        if let Some(dir) = crate::testkit::evidence_dir() {
            collect_logs(&dir, &mut logs);
        }
        collect_logs(&crate::testkit::engine_samples_dir(), &mut logs);
        assert!(logs.len() >= 10, "too few logs found: {logs:?}");
        let mut lines = 0;
        let mut with_phrase = 0;
        for path in &logs {
            let text =
                String::from_utf8_lossy(&std::fs::read(path).expect("readable log")).into_owned();
            for line in text.lines() {
                agree(&all, line, &path.display().to_string());
                agree(&body, line, &path.display().to_string());
                lines += 1;
                with_phrase += usize::from(!all.1.scan(line).is_empty());
            }
        }
        assert!(
            lines > 10_000 && with_phrase > 1_000,
            "{lines} lines, {with_phrase} with a phrase"
        );
    }

    fn collect_logs(dir: &std::path::Path, out: &mut Vec<std::path::PathBuf>) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for e in entries.flatten() {
            let path = e.path();
            if path.is_dir() {
                collect_logs(&path, out);
            } else if path.extension().is_some_and(|x| x == "log" || x == "txt") {
                out.push(path);
            }
        }
    }

    #[test]
    fn the_anchored_search_agrees_with_the_automaton_on_made_up_lines() {
        use rand::{Rng, SeedableRng};
        // Lines of phrase pieces (prefixes, suffixes, whole phrases, phrases run into each
        // other), anchors and noise: where a wrong offset or a missed overlap would show.
        let mut rng = rand::rngs::StdRng::seed_from_u64(0x1f_e7);
        let (all, body) = sets();
        let (all_s, body_s) = (both(&all), both(&body));
        let noise = [
            "", " ", "x", "Err", "[", "\u{2588}", "é", ": ", "\"", "LL", "ba",
        ];
        let mut phrases_seen = 0u128;
        for _ in 0..20_000 {
            let mut line = String::new();
            for _ in 0..rng.random_range(1..6) {
                match rng.random_range(0..4) {
                    0 => {
                        let (_, t) = all[rng.random_range(0..all.len())];
                        line.push_str(t);
                    }
                    1 => {
                        let (_, t) = all[rng.random_range(0..all.len())];
                        let cut = rng.random_range(0..=t.len());
                        if let (Some(a), Some(b)) = (t.get(..cut), t.get(cut..)) {
                            line.push_str(if rng.random_bool(0.5) { a } else { b });
                        }
                    }
                    2 => line.push_str(ANCHORS[rng.random_range(0..ANCHORS.len())]),
                    _ => line.push_str(noise[rng.random_range(0..noise.len())]),
                }
            }
            agree(&all_s, &line, "a made-up line");
            agree(&body_s, &line, "a made-up line");
            phrases_seen |= all_s.1.scan(&line).0;
        }
        assert_eq!(
            phrases_seen.count_ones() as usize,
            PHRASES.len(),
            "every phrase was tried"
        );
    }
}
