//! T16 cached-prompts: the share of the window's prompt tokens the prefix cache served, judged
//! by what the load's prompts were meant to be (docs/design/tripwires.md#t16).

use std::ops::ControlFlow;

use crate::checks::counters::{snapshot_delta, CounterQuery, DeltaError};
use crate::engine::Engine;
use crate::evidence::{JsonF64, T16Evidence};
use crate::fmt::{pct, thousands_f};
use crate::load::{LoadIntent, Prompts};
use crate::result::{CheckResult, Tripwire};
use crate::snapshot::Snapshot;

/// The hit rate from which prompts meant to be fresh are a finding: the threshold at which
/// vLLM's own benchmark warns (docs/design/tripwires.md#t16).
pub const HIT_RATE: f64 = 0.01;

/// What the load sent besides its measured requests, for the hits they explain.
#[derive(Clone, Copy, Debug, Default)]
pub struct Untimed {
    /// Requests sent before timing (a test prompt, warm-ups): each repeats a measured prompt.
    pub requests: u64,
    /// The measured requests the load tool completed, to size one request's prompt.
    pub completed: Option<f64>,
}

/// T16 between two snapshots, for a load that asked for `load`.
pub fn check(
    before: &Snapshot,
    after: &Snapshot,
    load: &LoadIntent,
    untimed: Untimed,
    engine: Engine,
) -> CheckResult {
    let names = engine.metrics();
    let caching = prefix_caching(after, engine);
    let base = T16Evidence {
        hits_counter: Some(names.prefix_hits.to_string()),
        queries_counter: Some(names.prefix_queries.to_string()),
        prefix_caching: caching,
        dataset: load.dataset.clone(),
        prompts: Some(prompts_key(load.prompts).to_string()),
        seed: load.seed,
        ..Default::default()
    };
    let (hits, queries) = match window_counts(before, after, engine, caching, &base) {
        ControlFlow::Continue(counts) => counts,
        ControlFlow::Break(r) => return r,
    };
    let evidence = |explained: f64| T16Evidence {
        hit_tokens: Some(hits),
        prompt_tokens: Some(queries),
        hit_rate: (queries > 0.0).then(|| JsonF64(hits / queries)),
        explained_hit_tokens: Some(explained),
        untimed_requests: Some(untimed.requests),
        ..base.clone()
    };
    if queries <= 0.0 {
        return CheckResult::unknown(
            Tripwire::T16,
            "no prompt token reached the engine in the window (T17 says which requests failed)",
        )
        .with_evidence(evidence(0.0));
    }
    let explained = explained_hits(hits, queries, untimed);
    judge(load, hits, queries, explained, untimed).with_evidence(evidence(explained))
}

/// The window's prefix-cache hit tokens and prompt tokens, or the result when the counters
/// cannot give them.
fn window_counts(
    before: &Snapshot,
    after: &Snapshot,
    engine: Engine,
    caching: Option<bool>,
    base: &T16Evidence,
) -> ControlFlow<CheckResult, (f64, f64)> {
    let names = engine.metrics();
    let hits = snapshot_delta(before, after, &CounterQuery::new(names.prefix_hits));
    let queries = snapshot_delta(before, after, &CounterQuery::new(names.prefix_queries));
    match (hits, queries) {
        // llama.cpp's prompt counter leaves out the tokens it reused from the cache.
        (Ok(h), Ok(q)) if names.prefix_queries_exclude_hits => ControlFlow::Continue((h, q + h)),
        (Ok(h), Ok(q)) => ControlFlow::Continue((h, q)),
        (Err(DeltaError::Restarted(r)), _) | (_, Err(DeltaError::Restarted(r))) => {
            ControlFlow::Break(
                CheckResult::unknown(Tripwire::T16, r.to_string()).with_evidence(T16Evidence {
                    restarted: Some(true),
                    ..base.clone()
                }),
            )
        }
        (Err(e), _) | (_, Err(e)) => {
            if caching == Some(false) {
                return ControlFlow::Break(CheckResult::pass(
                    Tripwire::T16,
                    "prefix caching is off (enable_prefix_caching=False): every prompt token was computed",
                )
                .with_evidence(base.clone()));
            }
            ControlFlow::Break(
                CheckResult::unknown(
                    Tripwire::T16,
                    format!("{e}: whether prompts came from the prefix cache cannot be told"),
                )
                .with_evidence(base.clone()),
            )
        }
    }
}

/// The verdict on a window where prompt tokens reached the engine, by what the load's prompts
/// were meant to be.
fn judge(
    load: &LoadIntent,
    hits: f64,
    queries: f64,
    explained: f64,
    untimed: Untimed,
) -> CheckResult {
    let share = format!(
        "{} of prompt tokens came from the prefix cache ({} of {})",
        pct(hits / queries, 1),
        thousands_f(hits, 0),
        thousands_f(queries, 0)
    );
    let dataset = load.dataset.as_deref().unwrap_or("unknown");
    match load.prompts {
        Prompts::Fresh if (hits - explained) / queries >= HIT_RATE => CheckResult::fail(
            Tripwire::T16,
            format!(
                "{share}: their prefill was skipped, so TTFT and throughput are not those of fresh prompts ({dataset} dataset{})",
                load.seed.map(|s| format!(", --seed {s}")).unwrap_or_default()
            ),
        ),
        Prompts::Fresh if explained > 0.0 => CheckResult::pass(
            Tripwire::T16,
            format!(
                "{share}, no more than the {} untimed request{} that repeat a measured prompt explain; the {dataset} dataset's measured prompts were fresh",
                untimed.requests,
                if untimed.requests == 1 { "" } else { "s" }
            ),
        ),
        Prompts::Fresh => CheckResult::pass(
            Tripwire::T16,
            format!("{share}; the {dataset} dataset's prompts were fresh"),
        ),
        Prompts::Shared => CheckResult::pass(
            Tripwire::T16,
            format!("{share}; the {dataset} dataset shares prompt text on purpose, so hits are part of the workload"),
        ),
        Prompts::Unknown => CheckResult::pass(
            Tripwire::T16,
            match &load.dataset {
                Some(d) => format!("{share}; whether the {d} dataset's prompts repeat on purpose cannot be told from the load's command"),
                None => format!("{share}; whether the load's prompts repeat on purpose cannot be told from its command"),
            },
        ),
    }
}

/// The hits that the untimed requests explain: each repeats one measured prompt, so at most one
/// average prompt's tokens each (the window's prompt tokens over the requests that sent them).
fn explained_hits(hits: f64, queries: f64, untimed: Untimed) -> f64 {
    let Some(completed) = untimed.completed else {
        return 0.0;
    };
    let requests = completed + untimed.requests as f64;
    if untimed.requests == 0 || requests <= 0.0 {
        return 0.0;
    }
    (untimed.requests as f64 * queries / requests).min(hits)
}

/// `enable_prefix_caching` of vLLM's `cache_config_info`, where the engine says.
fn prefix_caching(after: &Snapshot, engine: Engine) -> Option<bool> {
    let info = engine.metrics().cache_info?;
    match after.metrics.info_label(info, "enable_prefix_caching")? {
        "True" | "true" => Some(true),
        "False" | "false" => Some(false),
        _ => None,
    }
}

/// The evidence's spelling of what the prompts were meant to be.
pub fn prompts_key(p: Prompts) -> &'static str {
    match p {
        Prompts::Fresh => "fresh",
        Prompts::Shared => "shared",
        Prompts::Unknown => "unknown",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::result::Status;
    use crate::testkit::snapshot_from_prom;

    fn snap(hits: f64, queries: f64) -> Snapshot {
        snapshot_from_prom(&format!(
            "vllm:prefix_cache_hits_total{{engine=\"0\"}} {hits}\nvllm:prefix_cache_queries_total{{engine=\"0\"}} {queries}\n"
        ))
    }

    fn random() -> LoadIntent {
        crate::load::intent(
            &"vllm bench serve --dataset-name random --seed 0"
                .split(' ')
                .map(str::to_string)
                .collect::<Vec<_>>(),
        )
    }

    #[test]
    fn fresh_prompts_fail_at_one_percent() {
        let r = check(
            &snap(0.0, 0.0),
            &snap(48.0, 4800.0),
            &random(),
            Untimed::default(),
            Engine::Vllm,
        );
        assert_eq!(r.status, Status::Fail);
        assert_eq!(r.message, "1.0% of prompt tokens came from the prefix cache (48 of 4,800): their prefill was skipped, so TTFT and throughput are not those of fresh prompts (random dataset, --seed 0)");
        let r = check(
            &snap(0.0, 0.0),
            &snap(47.0, 4800.0),
            &random(),
            Untimed::default(),
            Engine::Vllm,
        );
        assert_eq!(r.status, Status::Pass);
    }

    #[test]
    fn an_untimed_test_prompt_explains_one_prompts_hits() {
        let untimed = Untimed {
            requests: 1,
            completed: Some(8.0),
        };
        // 9 requests of 300 tokens; the test prompt repeats the first measured one: 256 hits.
        let r = check(
            &snap(0.0, 0.0),
            &snap(256.0, 2700.0),
            &random(),
            untimed,
            Engine::Vllm,
        );
        assert_eq!(r.status, Status::Pass, "{}", r.message);
        let r = check(
            &snap(0.0, 0.0),
            &snap(512.0, 2700.0),
            &random(),
            untimed,
            Engine::Vllm,
        );
        assert_eq!(r.status, Status::Fail);
    }

    #[test]
    fn a_missing_counter_is_unknown_and_no_prompts_is_unknown() {
        let none = snapshot_from_prom("vllm:num_requests_running 0\n");
        let r = check(&none, &none, &random(), Untimed::default(), Engine::Vllm);
        assert_eq!(r.status, Status::Unknown);
        let r = check(
            &snap(5.0, 10.0),
            &snap(5.0, 10.0),
            &random(),
            Untimed::default(),
            Engine::Vllm,
        );
        assert_eq!(r.status, Status::Unknown);
    }
}
