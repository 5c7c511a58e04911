//! "What limited this run" (docs/design/report.md#what-limited-this-run) and the narrative lede
//! (docs/design/report.md#the-lede): at most three sentences
//! of plain arithmetic on the run's own numbers, and a paragraph that tells the run as a story.

use serde::{Deserialize, Serialize};

use inferlint_core::bench::BenchResult;
use inferlint_core::bootlog::BootFacts;
use inferlint_core::engine::Engine;
use inferlint_core::fmt::{duration, g, millis, pct, round_half_even, thousands_f};
use inferlint_core::result::{CheckResult, Status, Tripwire};
use inferlint_core::series::Series;

use super::summary::Summary;

mod window;

/// Whether an insight names a limit or says all was well.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Tone {
    Limit,
    Ok,
}

impl Tone {
    pub fn class(self) -> &'static str {
        match self {
            Tone::Limit => "limit",
            Tone::Ok => "ok",
        }
    }
}

/// One "what limited this run" sentence: a title and its arithmetic.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Insight {
    /// `cached`, `failed`, `short`, `cache`, `concurrency`, `waiting` or `pace`.
    pub key: String,
    pub title: String,
    pub text: String,
    pub tone: Tone,
}

impl Insight {
    fn new(key: &str, tone: Tone, title: impl Into<String>, text: impl Into<String>) -> Insight {
        Insight {
            key: key.to_string(),
            title: title.into(),
            text: text.into(),
            tone,
        }
    }

    /// `{title}. {text}`, as the terminal prints it after `- `.
    pub fn line(&self) -> String {
        format!("{}. {}", self.title, self.text)
    }
}

/// Everything the sentences are computed from.
#[derive(Clone, Copy)]
pub struct Context<'a> {
    pub engine: Engine,
    pub summary: &'a Summary,
    pub results: &'a [CheckResult],
    pub facts: Option<&'a BootFacts>,
    pub bench: Option<&'a BenchResult>,
    pub requested: Option<u64>,
    pub series: Option<&'a Series>,
    /// The block size the server's own cache config exports (vLLM's `cache_config_info`).
    pub cache_block: Option<u64>,
}

/// The KV cache against the load: how many tokens the requests need together.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct CacheNeed {
    pub pool_tokens: u64,
    pub per_request_tokens: f64,
    pub block: u64,
    /// One request's tokens rounded up to whole blocks.
    pub per_request_alloc: u64,
    pub requests: u64,
    pub need_tokens: u64,
    /// Requests that fit at full length.
    pub fit: u64,
}

impl CacheNeed {
    pub fn fits(&self) -> bool {
        self.need_tokens <= self.pool_tokens
    }
}

/// Time-weighted averages over the stretches where the server was running requests.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct BusyAverages {
    pub running: f64,
    pub tokens_per_s: Option<f64>,
    pub busy_s: f64,
}

impl<'a> Context<'a> {
    fn result(&self, t: Tripwire) -> Option<&'a CheckResult> {
        self.results.iter().rev().find(|r| r.tripwire == t)
    }

    fn failed(&self, t: Tripwire) -> bool {
        self.result(t).is_some_and(|r| r.status == Status::Fail)
    }

    /// The highest running count: T8's, else the recording's.
    fn peak(&self) -> Option<f64> {
        self.result(Tripwire::T8)
            .and_then(|r| r.evidence.t8()?.peak_running.flatten())
            .or(self.summary.peak_running)
    }

    /// Evictions during the run: T1's count (TensorRT-LLM's from its log), else the counters'.
    pub fn evictions(&self) -> Option<f64> {
        self.result(Tripwire::T1)
            .and_then(|r| r.evidence.t1()?.preemptions.flatten())
            .map(inferlint_core::evidence::Count::as_f64)
            .or(self.summary.preemptions)
    }

    /// Requests the load kept open, bounded by the requests there were.
    pub fn concurrency(&self) -> Option<u64> {
        let finished = self.summary.finished.map(|f| f.max(0.0) as u64);
        match (self.requested, finished) {
            (Some(r), Some(f)) if f > 0 => Some(r.min(f)),
            (Some(r), _) => Some(r),
            _ => None,
        }
    }

    /// Tokens per request: the server's (prompt + output) / finished, else the client's.
    pub fn per_request_tokens(&self) -> Option<f64> {
        let s = self.summary;
        if let (Some(p), Some(o), Some(n)) = (s.prompt_tokens, s.output_tokens, s.finished) {
            if n > 0.0 {
                return Some((p + o) / n);
            }
        }
        let b = self.bench?;
        let n = b.completed.filter(|n| *n > 0.0)?;
        Some((b.total_input_tokens? + b.total_output_tokens?) / n)
    }

    /// Whether the model mixes attention with state layers, whose memory the cache arithmetic
    /// does not describe.
    fn hybrid(&self) -> bool {
        self.facts.is_some_and(|f| {
            f.running_cap_reason.is_some() || f.attention_block_size.is_some_and(|b| b > 64)
        })
    }

    /// The allocation unit: the page size, else the attention block, else the block size the
    /// server's cache config exports, and only without any of these vLLM's default of 16 (the
    /// CPU build's blocks are 128 tokens: a default would understate the need eightfold).
    fn block(&self) -> Option<u64> {
        let f = self.facts;
        f.and_then(|f| f.page_size)
            .or_else(|| f.and_then(|f| f.attention_block_size))
            .or(self.cache_block)
            .or((self.engine == Engine::Vllm).then_some(16))
            .filter(|b| *b > 0)
    }

    /// The cache against the load; None for hybrid models or when a number is missing.
    pub fn cache_need(&self) -> Option<CacheNeed> {
        if self.hybrid() {
            return None;
        }
        let pool = self.facts?.kv_pool_tokens.filter(|p| *p > 0)?;
        let per = self
            .per_request_tokens()
            .filter(|p| *p > 0.0 && p.is_finite())?;
        let block = self.block()?;
        let n = self.concurrency().filter(|n| *n > 0)?;
        let alloc = ((per / block as f64).ceil() as u64).saturating_mul(block);
        Some(CacheNeed {
            pool_tokens: pool,
            per_request_tokens: per,
            block,
            per_request_alloc: alloc,
            requests: n,
            need_tokens: n * alloc,
            fit: pool / alloc,
        })
    }

    /// `preempted`, `retracted` or `paused`.
    fn evicted_verb(&self) -> &'static str {
        match self.engine {
            Engine::Vllm => "preempted",
            Engine::Sglang => "retracted",
            Engine::Trtllm => "paused",
            Engine::Llamacpp => "evicted",
        }
    }

    fn evicted_phrase(&self, n: f64) -> String {
        let s = if n == 1.0 { "" } else { "s" };
        format!("{} {} running request{s}", self.evicted_verb(), g(n))
    }
}

/// Busy-time averages of the running gauge: each pair of consecutive readings that starts with
/// requests running counts for the time between them.
pub fn busy_averages(series: &Series) -> Option<BusyAverages> {
    let t = |s: &inferlint_core::series::SeriesSample| match s.t_mono_ns() {
        Some(ns) => ns as f64 / 1e9,
        None => s.t_wall,
    };
    let (mut weighted, mut busy, mut tokens, mut token_time) = (0.0, 0.0, 0.0, 0.0);
    for w in series.samples.windows(2) {
        let (a, b) = (&w[0], &w[1]);
        let Some(r) = a.running().filter(|r| *r > 0.0) else {
            continue;
        };
        let dt = t(b) - t(a);
        if !(dt.is_finite() && dt > 0.0) {
            continue;
        }
        weighted += r * dt;
        busy += dt;
        if let (Some(g0), Some(g1)) = (a.generation_tokens(), b.generation_tokens()) {
            tokens += g1 - g0;
            token_time += dt;
        }
    }
    (busy > 0.0).then(|| BusyAverages {
        running: weighted / busy,
        tokens_per_s: (token_time > 0.0).then(|| tokens / token_time),
        busy_s: busy,
    })
}

/// The window's findings (cached prompts, failed requests, short outputs), then up to three
/// sentences: [cache, or concurrency], waiting, pace. None after a restart.
pub fn insights(ctx: &Context<'_>) -> Vec<Insight> {
    if ctx.summary.restarted.is_some() {
        return Vec::new();
    }
    let mut out = window::sentences(ctx);
    if let Some(i) = cache_sentence(ctx).or_else(|| concurrency_sentence(ctx)) {
        out.push(i);
    }
    if let Some(i) = waiting_sentence(ctx) {
        out.push(i);
    }
    if let Some(i) = pace_sentence(ctx) {
        out.push(i);
    }
    out
}

fn about(per: f64) -> String {
    let approx = (per - per.round()).abs() > 1e-9;
    format!(
        "{}{}",
        if approx { "about " } else { "" },
        thousands_f(per, 0)
    )
}

fn cache_sentence(ctx: &Context<'_>) -> Option<Insight> {
    let c = ctx.cache_need()?;
    let head = format!(
        "The cache holds {} tokens; {} requests of {} tokens need {}",
        thousands_f(c.pool_tokens as f64, 0),
        c.requests,
        about(c.per_request_tokens),
        thousands_f(c.need_tokens as f64, 0)
    );
    let t8_failed = ctx.failed(Tripwire::T8);
    if !c.fits() {
        let mut text = format!(
            "{head} to run to the end together, so {} fit at full length.",
            c.fit
        );
        let mut parts = Vec::new();
        if t8_failed {
            if let Some(p) = ctx.peak() {
                parts.push(format!("ran at most {} at once and queued the rest", g(p)));
            }
        }
        if let Some(n) = ctx.evictions().filter(|n| *n > 0.0) {
            parts.push(ctx.evicted_phrase(n));
        }
        if !parts.is_empty() {
            // One subject for both clauses: "it ran at most 5 at once ..., and paused 13 ...".
            text.push_str(&format!(" To make room, it {}.", parts.join(", and ")));
        }
        return Some(Insight::new(
            "cache",
            Tone::Limit,
            "The KV cache was too small for the load",
            text,
        ));
    }
    let share = pct(c.need_tokens as f64 / c.pool_tokens as f64, 0);
    if t8_failed {
        let mut text = format!("{head}, {share} of it, yet the server ran at most");
        match ctx.peak() {
            Some(p) => text.push_str(&format!(" {} at once", g(p))),
            None => text.push_str(" fewer at once"),
        }
        match limit_reason(ctx) {
            Some(reason) => text.push_str(&format!(": {reason}.")),
            None => text.push('.'),
        }
        return Some(Insight::new(
            "cache",
            Tone::Limit,
            "The cache had room; something else held requests back",
            text,
        ));
    }
    Some(Insight::new(
        "cache",
        Tone::Ok,
        "The KV cache held the whole load",
        format!("{head}, {share} of it."),
    ))
}

/// The limits T8 named after its verdict (admission control, the server's running limit).
fn limit_reason(ctx: &Context<'_>) -> Option<String> {
    let msg = &ctx.result(Tripwire::T8)?.message;
    let (_, rest) = msg.split_once("; ")?;
    Some(rest.to_string())
}

fn concurrency_sentence(ctx: &Context<'_>) -> Option<Insight> {
    if !ctx.failed(Tripwire::T8) {
        return None;
    }
    let t8 = ctx.result(Tripwire::T8)?;
    let requested = t8
        .evidence
        .t8()
        .and_then(|e| e.requested)
        .or(ctx.requested)? as f64;
    let peak = ctx.peak()?;
    let mut text = format!(
        "The load kept {} requests open, but the server ran at most {} at once",
        g(requested),
        g(peak)
    );
    match limit_reason(ctx) {
        Some(reason) => text.push_str(&format!(": {reason}.")),
        None => text.push('.'),
    }
    if let Some(n) = ctx.evictions().filter(|n| *n > 0.0) {
        text.push_str(&format!(" It also {}.", ctx.evicted_phrase(n)));
    }
    Some(Insight::new(
        "concurrency",
        Tone::Limit,
        "The server ran fewer requests at once than the load sent",
        text,
    ))
}

fn waiting_sentence(ctx: &Context<'_>) -> Option<Insight> {
    let client = ctx
        .bench
        .and_then(|b| Some((b.median_ttft_ms?, b.p99_ttft_ms?)));
    let Some((med, p99)) = client else {
        let q = ctx.summary.mean_queue_s.filter(|q| *q >= 1.0)?;
        return Some(Insight::new(
            "waiting",
            Tone::Limit,
            "Requests waited in the queue",
            format!("A request waited {q:.1} s on average before the server started it."),
        ));
    };
    if p99 > (3.0 * med).max(med + 1000.0) {
        let mut text = format!(
            "Half the requests got their first token within {}, but the slowest (p99) waited {}",
            millis(med),
            millis(p99)
        );
        if ctx.failed(Tripwire::T8) {
            text.push_str(": they were queued until running requests ended");
        }
        text.push('.');
        return Some(Insight::new(
            "waiting",
            Tone::Limit,
            "Some requests waited much longer to start",
            text,
        ));
    }
    if med >= 2000.0 {
        let mut text = format!(
            "Half the requests waited more than {} for their first token, the slowest (p99) {}",
            millis(med),
            millis(p99)
        );
        let s = ctx.summary;
        if let (Some(q), Some(ttft)) = (s.mean_queue_s, s.mean_ttft_s) {
            if ttft > 0.0 && q / ttft >= 0.5 {
                text.push_str(", most of it in the queue");
            }
        }
        text.push('.');
        return Some(Insight::new(
            "waiting",
            Tone::Limit,
            "Requests waited long to start",
            text,
        ));
    }
    Some(Insight::new(
        "waiting",
        Tone::Ok,
        "No request waited long to start",
        format!(
            "Time to first token: {} for half the requests, {} at p99.",
            millis(med),
            millis(p99)
        ),
    ))
}

fn client_tokens_per_s(b: &BenchResult) -> Option<f64> {
    b.output_throughput.filter(|v| v.is_finite()).or_else(|| {
        let d = b.duration.filter(|d| *d > 0.0)?;
        Some(b.total_output_tokens? / d)
    })
}

fn pace_sentence(ctx: &Context<'_>) -> Option<Insight> {
    let n = ctx.concurrency();
    let client = ctx.bench.and_then(client_tokens_per_s);
    if ctx.engine.gauges_lag() {
        // The running gauge moves only at completions: estimate from the client's figures.
        let (tput, tpot) = (client?, ctx.bench?.mean_tpot_ms.filter(|t| *t > 0.0)?);
        let n = n?;
        let avg = (tput * tpot / 1000.0).min(n as f64);
        let title = if avg >= 0.9 * n as f64 {
            "The run kept its requests busy".to_string()
        } else {
            format!(
                "On average {} of {n} requests were part-way through their output",
                round_half_even(avg)
            )
        };
        let text = format!(
            "The load tool measured {} output tokens/s over the whole run. From its first token \
             to its last, a request took {tpot:.1} ms per token (TPOT), so on average {avg:.1} of \
             the {n} requests the load kept open were in that stretch ({} x {:.4} s), including \
             any paused mid-output. TensorRT-LLM updates its running gauge only when a request \
             completes, so the recording does not give the number running.",
            thousands_f(tput, 0),
            thousands_f(tput, 0),
            tpot / 1000.0
        );
        let tone = if avg >= 0.9 * n as f64 {
            Tone::Ok
        } else {
            Tone::Limit
        };
        return Some(Insight::new("pace", tone, title, text));
    }
    let busy = busy_averages(ctx.series?)?;
    let avg = busy.running;
    let (title, open) = match n {
        Some(n) => (
            format!(
                "On average {} of {n} requests ran at once",
                round_half_even(avg)
            ),
            format!("The load kept {n} requests open; "),
        ),
        None => (
            format!("On average {} requests ran at once", round_half_even(avg)),
            String::new(),
        ),
    };
    let text = match (client, busy.tokens_per_s) {
        (Some(c), _) => format!(
            "{open}the server's recording shows {avg:.1} running on average while it was busy. \
             The load tool measured {} output tokens/s over the whole run.",
            thousands_f(c, 0)
        ),
        (None, Some(tok)) => format!(
            "{open}while the server was busy, its recording shows {avg:.1} running on average \
             and {} output tokens/s.",
            thousands_f(tok, 0)
        ),
        (None, None) => format!(
            "{open}while the server was busy, its recording shows {avg:.1} running on average."
        ),
    };
    let text = capitalize(&text);
    let busy_enough = n.is_some_and(|n| avg >= 0.9 * n as f64);
    if busy_enough {
        return Some(Insight::new(
            "pace",
            Tone::Ok,
            "The run kept its requests busy",
            text,
        ));
    }
    Some(Insight::new("pace", Tone::Limit, title, text))
}

fn capitalize(s: &str) -> String {
    let mut c = s.chars();
    match c.next() {
        Some(f) => f.to_uppercase().chain(c).collect(),
        None => String::new(),
    }
}

fn plural(n: f64, word: &str) -> String {
    if n == 1.0 {
        format!("{} {word}", g(n))
    } else {
        format!("{} {word}s", thousands_f(n, 0))
    }
}

/// The lede: the run told in a few plain sentences.
pub fn lede(ctx: &Context<'_>) -> Vec<String> {
    let s = ctx.summary;
    if s.restarted.is_some() {
        return vec![
            "The server restarted between the before and after readings, so the counts between \
             them mean nothing. Only the recording is summarised here."
                .to_string(),
        ];
    }
    let mut out = Vec::new();
    if let Some(span) = s.span_s {
        match ctx.requested {
            Some(n) => out.push(format!(
                "The load tool kept {n} requests open for {}.",
                duration(span)
            )),
            None => out.push(format!("The test ran for {}.", duration(span))),
        }
    }
    if let Some(n) = s.finished {
        let errors = match s.errors {
            Some(0.0) => " with no errors".to_string(),
            Some(k) => format!(" ({} of them with an error)", g(k)),
            None => String::new(),
        };
        let tokens = match s.output_tokens {
            Some(t) => format!(" and generated {} tokens", thousands_f(t, 0)),
            None => String::new(),
        };
        out.push(format!(
            "The server finished {}{errors}{tokens}.",
            plural(n, "request")
        ));
    }
    if let (Some(peak), Some(n)) = (ctx.peak(), ctx.requested) {
        if peak < n as f64 {
            let mut text = format!("It never worked on more than {} at once.", g(peak));
            if let Some(q) = s.mean_queue_s {
                text.push_str(&format!(
                    " The rest waited in a queue, {q:.0} s on average before a request started."
                ));
            }
            out.push(text);
        }
    }
    if let Some(k) = ctx.evictions().filter(|k| *k > 0.0) {
        let verb = match ctx.engine {
            Engine::Vllm => "preempted",
            Engine::Sglang => "retracted",
            Engine::Trtllm => "paused",
            Engine::Llamacpp => "evicted",
        };
        let times = if k == 1.0 {
            "once".to_string()
        } else {
            format!("{} times", g(k))
        };
        let log = match ctx.engine {
            Engine::Vllm => "The server log does not mention this.".to_string(),
            e => format!("{} logs each one.", e.name()),
        };
        out.push(format!(
            "It {verb} a running request {times} to free KV cache: each one went back to the \
             queue and later recomputed its prompt and output so far. {log}"
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use inferlint_core::series::{Readings, SeriesHeader, SeriesSample};

    fn series(rows: &[(f64, f64, f64)]) -> Series {
        Series::from_samples(
            SeriesHeader {
                url: "u".into(),
                interval_s: 1.0,
                engine: None,
            },
            rows.iter()
                .map(|&(t, running, tokens)| {
                    SeriesSample::from(Readings {
                        t_wall: t,
                        running: Some(running),
                        generation_tokens: Some(tokens),
                        ..Readings::default()
                    })
                })
                .collect(),
        )
    }

    #[test]
    fn busy_average_weights_by_time_from_the_first_reading_of_each_pair() {
        // 0 running for 1 s, 4 for 1 s, 8 for 3 s, then idle.
        let s = series(&[
            (0.0, 0.0, 0.0),
            (1.0, 4.0, 0.0),
            (2.0, 8.0, 10.0),
            (5.0, 0.0, 100.0),
            (6.0, 0.0, 100.0),
        ]);
        let b = busy_averages(&s).unwrap();
        assert_eq!(b.busy_s, 4.0);
        assert!((b.running - 7.0).abs() < 1e-12, "{}", b.running);
        assert_eq!(b.tokens_per_s, Some(25.0));
        assert!(busy_averages(&series(&[(0.0, 0.0, 0.0), (1.0, 0.0, 0.0)])).is_none());
    }

    #[test]
    fn lede_counts_errors_and_evictions() {
        let mut summary = Summary {
            span_s: Some(93.72),
            finished: Some(32.0),
            errors: Some(3.0),
            output_tokens: Some(32000.0),
            preemptions: Some(1.0),
            peak_running: Some(10.0),
            mean_queue_s: Some(29.28),
            ..Summary::default()
        };
        let ctx = |s: &Summary| {
            lede(&Context {
                engine: Engine::Vllm,
                summary: s,
                results: &[],
                facts: None,
                bench: None,
                requested: Some(32),
                series: None,
                cache_block: None,
            })
            .join(" ")
        };
        let text = ctx(&summary);
        assert!(
            text.contains("The load tool kept 32 requests open for 1 min 34 s."),
            "{text}"
        );
        assert!(text.contains(
            "finished 32 requests (3 of them with an error) and generated 32,000 tokens"
        ));
        assert!(text.contains(
            "never worked on more than 10 at once. The rest waited in a queue, 29 s on average"
        ));
        assert!(text.contains("It preempted a running request once to free KV cache"));
        summary.errors = Some(0.0);
        assert!(ctx(&summary).contains("finished 32 requests with no errors and generated"));
        summary.errors = None;
        assert!(ctx(&summary).contains("The server finished 32 requests and generated"));
        summary.restarted = Some("x".into());
        assert!(ctx(&summary).starts_with("The server restarted between"));
    }
}
