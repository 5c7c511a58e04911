//! SGLang's boot lines, with 0.5.2's spellings (docs/design/bootlog.md#sglang-lines).

use std::sync::LazyLock;

use regex::Regex;

use super::events::{parse_f64, parse_u64, set_pool, BootEvent, BootEventKind};
use super::phrases::{Found, Phrase as P};
use super::state::{round2, State};

#[allow(
    clippy::expect_used,
    reason = "this file's patterns are constants; its tests compile each"
)]
fn re(pattern: &str) -> Regex {
    Regex::new(pattern).expect("valid regex")
}

static KV_TOKENS: LazyLock<Regex> = LazyLock::new(|| re(r"#tokens: ([\d,]+)"));
static KV_SIZES: LazyLock<Regex> =
    LazyLock::new(|| re(r"K size: (-?[\d.]+) GB, V size: (-?[\d.]+) GB|KV size: (-?[\d.]+) GB"));
static MEM_USAGE: LazyLock<Regex> = LazyLock::new(|| re(r"mem usage=(-?[\d.]+) GB"));
static ELAPSED: LazyLock<Regex> = LazyLock::new(|| re(r"elapsed=(-?[\d.]+) s"));
static CAPPED: LazyLock<Regex> =
    LazyLock::new(|| re(r"max_running_requests is capped to (\d+) by the (.+?)(?: \(|\.|,|$)"));
static TOTAL_TOKENS: LazyLock<Regex> = LazyLock::new(|| re(r"max_total_num_tokens=(\d+)"));
static RUNNING: LazyLock<Regex> = LazyLock::new(|| re(r"max_running_requests=(\d+)"));
static DECODE_BS: LazyLock<Regex> = LazyLock::new(|| re(r"\bbs=\[([\d, ]+)\]"));
static DEFAULT_BACKEND: LazyLock<Regex> =
    LazyLock::new(|| re(r"Attention backend not specified\. Use (\S+) backend by default"));

/// `Capture target decode CUDA graph begin. … bs=[1, 2, …, 32]`: the largest decode batch
/// captured as a graph.
fn read_decode_graphs(st: &mut State, lineno: usize, msg: &str) {
    let largest = DECODE_BS.captures(msg).and_then(|c| {
        c[1].split(',')
            .filter_map(|b| b.trim().parse::<u64>().ok())
            .max()
    });
    match largest {
        Some(bs) => {
            st.note("decode_graph_max_batch", bs);
            st.f.decode_graph_max_batch = Some(bs);
        }
        None => st.unparsed("decode_graph_max_batch", lineno, msg),
    }
}

/// Reads one SGLang line into the state.
pub(crate) fn read(
    st: &mut State,
    lineno: usize,
    msg: &str,
    found: Found,
    ev: &mut Vec<BootEvent>,
) {
    if found.has(P::ServerArgs) {
        if let Some(i) = msg.find("server_args={") {
            if let Some(args) = st.new_dict("server_args", &msg[i + 12..], lineno, msg) {
                st.f.server_args = Some(args);
            }
        }
    }
    if found.has(P::KvAllocated) {
        read_kv(st, lineno, msg, ev);
    }
    if found.has(P::LoadWeightEnd) {
        match MEM_USAGE.captures(msg).and_then(|c| parse_f64(&c[1])) {
            Some(gib) => {
                st.note("model_load_gib", gib);
                st.f.model_load_gib = Some(gib);
                if let Some(s) = ELAPSED.captures(msg).and_then(|c| parse_f64(&c[1])) {
                    st.note("model_load_s", s);
                    st.f.model_load_s = Some(s);
                }
            }
            None => st.unparsed("model_load", lineno, msg),
        }
    }
    if found.has(P::DecodeGraphBegin) {
        read_decode_graphs(st, lineno, msg);
    }
    if found.any(&[P::GraphEnd, P::GraphEndLower]) {
        match MEM_USAGE.captures(msg).and_then(|c| parse_f64(&c[1])) {
            Some(gib) => {
                st.sglang_graph_sum = Some(st.sglang_graph_sum.unwrap_or(0.0) + gib);
                st.graphs_seen = true;
            }
            None => st.unparsed("sglang_cudagraph_gib", lineno, msg),
        }
    }
    if found.has(P::RunningCapped) {
        let parsed = CAPPED
            .captures(msg)
            .and_then(|c| Some((parse_u64(&c[1])?, c[2].trim().to_string())));
        match parsed {
            Some((cap, reason)) => {
                st.note("running_cap", cap);
                st.note("running_cap_reason", &reason);
                st.f.running_cap = Some(cap);
                st.f.running_cap_reason = Some(reason);
            }
            None => st.unparsed("sglang_running_cap_reason", lineno, msg),
        }
    }
    if found.has(P::MaxTotalTokens) {
        let tokens = TOTAL_TOKENS.captures(msg).and_then(|c| parse_u64(&c[1]));
        let running = RUNNING.captures(msg).and_then(|c| parse_u64(&c[1]));
        match tokens {
            Some(t) => set_pool(st, t, true, lineno, ev),
            None => st.unparsed("sglang_limits", lineno, msg),
        }
        if let Some(r) = running {
            st.note("running_cap", r);
            st.f.running_cap = Some(r);
        }
    }
    if found.has(P::DefaultBackend) {
        match DEFAULT_BACKEND.captures(msg) {
            Some(c) => {
                st.sglang_default_backend = true;
                if State::push_backend(&mut st.f.selected_backends, &c[1]) {
                    ev.push(BootEvent {
                        lineno,
                        kind: BootEventKind::BackendSelected {
                            backend: c[1].to_string(),
                            drafter: false,
                        },
                    });
                }
            }
            None => st.unparsed("sglang_default_backend", lineno, msg),
        }
    }
}

/// `KV Cache is allocated. dtype: torch.bfloat16, #tokens: 17675, K size: 0.54 GB, V size: 0.54 GB`
fn read_kv(st: &mut State, lineno: usize, msg: &str, ev: &mut Vec<BootEvent>) {
    let tokens = KV_TOKENS.captures(msg).and_then(|c| parse_u64(&c[1]));
    let gib = KV_SIZES
        .captures(msg)
        .and_then(|c| match (c.get(1), c.get(2), c.get(3)) {
            (Some(k), Some(v), _) => Some(round2(parse_f64(k.as_str())? + parse_f64(v.as_str())?)),
            (_, _, Some(kv)) => parse_f64(kv.as_str()),
            _ => None,
        });
    match (tokens, gib) {
        (Some(t), Some(g)) => {
            set_pool(st, t, true, lineno, ev);
            st.note("available_kv_cache_gib", g);
            st.f.available_kv_cache_gib = Some(g);
        }
        _ => st.unparsed("sglang_kv_pool", lineno, msg),
    }
}
