//! The report's figures (docs/design/report.md#charts), each built from the run's own numbers: the
//! cache against the load, requests over time, the cache in use, output tokens per second, time at
//! each running level, the KV pool per boot and the GPU memory split.

use maud::Markup;

use inferlint_core::bootlog::BootFacts;
use inferlint_core::checks::blocks::predicted_ceiling;
use inferlint_core::engine::Engine;
use inferlint_core::fmt::{g, thousands_f};
use inferlint_core::series::{Series, SeriesSample};

mod gpu_clocks;
mod levels;
mod per_engine;

pub use levels::time_at_levels;

use super::svg::{Bar, BarChart, ChartError, Drawn, Event, Line, LineKind, RefLine, TimeChart};
use super::Report;

/// What a figure draws.
#[derive(Clone, Debug)]
pub enum Body {
    Time(Drawn),
    /// A bar chart and its data table rows (label, value).
    Bars(Markup, Vec<(String, String)>),
}

/// One legend entry: CSS class, name and whether it is drawn as a line or a marker.
#[derive(Clone, Debug)]
pub struct Key {
    pub class: &'static str,
    pub name: String,
    pub marker: bool,
}

/// One figure of the page.
#[derive(Clone, Debug)]
pub struct Figure {
    /// `fig-requests`.
    pub id: &'static str,
    pub title: String,
    pub caption: String,
    pub legend: Vec<Key>,
    pub body: Body,
}

/// The lag note added to TensorRT-LLM's time-chart captions.
pub const LAG_NOTE: &str = " TensorRT-LLM updates these readings only when a request completes, so between completions a line holds its last value.";

/// The note shown instead of the tokens-per-second chart for engines whose token counter moves
/// only at completions.
pub fn no_tput_note(engine: Engine) -> String {
    format!(
        "No output-tokens-per-second chart: {} adds a request's tokens to its counter when the \
         request finishes, so readings during the run show completions, not generation. The load \
         tool's figure and T10 cover the whole run.",
        engine.name()
    )
}

/// Seconds of each reading from the first one: the monotonic clock when every reading has one.
pub fn seconds(series: &Series) -> Vec<f64> {
    // One pass where every reading has its monotonic time (what the recorder writes), a second
    // by the wall clock only where one has not.
    let samples = &series.samples;
    let mono_t0 = samples.first().and_then(|s| s.t_mono_ns()).unwrap_or(0) as f64 / 1e9;
    let mut out = Vec::with_capacity(samples.len());
    for s in samples {
        let Some(ns) = s.t_mono_ns() else {
            let t0 = samples.first().map_or(0.0, |s| s.t_wall);
            out.clear();
            out.extend(samples.iter().map(|s| s.t_wall - t0));
            return out;
        };
        out.push(ns as f64 / 1e9 - mono_t0);
    }
    out
}

/// Counter increases between consecutive readings (preemptions), as events at the later one.
pub fn counter_steps(series: &Series, t: &[f64]) -> Vec<Event> {
    let mut out = Vec::new();
    let mut last: Option<f64> = None;
    for (s, &ti) in series.samples.iter().zip(t) {
        if let Some(v) = s.preemptions() {
            if let Some(prev) = last {
                if v > prev {
                    out.push(Event {
                        t: ti,
                        count: v - prev,
                    });
                }
            }
            last = Some(v);
        }
    }
    out
}

fn event_words(engine: Engine) -> (String, String) {
    let w = engine.eviction_word();
    (w.to_string(), format!("{w}s"))
}

/// Every figure the report has, in page order, except the GPU-memory one (see [`memory`]).
pub fn figures(report: &Report) -> Vec<Result<Figure, ChartError>> {
    let mut out = Vec::new();
    if let Some(f) = cache(report) {
        out.push(Ok(f));
    }
    let series = report
        .inputs()
        .series
        .as_ref()
        .filter(|s| s.samples.len() >= 2);
    if let Some(series) = series {
        // Each chart is its own passes over the samples (a day's recording is 345,600), and
        // none reads another's: the throughput and time-at-levels charts are drawn on a second
        // thread while this one draws the others, and the figures keep their order. The
        // samples' times are found once for all of them (two passes each time).
        let t = seconds(series);
        let t = t.as_slice();
        let (first, second) = std::thread::scope(|scope| {
            let second = scope.spawn(|| {
                let mut out = Vec::new();
                if !report.engine().token_counter_at_finish() {
                    out.push(tput(report, series, t));
                }
                out.extend(levels::figure(report, series, t).map(Ok));
                out
            });
            let steps = counter_steps(series, t);
            let mut first = vec![
                requests(report, series, t, &steps),
                kv(report, series, t, &steps),
            ];
            first.extend(per_engine::running(series, t));
            (first, second.join())
        });
        out.extend(first);
        match second {
            Ok(figs) => out.extend(figs),
            Err(panic) => std::panic::resume_unwind(panic),
        }
    }
    if let Some(f) = pools(report) {
        out.push(Ok(f));
    }
    out.extend(gpu_clocks::figure(report));
    out
}

fn lag(report: &Report) -> &'static str {
    if report.engine().gauges_lag() {
        LAG_NOTE
    } else {
        ""
    }
}

fn cache(report: &Report) -> Option<Figure> {
    let need = report.cache_need()?;
    let bars = vec![
        Bar {
            label: "KV cache".into(),
            value: need.pool_tokens as f64,
            text: format!("{} tokens", thousands_f(need.pool_tokens as f64, 0)),
            class: "s1",
        },
        Bar {
            label: format!("{} requests at full length", need.requests),
            value: need.need_tokens as f64,
            text: format!("{} tokens", thousands_f(need.need_tokens as f64, 0)),
            class: "s2",
        },
    ];
    let mut caption = format!(
        "The server's KV cache holds {} tokens. A request of {} tokens takes {} once rounded up \
         to whole {}-token blocks, so {} requests at full length need {}.",
        thousands_f(need.pool_tokens as f64, 0),
        thousands_f(need.per_request_tokens, 0),
        thousands_f(need.per_request_alloc as f64, 0),
        need.block,
        need.requests,
        thousands_f(need.need_tokens as f64, 0)
    );
    if need.fits() {
        caption.push_str(&format!(
            " All of them fit, with {} tokens to spare.",
            thousands_f((need.pool_tokens - need.need_tokens) as f64, 0)
        ));
    } else {
        caption.push_str(&format!(" {} of them fit.", need.fit));
    }
    Some(bar_figure(
        "fig-cache",
        "The KV cache and the load",
        caption,
        bars,
        "Tokens",
    ))
}

fn bar_figure(
    id: &'static str,
    title: &str,
    caption: String,
    bars: Vec<Bar>,
    _unit: &str,
) -> Figure {
    let rows = bars
        .iter()
        .map(|b| (b.label.clone(), b.text.clone()))
        .collect();
    let svg = BarChart {
        bars,
        label: title.to_string(),
    }
    .render();
    Figure {
        id,
        title: title.to_string(),
        caption,
        legend: Vec::new(),
        body: Body::Bars(svg, rows),
    }
}

/// The requests chart; `steps` are the eviction counter's ([`counter_steps`]).
fn requests(
    report: &Report,
    series: &Series,
    t: &[f64],
    steps: &[Event],
) -> Result<Figure, ChartError> {
    // The three lines in one pass over the samples (a day's recording is 345,600 of them).
    let n = series.samples.len();
    let blocks = report.usable_blocks();
    let (mut running, mut waiting, mut ceiling) = (
        Vec::with_capacity(n),
        Vec::with_capacity(n),
        Vec::with_capacity(n),
    );
    for s in &series.samples {
        running.push(s.running());
        waiting.push(s.waiting());
        ceiling.push(fit_in_cache(s, blocks));
    }
    let requested = report.inputs().requested;
    let mut chart = TimeChart {
        t: t.to_vec(),
        lines: vec![
            Line {
                name: "Running".into(),
                class: "s1",
                kind: LineKind::Line,
                values: running,
            },
            Line {
                name: "Waiting".into(),
                class: "s2",
                kind: LineKind::Line,
                values: waiting,
            },
        ],
        refs: requested
            .map(|n| RefLine {
                label: format!("asked for {n}"),
                y: n as f64,
            })
            .into_iter()
            .collect(),
        events: steps.to_vec(),
        event_words: event_words(report.engine()),
        y_max: None,
        y_suffix: "",
        height: 260.0,
        label: "Requests running and waiting over time".into(),
    };
    let parts = RequestParts {
        has_ceiling: ceiling.iter().any(Option::is_some),
        requested,
        events: chart.events.iter().map(|e| e.count).sum(),
    };
    if parts.has_ceiling {
        chart.lines.push(Line {
            name: "Fit in cache".into(),
            class: "s3",
            kind: LineKind::Step,
            values: ceiling,
        });
    }
    let drawn = chart.render()?;
    Ok(Figure {
        id: "fig-requests",
        title: "Requests over time".into(),
        caption: requests_caption(report, series, &parts),
        legend: requests_legend(report, &parts),
        body: Body::Time(drawn),
    })
}

/// How many requests of the size they had fit in the cache at a reading where it was nearly
/// full (summed over the engines of a data-parallel server); None elsewhere.
fn fit_in_cache(s: &SeriesSample, blocks: Option<u64>) -> Option<f64> {
    if !s.per_engine().is_empty() {
        return per_engine::fit_in_cache(s, blocks);
    }
    let (u, r) = (s.kv_usage()?, s.running()?);
    if u < inferlint_core::checks::t9::SATURATION || r <= 0.0 {
        return None;
    }
    predicted_ceiling(u, r, blocks).ok().map(|c| c as f64)
}

/// What the requests chart drew besides running and waiting, for its caption and legend.
struct RequestParts {
    /// The fit-in-cache step line.
    has_ceiling: bool,
    /// The concurrency the load asked for, drawn as a reference line.
    requested: Option<u64>,
    /// Eviction events marked, in all.
    events: f64,
}

/// The requests chart's caption: what its lines and markers are.
fn requests_caption(report: &Report, series: &Series, parts: &RequestParts) -> String {
    let mut caption =
        "Requests the server was running, and requests waiting in its queue, at each \
                       reading."
            .to_string();
    if parts.has_ceiling && !per_engine::engine_ids(series).is_empty() {
        caption.push_str(
            " The step line is how many requests of the size they had then fit in the \
             engines' caches, summed over the data-parallel engines (on readings with every \
             engine's cache at least 90% full).",
        );
    } else if parts.has_ceiling {
        caption.push_str(
            " The step line is how many requests of the size they had then fit in the cache \
             (on readings with the cache at least 90% full).",
        );
    }
    if let Some(n) = parts.requested {
        caption.push_str(&format!(" The dashed line is the {n} the load asked for."));
    }
    if parts.events > 0.0 {
        caption.push_str(&format!(
            " Each triangle marks {} between two readings ({} in all).",
            event_words(report.engine()).1,
            g(parts.events)
        ));
    }
    caption.push_str(lag(report));
    caption
}

/// The requests chart's legend, one key per thing drawn.
fn requests_legend(report: &Report, parts: &RequestParts) -> Vec<Key> {
    let mut legend = vec![key("s1", "Running"), key("s2", "Waiting")];
    if parts.has_ceiling {
        legend.push(key("s3", "Fit in cache"));
    }
    if parts.requested.is_some() {
        legend.push(key("ref", "Asked for"));
    }
    if parts.events > 0.0 {
        legend.push(Key {
            class: "ev",
            name: capitalize(&event_words(report.engine()).1),
            marker: true,
        });
    }
    legend
}

fn key(class: &'static str, name: &str) -> Key {
    Key {
        class,
        name: name.to_string(),
        marker: false,
    }
}

fn capitalize(s: &str) -> String {
    let mut c = s.chars();
    c.next()
        .map(|f| f.to_uppercase().chain(c).collect())
        .unwrap_or_default()
}

/// The KV chart; `steps` as for [`requests`].
fn kv(report: &Report, series: &Series, t: &[f64], steps: &[Event]) -> Result<Figure, ChartError> {
    let engines = per_engine::engine_ids(series);
    let lines = if engines.is_empty() {
        vec![Line {
            name: "KV cache in use".into(),
            class: "s1",
            kind: LineKind::Area,
            values: series
                .samples
                .iter()
                .map(|s| s.kv_usage().map(|u| u * 100.0))
                .collect(),
        }]
    } else {
        per_engine::usage_lines(series, &engines)
    };
    let chart = TimeChart {
        t: t.to_vec(),
        lines,
        refs: Vec::new(),
        events: steps.to_vec(),
        event_words: event_words(report.engine()),
        y_max: Some(100.0),
        y_suffix: "%",
        height: 220.0,
        label: "KV cache in use over time".into(),
    };
    let drawn = chart.render()?;
    let mut caption = match engines.len() {
        0 => "The share of the KV cache in use at each reading.".to_string(),
        n if n == chart.lines.len() => format!(
            "The share of each engine's KV cache in use at each reading: the {n} data-parallel engines have a cache each."
        ),
        n => format!(
            "The share of the KV cache in use at each reading in the fullest and the emptiest of the {n} data-parallel engines, which have a cache each."
        ),
    };
    if let Some(b) = report.usable_blocks() {
        caption.push_str(&format!(
            " The gauge moves in steps of 1/{b}: one block is held back (T14)."
        ));
    }
    caption.push_str(lag(report));
    let mut legend: Vec<Key> = chart.lines.iter().map(|l| key(l.class, &l.name)).collect();
    if chart.events.iter().any(|e| e.count > 0.0) {
        legend.push(Key {
            class: "ev",
            name: capitalize(&event_words(report.engine()).1),
            marker: true,
        });
    }
    Ok(Figure {
        id: "fig-kv",
        title: "KV cache in use".into(),
        caption,
        legend,
        body: Body::Time(drawn),
    })
}

/// Generated tokens per second over a sliding one-second window ending at each reading.
pub fn tokens_per_second(series: &Series, t: &[f64]) -> Vec<Option<f64>> {
    let mut out = Vec::with_capacity(t.len());
    let mut j = 0;
    for i in 0..t.len() {
        // The latest reading at least one second before this one.
        while j + 1 < i && t[j + 1] <= t[i] - 1.0 + 1e-9 {
            j += 1;
        }
        let value = (t[j] <= t[i] - 1.0 + 1e-9 && j < i)
            .then(|| {
                let (a, b) = (
                    series.samples[j].generation_tokens()?,
                    series.samples[i].generation_tokens()?,
                );
                (b >= a).then(|| (b - a) / (t[i] - t[j]))
            })
            .flatten();
        out.push(value);
    }
    out
}

fn tput(report: &Report, series: &Series, t: &[f64]) -> Result<Figure, ChartError> {
    let chart = TimeChart {
        t: t.to_vec(),
        lines: vec![Line {
            name: "Output tokens/s".into(),
            class: "s1",
            kind: LineKind::Line,
            values: tokens_per_second(series, t),
        }],
        refs: Vec::new(),
        events: Vec::new(),
        event_words: event_words(report.engine()),
        y_max: None,
        y_suffix: "",
        height: 200.0,
        label: "Output tokens per second over time".into(),
    };
    let drawn = chart.render()?;
    Ok(Figure {
        id: "fig-tput",
        title: "Output tokens per second".into(),
        caption: "Tokens generated per second, from the server's token counter over a sliding \
                  one-second window."
            .into(),
        legend: vec![key("s1", "Output tokens/s")],
        body: Body::Time(drawn),
    })
}

fn pools(report: &Report) -> Option<Figure> {
    let facts = report.facts();
    if facts.len() < 2 {
        return None;
    }
    let bars: Vec<Bar> = facts
        .iter()
        .filter_map(|(label, f)| {
            let p = f.kv_pool_tokens?;
            Some(Bar {
                label: label.clone(),
                value: p as f64,
                text: format!("{} tokens", thousands_f(p as f64, 0)),
                class: "s1",
            })
        })
        .collect();
    if bars.is_empty() {
        return None;
    }
    Some(bar_figure(
        "fig-pools",
        "KV pool per boot",
        "The KV pool each start drew. Starts with the same flags should draw the same pool (T4)."
            .into(),
        bars,
        "Tokens",
    ))
}

/// `fig-memory`: the GPU memory split at start-up, when the log gives two or more parts.
pub fn memory(facts: &BootFacts) -> Option<Figure> {
    let parts = [
        ("Model weights", facts.model_load_gib),
        ("KV cache", facts.available_kv_cache_gib),
        ("CUDA graphs", facts.cudagraph_actual_gib),
        ("Activation peak", facts.peak_activation_gib),
    ];
    let bars: Vec<Bar> = parts
        .iter()
        .zip(["s1", "s2", "s3", "s1"])
        .filter_map(|((label, v), class)| {
            let v = v.filter(|v| v.is_finite())?;
            Some(Bar {
                label: label.to_string(),
                value: v,
                text: format!("{} GiB", g(v)),
                class,
            })
        })
        .collect();
    if bars.len() < 2 {
        return None;
    }
    Some(bar_figure(
        "fig-memory",
        "GPU memory at start-up",
        "How the server split the GPU's memory as it started, from its boot log.".into(),
        bars,
        "GiB",
    ))
}
