//! T19 spec-decode-synthetic: speculative decoding measured on prompts of random tokens, whose
//! acceptance says nothing of real text (docs/design/tripwires.md#t19).

use crate::bootlog::BootFacts;
use crate::checks::counters::{snapshot_delta, CounterQuery, DeltaError};
use crate::engine::Engine;
use crate::evidence::{JsonF64, T19Evidence};
use crate::fmt::{pct, thousands_f};
use crate::load::{LoadIntent, Prompts};
use crate::result::{CheckResult, Tripwire};
use crate::snapshot::Snapshot;

/// Whether speculative decoding was part of the run: the boot log's configuration, else a draft
/// token proposed between the snapshots. None when neither can say.
pub fn active(
    before: &Snapshot,
    after: &Snapshot,
    boot: Option<&BootFacts>,
    engine: Engine,
) -> Option<bool> {
    if let Some(s) = boot.and_then(|b| b.speculative) {
        return Some(s);
    }
    let drafts = engine.metrics().spec_draft_tokens?;
    snapshot_delta(before, after, &CounterQuery::new(drafts))
        .ok()
        .map(|d| d > 0.0)
}

/// T19 on a run whose speculation is active ([`active`]): the acceptance over the window, judged
/// by what the prompts were.
pub fn check(
    before: &Snapshot,
    after: &Snapshot,
    load: &LoadIntent,
    boot: Option<&BootFacts>,
    engine: Engine,
) -> CheckResult {
    let names = engine.metrics();
    let mut ev = T19Evidence {
        method: boot.and_then(method),
        dataset: load.dataset.clone(),
        prompts: Some(crate::checks::t16::prompts_key(load.prompts).to_string()),
        ..Default::default()
    };
    let (Some(drafts), Some(accepted)) = (names.spec_draft_tokens, names.spec_accepted_tokens)
    else {
        return CheckResult::unknown(
            Tripwire::T19,
            format!("{} exports no acceptance counters: how often the drafts were accepted cannot be told", engine.name()),
        )
        .with_evidence(ev);
    };
    let d = snapshot_delta(before, after, &CounterQuery::new(drafts));
    let a = snapshot_delta(before, after, &CounterQuery::new(accepted));
    let (d, a) = match (d, a) {
        (Ok(d), Ok(a)) => (d, a),
        (Err(DeltaError::Restarted(r)), _) | (_, Err(DeltaError::Restarted(r))) => {
            ev.restarted = Some(true);
            return CheckResult::unknown(Tripwire::T19, r.to_string()).with_evidence(ev);
        }
        (Err(e), _) | (_, Err(e)) => {
            return CheckResult::unknown(
                Tripwire::T19,
                format!("{e}: how often the drafts were accepted cannot be told"),
            )
            .with_evidence(ev)
        }
    };
    ev.draft_tokens = Some(d);
    ev.accepted_tokens = Some(a);
    ev.acceptance = (d > 0.0).then(|| JsonF64(a / d));
    let what = ev.method.as_deref().map_or_else(
        || "speculative decoding".to_string(),
        |m| format!("speculative decoding ({m})"),
    );
    let measured = if d > 0.0 {
        format!(
            "{what} accepted {} of {} draft tokens ({})",
            thousands_f(a, 0),
            thousands_f(d, 0),
            pct(a / d, 1)
        )
    } else {
        format!("{what} proposed no draft token")
    };
    let dataset = load.dataset.as_deref().unwrap_or("unknown");
    let r = match load.prompts {
        Prompts::Fresh => CheckResult::warn(
            Tripwire::T19,
            format!("{measured} on the {dataset} dataset's random tokens: acceptance on them says nothing of real text, so the speed measured here does not transfer to a real workload"),
        ),
        _ => CheckResult::pass(Tripwire::T19, format!("{measured} on the {dataset} dataset")),
    };
    r.with_evidence(ev)
}

/// The drafting method of vLLM's `speculative_config` (`ngram`, `eagle`, `mtp`, a draft model).
fn method(b: &BootFacts) -> Option<String> {
    let cfg = b.non_default_args.as_ref()?.get("speculative_config")?;
    cfg.get("method")
        .and_then(|m| m.as_str())
        .or_else(|| cfg.get("model").and_then(|m| m.as_str()))
        .map(str::to_string)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::result::Status;
    use crate::testkit::snapshot_from_prom;

    fn snap(drafted: f64, accepted: f64) -> Snapshot {
        snapshot_from_prom(&format!(
            "vllm:spec_decode_num_draft_tokens_total{{engine=\"0\"}} {drafted}\nvllm:spec_decode_num_accepted_tokens_total{{engine=\"0\"}} {accepted}\n"
        ))
    }

    fn load(cmd: &str) -> LoadIntent {
        crate::load::intent(&cmd.split(' ').map(str::to_string).collect::<Vec<_>>())
    }

    #[test]
    fn random_prompts_warn_and_a_file_passes() {
        let (b, a) = (snap(0.0, 0.0), snap(59.0, 0.0));
        let r = check(
            &b,
            &a,
            &load("vllm bench serve --dataset-name random"),
            None,
            Engine::Vllm,
        );
        assert_eq!(r.status, Status::Warn);
        assert!(r.message.starts_with("speculative decoding accepted 0 of 59 draft tokens (0.0%) on the random dataset's random tokens"), "{}", r.message);
        let r = check(
            &b,
            &a,
            &load("vllm bench serve --dataset-name custom --dataset-path q.jsonl"),
            None,
            Engine::Vllm,
        );
        assert_eq!(r.status, Status::Pass);
        assert!(active(&b, &a, None, Engine::Vllm).unwrap());
        assert!(!active(&b, &b, None, Engine::Vllm).unwrap());
    }

    #[test]
    fn an_engine_without_counters_cannot_tell() {
        let s = snapshot_from_prom("sglang:num_running_reqs 0\n");
        let r = check(&s, &s, &load("vllm bench serve"), None, Engine::Sglang);
        assert_eq!(r.status, Status::Unknown);
    }
}
