//! The time-at-levels figure: seconds the server spent at each number of running requests.

use inferlint_core::fmt::g;
use inferlint_core::series::Series;

use super::{bar_figure, seconds, Figure};
use crate::svg::Bar;
use crate::Report;

/// Seconds spent at each running count, highest count first.
pub fn time_at_levels(series: &Series) -> Vec<(u64, f64)> {
    levels_over(series, &seconds(series))
}

/// [`time_at_levels`], the samples' times ([`seconds`]) given.
fn levels_over(series: &Series, t: &[f64]) -> Vec<(u64, f64)> {
    // The counts a server runs are small: those get a slot of a vector, which a day's 345,600
    // additions reach without a map's search; each level's seconds are still added in the
    // recording's order, so the sums are the map's to the last bit.
    const DIRECT: usize = 4096;
    let mut small: Vec<Option<f64>> = Vec::new();
    let mut levels: std::collections::BTreeMap<u64, f64> = Default::default();
    for (i, w) in series.samples.windows(2).enumerate() {
        let Some(r) = w[0].running().filter(|r| r.is_finite() && *r >= 0.0) else {
            continue;
        };
        let dt = t[i + 1] - t[i];
        if dt > 0.0 {
            let level = r.round() as u64;
            match usize::try_from(level).ok().filter(|&l| l < DIRECT) {
                Some(l) => {
                    if small.len() <= l {
                        small.resize(l + 1, None);
                    }
                    *small[l].get_or_insert(0.0) += dt;
                }
                None => *levels.entry(level).or_default() += dt,
            }
        }
    }
    let small = small
        .into_iter()
        .enumerate()
        .filter_map(|(l, secs)| Some((l as u64, secs?)));
    levels.extend(small);
    levels.into_iter().rev().collect()
}

pub(super) fn figure(report: &Report, series: &Series, t: &[f64]) -> Option<Figure> {
    let levels = levels_over(series, t);
    if levels.is_empty() {
        return None;
    }
    let bars = levels
        .iter()
        .map(|&(n, secs)| Bar {
            label: if n == 0 {
                "0 (idle)".to_string()
            } else {
                format!("{n} running")
            },
            value: secs,
            text: inferlint_core::fmt::duration(secs),
            class: if n == 0 { "s2" } else { "s1" },
        })
        .collect();
    let mut caption = "Seconds the server spent at each number of running requests, from the \
                       recording."
        .to_string();
    // The summary's peak is the same pass over the samples, made already.
    if let (Some(n), Some(peak)) = (report.inputs().requested, report.summary().peak_running) {
        if peak < n as f64 {
            caption.push_str(&format!(
                " The load tool asked for {n} the whole time, but the server never ran more than {}.",
                g(peak)
            ));
        }
    }
    Some(bar_figure(
        "fig-levels",
        "How many requests ran at once, and for how long",
        caption,
        bars,
        "Seconds",
    ))
}

#[cfg(test)]
mod tests {
    use inferlint_core::series::{Readings, SeriesHeader, SeriesSample};

    use super::*;

    #[test]
    fn levels_past_the_direct_slots_are_kept_in_order() {
        let running = [
            Some(5000.0),
            Some(3.0),
            Some(5000.0),
            None,
            Some(0.0),
            Some(3.0),
        ];
        let samples = running
            .iter()
            .enumerate()
            .map(|(i, &running)| {
                SeriesSample::from(Readings {
                    t_wall: i as f64,
                    running,
                    ..Readings::default()
                })
            })
            .collect();
        let header = SeriesHeader {
            url: String::new(),
            interval_s: 1.0,
            engine: None,
        };
        let series = Series::from_samples(header, samples);
        assert_eq!(time_at_levels(&series), [(5000, 2.0), (3, 1.0), (0, 1.0)]);
    }
}
