//! T5 large-kv-blocks: vLLM raising the attention block size for hybrid attention/Mamba models,
//! so each request's KV is allocated in large units.

use serde_json::Value;

use crate::bootlog::BootFacts;
use crate::evidence::{JsonF64, T5Evidence};
use crate::result::{CheckResult, Tripwire};

/// vLLM's block size when nothing sets it.
pub const DEFAULT_BLOCK_SIZE: u64 = 16;

/// T5 from boot facts, the requested block size defaulting to 16.
pub fn check(facts: &BootFacts) -> CheckResult {
    check_with_default(facts, DEFAULT_BLOCK_SIZE)
}

/// T5 with another default block size.
pub fn check_with_default(facts: &BootFacts, default_block: u64) -> CheckResult {
    let t = Tripwire::T5;
    if facts.engine == Some(crate::Engine::Llamacpp) {
        return CheckResult::not_applicable(
            t,
            "llama.cpp allocates its KV cache by the token (cells, not blocks): there is no block size to raise",
        );
    }
    let Some(bs) = facts.attention_block_size else {
        if let Some(page) = facts.page_size {
            let unit = if page == 1 { "token" } else { "tokens" };
            return CheckResult::pass(t, format!("page size {page} {unit}, as set")).with_evidence(
                T5Evidence {
                    page_size: Some(page),
                    ..Default::default()
                },
            );
        }
        if !facts.ready {
            return CheckResult::unknown(t, "boot did not get far enough to size blocks");
        }
        return CheckResult::pass(t, "no block-size override printed");
    };
    let requested = facts
        .non_default_args
        .as_ref()
        .and_then(|a| a.get("block_size"))
        .and_then(Value::as_u64)
        .unwrap_or(default_block);
    let pool_blocks = facts.kv_pool_tokens.filter(|_| bs > 0).map(|p| p / bs);
    let evidence = |r: CheckResult| {
        r.with_evidence(T5Evidence {
            block_size: Some(bs),
            requested: Some(requested),
            mamba_page_padding_pct: Some(facts.mamba_page_padding_pct.map(JsonF64)),
            pool_blocks: Some(pool_blocks),
            ..Default::default()
        })
    };
    if bs == requested {
        return evidence(CheckResult::pass(t, format!("block size {bs}")));
    }
    evidence(CheckResult::warn(
        t,
        format!(
            "attention block size forced to {bs} tokens (requested {requested}); each request's KV is allocated in {bs}-token units"
        ),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Status;

    #[test]
    fn rules() {
        let mut f = BootFacts::default();
        assert_eq!(check(&f).status, Status::Unknown);
        f.ready = true;
        assert_eq!(check(&f).message, "no block-size override printed");
        f.page_size = Some(1);
        assert_eq!(check(&f).message, "page size 1 token, as set");
        f.page_size = Some(32);
        assert_eq!(check(&f).message, "page size 32 tokens, as set");
        f.attention_block_size = Some(784);
        f.kv_pool_tokens = Some(26093);
        let r = check(&f);
        assert_eq!(r.status, Status::Warn);
        assert_eq!(r.message, "attention block size forced to 784 tokens (requested 16); each request's KV is allocated in 784-token units");
        assert_eq!(r.evidence_json()["pool_blocks"], 33);
        f.attention_block_size = Some(16);
        assert_eq!(check(&f).message, "block size 16");
    }
}
