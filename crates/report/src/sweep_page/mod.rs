//! The sweep page (docs/design/report.md#the-sweep-page): one offline page for a sweep folder
//! (`run --sweep`, docs/design/sweeps.md), or for two or more sweeps laid on one chart
//! (`report --compare`). It shows the curve (output tokens per second against TTFT and against
//! the load asked), each point drawn by its verdict, the knee, the table with each point's
//! reasons, the findings across the points, and links to each point's own page.
//!
//! Every verdict is core's: a point holds when [`Sweep::why_not`] gives no reason. The page
//! reuses the run page's CSS, script, escaping (maud) and embedded-data convention.

mod chart;
mod table;

use std::path::{Path, PathBuf};

use maud::{html, Markup, PreEscaped, DOCTYPE};
use serde_json::{json, Value};

use inferlint_core::sweep::Sweep;

use super::embed;
use super::page::{generated_now, head};

pub use chart::{series_class, XKind};

/// The schema name of the sweep page's embedded data.
pub const SCHEMA: &str = "inferlint.sweep-page/1";

/// The page's own rules, on top of the run page's stylesheet.
const CSS: &str = include_str!("sweep.css");

/// Why a sweep folder could not be read.
#[derive(Debug, thiserror::Error)]
pub enum SweepReadError {
    #[error("cannot read {path}: {source}")]
    Io {
        path: String,
        source: std::io::Error,
    },
    #[error("{path} is not a sweep.json inferlint can read: {message}")]
    Invalid { path: String, message: String },
}

/// Whether `dir` is a sweep folder: it holds `sweep.json`.
pub fn is_sweep_folder(dir: &Path) -> bool {
    dir.join("sweep.json").is_file()
}

/// The sweep recorded in `dir/sweep.json`.
pub fn read_sweep(dir: &Path) -> Result<Sweep, SweepReadError> {
    let path = dir.join("sweep.json");
    let text = std::fs::read_to_string(&path).map_err(|source| SweepReadError::Io {
        path: path.display().to_string(),
        source,
    })?;
    serde_json::from_str(&text).map_err(|e| SweepReadError::Invalid {
        path: path.display().to_string(),
        message: e.to_string(),
    })
}

/// What `dir/run.json` says of the server, for the page's header (`vLLM 0.28.0`), if anything.
pub fn server_of(dir: &Path) -> Option<String> {
    let text = std::fs::read_to_string(dir.join("run.json")).ok()?;
    let v: Value = serde_json::from_str(&text).ok()?;
    let engine = v.get("engine")?.as_str()?;
    let name = inferlint_core::engine::Engine::parse(engine)
        .map_or(engine.to_string(), |e| e.name().to_string());
    Some(match v.get("engine_version").and_then(Value::as_str) {
        Some(ver) => format!("{name} {ver}"),
        None => name,
    })
}

/// One sweep on the page.
#[derive(Clone, Debug)]
pub struct Curve {
    /// The sweep's name on a page of several (its folder's); empty on a page of one.
    pub label: String,
    pub sweep: Sweep,
    /// The sweep folder as seen from the page's folder, ending in `/` (empty when the page is
    /// in the sweep folder): each point's link is this, its folder and `/report.html`.
    pub href_base: String,
    /// The server, as run.json names it (`vLLM 0.28.0`).
    pub server: Option<String>,
}

/// A sweep page: one sweep, or several compared on one chart.
#[derive(Clone, Debug)]
pub struct SweepPage {
    pub curves: Vec<Curve>,
    /// The page's title, when given (`report --title`).
    pub title: Option<String>,
    /// The footer's time stamp; None means now.
    pub generated_at: Option<String>,
}

impl SweepPage {
    pub fn new(curves: Vec<Curve>) -> SweepPage {
        SweepPage {
            curves,
            title: None,
            generated_at: None,
        }
    }

    /// The title given, else `Sweep of --max-concurrency`, or `2 sweeps compared`.
    pub fn title(&self) -> String {
        if let Some(t) = self.title.as_ref().filter(|t| !t.trim().is_empty()) {
            return t.clone();
        }
        match self.curves.as_slice() {
            [one] => format!("Sweep of --{}", one.sweep.option),
            many => format!("{} sweeps compared", many.len()),
        }
    }

    /// The data block: each sweep as `sweep.json` holds it, with its label and each point's
    /// reasons as core gives them.
    pub fn data(&self) -> Value {
        json!({
            "schema": SCHEMA,
            "inferlint": inferlint_core::VERSION,
            "title": self.title(),
            "sweeps": self.curves.iter().map(|c| json!({
                "label": c.label,
                "server": c.server,
                "why_not": c.sweep.points.iter().map(|p| json!({"point": p.index, "why": c.sweep.why_not(p.index)})).collect::<Vec<_>>(),
                "sweep": c.sweep,
            })).collect::<Vec<_>>(),
        })
    }

    /// The standalone page.
    pub fn render_page(&self) -> String {
        let title = self.title();
        let stamp = self.generated_at.clone().unwrap_or_else(generated_now);
        html! {
            (DOCTYPE)
            html lang="en" {
                (head(&title, CSS))
                body {
                    div class="inferlint-report" {
                        (self.header(&title))
                        main {
                            (self.lede())
                            (self.charts())
                            @for cv in &self.curves { (table::section(cv, self.curves.len() > 1)) }
                        }
                        footer { "Generated " (stamp) " by inferlint " (inferlint_core::VERSION) ". Every number is read from the sweeps' own files; every verdict is core's." }
                        div class="tt" role="status" hidden {}
                        script type="application/json" id=(embed::DATA_ID) {
                            (PreEscaped(embed::json_for_script(&self.data())))
                        }
                        script { (PreEscaped(include_str!("../assets/report.js"))) }
                    }
                }
            }
        }
        .into_string()
    }

    /// Writes the page whole or not at all.
    pub fn write(&self, path: &Path) -> std::io::Result<()> {
        super::write_atomically(path, self.render_page().as_bytes())
    }

    fn header(&self, title: &str) -> Markup {
        let meta: Vec<String> = self
            .curves
            .iter()
            .map(|c| {
                let s = &c.sweep;
                let mut parts: Vec<String> = Vec::new();
                if !c.label.is_empty() {
                    parts.push(c.label.clone());
                }
                parts.extend(c.server.clone());
                parts.push(format!("--{} {}", s.option, values(s)));
                parts.push(format!("between points: {}", s.between.word()));
                parts.join(" · ")
            })
            .collect();
        html! {
            header class="top" {
                div class="topbar" {
                    span class="brand" { "inferlint" }
                    button type="button" class="theme" id="theme-toggle" aria-pressed="false" hidden {
                        span class="label" { "Dark" }
                    }
                }
                h1 { (title) }
                @for m in &meta { p class="meta" { (m) } }
            }
        }
    }

    /// A sentence per sweep: how many points hold, and where the knee is.
    fn lede(&self) -> Markup {
        html! {
            section class="limits" aria-labelledby="h-sweep" {
                h2 id="h-sweep" {
                    @if self.curves.len() > 1 { "What the sweeps found" } @else { "What the sweep found" }
                }
                @for cv in &self.curves {
                    p class="lede" { (lede_line(cv, self.curves.len() > 1)) }
                }
            }
        }
    }

    fn charts(&self) -> Markup {
        let load = XKind::of_load(&self.curves);
        let figures = [
            (
                "fig-sweep-ttft",
                "Output tokens per second against TTFT",
                XKind::Ttft,
            ),
            (
                "fig-sweep-load",
                "Output tokens per second against the load asked",
                load,
            ),
        ];
        html! {
            section aria-labelledby="h-curve" {
                h2 id="h-curve" { "The curve" }
                p class="sweep-caption" {
                    "One mark per point, joined in the order run. A filled dot holds; a hollow ring does not (hover or focus it for why; the table says it too). The ringed point is the knee: from it on, the points measure the server's ceiling or the client. Each mark opens the point's own page."
                }
                (self.legend())
                div class="charts" {
                    @for (id, name, kind) in figures {
                        figure class="chart" id=(id) {
                            h3 { (name) }
                            @match chart::render(&self.curves, kind, name) {
                                Some(svg) => (svg),
                                None => p class="note" { "No point has both figures, so there is nothing to draw." }
                            }
                        }
                    }
                }
            }
        }
    }

    fn legend(&self) -> Markup {
        html! {
            ul class="legend" {
                @for (k, cv) in self.curves.iter().enumerate() {
                    @if self.curves.len() > 1 {
                        li { i class=(series_class(k)) {} (cv.label) }
                    }
                }
                li { span class="key-dot" {} "holds" }
                li { span class="key-ring" {} "does not hold" }
                li { span class="key-knee" {} "the knee" }
            }
        }
    }
}

/// The values swept, `1,2,4,8`; past eight, the first three and the last
/// (`4,8,12,…,128 (32 points)`), so the header stays one line.
fn values(s: &Sweep) -> String {
    let v: Vec<&str> = s.points.iter().map(|p| p.value.as_str()).collect();
    match v.as_slice() {
        [a, b, c, .., last] if v.len() > 8 => {
            format!("{a},{b},{c},…,{last} ({} points)", v.len())
        }
        _ => v.join(","),
    }
}

/// `2 of 4 points hold. The knee is point 4 (--max-concurrency 8).`
fn lede_line(cv: &Curve, named: bool) -> String {
    let s = &cv.sweep;
    let holding = s
        .points
        .iter()
        .filter(|p| s.why_not(p.index).is_empty())
        .count();
    let mut line = if named {
        format!("{}: ", cv.label)
    } else {
        String::new()
    };
    line.push_str(&format!(
        "{holding} of {} point{} hold{}.",
        s.points.len(),
        if s.points.len() == 1 { "" } else { "s" },
        if holding == 1 && s.points.len() == 1 {
            "s"
        } else {
            ""
        }
    ));
    match s.knee.and_then(|k| s.points.iter().find(|p| p.index == k)) {
        Some(p) => line.push_str(&format!(
            " The knee is point {} ({}): from there on the points measure the server's ceiling or the client, not the load they asked for.",
            p.index, p.label
        )),
        None => line.push_str(" No knee: every point's server ran what it was asked, and every client kept up."),
    }
    line
}

/// A point's link: the sweep folder as seen from the page, the point's folder, its page.
pub fn href(base: &str, folder: &str) -> String {
    format!("{base}{}/report.html", url_path(folder))
}

/// The path from the page's folder `from` to the sweep folder `to`, as a link prefix ending in
/// `/` (empty when they are one folder). Both should be absolute; a link cannot climb out of a
/// different root, so then the absolute path is used.
pub fn relative_base(from: &Path, to: &Path) -> String {
    let a: Vec<_> = from.components().collect();
    let b: Vec<_> = to.components().collect();
    if a.first() != b.first() {
        return format!("{}/", url_path(&to.display().to_string()));
    }
    let common = a.iter().zip(&b).take_while(|(x, y)| x == y).count();
    let mut rel = PathBuf::new();
    for _ in common..a.len() {
        rel.push("..");
    }
    for part in &b[common..] {
        rel.push(part);
    }
    let s = url_path(&rel.display().to_string());
    if s.is_empty() {
        s
    } else {
        format!("{s}/")
    }
}

/// A path as a link: every byte but letters, digits, `-._~/` percent-encoded, so a folder
/// named with `#`, `?` or `%` still links to itself.
fn url_path(path: &str) -> String {
    let mut out = String::with_capacity(path.len());
    for b in path.bytes() {
        if b.is_ascii_alphanumeric() || b"-._~/".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

#[cfg(test)]
mod tests;
