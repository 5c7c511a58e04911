//! T14 null-block: vLLM's usage gauge counts out of `num_gpu_blocks − 1`
//! (docs/design/tripwires.md#t14).

use crate::checks::blocks::{infer_blocks, limit_denominator, BlockInference, MAX_DENOMINATOR};
use crate::engine::Engine;
use crate::evidence::T14Evidence;
use crate::fmt::g;
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
    .with_evidence(T14Evidence {
        engine: Some(engine),
        ..Default::default()
    })
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
    let readings = series.distinct_usage_readings();
    let inference = infer_blocks(&readings);
    let evidence = |r: CheckResult, inf: &BlockInference| {
        r.with_evidence(T14Evidence {
            reported_num_gpu_blocks: Some(reported),
            inferred_usable_blocks: Some(inf.blocks),
            distinct_readings: Some(inf.distinct as u64),
            ..Default::default()
        })
    };
    let Some(reported) = reported else {
        return evidence(
            CheckResult::unknown(Tripwire::T14, format!("{info} has no num_gpu_blocks label")),
            &inference,
        );
    };
    if let Some(r) = reserved_block_shown(&readings, &inference, reported) {
        return evidence(r, &inference);
    }
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

/// The PASS that fewer readings than the inference trusts can still give (docs/tripwires.md,
/// T14). The 5-reading rule guards a denominator inferred blind, where a divisor of the true
/// count can fit by luck; here the server's own `num_gpu_blocks` R leaves T14 one question,
/// R - 1 or R. Readings whose denominators' least common multiple is exactly R - 1 (at least 2)
/// answer it: R - 1 and R share no factor, so a reading k/(R - 1) below 1 is no multiple of 1/R,
/// and no count of R or fewer blocks other than R - 1 is a multiple of R - 1. None otherwise
/// (the usual rule decides).
fn reserved_block_shown(
    readings: &[f64],
    inference: &BlockInference,
    reported: u64,
) -> Option<CheckResult> {
    let n = inference.blocks?;
    if inference.trusted || reported < 3 || n != reported - 1 {
        return None;
    }
    // "A multiple of 1/R" in the inference's own terms: the reading's closest fraction has a
    // denominator that divides R.
    let of_reported = |u: f64| reported % limit_denominator(u, MAX_DENOMINATOR).1 == 0;
    let witness = readings
        .iter()
        .copied()
        .filter(|u| *u > 0.0 && *u <= 1.0)
        .find(|u| !of_reported(*u))?;
    Some(CheckResult::pass(
        Tripwire::T14,
        format!(
            "gauge denominator is {n} = num_gpu_blocks ({reported}) - 1 null block: each of the \
             {} distinct readings is a multiple of 1/{n}, and {} is not a multiple of 1/{reported}",
            inference.distinct,
            g(witness)
        ),
    ))
}

/// The usable block count a T14 PASS established (T9 computes its ceilings with it). For a
/// data-parallel server, the count every engine pool shares, if they share one.
pub fn usable_blocks(result: &CheckResult) -> Option<u64> {
    if result.tripwire != Tripwire::T14 || result.status != crate::result::Status::Pass {
        return None;
    }
    result.evidence.t14()?.inferred_usable_blocks.flatten()
}
