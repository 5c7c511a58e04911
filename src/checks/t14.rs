//! T14 null-block: vLLM's usage gauge counts out of `num_gpu_blocks − 1` (spec §2 T14).

use crate::checks::blocks::{infer_blocks, BlockInference};
use crate::engine::Engine;
use crate::result::{CheckResult, Tripwire};
use crate::series::Series;
use crate::snapshot::Snapshot;

/// vLLM's cache-info series, whose `num_gpu_blocks` label is the exported block count.
pub const CACHE_INFO: &str = "vllm:cache_config_info";

/// The N/A result for an engine that has no cache-info series (SGLang, TensorRT-LLM).
pub fn not_applicable(engine: Engine) -> CheckResult {
    CheckResult::not_applicable(
        Tripwire::T14,
        format!(
            "does not apply to {}: T14 is about vLLM's reserved null block",
            engine.name()
        ),
    )
    .with("engine", engine.key())
}

/// Whether T14 applies to the engine at all.
pub fn applies_to(engine: Engine) -> bool {
    engine.metrics().cache_info.is_some()
}

/// Compares the denominator inferred from the recording's usage readings with the snapshot's
/// `num_gpu_blocks` label: a PASS says the gauge counts out of `num_gpu_blocks − 1`.
///
/// A data-parallel server's recording is judged per engine pool (docs/tripwires.md).
pub fn check(series: &Series, snapshot: &Snapshot, engine: Engine) -> CheckResult {
    if let Some(r) = crate::checks::per_engine::t14(series, snapshot, engine) {
        return r;
    }
    let Some(info) = engine.metrics().cache_info else {
        return not_applicable(engine);
    };
    let reported = snapshot
        .metrics
        .info_label(info, "num_gpu_blocks")
        .filter(|v| !v.is_empty() && v.bytes().all(|b| b.is_ascii_digit()))
        .and_then(|v| v.parse::<u64>().ok());
    let inference = infer_blocks(&series.distinct_usage_readings());
    let evidence = |r: CheckResult, inf: &BlockInference| {
        r.with("reported_num_gpu_blocks", reported)
            .with("inferred_usable_blocks", inf.blocks)
            .with("distinct_readings", inf.distinct)
    };
    let Some(reported) = reported else {
        return evidence(
            CheckResult::unknown(Tripwire::T14, format!("{info} has no num_gpu_blocks label")),
            &inference,
        );
    };
    let (Some(n), true) = (inference.blocks, inference.trusted) else {
        let reason = inference
            .reason
            .clone()
            .unwrap_or_else(|| "no usage readings".to_string());
        return evidence(
            CheckResult::unknown(
                Tripwire::T14,
                format!("block count not inferable: {reason}"),
            ),
            &inference,
        );
    };
    let r = if reported >= 1 && n == reported - 1 {
        CheckResult::pass(
            Tripwire::T14,
            format!("gauge denominator is {n} = num_gpu_blocks ({reported}) - 1 null block"),
        )
    } else {
        CheckResult::fail(
            Tripwire::T14,
            format!(
                "gauge denominator is {n}, expected num_gpu_blocks - 1 = {}; the usage semantics changed, or the series is not from this boot",
                (reported as i64).saturating_sub(1)
            ),
        )
    };
    evidence(r, &inference)
}

/// The usable block count a T14 PASS established (T9 computes its ceilings with it).
pub fn usable_blocks(result: &CheckResult) -> Option<u64> {
    if result.tripwire != Tripwire::T14 || result.status != crate::result::Status::Pass {
        return None;
    }
    result.evidence.get("inferred_usable_blocks")?.as_u64()
}
