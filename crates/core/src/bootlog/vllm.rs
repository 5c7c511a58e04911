//! vLLM's boot lines, in the formats of 0.10 to 0.33 (docs/design/bootlog.md#vllm-lines).

use std::sync::LazyLock;

use regex::Regex;

use super::events::{parse_f64, parse_u64, set_pool, BootEvent, BootEventKind};
use super::phrases::{Found, Phrase as P};
use super::pyliteral;
use super::state::State;

#[allow(
    clippy::expect_used,
    reason = "this file's patterns are constants; its tests compile each"
)]
fn re(pattern: &str) -> Regex {
    Regex::new(pattern).expect("valid regex")
}

static ENGINE_INIT: LazyLock<Regex> =
    LazyLock::new(|| re(r"Initializing a V1 LLM engine \(v([^)\s]+)\)"));
static CAPTURE_SIZE: LazyLock<Regex> = LazyLock::new(|| re(r"'max_cudagraph_capture_size': (\d+)"));
static BANNER: LazyLock<Regex> = LazyLock::new(|| {
    re(r"(?:vLLM API server version |vLLM server version |\x{2588}  version )([0-9][^,\s]*)")
});
static OUT_OF: LazyLock<Regex> =
    LazyLock::new(|| re(r"Using (\S+) attention backend out of potential backends: (\[.*\])"));
static EXPLICIT: LazyLock<Regex> = LazyLock::new(|| re(r"Using (\S+) backend\.$"));
static ON_V1: LazyLock<Regex> = LazyLock::new(|| re(r"Using (.+?) backend on V1 engine\."));
static BLOCK: LazyLock<Regex> =
    LazyLock::new(|| re(r"Setting attention block size to (\d+) tokens"));
static PADDING: LazyLock<Regex> = LazyLock::new(|| re(r"Padding mamba page size by (-?[\d.]+)%"));
static KV_SIZE: LazyLock<Regex> = LazyLock::new(|| re(r"KV cache size: ([\d,]+) tokens"));
static CONCURRENCY: LazyLock<Regex> =
    LazyLock::new(|| re(r"Maximum concurrency for ([\d,]+) tokens per request: (-?[\d.]+)x"));
static AVAILABLE: LazyLock<Regex> =
    LazyLock::new(|| re(r"Available KV cache memory: (-?[\d.]+) GiB"));
static MODEL_LOAD: LazyLock<Regex> =
    LazyLock::new(|| re(r"Model loading took (-?[\d.]+) GiB(?: memory)? and (-?[\d.]+) seconds"));
static ESTIMATED: LazyLock<Regex> =
    LazyLock::new(|| re(r"Estimated CUDA graph memory: (-?[\d.]+) GiB"));
static POOL: LazyLock<Regex> =
    LazyLock::new(|| re(r"CUDA graph pool memory: (-?[\d.]+) GiB \(actual\)"));
static CAPTURED: LazyLock<Regex> =
    LazyLock::new(|| re(r"Graph capturing finished in [\d.]+ secs?, took (-?[\d.]+) GiB"));
static ACTUAL: LazyLock<Regex> = LazyLock::new(|| {
    re(r"Actual usage is (-?[\d.]+) GiB for consumed memory.*?(-?[\d.]+) GiB for peak activation")
});
static COMPILE: LazyLock<Regex> =
    LazyLock::new(|| re(r"torch\.compile (?:took|takes) (-?[\d.]+) s in total"));
static DOWNGRADE: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"(?:CUDAGraphMode\.)?(\w+) is not supported with spec-decode.*setting cudagraph_mode=(?:CUDAGraphMode\.)?(\w+)",
    )
});

/// Reads one vLLM line (its message, prefixes stripped) into the state.
pub(crate) fn read(
    st: &mut State,
    lineno: usize,
    msg: &str,
    found: Found,
    ev: &mut Vec<BootEvent>,
) {
    let event = |kind| BootEvent { lineno, kind };
    if found.any(&[
        P::EngineInit,
        P::ApiServerVersion,
        P::ServerVersion,
        P::LogoVersion,
    ]) {
        read_version(st, lineno, msg, found, ev);
    }
    if found.has(P::NonDefaultArgs) {
        if let Some(i) = msg.find("non-default args: ") {
            if let Some(args) = st.new_dict("non_default_args", &msg[i + 18..], lineno, msg) {
                st.f.non_default_args = Some(args);
            }
        }
    }
    if found.any(&[P::BackendOutOf, P::BackendDot, P::BackendOnV1]) {
        read_backend(st, lineno, msg, found, ev);
    }
    if found.has(P::BlockSize) {
        match BLOCK.captures(msg).and_then(|c| parse_u64(&c[1])) {
            Some(bs) => {
                st.note("attention_block_size", bs);
                st.f.attention_block_size = Some(bs);
                ev.push(event(BootEventKind::BlockSizeForced { tokens: bs }));
            }
            None => st.unparsed("attention_block_size", lineno, msg),
        }
    }
    if found.has(P::Padding) {
        match PADDING.captures(msg).and_then(|c| parse_f64(&c[1])) {
            Some(p) => {
                st.note("mamba_page_padding_pct", p);
                st.f.mamba_page_padding_pct = Some(p);
            }
            None => st.unparsed("mamba_page_padding_pct", lineno, msg),
        }
    }
    if found.has(P::KvCacheSize) {
        match KV_SIZE.captures(msg).and_then(|c| parse_u64(&c[1])) {
            Some(tokens) => set_pool(st, tokens, true, lineno, ev),
            None => st.unparsed("kv_pool", lineno, msg),
        }
    }
    if found.has(P::MaxConcurrency) {
        let parsed = CONCURRENCY
            .captures(msg)
            .and_then(|c| Some((parse_u64(&c[1])?, parse_f64(&c[2])?)));
        match parsed {
            Some((len, x)) => {
                st.note("max_concurrency_request_len", len);
                st.note("max_concurrency", x);
                st.f.max_concurrency_request_len = Some(len);
                st.f.max_concurrency = Some(x);
            }
            None => st.unparsed("kv_pool", lineno, msg),
        }
    }
    read_memory(st, lineno, msg, found);
    if found.has(P::SpecDowngrade) {
        match DOWNGRADE.captures(msg) {
            Some(c) => {
                let pair = (c[1].to_string(), c[2].to_string());
                st.note("cudagraph_mode_downgrade", &pair);
                st.f.cudagraph_mode_downgrade = Some(pair);
            }
            None => st.unparsed("cudagraph_mode_downgrade", lineno, msg),
        }
    }
    if found.has(P::AllreduceOff) {
        let why = allreduce_reason(msg);
        st.note("custom_allreduce_off", why);
        st.f.custom_allreduce_off = Some(why.to_string());
    }
    if found.has(P::EagerMode) {
        st.eager_line = true;
    }
    if found.has(P::CompilingGraph) {
        st.f.compiled_fresh = Some(true);
    }
    if found.has(P::LoadAot) && st.f.compiled_fresh != Some(true) {
        st.f.compiled_fresh = Some(false);
    }
    if found.has(P::Drafter) {
        st.after_drafter = true;
    }
}

/// Why vLLM's custom all-reduce is off, from its warning's wording
/// (`distributed/device_communicators/custom_all_reduce.py`, 0.32).
fn allreduce_reason(msg: &str) -> &'static str {
    if msg.contains("PCIe-only") {
        "more than two PCIe-only GPUs"
    } else if msg.contains("P2P") {
        "no GPU peer-to-peer access"
    } else if msg.contains("world size") {
        "an unsupported number of GPUs"
    } else if msg.contains("library") {
        "no custom all-reduce library"
    } else {
        "the log says it is disabled"
    }
}

fn read_version(st: &mut State, lineno: usize, msg: &str, found: Found, ev: &mut Vec<BootEvent>) {
    let before = st.f.vllm_version.clone().or(st.banner_version.clone());
    if found.has(P::EngineInit) {
        match ENGINE_INIT.captures(msg) {
            Some(c) => {
                st.note("vllm_version", &c[1]);
                st.f.vllm_version = Some(c[1].to_string());
            }
            None => st.unparsed("vllm_version", lineno, msg),
        }
        // `None` (the CPU build, eager mode) captures nothing.
        if let Some(n) = CAPTURE_SIZE.captures(msg).and_then(|c| parse_u64(&c[1])) {
            st.note("decode_graph_max_batch", n);
            st.f.decode_graph_max_batch = Some(n);
        }
    } else if let Some(c) = BANNER.captures(msg) {
        st.banner_version = Some(c[1].to_string());
    } else if !found.has(P::LogoVersion) {
        st.unparsed("vllm_version", lineno, msg);
    }
    let after = st.f.vllm_version.clone().or(st.banner_version.clone());
    if after != before {
        if let Some(v) = after {
            ev.push(BootEvent {
                lineno,
                kind: BootEventKind::VersionSeen { version: v },
            });
        }
    }
}

fn read_backend(st: &mut State, lineno: usize, msg: &str, found: Found, ev: &mut Vec<BootEvent>) {
    let mut candidates = Vec::new();
    let name = if found.has(P::BackendOutOf) {
        let Some(c) = OUT_OF.captures(msg) else {
            st.unparsed("selected_backend", lineno, msg);
            return;
        };
        match pyliteral::parse_value(c[2].trim_end_matches('.')) {
            Ok(serde_json::Value::Array(items)) => {
                candidates = items
                    .iter()
                    .filter_map(|v| v.as_str().map(str::to_string))
                    .collect();
            }
            _ => {
                st.unparsed("selected_backend", lineno, msg);
                return;
            }
        }
        c[1].to_string()
    } else if found.has(P::BackendOnV1) {
        let Some(c) = ON_V1.captures(msg) else {
            return;
        };
        v1_backend_name(&c[1])
    } else {
        // `Using X backend.` must end the line: `Using AttentionBackendEnum.X for
        // MMEncoderAttention.` and `Using backend X for vit attention` are vision encoders.
        let Some(c) = EXPLICIT.captures(msg.trim_end()) else {
            return;
        };
        c[1].trim_start_matches("AttentionBackendEnum.").to_string()
    };
    let drafter = st.after_drafter;
    let list = if drafter {
        &mut st.f.drafter_backends
    } else {
        &mut st.f.selected_backends
    };
    State::push_backend(list, &name);
    if !drafter {
        for cand in &candidates {
            State::push_backend(&mut st.f.candidate_backends, cand);
        }
    }
    ev.push(BootEvent {
        lineno,
        kind: BootEventKind::BackendSelected {
            backend: name,
            drafter,
        },
    });
}

/// 0.10–0.11 named backends in words: `Using Flash Attention backend on V1 engine.`
fn v1_backend_name(words: &str) -> String {
    match words {
        "Flash Attention" => "FLASH_ATTN".to_string(),
        "FlashInfer" => "FLASHINFER".to_string(),
        "Triton" => "TRITON_ATTN".to_string(),
        "FlexAttention" => "FLEX_ATTENTION".to_string(),
        other => other.to_uppercase().replace(' ', "_"),
    }
}

fn read_memory(st: &mut State, lineno: usize, msg: &str, found: Found) {
    if found.has(P::AvailableKv) {
        match AVAILABLE.captures(msg).and_then(|c| parse_f64(&c[1])) {
            Some(x) => {
                st.note("available_kv_cache_gib", x);
                st.f.available_kv_cache_gib = Some(x);
            }
            None => st.unparsed("available_kv_cache_gib", lineno, msg),
        }
    }
    if found.has(P::ModelLoading) {
        let parsed = MODEL_LOAD
            .captures(msg)
            .and_then(|c| Some((parse_f64(&c[1])?, parse_f64(&c[2])?)));
        match parsed {
            Some((gib, s)) => {
                st.note("model_load_gib", gib);
                st.note("model_load_s", s);
                st.f.model_load_gib = Some(gib);
                st.f.model_load_s = Some(s);
            }
            None => st.unparsed("model_load", lineno, msg),
        }
    }
    if found.has(P::EstimatedGraph) {
        match ESTIMATED.captures(msg).and_then(|c| parse_f64(&c[1])) {
            Some(x) => {
                st.note("cudagraph_estimated_gib", x);
                st.f.cudagraph_estimated_gib = Some(x);
            }
            None => st.unparsed("cudagraph_estimated_gib", lineno, msg),
        }
    }
    if found.has(P::GraphPool) {
        match POOL.captures(msg).and_then(|c| parse_f64(&c[1])) {
            Some(x) => {
                st.note("cudagraph_actual_gib", x);
                st.f.cudagraph_actual_gib = Some(x);
                st.graphs_seen = true;
            }
            None => st.unparsed("cudagraph_actual_gib", lineno, msg),
        }
    }
    if found.has(P::GraphCaptured) {
        match CAPTURED.captures(msg).and_then(|c| parse_f64(&c[1])) {
            Some(x) => {
                st.graph_capture_gib = Some(x);
                st.graphs_seen = true;
            }
            None => st.unparsed("cudagraph_actual_gib", lineno, msg),
        }
    }
    if found.has(P::ActualUsage) {
        let parsed = ACTUAL
            .captures(msg)
            .and_then(|c| Some((parse_f64(&c[1])?, parse_f64(&c[2])?)));
        match parsed {
            Some((consumed, peak)) => {
                st.note("consumed_gib", consumed);
                st.note("peak_activation_gib", peak);
                st.f.consumed_gib = Some(consumed);
                st.f.peak_activation_gib = Some(peak);
            }
            None => st.unparsed("memory_split", lineno, msg),
        }
    }
    if found.has(P::TorchCompile) && msg.contains("in total") {
        match COMPILE.captures(msg).and_then(|c| parse_f64(&c[1])) {
            Some(s) => st.compile_sum = Some(st.compile_sum.unwrap_or(0.0) + s),
            None => st.unparsed("compile_s", lineno, msg),
        }
    }
}
