//! Thinning a long recording to what a chart can show: per pixel column, the lowest and the
//! highest value of each series (in the order they occurred). Every peak, every dip and every
//! step of a counter therefore survives, whatever the recording's length.

/// What one series shows at one drawn point.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Cell {
    /// No reading had a value (the line breaks here).
    Empty,
    One(f64),
    /// The first and second of (lowest, highest), in the order they occurred.
    Range(f64, f64),
}

impl Cell {
    /// The values shown (none, one or two).
    pub fn values(&self) -> impl Iterator<Item = f64> {
        let (a, b) = match *self {
            Cell::Empty => (None, None),
            Cell::One(v) => (Some(v), None),
            Cell::Range(a, b) => (Some(a), Some(b)),
        };
        a.into_iter().chain(b)
    }

    /// The lowest value shown.
    pub fn min(&self) -> Option<f64> {
        self.values().reduce(f64::min)
    }

    /// The highest value shown.
    pub fn max(&self) -> Option<f64> {
        self.values().reduce(f64::max)
    }
}

/// One drawn point in time: a reading, or a pixel column of readings when thinned.
#[derive(Clone, Debug, PartialEq)]
pub struct Row {
    /// Time of the first and last reading it covers (equal when not thinned).
    pub t0: f64,
    pub t1: f64,
    /// Where it is drawn.
    pub x: f64,
    /// Readings it covers.
    pub readings: usize,
    /// One cell per series.
    pub cells: Vec<Cell>,
}

/// Every reading as its own row.
pub fn every(t: &[f64], series: &[&[Option<f64>]], x_of: impl Fn(f64) -> f64) -> Vec<Row> {
    t.iter()
        .enumerate()
        .map(|(i, &ti)| Row {
            t0: ti,
            t1: ti,
            x: x_of(ti),
            readings: 1,
            cells: series
                .iter()
                .map(|s| {
                    s[i].filter(|v| v.is_finite())
                        .map_or(Cell::Empty, Cell::One)
                })
                .collect(),
        })
        .collect()
}

/// The readings grouped into `columns` equal slices of the time axis; each non-empty slice
/// becomes one row drawn at its middle, holding each series' lowest and highest value.
pub fn columns(
    t: &[f64],
    series: &[&[Option<f64>]],
    columns: usize,
    x_of: impl Fn(f64) -> f64,
) -> Vec<Row> {
    let columns = columns.max(1);
    let (x0, x1) = (x_of(t[0]), x_of(t[t.len() - 1]));
    let width = if x1 > x0 { x1 - x0 } else { 1.0 };
    let column_of =
        |ti: f64| (((x_of(ti) - x0) / width * columns as f64) as usize).min(columns - 1);

    let mut rows: Vec<Row> = Vec::with_capacity(columns);
    // Per series: (min, index of min, max, index of max) of the open column.
    let mut acc: Vec<Option<(f64, usize, f64, usize)>> = vec![None; series.len()];
    let mut open: Option<(usize, usize, usize)> = None; // (column, first index, last index)

    let flush = |open: (usize, usize, usize),
                 acc: &mut [Option<(f64, usize, f64, usize)>],
                 rows: &mut Vec<Row>| {
        let (col, first, last) = open;
        let cells = acc
            .iter_mut()
            .map(|a| match a.take() {
                None => Cell::Empty,
                Some((lo, ilo, hi, ihi)) if lo == hi || ilo == ihi => {
                    Cell::One(if ilo <= ihi { lo } else { hi })
                }
                Some((lo, ilo, hi, ihi)) => {
                    if ilo < ihi {
                        Cell::Range(lo, hi)
                    } else {
                        Cell::Range(hi, lo)
                    }
                }
            })
            .collect();
        rows.push(Row {
            t0: t[first],
            t1: t[last],
            x: x0 + (col as f64 + 0.5) / columns as f64 * width,
            readings: last - first + 1,
            cells,
        });
    };

    for (i, &ti) in t.iter().enumerate() {
        let col = column_of(ti);
        match open {
            Some((c, first, _)) if c == col => open = Some((c, first, i)),
            Some(o) => {
                flush(o, &mut acc, &mut rows);
                open = Some((col, i, i));
            }
            None => open = Some((col, i, i)),
        }
        for (s, a) in series.iter().zip(acc.iter_mut()) {
            if let Some(v) = s[i].filter(|v| v.is_finite()) {
                *a = Some(match *a {
                    None => (v, i, v, i),
                    Some((lo, ilo, hi, ihi)) => {
                        let (lo, ilo) = if v < lo { (v, i) } else { (lo, ilo) };
                        let (hi, ihi) = if v > hi { (v, i) } else { (hi, ihi) };
                        (lo, ilo, hi, ihi)
                    }
                });
            }
        }
    }
    if let Some(o) = open {
        flush(o, &mut acc, &mut rows);
    }
    rows
}

#[cfg(test)]
mod tests {
    use super::*;

    fn x(t: f64) -> f64 {
        t
    }

    #[test]
    fn keeps_every_peak_and_dip_in_order() {
        // 10,000 readings of a flat 5 with one spike to 9 and one dip to 1, thinned to 100.
        let t: Vec<f64> = (0..10_000).map(f64::from).collect();
        let mut v: Vec<Option<f64>> = vec![Some(5.0); 10_000];
        v[1234] = Some(9.0);
        v[7777] = Some(1.0);
        let rows = columns(&t, &[&v], 100, x);
        assert_eq!(rows.len(), 100);
        let maxes: Vec<f64> = rows.iter().filter_map(|r| r.cells[0].max()).collect();
        let mins: Vec<f64> = rows.iter().filter_map(|r| r.cells[0].min()).collect();
        assert_eq!(maxes.iter().copied().fold(f64::MIN, f64::max), 9.0);
        assert_eq!(mins.iter().copied().fold(f64::MAX, f64::min), 1.0);
        assert_eq!(rows.iter().map(|r| r.readings).sum::<usize>(), 10_000);
        let spike = rows.iter().find(|r| r.cells[0].max() == Some(9.0)).unwrap();
        assert!(spike.t0 <= 1234.0 && 1234.0 <= spike.t1);
        assert_eq!(spike.cells[0], Cell::Range(5.0, 9.0));
        let dip = rows.iter().find(|r| r.cells[0].min() == Some(1.0)).unwrap();
        // The dip came after the flat readings of its column... or before: order is kept.
        assert!(matches!(dip.cells[0], Cell::Range(_, _)));
    }

    #[test]
    fn a_column_without_values_is_empty() {
        let t: Vec<f64> = (0..1000).map(f64::from).collect();
        let v: Vec<Option<f64>> = (0..1000).map(|i| (i >= 500).then_some(1.0)).collect();
        let rows = columns(&t, &[&v], 10, x);
        assert_eq!(rows[0].cells[0], Cell::Empty);
        assert_eq!(rows[9].cells[0], Cell::One(1.0));
    }

    #[test]
    fn every_keeps_each_reading() {
        let t = [0.0, 1.0, 2.0];
        let v = [Some(1.0), None, Some(f64::NAN)];
        let rows = every(&t, &[&v], x);
        assert_eq!(rows.len(), 3);
        assert_eq!(rows[1].cells[0], Cell::Empty);
        assert_eq!(rows[2].cells[0], Cell::Empty);
    }
}
