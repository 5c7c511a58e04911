//! What the analyzer has learnt so far, and how it becomes [`BootFacts`]: conflicts between two
//! boots in one file, unparsed lines, summed fields, and the facts derived from the settings
//! dicts once the whole log is known.

use std::collections::BTreeMap;

use serde::Serialize;
use serde_json::{Map, Value};

use super::classify::Failure;
use super::facts::{BootFacts, Unparsed};
use super::lines::elapsed;
use crate::engine::Engine;
use crate::fmt::first_chars;

/// At most this many unparsed lines are kept (the rest are counted).
const MAX_UNPARSED: usize = 1000;
/// At most this many distinct values are kept per field for `conflicts`.
const MAX_DISTINCT: usize = 16;
/// At most this many entries in a list fact (backends, pids).
pub(crate) const MAX_LIST: usize = 64;

/// The analyzer's running state. Fields set straight from a line live in `f`; the rest are
/// combined in [`State::facts`].
#[derive(Clone, Debug, Default)]
pub(crate) struct State {
    pub f: BootFacts,
    /// Distinct values seen per field, for `conflicts`.
    seen: BTreeMap<&'static str, Vec<Value>>,
    pub compile_sum: Option<f64>,
    pub sglang_graph_sum: Option<f64>,
    /// `Graph capturing finished …, took X GiB`: the graph memory when no pool line says it.
    pub graph_capture_gib: Option<f64>,
    /// A CUDA-graph pool (or capture) line was seen.
    pub graphs_seen: bool,
    pub eager_line: bool,
    pub after_drafter: bool,
    pub sglang_default_backend: bool,
    /// The previous line ended in `LLM Args:`: this one holds TensorRT-LLM's settings.
    pub expect_llm_args: bool,
    pub trt_info_lines: bool,
    pub pauses: u64,
    pub served: u64,
    /// The version in vLLM's logo or server-version line (the engine line wins).
    pub banner_version: Option<String>,
    pub unparsed_more: u64,
    pub first_stamp: Option<i64>,
    pub last_stamp_before_ready: Option<i64>,
    /// Each settings dict's field with the text it was last read from.
    dict_texts: Vec<(&'static str, String)>,
}

impl State {
    /// Records a value for `field`; a second distinct value makes a conflict.
    pub fn note(&mut self, field: &'static str, value: impl Serialize) {
        let v = crate::result::to_json_value(value);
        let seen = self.seen.entry(field).or_default();
        if !seen.contains(&v) && seen.len() < MAX_DISTINCT {
            seen.push(v);
        }
    }

    /// Reads the Python dict `text` (`non-default args: {…}`, `server_args={…}`) for `field`:
    /// Some(dict) when it is new; None when it did not parse (counted as unparsed, `line` is
    /// the whole line) or is the text the field was last read from. A server restarted with the
    /// same flags prints the same dict again, and it reads to the dict already held and noted;
    /// parsing it again would be most of the time a restart loop's log takes to read.
    pub fn new_dict(
        &mut self,
        field: &'static str,
        text: &str,
        lineno: usize,
        line: &str,
    ) -> Option<Map<String, Value>> {
        if self
            .dict_texts
            .iter()
            .any(|(f, t)| *f == field && t == text)
        {
            return None;
        }
        match super::pyliteral::parse_dict(text) {
            Ok(dict) => {
                self.note(field, &dict);
                self.forget_dict(field);
                self.dict_texts.push((field, text.to_string()));
                Some(dict)
            }
            Err(_) => {
                self.unparsed(field, lineno, line);
                None
            }
        }
    }

    /// A field's dict was set from something other than [`State::new_dict`]'s text.
    pub fn forget_dict(&mut self, field: &str) {
        self.dict_texts.retain(|(f, _)| *f != field);
    }

    /// A line whose key phrase was found but whose value did not parse.
    pub fn unparsed(&mut self, field: &str, lineno: usize, line: &str) {
        if self.f.unparsed.len() < MAX_UNPARSED {
            self.f.unparsed.push(Unparsed {
                field: field.to_string(),
                lineno,
                line: first_chars(line, 300).to_string(),
            });
        } else {
            self.unparsed_more += 1;
        }
    }

    /// Adds a backend to a list once, keeping the order seen.
    pub fn push_backend(list: &mut Vec<String>, name: &str) -> bool {
        if list.iter().any(|b| b == name) || list.len() >= MAX_LIST {
            return false;
        }
        list.push(name.to_string());
        true
    }

    pub fn record_process(&mut self, name: &str, pid: u32) {
        let procs = &mut self.f.processes;
        if !procs.contains_key(name) && procs.len() >= MAX_LIST {
            return;
        }
        let pids = procs.entry(name.to_string()).or_default();
        if !pids.contains(&pid) && pids.len() < MAX_LIST {
            pids.push(pid);
        }
    }

    /// The facts as they stand, with every derived field filled in.
    pub fn facts(&self, engine: Option<Engine>, failure: Option<&Failure>) -> BootFacts {
        let mut f = self.f.clone();
        f.engine = engine;
        f.failure = failure.cloned();
        f.unparsed_more = self.unparsed_more;
        if f.vllm_version.is_none() {
            f.vllm_version = self.banner_version.clone();
        }
        f.compile_s = self.compile_sum.map(round2);
        if f.cudagraph_actual_gib.is_none() {
            f.cudagraph_actual_gib = self.sglang_graph_sum.map(round2).or(self.graph_capture_gib);
        }
        if let (Some(first), Some(last)) = (self.first_stamp, self.last_stamp_before_ready) {
            if f.ready {
                f.boot_seconds = Some(elapsed(first, last) as f64);
            }
        }
        match engine {
            Some(Engine::Sglang) => derive_sglang(&mut f, self.sglang_default_backend),
            Some(Engine::Trtllm) => derive_trtllm(&mut f, self),
            _ => derive_vllm(&mut f, self),
        }
        if f.cudagraphs.is_none() && self.graphs_seen {
            f.cudagraphs = Some(true);
        }
        f.version = f
            .vllm_version
            .clone()
            .or_else(|| f.engine_version.clone())
            .or_else(|| f.server_version.clone());
        f.conflicts = self
            .seen
            .iter()
            .filter(|(_, vals)| vals.len() > 1)
            .map(|(k, vals)| (k.to_string(), vals.clone()))
            .collect();
        f
    }
}

/// Summed values are printed with two decimals; keep them that way.
pub fn round2(x: f64) -> f64 {
    (x * 100.0).round() / 100.0
}

fn str_of(m: &Map<String, Value>, key: &str) -> Option<String> {
    match m.get(key)? {
        Value::String(s) => Some(s.clone()),
        _ => None,
    }
}

fn is_set(v: Option<&Value>) -> bool {
    !matches!(v, None | Some(Value::Null)) && v != Some(&Value::String("None".into()))
}

fn derive_vllm(f: &mut BootFacts, st: &State) {
    if st.eager_line {
        f.cudagraphs = Some(false);
    }
    let Some(args) = &f.non_default_args else {
        return;
    };
    if args.get("enforce_eager") == Some(&Value::Bool(true)) {
        f.cudagraphs = Some(false);
    }
    f.requested_backend = str_of(args, "attention_backend");
    f.speculative = Some(is_set(args.get("speculative_config")));
    if f.model.is_none() {
        f.model = str_of(args, "model").or_else(|| str_of(args, "model_tag"));
    }
    f.config_args = Some(Value::Object(args.clone()));
}

fn derive_sglang(f: &mut BootFacts, default_backend_line: bool) {
    let Some(args) = f.server_args.clone() else {
        return;
    };
    f.page_size = args.get("page_size").and_then(Value::as_u64);
    f.requested_running = args.get("max_running_requests").and_then(Value::as_u64);
    let backend = str_of(&args, "attention_backend");
    if !default_backend_line {
        f.requested_backend = backend.clone();
    }
    if f.selected_backends.is_empty() {
        if let Some(b) = &backend {
            f.selected_backends.push(b.clone());
        }
    }
    f.speculative = Some(is_set(args.get("speculative_algorithm")));
    if let Some(Value::Bool(disabled)) = args.get("disable_cuda_graph") {
        f.cudagraphs = Some(!disabled);
    }
    if f.model.is_none() {
        f.model = str_of(&args, "model_path");
    }
    let mut config = args;
    config.remove("random_seed");
    f.config_args = Some(Value::Object(config));
}

fn derive_trtllm(f: &mut BootFacts, st: &State) {
    f.served_in_log = Some(st.served);
    f.pauses = (st.trt_info_lines && st.served > 0).then_some(st.pauses);
    let Some(args) = &f.server_args else {
        return;
    };
    if let Some(b) = str_of(args, "attn_backend") {
        State::push_backend(&mut f.selected_backends, &b);
    }
    f.speculative = Some(is_set(args.get("speculative_config")));
    if f.page_size.is_none() {
        f.page_size = args.get("tokens_per_block").and_then(Value::as_u64);
    }
    f.config_args = Some(Value::Object(args.clone()));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn conflicts_keep_distinct_values_in_order() {
        let mut s = State::default();
        s.note("kv_pool_tokens", 13575u64);
        s.note("kv_pool_tokens", 13575u64);
        s.note("kv_pool_tokens", 12405u64);
        s.note("block", 784u64);
        let f = s.facts(Some(Engine::Vllm), None);
        assert_eq!(
            f.conflicts.get("kv_pool_tokens"),
            Some(&vec![Value::from(13575), Value::from(12405)])
        );
        assert!(!f.conflicts.contains_key("block"));
        for i in 0..100u64 {
            s.note("many", i);
        }
        assert_eq!(s.seen["many"].len(), MAX_DISTINCT, "memory stays bounded");
    }

    #[test]
    fn a_dict_printed_again_is_read_once_and_a_changed_one_is_read() {
        let line = |mem: &str| {
            format!("[2026-10-01 00:37:47] server_args={{'model_path': 'm', 'mem_fraction_static': {mem}}}\n")
        };
        let cut = "[2026-10-01 00:37:49] server_args={'model_path': 'm', 'mem_fr\n";
        let log = [
            line("0.88"),
            line("0.88"),
            line("0.7"),
            line("0.88"),
            cut.into(),
        ]
        .concat();
        let f = crate::bootlog::parse_text(&log, None);
        let args = f.server_args.expect("read");
        assert_eq!(
            args["mem_fraction_static"],
            Value::from(0.88),
            "the last readable one"
        );
        assert_eq!(
            f.conflicts.get("server_args").map(Vec::len),
            Some(2),
            "two distinct dicts: {:?}",
            f.conflicts
        );
        assert_eq!(f.unparsed.len(), 1, "the cut one: {:?}", f.unparsed);
        assert_eq!(f.unparsed[0].lineno, 5);
    }

    #[test]
    fn round2_fixes_float_sums() {
        assert_eq!(round2(1.73 + 0.01), 1.74);
        assert_eq!(round2(53.72 + 6.33), 60.05);
    }
}
