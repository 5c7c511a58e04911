//! T23 chunked-stream: whether the streamed response carried several tokens per chunk, so that
//! the client's inter-token latency is a gap between chunks, not between tokens
//! (docs/design/tripwires.md#t23).
//!
//! A client times the chunks it receives; speculative decoding (n-gram, EAGLE, MTP) hands
//! several accepted tokens to the stream at once, and a stream interval batches them on
//! purpose. `vllm bench serve`'s TPOT divides by tokens and stays per token; its ITL is per
//! chunk.

use crate::bench::BenchResult;
use crate::bootlog::BootFacts;
use crate::evidence::{JsonF64, T23Evidence};
use crate::fmt::{millis, thousands_f};
use crate::result::{CheckResult, Tripwire};

/// More tokens per chunk than this and the per-chunk gap misstates the per-token one by more
/// than a fifth; a detokenizer that holds back an incomplete character merges the odd pair of
/// tokens, which stays well below it.
pub const CHUNKED: f64 = 1.2;

/// T23 from the result file's per-request output lengths and chunk counts (`--save-detailed`);
/// Unknown without them. `boot` names the likely cause (speculative decoding, a stream
/// interval).
pub fn check(bench: Option<&BenchResult>, boot: Option<&BootFacts>) -> CheckResult {
    let mut ev = T23Evidence::default();
    let Some(b) = bench.filter(|b| !b.chunks.is_empty() && b.chunks.len() == b.output_lens.len())
    else {
        return CheckResult::unknown(
            Tripwire::T23,
            "no per-request stream in the result file (--save-detailed): tokens per chunk cannot be told",
        );
    };
    let (mut tokens, mut chunks, mut requests) = (0.0, 0.0, 0u64);
    for (out, c) in b.output_lens.iter().zip(&b.chunks) {
        if *c > 0.0 {
            tokens += out;
            chunks += c;
            requests += 1;
        }
    }
    if chunks == 0.0 {
        return CheckResult::unknown(Tripwire::T23, "no request streamed a token")
            .with_evidence(ev);
    }
    let per = tokens / chunks;
    ev.requests = Some(requests);
    ev.output_tokens = Some(tokens);
    ev.chunks = Some(chunks);
    ev.tokens_per_chunk = Some(JsonF64(per));
    ev.mean_itl_ms = b.mean_itl_ms.map(JsonF64);
    ev.mean_tpot_ms = b.mean_tpot_ms.map(JsonF64);
    ev.cause = boot.and_then(cause);
    let measured = format!(
        "{} tokens in {} chunks over {requests} requests",
        thousands_f(tokens, 0),
        thousands_f(chunks, 0)
    );
    if per <= CHUNKED {
        return CheckResult::pass(
            Tripwire::T23,
            format!(
                "{per:.2} tokens per streamed chunk ({measured}): the client's ITL is per token"
            ),
        )
        .with_evidence(ev);
    }
    let itl = b.mean_itl_ms.map_or_else(String::new, |itl| {
        ev.per_token_itl_ms = Some(JsonF64(itl / per));
        format!(
            " (mean {} per chunk, about {} per token)",
            millis(itl),
            millis(itl / per)
        )
    });
    let why = ev
        .cause
        .as_deref()
        .map_or_else(String::new, |c| format!(", from {c}"));
    CheckResult::warn(
        Tripwire::T23,
        format!(
            "{per:.2} tokens per streamed chunk ({measured}{why}): the client's ITL{itl} is the gap between chunks, not tokens; TPOT divides by tokens and is the per-token figure"
        ),
    )
    .with_evidence(ev)
}

/// What hands several tokens to the stream at once, as the boot log's configuration says.
fn cause(b: &BootFacts) -> Option<String> {
    let args = b.non_default_args.as_ref();
    if let Some(spec) = args.and_then(|a| a.get("speculative_config")) {
        let method = spec
            .get("method")
            .or_else(|| spec.get("model"))
            .and_then(|m| m.as_str());
        return Some(method.map_or_else(
            || "speculative decoding".to_string(),
            |m| format!("speculative decoding ({m})"),
        ));
    }
    if b.speculative == Some(true) {
        return Some("speculative decoding".into());
    }
    let interval = args
        .and_then(|a| a.get("stream_interval"))
        .and_then(serde_json::Value::as_u64)
        .filter(|i| *i > 1)?;
    Some(format!("a stream interval of {interval} tokens"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::result::Status;

    fn bench(outs: &[f64], chunks: &[f64]) -> BenchResult {
        BenchResult {
            output_lens: outs.to_vec(),
            chunks: chunks.to_vec(),
            mean_itl_ms: Some(300.0),
            ..BenchResult::default()
        }
    }

    #[test]
    fn several_tokens_a_chunk_warn_and_one_passes() {
        let r = check(Some(&bench(&[32.0, 32.0], &[12.0, 12.0])), None);
        assert_eq!(r.status, Status::Warn, "{}", r.message);
        assert!(
            r.message.starts_with(
                "2.67 tokens per streamed chunk (64 tokens in 24 chunks over 2 requests)"
            ),
            "{}",
            r.message
        );
        let r = check(Some(&bench(&[32.0, 32.0], &[32.0, 32.0])), None);
        assert_eq!(r.status, Status::Pass, "{}", r.message);
        // A failed request streamed nothing and counts for neither.
        let r = check(Some(&bench(&[32.0, 0.0], &[32.0, 0.0])), None);
        assert_eq!(r.status, Status::Pass, "{}", r.message);
    }

    #[test]
    fn a_result_without_streams_cannot_tell() {
        assert_eq!(check(None, None).status, Status::Unknown);
        let r = check(Some(&BenchResult::default()), None);
        assert_eq!(r.status, Status::Unknown);
    }
}
