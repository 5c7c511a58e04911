//! The page's fixed texts: what each status means and what to do about it, the words the report
//! uses, and why a tripwire is not in a report.

use inferlint_core::engine::Engine;
use inferlint_core::result::{Status, Tripwire};

/// Result | What it means | What to do, for each status in the page's order.
pub fn status_rows() -> [(Status, &'static str, &'static str); 5] {
    [
        (
            Status::Fail,
            "The tripwire caught its problem in this run. For T7 and T12 that means the server \
             failed. For every other tripwire the server worked, but a number from the run \
             (concurrency, throughput or latency) does not mean what it seems.",
            "Read the finding. Fix the setup and run again, or report the number together with \
             the finding.",
        ),
        (
            Status::Warn,
            "Nothing is wrong on its own, but a setting or an effect changes how the numbers \
             should be read.",
            "Keep the warning with the results, so whoever compares them knows.",
        ),
        (
            Status::Unknown,
            "The check could not decide, because a counter or log line it needs was missing, for \
             example from a vLLM version it does not know. It never counts as a pass.",
            "Supply the missing file, or check the vLLM version.",
        ),
        (
            Status::Pass,
            "The tripwire looked for its problem in this run and did not find it.",
            "Nothing. A pass covers this run only.",
        ),
        (
            Status::NotApplicable,
            "The tripwire is about a behaviour this engine does not have, such as vLLM's reserved \
             KV block (T14) on SGLang or TensorRT-LLM.",
            "Nothing.",
        ),
    ]
}

/// The words the report uses, each with a plain explanation (18 entries). The preemption entry
/// says what the report's engine calls it.
pub fn terms(engine: Engine) -> Vec<(&'static str, String)> {
    let preemption = match engine {
        Engine::Vllm => "When the KV cache is full, the server stops a running request, frees its \
             cache and puts it back in the queue; later it computes the prompt and the output so \
             far again. vLLM counts these but does not log them at its default level."
            .to_string(),
        Engine::Sglang => {
            "When the KV cache is full, the server stops a running request, frees its \
             cache and puts it back in the queue; later it computes the prompt and the output so \
             far again. On SGLang: called a retraction; SGLang counts them and logs a warning for \
             each."
                .to_string()
        }
        Engine::Trtllm => {
            "When the KV cache is full, the server stops a running request, frees its \
             cache and puts it back in the queue; later it computes the prompt and the output so \
             far again. On TensorRT-LLM: a request is paused for recompute, under the \
             MAX_UTILIZATION scheduler policy; the default GUARANTEED_NO_EVICT admits a request \
             only when its whole output fits, and pauses none. TensorRT-LLM counts no pauses; it \
             logs each one at INFO level."
                .to_string()
        }
        Engine::Llamacpp => {
            "When the KV cache is full, a server may stop a running request and compute it again \
             later. llama.cpp never does: each of its slots (--parallel) runs its request to the \
             end, and a request with no free slot waits (requests_deferred)."
                .to_string()
        }
    };
    vec![
        ("Token", "The unit a model reads and writes: a word or a piece of one. Prompts, outputs and the cache are all measured in tokens.".into()),
        ("Prompt and output tokens", "Prompt tokens are the text a request sends in; output tokens are the text the model generates for it.".into()),
        ("Request", "One call to the server: a prompt in, one generated answer out.".into()),
        ("Concurrency", "How many requests are in progress at the same time. The load tool keeps a number of them open; the server decides how many it actually runs.".into()),
        ("Waiting (queue)", "Requests the server has received but not started. They wait until running requests finish or the cache has room.".into()),
        ("KV cache", "GPU memory holding each running request's attention keys and values, so the model does not recompute its past tokens at every step.".into()),
        ("KV pool", "The size of the KV cache in tokens, fixed when the server starts: how many tokens of all running requests fit at once.".into()),
        ("KV block", "The unit the cache is handed out in: a request takes whole blocks, so its last block is usually partly empty.".into()),
        ("Null block", "One block vLLM reserves and never gives to a request, so the usable cache is one block smaller than the block count it exports (T14).".into()),
        ("Fit in cache (ceiling)", "How many requests of the size they had at that moment fit in the cache together: one divided by the share of the cache one request holds, rounded down. It falls as requests grow (T9).".into()),
        ("Preemption", preemption),
        ("Output tokens per second", "Generated tokens divided by the time they took: the server's counter between the before and after readings, or the load tool's own figure.".into()),
        ("Time to first token", "From sending a request to receiving its first output token, as the load tool measured it; time spent waiting in the server's queue is included.".into()),
        ("Boot log", "What the server printed while it started: its version, settings, memory split, KV pool and the moment it was ready.".into()),
        ("Before and after readings", "Two copies of the server's counters, taken just before and just after the load. Their difference is what the run did.".into()),
        ("Recording", "The server's gauges (running, waiting, cache in use) and counters, read at a fixed interval throughout the run.".into()),
        ("Attention backend", "The library of GPU kernels that computes attention (FLASH_ATTN, FLASHINFER, TRITON_ATTN, …). The server picks one unless told which; a draft model may pick its own (T6).".into()),
        ("CUDA graphs", "Recorded sequences of GPU work the server replays to save launch overhead. Capturing them takes time and memory at start-up.".into()),
        ("GPU clocks", "How fast the GPU's cores run. A card at its power limit or too hot lowers them without an error, and everything it computes takes longer (T27).".into()),
        ("KV offloading", "Copying computed KV blocks to CPU memory so that a prompt the GPU's cache has lost can load them back instead of computing them again (T26).".into()),
    ]
}

/// Why a tripwire is absent from a report: (singular form, plural form).
pub fn missing_reason(t: Tripwire) -> (&'static str, &'static str) {
    use Tripwire::*;
    match t {
        T1 | T10 | T16 => (
            "needs before and after readings",
            "need before and after readings",
        ),
        T2 | T3 => ("runs at clean-up", "run at clean-up"),
        T4 | T11 => ("needs two or more boot logs", "need two or more boot logs"),
        T5 | T6 | T12 => ("needs a boot log", "need a boot log"),
        T7 => ("needs a live server", "need a live server"),
        T8 => (
            "needs a recording and the concurrency asked for",
            "need a recording and the concurrency asked for",
        ),
        T9 => ("needs a recording", "need a recording"),
        T13 => ("a rule for test scripts", "rules for test scripts"),
        T14 => (
            "needs a recording and an after reading",
            "need a recording and an after reading",
        ),
        T15 => (
            "needs the load tool's result file",
            "need the load tool's result file",
        ),
        T17 => (
            "needs the load tool's result file or before and after readings",
            "need the load tool's result file or before and after readings",
        ),
        T18 => ("needs the load's command", "need the load's command"),
        T19 => (
            "applies to speculative decoding only",
            "apply to speculative decoding only",
        ),
        T20 => (
            "needs per-request TTFTs (--save-detailed) or warm-up lines during the load",
            "need per-request TTFTs (--save-detailed) or warm-up lines during the load",
        ),
        T21 => (
            "needs the client's send times or its CPU, which run measures",
            "need the client's send times or its CPU, which run measures",
        ),
        T22 => (
            "applies to data-parallel servers only",
            "apply to data-parallel servers only",
        ),
        T23 => (
            "needs per-request streams (--save-detailed)",
            "need per-request streams (--save-detailed)",
        ),
        T24 => (
            "needs the prompt length asked or the client's count",
            "need the prompt length asked or the client's count",
        ),
        T25 => (
            "needs a recording and a boot log with CUDA graphs",
            "need a recording and a boot log with CUDA graphs",
        ),
        T26 => (
            "applies to servers with KV offloading only",
            "apply to servers with KV offloading only",
        ),
        T27 => (
            "needs the GPU clocks run reads during the load",
            "need the GPU clocks run reads during the load",
        ),
    }
}

/// `T2 and T3`, `T5, T6 and T12`.
pub fn join_codes(codes: &[Tripwire]) -> String {
    let names: Vec<String> = codes.iter().map(|t| t.code()).collect();
    match names.len() {
        0 => String::new(),
        1 => names[0].clone(),
        n => format!("{} and {}", names[..n - 1].join(", "), names[n - 1]),
    }
}

/// `8 of 25. Not here: T2 and T3 (run at clean-up), …, T14 (does not apply to SGLang)`.
pub fn tripwires_checked(
    checked: &[Tripwire],
    not_applicable: &[Tripwire],
    engine: Engine,
) -> String {
    let mut groups: Vec<(String, Vec<Tripwire>)> = Vec::new();
    for t in Tripwire::ALL {
        if checked.contains(&t) {
            continue;
        }
        let key = if not_applicable.contains(&t) {
            format!("does not apply to {}", engine.name())
        } else {
            missing_reason(t).0.to_string()
        };
        match groups.iter_mut().find(|(k, _)| *k == key) {
            Some((_, v)) => v.push(t),
            None => groups.push((key, vec![t])),
        }
    }
    let mut text = format!("{} of {}", checked.len(), Tripwire::ALL.len());
    if !groups.is_empty() {
        let parts: Vec<String> = groups
            .iter()
            .map(|(key, codes)| {
                let reason = if codes.len() > 1 {
                    Tripwire::ALL
                        .iter()
                        .find(|t| missing_reason(**t).0 == key)
                        .map(|t| missing_reason(*t).1.to_string())
                        .unwrap_or_else(|| key.replace("does not apply", "do not apply"))
                } else {
                    key.clone()
                };
                format!("{} ({reason})", join_codes(codes))
            })
            .collect();
        text.push_str(". Not here: ");
        text.push_str(&parts.join(", "));
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use Tripwire::*;

    #[test]
    fn tripwires_checked_groups_by_reason() {
        let checked = [T1, T5, T6, T8, T9, T10, T12, T14];
        assert_eq!(
            tripwires_checked(&checked, &[], Engine::Vllm),
            "8 of 27. Not here: T2 and T3 (run at clean-up), T4 and T11 (need two or more boot logs), \
             T7 (needs a live server), T13 (a rule for test scripts), T15 (needs the load tool's result file), \
             T16 (needs before and after readings), \
             T17 (needs the load tool's result file or before and after readings), T18 (needs the load's command), \
             T19 (applies to speculative decoding only), \
             T20 (needs per-request TTFTs (--save-detailed) or warm-up lines during the load), \
             T21 (needs the client's send times or its CPU, which run measures), \
             T22 (applies to data-parallel servers only), \
             T23 (needs per-request streams (--save-detailed)), \
             T24 (needs the prompt length asked or the client's count), \
             T25 (needs a recording and a boot log with CUDA graphs), \
             T26 (applies to servers with KV offloading only), \
             T27 (needs the GPU clocks run reads during the load)"
        );
        let checked = [T1, T5, T6, T8, T9, T10, T12, T15];
        let text = tripwires_checked(&checked, &[T14], Engine::Sglang);
        assert!(text.starts_with("8 of 27. Not here: "), "{text}");
        assert!(text.contains("T14 (does not apply to SGLang)"), "{text}");
        assert_eq!(terms(Engine::Vllm).len(), 20);
    }
}
