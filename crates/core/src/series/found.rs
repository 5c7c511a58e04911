//! What the checks ask of every row of a recording, found once.
//!
//! A day's recording at 0.25 s is 345,600 rows of 96 bytes, and each pass over them streams
//! 33 MB from memory: T8's peaks, T9's busy rows and T14's usage readings each took milliseconds
//! of a pass of their own after the reading, where the rows were no longer in any cache
//! (docs/benchmarks.md). So the reader gathers their answers while each row is at hand
//! ([`RowsSeen`]), and a series built from samples finds them in one pass when first asked.
//! Both give the same answers: every test build checks that they do.

use std::collections::{BTreeSet, HashMap};
use std::sync::OnceLock;

use super::{add_engine_ids, sort_engine_ids, SeriesSample};

/// What was found in the samples of a series, kept with the samples' address and length at that
/// time, so that a vector replaced, filtered or grown since is searched again. Rows rewritten in
/// place (a row's engines edited, or the vector emptied and refilled to the same length) would
/// go unseen, which no caller does: other samples make a new series (`Series::from_samples`,
/// `Series::with_samples`), and test builds check it.
#[derive(Clone, Debug, Default)]
pub(super) struct Found {
    of: (usize, usize),
    /// The engines the rows have gauges for, in engine order (T8, T9, T14, T25 and the report's
    /// charts each ask).
    pub(super) ids: Vec<String>,
    /// What the reader gathered, or a pass found when first asked.
    pub(super) rows: OnceLock<RowFacts>,
}

impl Found {
    pub(super) fn of(samples: &[SeriesSample], ids: Vec<String>, rows: Option<RowFacts>) -> Found {
        Found {
            of: (samples.as_ptr() as usize, samples.len()),
            ids,
            rows: rows.map(OnceLock::from).unwrap_or_default(),
        }
    }

    /// Whether this was found in `samples` as they are now.
    pub(super) fn is_of(&self, samples: &[SeriesSample]) -> bool {
        self.of == (samples.as_ptr() as usize, samples.len())
    }

    /// The engine ids of `samples`, in engine order.
    pub(super) fn search(samples: &[SeriesSample]) -> Vec<String> {
        let mut ids: Vec<String> = Vec::new();
        for s in samples {
            add_engine_ids(&mut ids, s.per_engine().iter().map(|e| e.engine.as_str()));
        }
        sort_engine_ids(&mut ids);
        ids
    }
}

/// The answers to the checks' questions of every row.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct RowFacts {
    /// The distinct non-null, non-zero usage readings, ascending (T14).
    pub(crate) usage: Vec<f64>,
    /// The distinct readings of the busy rows, in the order of the first row of each (T9).
    pub(crate) busy: Vec<BusyReadings>,
    /// The most requests running, and running or waiting (T8).
    pub(crate) peaks: Peaks,
}

impl RowFacts {
    /// The answers for `samples`, in one pass.
    pub(crate) fn of(samples: &[SeriesSample]) -> RowFacts {
        let mut seen = RowsSeen::default();
        for s in samples {
            seen.see(s);
        }
        seen.done()
    }
}

/// The readings a group of busy rows (running > 0 and usage > 0) share: T9's ceiling and share
/// depend on nothing else, so each distinct pair is judged once, counted as many times as rows
/// had it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct BusyReadings {
    pub usage: f64,
    pub running: f64,
    /// How many rows had these readings.
    pub rows: usize,
    /// The index of the first of them among the samples.
    pub first: usize,
}

impl BusyReadings {
    fn key(&self) -> (u64, u64) {
        (self.usage.to_bits(), self.running.to_bits())
    }
}

/// The most requests the rows saw running, and running or waiting (NaN readings left out).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Peaks {
    pub running: Option<f64>,
    pub in_flight: Option<f64>,
}

impl Peaks {
    #[inline]
    fn see(&mut self, s: &SeriesSample) {
        if let Some(r) = s.running() {
            self.running = most(self.running, Some(r));
            if let Some(w) = s.waiting() {
                self.in_flight = most(self.in_flight, Some(r + w));
            }
        }
    }

    fn merge(&mut self, later: Peaks) {
        self.running = most(self.running, later.running);
        self.in_flight = most(self.in_flight, later.in_flight);
    }
}

/// The larger of a peak so far and a reading; a NaN reading changes nothing.
#[inline]
fn most(peak: Option<f64>, x: Option<f64>) -> Option<f64> {
    match (peak, x.filter(|x| !x.is_nan())) {
        (Some(p), Some(x)) => Some(p.max(x)),
        (p, x) => p.or(x),
    }
}

/// The answers gathered over a run of rows, one row at a time; runs read apart (a file's chunks)
/// are merged in the file's order.
#[derive(Debug, Default)]
pub(crate) struct RowsSeen {
    /// Rows seen: the index of the next among the run's samples.
    rows: usize,
    usage: DistinctUsage,
    busy: DistinctBusy,
    peaks: Peaks,
}

impl RowsSeen {
    #[inline]
    pub(crate) fn see(&mut self, s: &SeriesSample) {
        self.usage.see(s.kv_usage());
        self.busy.see(s, self.rows);
        self.peaks.see(s);
        self.rows += 1;
    }

    /// Adds what was seen in the run of rows that follows.
    pub(crate) fn merge(&mut self, later: RowsSeen) {
        self.usage.merge(later.usage);
        self.busy.merge(later.busy, self.rows);
        self.peaks.merge(later.peaks);
        self.rows += later.rows;
    }

    pub(crate) fn done(self) -> RowFacts {
        RowFacts {
            usage: self.usage.values(),
            busy: self.busy.pairs,
            peaks: self.peaks,
        }
    }
}

/// The distinct non-null, non-zero usage readings of a run of samples, gathered one by one:
/// collecting every reading (a day's 345,600) into a vector to sort would cost more than the
/// few hundred values a recording has. A reading repeated from the row before is not looked up
/// again.
#[derive(Debug, Default)]
struct DistinctUsage {
    bits: BTreeSet<u64>,
    last: Option<u64>,
}

impl DistinctUsage {
    #[inline]
    fn see(&mut self, usage: Option<f64>) {
        if let Some(u) = usage.filter(|&u| u != 0.0 && !u.is_nan()) {
            // -0.0 and 0.0 are one reading (and zero is left out above in any case).
            let b = (u + 0.0).to_bits();
            if self.last != Some(b) {
                self.bits.insert(b);
                self.last = Some(b);
            }
        }
    }

    fn merge(&mut self, later: DistinctUsage) {
        self.bits.extend(later.bits);
        self.last = later.last.or(self.last);
    }

    /// The readings, ascending.
    fn values(&self) -> Vec<f64> {
        let mut values: Vec<f64> = self.bits.iter().map(|&b| f64::from_bits(b)).collect();
        values.sort_by(f64::total_cmp);
        values
    }
}

/// The distinct (usage, running) readings of the busy rows, in the order first seen. A pair
/// repeated from the row before (a steady server's every row) is not looked up again.
#[derive(Debug, Default)]
struct DistinctBusy {
    pairs: Vec<BusyReadings>,
    /// Where each pair is in `pairs`.
    at: HashMap<(u64, u64), usize>,
    /// The pair of the last busy row.
    last: Option<usize>,
}

impl DistinctBusy {
    #[inline]
    fn see(&mut self, s: &SeriesSample, row: usize) {
        let Some((usage, running)) = s.busy_readings() else {
            return;
        };
        let pair = BusyReadings {
            usage,
            running,
            rows: 1,
            first: row,
        };
        if let Some(i) = self.last.filter(|&i| self.pairs[i].key() == pair.key()) {
            self.pairs[i].rows += 1;
            return;
        }
        self.last = Some(self.add(pair));
    }

    /// Counts `pair`'s rows with those of its readings, or keeps it as new; where it is.
    fn add(&mut self, pair: BusyReadings) -> usize {
        let next = self.pairs.len();
        let i = *self.at.entry(pair.key()).or_insert(next);
        if i == next {
            self.pairs.push(pair);
        } else {
            self.pairs[i].rows += pair.rows;
        }
        i
    }

    /// Adds the pairs of the run that follows, whose first row is row `offset` of this one.
    fn merge(&mut self, later: DistinctBusy, offset: usize) {
        for mut pair in later.pairs {
            pair.first += offset;
            self.add(pair);
        }
        self.last = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::series::Readings;

    fn row(running: Option<f64>, waiting: Option<f64>, usage: Option<f64>) -> SeriesSample {
        SeriesSample::from(Readings {
            running,
            waiting,
            kv_usage: usage,
            ..Readings::default()
        })
    }

    #[test]
    fn busy_rows_are_counted_by_their_readings_in_the_order_first_seen() {
        let rows = [
            row(Some(2.0), None, Some(0.5)),
            row(Some(2.0), None, Some(0.5)),
            row(Some(0.0), None, Some(0.5)),
            row(Some(3.0), None, Some(0.75)),
            row(Some(f64::NAN), None, Some(0.5)),
            row(Some(2.0), None, Some(0.5)),
            row(Some(1.0), None, None),
        ];
        let busy = RowFacts::of(&rows).busy;
        let seen: Vec<_> = busy
            .iter()
            .map(|b| (b.usage, b.running, b.rows, b.first))
            .collect();
        assert_eq!(seen, [(0.5, 2.0, 3, 0), (0.75, 3.0, 1, 3)]);
    }

    #[test]
    fn runs_merged_in_order_give_what_one_pass_gives() {
        let rows: Vec<SeriesSample> = (0..40)
            .map(|i| {
                let running = f64::from(i % 7);
                let waiting = (i % 3 != 0).then_some(f64::from(i % 5));
                let usage = f64::from(i % 4) / 8.0;
                row(Some(running), waiting, (i % 11 != 0).then_some(usage))
            })
            .collect();
        let whole = RowFacts::of(&rows);
        for cut in [0, 1, 13, 39, 40] {
            let (mut a, mut b) = (RowsSeen::default(), RowsSeen::default());
            rows[..cut].iter().for_each(|s| a.see(s));
            rows[cut..].iter().for_each(|s| b.see(s));
            a.merge(b);
            assert_eq!(a.done(), whole, "cut at {cut}");
        }
        assert_eq!(whole.peaks.running, Some(6.0));
        assert_eq!(whole.peaks.in_flight, Some(10.0));
    }

    #[test]
    fn a_nan_reading_is_no_peak() {
        let rows = [
            row(Some(f64::NAN), Some(1.0), None),
            row(Some(1.0), Some(f64::NAN), None),
        ];
        let peaks = RowFacts::of(&rows).peaks;
        assert_eq!(peaks.running, Some(1.0));
        assert_eq!(peaks.in_flight, None);
    }
}
