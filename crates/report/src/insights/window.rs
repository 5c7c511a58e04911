//! The sentences of "what limited this run" that say the figures are not what they seem: prompts
//! served from the prefix cache (T16), requests that did not finish (T17), outputs shorter than
//! asked (T18), warm-up inside the window (T20), a client that set the pace (T21), one
//! data-parallel engine carrying the load (T22), several tokens per streamed chunk (T23),
//! prompts of other lengths than asked (T24), KV offloading that never loaded back (T26) and a
//! throttled GPU (T27). They come first: each changes what every other
//! figure on the page describes.

use inferlint_core::fmt::{pct, thousands_f};
use inferlint_core::result::{Status, Tripwire};

use super::{Context, Insight, Tone};

/// The window's sentences, in tripwire order; only for the findings (a pass says nothing here).
pub fn sentences(ctx: &Context<'_>) -> Vec<Insight> {
    [
        cached(ctx),
        failed(ctx),
        short(ctx),
        warm_up(ctx),
        client_paced(ctx),
        from_message(ctx, Tripwire::T22, "dp-balance", "One engine carried the load",
            "Send without pinning a rank (no X-data-parallel-rank header), or check the server's data-parallel routing."),
        from_message(ctx, Tripwire::T23, "chunked-stream", "ITL is per chunk",
            "Read time per output token (TPOT) for the per-token figure, or compare ITL only with runs that stream alike."),
        from_message(ctx, Tripwire::T24, "token-counts", "The prompts were not the length asked",
            "Give the load the server's tokenizer (--tokenizer of the served model), and count what a chat template adds."),
        from_message(ctx, Tripwire::T26, "kv-offload", "KV offloading never loaded back",
            "Run a load whose prompts return after the GPU's cache has lost them (multi-turn, a shared prefix), or check that the connector's lookup finds what it stored."),
        from_message(ctx, Tripwire::T27, "gpu-clocks", "The GPU ran throttled",
            "Check the card's cooling and power limit (nvidia-smi -q -d PERFORMANCE,POWER), and compare runs only at the same clocks."),
    ]
    .into_iter()
    .flatten()
    .collect()
}

fn finding(ctx: &Context<'_>, t: Tripwire) -> bool {
    ctx.result(t)
        .is_some_and(|r| matches!(r.status, Status::Fail | Status::Warn))
}

fn cached(ctx: &Context<'_>) -> Option<Insight> {
    if !finding(ctx, Tripwire::T16) {
        return None;
    }
    let e = ctx.result(Tripwire::T16)?.evidence.t16()?;
    let (hits, prompt) = (e.hit_tokens?, e.prompt_tokens?);
    Some(Insight::new(
        "cached",
        Tone::Limit,
        "Prompts came from the prefix cache",
        format!(
            "{} of the prompt tokens ({} of {}) were served from the server's prefix cache, so their prefill never ran: time to first token and throughput describe prompts the server had seen before. Restart the server, reset its cache (vLLM: POST /reset_prefix_cache) or change --seed between runs.",
            pct(hits / prompt, 0),
            thousands_f(hits, 0),
            thousands_f(prompt, 0)
        ),
    ))
}

fn failed(ctx: &Context<'_>) -> Option<Insight> {
    if !finding(ctx, Tripwire::T17) {
        return None;
    }
    let e = ctx.result(Tripwire::T17)?.evidence.t17()?;
    let failed = e.failed?;
    let survivors = match e.client_completed {
        Some(c) if c > 0.0 => format!(
            "latency and throughput are over the {} that succeeded",
            thousands_f(c, 0)
        ),
        Some(_) => "no request succeeded, so no figure describes a served request".to_string(),
        None => "the figures are over the requests that succeeded".to_string(),
    };
    let error = e
        .first_error
        .as_deref()
        .map(|x| format!(" The first error: {}.", x.trim().trim_end_matches('.')))
        .unwrap_or_default();
    Some(Insight::new(
        "failed",
        Tone::Limit,
        "Requests failed",
        format!(
            "{} request{} did not finish: {survivors}.{error}",
            thousands_f(failed, 0),
            if failed == 1.0 { "" } else { "s" }
        ),
    ))
}

fn short(ctx: &Context<'_>) -> Option<Insight> {
    if !finding(ctx, Tripwire::T18) {
        return None;
    }
    let e = ctx.result(Tripwire::T18)?.evidence.t18()?;
    let early = e.stopped_early?;
    let asked = e.asked_output_len.map_or_else(
        || "the length asked".to_string(),
        |n| format!("the {n} tokens asked"),
    );
    let median = e
        .median_short_len
        .map(|m| format!(" (half of them by {} tokens)", thousands_f(m.0, 0)))
        .unwrap_or_default();
    Some(Insight::new(
        "short",
        Tone::Limit,
        "Outputs were shorter than asked",
        format!(
            "{} request{} stopped at end-of-sequence before {asked}{median}: tokens per second is over shorter outputs than the load set, and compares badly with a run that ran them to length.",
            thousands_f(early, 0),
            if early == 1.0 { "" } else { "s" }
        ),
    ))
}

fn warm_up(ctx: &Context<'_>) -> Option<Insight> {
    if !finding(ctx, Tripwire::T20) {
        return None;
    }
    let e = ctx.result(Tripwire::T20)?.evidence.t20()?;
    let what = match (&e.first_warmup_line, e.ratio) {
        (Some(line), _) => format!("The server logged \"{line}\" while the load ran"),
        (None, Some(r)) => format!(
            "The first {} requests took {:.1}× the median time to first token of the rest",
            e.first_requests.unwrap_or(1),
            r.0
        ),
        (None, None) => return None,
    };
    Some(Insight::new(
        "warm-up",
        Tone::Limit,
        "Warm-up was measured",
        format!("{what}: the mean and tail of time to first token include a cost the server pays once. Add --num-warmups N to the load, or run a warm-up load first."),
    ))
}

fn client_paced(ctx: &Context<'_>) -> Option<Insight> {
    if !finding(ctx, Tripwire::T21) {
        return None;
    }
    let r = ctx.result(Tripwire::T21)?;
    let e = r.evidence.t21()?;
    let (title, advice) = if e.bound_by.as_deref() == Some("client") {
        (
            "The client set the pace",
            "the figures describe what the client could send, not what the server can serve. Run the client on a core of its own (or more client processes), or ask for less.",
        )
    } else {
        (
            "The client was at its limit",
            "the client's own timings (TTFT, ITL) include the time it took to get to them. Give it a core of its own.",
        )
    };
    Some(Insight::new(
        "client-pace",
        Tone::Limit,
        title,
        format!("{}: {advice}", upper_first(&r.message)),
    ))
}

/// A finding whose message says it all, with the advice after it.
fn from_message(
    ctx: &Context<'_>,
    t: Tripwire,
    key: &'static str,
    title: &'static str,
    advice: &str,
) -> Option<Insight> {
    if !finding(ctx, t) {
        return None;
    }
    let r = ctx.result(t)?;
    Some(Insight::new(
        key,
        Tone::Limit,
        title,
        format!("{}. {advice}", upper_first(&r.message)),
    ))
}

fn upper_first(s: &str) -> String {
    let mut c = s.chars();
    c.next()
        .map(|f| f.to_uppercase().chain(c).collect())
        .unwrap_or_default()
}
