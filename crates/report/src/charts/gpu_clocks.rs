//! The GPU clocks chart (docs/design/report.md#charts, docs/design/gpus.md#clocks): one card's
//! SM clock as a share of its maximum and its power draw as a share of its limit, at each
//! reading run took during the load, with a marker at each reading the driver gave a throttling
//! reason for (T27's reasons: power and thermal, not idle or a clock setting). Both lines share
//! one percent axis so that a power cap reads as the power line at 100 % while the clock line
//! falls below it. The card drawn is the one T27 named (the most throttled), else the first.

use inferlint_core::gpu::clocks::{throttle_names, ClockSample};
use inferlint_core::result::Tripwire;

use super::{key, Body, Figure, Key};
use crate::svg::{ChartError, Event, Line, LineKind, RefLine, TimeChart};
use crate::Report;

/// The readings' words, singular and plural, for the markers and their tooltip.
const WORDS: (&str, &str) = ("throttled reading", "throttled readings");

/// The card to draw: T27's, where its evidence names one that has readings, else the lowest.
fn card(report: &Report, samples: &[ClockSample]) -> Option<u32> {
    let named = report
        .result(Tripwire::T27)
        .and_then(|r| r.evidence_json().get("gpu").and_then(|v| v.as_u64()))
        .and_then(|g| u32::try_from(g).ok())
        .filter(|g| samples.iter().any(|s| s.gpu == *g));
    named.or_else(|| samples.iter().map(|s| s.gpu).min())
}

/// `part` as a percent of `whole`, where both are read and the whole is above zero.
fn percent(part: Option<f64>, whole: Option<f64>) -> Option<f64> {
    match (part, whole) {
        (Some(p), Some(w)) if w > 0.0 => Some(p / w * 100.0),
        _ => None,
    }
}

/// The figure, where run read the cards' clocks during the load (two readings of a card or more).
pub fn figure(report: &Report) -> Option<Result<Figure, ChartError>> {
    let all = report.inputs().observed.as_ref()?.gpu_clocks.as_ref()?;
    let gpu = card(report, all)?;
    let mut own: Vec<&ClockSample> = all.iter().filter(|s| s.gpu == gpu).collect();
    if own.len() < 2 {
        return None;
    }
    own.sort_by(|a, b| a.t_wall.total_cmp(&b.t_wall));
    let t0 = own[0].t_wall;
    let t: Vec<f64> = own.iter().map(|s| s.t_wall - t0).collect();
    let events: Vec<Event> = own
        .iter()
        .zip(&t)
        .filter(|(s, _)| s.throttled().is_some_and(|b| b != 0))
        .map(|(_, &t)| Event { t, count: 1.0 })
        .collect();
    let chart = TimeChart {
        t,
        lines: vec![
            Line {
                name: "SM clock, % of its maximum".into(),
                class: "s1",
                kind: LineKind::Line,
                values: own
                    .iter()
                    .map(|s| percent(s.sm_mhz, s.sm_max_mhz))
                    .collect(),
            },
            Line {
                name: "Power, % of its limit".into(),
                class: "s2",
                kind: LineKind::Line,
                values: own
                    .iter()
                    .map(|s| percent(s.power_w, s.power_limit_w))
                    .collect(),
            },
        ],
        refs: vec![RefLine {
            label: "maximum, limit".into(),
            y: 100.0,
        }],
        events,
        event_words: (WORDS.0.into(), WORDS.1.into()),
        y_max: None,
        y_suffix: "%",
        height: 220.0,
        label: format!("GPU {gpu}'s SM clock and power over the load"),
    };
    Some(chart.render().map(|drawn| Figure {
        id: "fig-gpu-clocks",
        title: format!("GPU {gpu}'s clocks during the load"),
        caption: caption(gpu, &own, chart.events.len()),
        legend: legend(&chart),
        body: Body::Time(drawn),
    }))
}

fn legend(chart: &TimeChart) -> Vec<Key> {
    let mut out: Vec<Key> = chart.lines.iter().map(|l| key(l.class, &l.name)).collect();
    if !chart.events.is_empty() {
        out.push(Key {
            class: "ev",
            name: "Throttled readings".into(),
            marker: true,
        });
    }
    out
}

fn caption(gpu: u32, own: &[&ClockSample], throttled: usize) -> String {
    let mut c = format!(
        "GPU {gpu}'s SM clock against its maximum and its power draw against its limit, at each \
         of the {} readings run took while the load ran.",
        own.len()
    );
    let reasons = own
        .iter()
        .filter_map(|s| s.throttled())
        .fold(0, |a, b| a | b);
    if throttled == 0 {
        c.push_str(" The driver gave no power or thermal throttling reason on any of them (T27).");
    } else {
        c.push_str(&format!(
            " A marker is a reading at which the driver said the clocks were held down ({}) (T27).",
            throttle_names(reasons).join(", ")
        ));
    }
    c
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Inputs;
    use inferlint_core::gpu::clocks::SW_POWER_CAP;
    use inferlint_core::observed::LoadObserved;
    use inferlint_core::series::{Series, SeriesHeader, SeriesSample};

    /// Card `gpu` read at second `t`, power-capped or not.
    fn reading(gpu: u32, t: f64, capped: bool) -> ClockSample {
        ClockSample {
            t_wall: 1000.0 + t,
            gpu,
            uuid: None,
            reasons: Some(if capped { SW_POWER_CAP } else { 0 }),
            sm_mhz: Some(if capped { 1584.0 } else { 1980.0 }),
            sm_max_mhz: Some(1980.0),
            power_w: Some(if capped { 700.0 } else { 350.0 }),
            power_limit_w: Some(700.0),
            temp_c: Some(60.0),
        }
    }

    /// A report of a run with a recording (a window with nothing in it has no verdicts, T27's
    /// included) and these clock readings.
    fn report(clocks: Option<Vec<ClockSample>>) -> Report {
        let mut series = Series::from_samples(
            SeriesHeader {
                url: "http://127.0.0.1:8000".into(),
                interval_s: 0.25,
                engine: None,
            },
            vec![SeriesSample::default(), SeriesSample::default()],
        );
        series.source = "test".into();
        Report::build(Inputs {
            series: Some(series),
            observed: Some(LoadObserved {
                gpu_clocks: clocks,
                ..Default::default()
            }),
            ..Default::default()
        })
    }

    fn drawn(r: &Report) -> Figure {
        figure(r).expect("a figure").expect("drawn")
    }

    #[test]
    fn the_card_t27_names_is_drawn_with_a_marker_at_each_capped_reading() {
        let mut clocks: Vec<ClockSample> = (0..3).map(|t| reading(0, t as f64, false)).collect();
        clocks.extend([
            reading(1, 0.0, false),
            reading(1, 1.0, true),
            reading(1, 2.0, true),
        ]);
        let r = report(Some(clocks));
        let t27 = r.result(Tripwire::T27).expect("T27 judged");
        assert_eq!(
            t27.evidence_json().get("gpu"),
            Some(&1.into()),
            "{}",
            t27.message
        );
        let f = drawn(&r);
        assert_eq!(f.id, "fig-gpu-clocks");
        assert_eq!(f.title, "GPU 1's clocks during the load");
        let Body::Time(d) = &f.body else {
            panic!("a time chart")
        };
        assert_eq!(d.events.len(), 2, "{:?}", d.events);
        assert!(f.caption.contains("(SwPowerCap)"), "{}", f.caption);
        assert!(f.legend.iter().any(|k| k.marker), "{:?}", f.legend);
        // The clock line is the SM clock's share of its maximum: 1584 of 1980 is 80 %.
        let data = d.data();
        assert_eq!(
            data["series"][0]["values"],
            serde_json::json!([100.0, 80.0, 80.0]),
            "{data}"
        );
        assert_eq!(
            data["series"][1]["values"],
            serde_json::json!([50.0, 100.0, 100.0])
        );
    }

    #[test]
    fn unthrottled_cards_have_no_marker_and_no_readings_no_figure() {
        let r = report(Some((0..3).map(|t| reading(0, t as f64, false)).collect()));
        let f = drawn(&r);
        let Body::Time(d) = &f.body else {
            panic!("a time chart")
        };
        assert!(d.events.is_empty());
        assert!(!f.legend.iter().any(|k| k.marker));
        assert!(f.caption.contains("no power or thermal"), "{}", f.caption);
        assert!(figure(&report(None)).is_none());
        assert!(figure(&report(Some(vec![reading(0, 0.0, true)]))).is_none());
    }
}
