//! The cache charts of a data-parallel server, whose engines each have a KV pool of their own
//! (docs/design/report.md#charts): the server's one usage gauge is absent, so the usage chart
//! draws each engine's (or, past three engines, the fullest and the emptiest at each reading),
//! and the requests that fit in cache are summed over the engines. The running chart draws each
//! engine's running requests, so a load that one engine carried (T22) shows as one line.

use inferlint_core::checks::blocks::predicted_ceiling;
use inferlint_core::checks::t9::SATURATION;
use inferlint_core::series::{Series, SeriesSample};

use super::{key, Body, Figure};
use crate::svg::{ChartError, Line, LineKind, TimeChart};

/// The most engines drawn one line each; the page has three series colours.
const MAX_LINES: usize = 3;

/// The engines of a data-parallel recording (the series' own list); empty for a one-engine
/// server.
pub fn engine_ids(series: &Series) -> Vec<String> {
    let ids = series.engine_ids();
    if ids.len() < 2 {
        return Vec::new();
    }
    ids
}

fn usage_of(s: &SeriesSample, id: &str) -> Option<f64> {
    s.per_engine()
        .iter()
        .find(|e| e.engine == id)
        .and_then(|e| e.kv_usage)
        .map(|u| u * 100.0)
}

fn running_of(s: &SeriesSample, id: &str) -> Option<f64> {
    s.per_engine()
        .iter()
        .find(|e| e.engine == id)
        .and_then(|e| e.running)
}

/// The usage lines (in percent) of the engines `ids`, with their legend names.
pub fn usage_lines(series: &Series, ids: &[String]) -> Vec<Line> {
    engine_lines(series, ids, usage_of, ("Fullest engine", "Emptiest engine"))
}

/// Each engine's line of `value`, or past [`MAX_LINES`] engines the highest and the lowest at
/// each reading (named `extremes`).
fn engine_lines(
    series: &Series,
    ids: &[String],
    value: fn(&SeriesSample, &str) -> Option<f64>,
    extremes: (&'static str, &'static str),
) -> Vec<Line> {
    const CLASSES: [&str; MAX_LINES] = ["s1", "s2", "s3"];
    if ids.len() <= MAX_LINES {
        return ids
            .iter()
            .zip(CLASSES)
            .map(|(id, class)| Line {
                name: format!("Engine {id}"),
                class,
                kind: LineKind::Line,
                values: series.samples.iter().map(|s| value(s, id)).collect(),
            })
            .collect();
    }
    let extreme = |pick: fn(f64, f64) -> f64| -> Vec<Option<f64>> {
        series
            .samples
            .iter()
            .map(|s| ids.iter().filter_map(|id| value(s, id)).reduce(pick))
            .collect()
    };
    vec![
        Line {
            name: extremes.0.into(),
            class: "s1",
            kind: LineKind::Line,
            values: extreme(f64::max),
        },
        Line {
            name: extremes.1.into(),
            class: "s2",
            kind: LineKind::Line,
            values: extreme(f64::min),
        },
    ]
}

/// Each engine's running requests over time, for a data-parallel recording; None for a
/// one-engine server.
pub fn running(series: &Series, t: &[f64]) -> Option<Result<Figure, ChartError>> {
    let ids = engine_ids(series);
    if ids.is_empty() {
        return None;
    }
    let chart = TimeChart {
        t: t.to_vec(),
        lines: engine_lines(
            series,
            &ids,
            running_of,
            ("Busiest engine", "Idlest engine"),
        ),
        refs: Vec::new(),
        events: Vec::new(),
        event_words: (String::new(), String::new()),
        y_max: None,
        y_suffix: "",
        height: 220.0,
        label: "Running requests per engine over time".into(),
    };
    let drawn = match chart.render() {
        Ok(d) => d,
        Err(e) => return Some(Err(e)),
    };
    let n = ids.len();
    let caption = if n == chart.lines.len() {
        format!("Requests each of the {n} data-parallel engines was running at each reading: engines that share the load draw lines that overlap (T22).")
    } else {
        format!("Requests the busiest and the idlest of the {n} data-parallel engines were running at each reading (T22).")
    };
    let legend = chart.lines.iter().map(|l| key(l.class, &l.name)).collect();
    Some(Ok(Figure {
        id: "fig-engines",
        title: "Running per engine".into(),
        caption,
        legend,
        body: Body::Time(drawn),
    }))
}

/// How many requests of the size they had then fit in the server's caches at one reading:
/// the sum of each engine's fit (its usage, its running requests, its pool of `blocks`),
/// known only when every engine's cache is at least [`SATURATION`] full and runs a request
/// (an engine with room has no ceiling to add).
pub fn fit_in_cache(s: &SeriesSample, blocks: Option<u64>) -> Option<f64> {
    let per = s.per_engine();
    if per.len() < 2 {
        return None;
    }
    per.iter()
        .map(|e| {
            let (u, r) = (e.kv_usage?, e.running?);
            if u < SATURATION || r <= 0.0 {
                return None;
            }
            predicted_ceiling(u, r, blocks).ok().map(|c| c as f64)
        })
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;
    use inferlint_core::series::{EngineGauges, SeriesHeader};

    fn series(samples: Vec<SeriesSample>) -> Series {
        let mut series = Series::from_samples(
            SeriesHeader {
                url: "http://127.0.0.1:8000".into(),
                interval_s: 0.25,
                engine: None,
            },
            samples,
        );
        series.source = "test".into();
        series
    }

    fn row(per: &[(f64, f64)]) -> SeriesSample {
        let mut s = SeriesSample::default();
        s.set_engines(
            per.iter()
                .enumerate()
                .map(|(i, &(running, usage))| EngineGauges {
                    engine: i.to_string(),
                    running: Some(running),
                    waiting: Some(0.0),
                    kv_usage: Some(usage),
                })
                .collect(),
        );
        s
    }

    #[test]
    fn each_engine_has_its_usage_line_and_the_fit_is_summed_only_when_all_are_full() {
        let series = series(vec![
            row(&[(2.0, 0.5), (3.0, 0.95)]),
            row(&[(4.0, 1.0), (3.0, 0.96)]),
        ]);
        let ids = engine_ids(&series);
        assert_eq!(ids, ["0", "1"]);
        let lines = usage_lines(&series, &ids);
        assert_eq!(lines.len(), 2);
        assert_eq!(lines[0].values, [Some(50.0), Some(100.0)]);
        assert_eq!(fit_in_cache(&series.samples[0], Some(100)), None);
        let both = fit_in_cache(&series.samples[1], Some(100)).unwrap();
        let alone = |u, r| predicted_ceiling(u, r, Some(100)).unwrap() as f64;
        assert_eq!(both, alone(1.0, 4.0) + alone(0.96, 3.0));
    }

    #[test]
    fn past_three_engines_the_fullest_and_the_emptiest_are_drawn() {
        let series = series(vec![row(&[(1.0, 0.1), (1.0, 0.7), (1.0, 0.4), (1.0, 0.2)])]);
        let lines = usage_lines(&series, &engine_ids(&series));
        assert_eq!(lines.len(), 2);
        assert_eq!(lines[0].values, [Some(70.0)]);
        assert_eq!(lines[1].values[0].map(|v| (v * 10.0).round()), Some(100.0));
    }

    #[test]
    fn a_one_engine_recording_has_no_engines_to_draw() {
        let series = series(vec![SeriesSample::default()]);
        assert!(engine_ids(&series).is_empty());
    }
}
