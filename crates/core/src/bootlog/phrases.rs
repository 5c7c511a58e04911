//! The key phrases that identify the lines worth reading. One Aho-Corasick pass over a line tells
//! which phrases it holds, so the lines that hold none (nearly all of a serving log) cost one scan.

use std::sync::LazyLock;

use aho_corasick::{AhoCorasick, AhoCorasickKind, MatchKind};

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
    // SGLang (docs/design/bootlog.md#sglang-lines)
    ServerArgs = "server_args={",
    KvAllocated = "KV Cache is allocated.",
    LoadWeightEnd = "Load weight end.",
    GraphEnd = "CUDA graph end.",
    GraphEndLower = "cuda graph end.",
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

struct Automata {
    all: AhoCorasick,
    all_ids: Vec<Phrase>,
    body: AhoCorasick,
    body_ids: Vec<Phrase>,
}

static AUTOMATA: LazyLock<Automata> = LazyLock::new(|| {
    let build = |set: &[(Phrase, &str)]| {
        let ac = AhoCorasick::builder()
            .match_kind(MatchKind::Standard)
            .kind(Some(AhoCorasickKind::DFA))
            .build(set.iter().map(|(_, t)| t))
            .expect("the phrase table builds");
        (ac, set.iter().map(|(p, _)| *p).collect::<Vec<_>>())
    };
    let (all, all_ids) = build(PHRASES);
    let body_set: Vec<(Phrase, &str)> = PHRASES
        .iter()
        .copied()
        .filter(|(p, _)| (*p as u8) < FIRST_MARKER as u8)
        .collect();
    let (body, body_ids) = build(&body_set);
    Automata {
        all,
        all_ids,
        body,
        body_ids,
    }
});

/// The phrases in `line`; engine markers too when `with_markers`.
pub fn scan(line: &str, with_markers: bool) -> Found {
    let a = &*AUTOMATA;
    let (ac, ids) = if with_markers {
        (&a.all, &a.all_ids)
    } else {
        (&a.body, &a.body_ids)
    };
    let mut found = Found::default();
    for m in ac.find_overlapping_iter(line) {
        found.insert(ids[m.pattern().as_usize()]);
    }
    found
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
}
