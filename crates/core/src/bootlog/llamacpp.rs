//! llama.cpp's `llama-server` boot lines (docs/design/bootlog.md#llamacpp-lines), as its default
//! verbosity prints them: `srv    load_model: loading model 'PATH'`, `srv    load_model:
//! initializing, n_slots = 2, n_ctx_slot = 1024, …` (its slots are its limit on requests run at
//! once) and `srv  llama_server: listening on http://HOST:PORT` (ready).

use std::sync::LazyLock;

use regex::Regex;

use super::events::{parse_u64, BootEvent};
use super::phrases::{Found, Phrase as P};
use super::state::State;

#[allow(
    clippy::expect_used,
    reason = "this file's patterns are constants; its tests compile each"
)]
fn re(pattern: &str) -> Regex {
    Regex::new(pattern).expect("valid regex")
}

static SLOTS: LazyLock<Regex> = LazyLock::new(|| re(r"n_slots = (\d+)"));
static MODEL: LazyLock<Regex> = LazyLock::new(|| re(r"loading model '([^']*)'"));

/// Reads one llama.cpp line into the state.
pub(crate) fn read(
    st: &mut State,
    lineno: usize,
    msg: &str,
    found: Found,
    _ev: &mut Vec<BootEvent>,
) {
    if found.has(P::LlamaSlots) {
        match SLOTS.captures(msg).and_then(|c| parse_u64(&c[1])) {
            Some(n) => st.f.running_cap = Some(n),
            None => st.unparsed("running_cap", lineno, msg),
        }
    }
    if found.has(P::LlamaLoadingModel) {
        match MODEL.captures(msg) {
            Some(c) => st.f.model = Some(c[1].to_string()),
            None => st.unparsed("model", lineno, msg),
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::bootlog::parse_text;
    use crate::Engine;

    const LOG: &str = "0.00.001.127 I srv  llama_server: initializing ...\n\
0.00.004.836 I srv    load_model: loading model '/m/SmolLM2-135M-Instruct.Q4_1.gguf'\n\
0.00.279.957 I srv    load_model: initializing, n_slots = 2, n_ctx_slot = 1024, kv_unified = 'false'\n\
0.00.282.116 I srv  llama_server: model loaded\n\
0.00.282.121 I srv  llama_server: listening on http://127.0.0.1:18180\n";

    #[test]
    fn slots_model_and_the_listening_line() {
        let f = parse_text(LOG, None);
        assert_eq!(f.engine, Some(Engine::Llamacpp));
        assert_eq!(f.running_cap, Some(2));
        assert_eq!(
            f.model.as_deref(),
            Some("/m/SmolLM2-135M-Instruct.Q4_1.gguf")
        );
        assert!(f.ready);
        assert_eq!(f.ready_lineno, Some(5));
        let cut = parse_text(&LOG.replace("listening on", "stopping"), None);
        assert!(!cut.ready);
    }
}
