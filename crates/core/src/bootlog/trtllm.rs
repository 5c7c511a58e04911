//! TensorRT-LLM's boot lines (docs/design/bootlog.md#tensorrt-llm-lines). Several are printed more
//! than once by design (a dry run sizes the pool before the real one), so they are last-wins and
//! never conflicts.

use std::sync::LazyLock;

use regex::Regex;
use serde_json::{Map, Value};

use super::classify::is_answered_post;
use super::events::{parse_f64, parse_u64, set_pool, BootEvent, BootEventKind};
use super::phrases::{Found, Phrase as P};
use super::state::State;

#[allow(
    clippy::expect_used,
    reason = "this file's patterns are constants; its tests compile each"
)]
fn re(pattern: &str) -> Regex {
    Regex::new(pattern).expect("valid regex")
}

static VERSION: LazyLock<Regex> = LazyLock::new(|| re(r"LLM version: (\S+)"));
static PAGED: LazyLock<Regex> =
    LazyLock::new(|| re(r"Allocated (-?[\d.]+) GiB for max tokens in paged KV cache \((\d+)\)"));
static PER_BLOCK: LazyLock<Regex> = LazyLock::new(|| re(r"tokens per block=(\d+)"));
static MAX_REQUESTS: LazyLock<Regex> = LazyLock::new(|| re(r"max_num_requests=(\d+)"));
static MAX_BATCH: LazyLock<Regex> = LazyLock::new(|| re(r"max_batch_size=(\d+)"));
static WEIGHTS: LazyLock<Regex> = LazyLock::new(|| re(r"profiling: (-?[\d.]+) GiB"));
static PAUSE: LazyLock<Regex> = LazyLock::new(|| re(r"request ID \d+ -> pause"));
static MODEL: LazyLock<Regex> = LazyLock::new(|| re(r"(?:^|\s)model='([^']*)'"));
static SETTING: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"(?:^|[\s(,])(attn_backend|max_batch_size|max_num_tokens|max_seq_len|free_gpu_memory_fraction|tokens_per_block|capacity_scheduler_policy|enable_chunked_prefill|speculative_config|kv_cache_dtype|disable_overlap_scheduler)=(<\w+\.)?'?([^\s,)'>:]*)",
    )
});

/// Reads one TensorRT-LLM line into the state. `msg` is the whole line (it has no vLLM prefix).
pub(crate) fn read(
    st: &mut State,
    lineno: usize,
    msg: &str,
    found: Found,
    ev: &mut Vec<BootEvent>,
) {
    if st.expect_llm_args {
        st.expect_llm_args = false;
        read_llm_args(st, lineno, msg, ev);
        return;
    }
    if found.any(&[P::TrtVersion, P::TrtVersionDash]) {
        match VERSION.captures(msg) {
            Some(c) => {
                if st.f.engine_version.as_deref() != Some(&c[1]) {
                    ev.push(BootEvent {
                        lineno,
                        kind: BootEventKind::VersionSeen {
                            version: c[1].to_string(),
                        },
                    });
                }
                st.f.engine_version = Some(c[1].to_string());
            }
            None => st.unparsed("engine_version", lineno, msg),
        }
    }
    if found.has(P::PagedKv) {
        let parsed = PAGED
            .captures(msg)
            .and_then(|c| Some((parse_f64(&c[1])?, parse_u64(&c[2])?)));
        match parsed {
            Some((gib, tokens)) => {
                set_pool(st, tokens, false, lineno, ev);
                st.f.available_kv_cache_gib = Some(gib);
            }
            None => st.unparsed("trt_kv_pool", lineno, msg),
        }
    }
    if found.has(P::TokensPerBlock) {
        match PER_BLOCK.captures(msg).and_then(|c| parse_u64(&c[1])) {
            Some(n) => st.f.page_size = Some(n),
            None => st.unparsed("page_size", lineno, msg),
        }
    }
    if found.has(P::MaxNumRequests) {
        match MAX_REQUESTS.captures(msg).and_then(|c| parse_u64(&c[1])) {
            Some(n) => {
                st.f.running_cap = Some(n);
                st.f.requested_running = MAX_BATCH
                    .captures(msg)
                    .and_then(|c| parse_u64(&c[1]))
                    .or(st.f.requested_running);
            }
            None => st.unparsed("trt_limits", lineno, msg),
        }
    }
    if found.has(P::WeightsLoaded) {
        match WEIGHTS.captures(msg).and_then(|c| parse_f64(&c[1])) {
            Some(gib) => {
                st.note("model_load_gib", gib);
                st.f.model_load_gib = Some(gib);
            }
            None => st.unparsed("model_load_gib", lineno, msg),
        }
    }
    if found.has(P::LlmArgs) && msg.trim_end().ends_with("LLM Args:") {
        st.expect_llm_args = true;
    }
    if found.has(P::Post) && is_answered_post(msg) {
        st.served += 1;
    }
    if found.has(P::Pause) && PAUSE.is_match(msg) {
        st.pauses += 1;
    }
    if found.has(P::TrtInfo) {
        st.trt_info_lines = true;
    }
}

/// The settings line after `LLM Args:`: kept whole as `llm_args`, plus the settings the checks
/// read, first occurrence of each (nested configs repeat some names later in the line).
fn read_llm_args(st: &mut State, lineno: usize, line: &str, ev: &mut Vec<BootEvent>) {
    let mut args = Map::new();
    args.insert("llm_args".to_string(), Value::String(line.to_string()));
    for c in SETTING.captures_iter(line) {
        let key = c[1].to_string();
        if !args.contains_key(&key) {
            args.insert(key, setting_value(&c[3]));
        }
    }
    if args.len() == 1 && !line.contains('=') {
        st.unparsed("trt_llm_args", lineno, line);
        return;
    }
    if let Some(c) = MODEL.captures(line) {
        st.note("model", &c[1]);
        st.f.model = Some(c[1].to_string());
        // The line starts with `model='…'`, which no separator precedes: kept among the
        // settings as 0.3.1 kept it (`server_args["model"]`).
        args.entry("model".to_string())
            .or_insert_with(|| Value::String(c[1].to_string()));
    }
    if let Some(Value::String(b)) = args.get("attn_backend") {
        ev.push(BootEvent {
            lineno,
            kind: BootEventKind::BackendSelected {
                backend: b.clone(),
                drafter: false,
            },
        });
    }
    st.note("server_args", &args);
    st.forget_dict("server_args");
    st.f.server_args = Some(args);
}

/// `32` → 32, `0.9` → 0.9, `False` → false, `None` → null, anything else as text.
fn setting_value(raw: &str) -> Value {
    match raw {
        "True" => Value::Bool(true),
        "False" => Value::Bool(false),
        "None" => Value::Null,
        _ => {
            if let Ok(n) = raw.parse::<i64>() {
                Value::from(n)
            } else if let Some(x) = parse_f64(raw) {
                Value::from(x)
            } else {
                Value::String(raw.to_string())
            }
        }
    }
}
