//! T6 backend-ignored: an attention backend that was asked for but not used, by the main model
//! or by the speculative-decoding draft model (whose selection lines follow `Loading drafter
//! model`).

use crate::bootlog::BootFacts;
use crate::engine::Engine;
use crate::evidence::T6Evidence;
use crate::result::{CheckResult, Tripwire};

/// T6 from boot facts.
pub fn check(facts: &BootFacts) -> CheckResult {
    let t = Tripwire::T6;
    let engine = facts.engine.unwrap_or(Engine::Vllm);
    let has_args = match engine {
        Engine::Vllm => facts.non_default_args.is_some(),
        Engine::Sglang | Engine::Trtllm => facts.server_args.is_some(),
        Engine::Llamacpp => return CheckResult::not_applicable(
            t,
            "llama.cpp has no attention-backend option to ignore: its kernels come with the build",
        ),
    };
    if !has_args {
        return CheckResult::unknown(
            t,
            "no arguments line in the log; cannot tell what was requested",
        );
    }
    let selected = &facts.selected_backends;
    let drafter = &facts.drafter_backends;
    let evidence = |r: CheckResult| {
        r.with_evidence(T6Evidence {
            requested: Some(facts.requested_backend.clone()),
            selected: Some(selected.clone()),
            drafter: Some(drafter.clone()),
            speculative: Some(facts.speculative),
            log: None,
        })
    };
    let Some(req) = &facts.requested_backend else {
        let flag = match engine {
            Engine::Trtllm => "attn_backend",
            _ => "--attention-backend",
        };
        let chose = if selected.is_empty() {
            format!("so {} chose its own", engine.name())
        } else {
            format!(
                "so {} chose its own ({})",
                engine.name(),
                selected.join(", ")
            )
        };
        let mut msg = format!(
            "nothing to check: the server was started without {flag}, {chose} and nothing could be ignored"
        );
        if facts.speculative == Some(false) {
            msg.push_str("; there was no draft model either");
        }
        return evidence(CheckResult::pass(t, msg));
    };
    if selected.is_empty() && drafter.is_empty() {
        return evidence(CheckResult::unknown(
            t,
            "no backend selection line in the log",
        ));
    }
    let same = |b: &String| b.eq_ignore_ascii_case(req);
    let other =
        |list: &[String]| -> Vec<String> { list.iter().filter(|b| !same(b)).cloned().collect() };
    let target_other = other(selected);
    if !target_other.is_empty() {
        return evidence(CheckResult::fail(
            t,
            format!(
                "{req} was requested, but the main model used {}",
                target_other.join(", ")
            ),
        ));
    }
    let drafter_other = other(drafter);
    if !drafter_other.is_empty() {
        return evidence(CheckResult::fail(
            t,
            format!(
                "{req} was requested and the main model uses it, but the draft model (speculative decoding) picked {}",
                drafter_other.join(", ")
            ),
        ));
    }
    evidence(CheckResult::pass(
        t,
        format!("{req} was requested and used"),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Status;
    use serde_json::Map;

    #[test]
    fn rules() {
        let mut f = BootFacts {
            engine: Some(Engine::Vllm),
            ..Default::default()
        };
        assert_eq!(check(&f).status, Status::Unknown);
        f.non_default_args = Some(Map::new());
        f.selected_backends = vec!["FLASH_ATTN".into()];
        f.speculative = Some(false);
        assert_eq!(check(&f).message, "nothing to check: the server was started without --attention-backend, so vLLM chose its own (FLASH_ATTN) and nothing could be ignored; there was no draft model either");
        f.requested_backend = Some("TRITON_ATTN".into());
        f.selected_backends = vec![];
        assert_eq!(check(&f).message, "no backend selection line in the log");
        f.selected_backends = vec!["FLASH_ATTN".into()];
        assert_eq!(
            check(&f).message,
            "TRITON_ATTN was requested, but the main model used FLASH_ATTN"
        );
        f.selected_backends = vec!["TRITON_ATTN".into()];
        f.drafter_backends = vec!["FLASHINFER".into()];
        let r = check(&f);
        assert_eq!(r.status, Status::Fail);
        assert!(r.message.ends_with("picked FLASHINFER"));
        f.drafter_backends = vec!["TRITON_ATTN".into()];
        assert_eq!(check(&f).message, "TRITON_ATTN was requested and used");
    }
}
