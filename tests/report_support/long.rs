//! A long recording made from a short recorded one: the recording repeated back to back with
//! its clocks shifted and its counters carried on, so a day of readings has the shape of a real
//! run (used by the long-run tests and the report benchmark).

use inferlint_core::series::{Series, SeriesSample};

/// Repeats `base` until it has `samples` readings, one interval apart at each seam.
pub fn stretch(base: &Series, samples: usize) -> Series {
    let rows = &base.samples;
    assert!(rows.len() >= 2, "a recording to stretch needs two readings");
    let (first, last) = (&rows[0], &rows[rows.len() - 1]);
    let gap = base.header.interval_s;
    let wall_span = last.t_wall - first.t_wall + gap;
    let mono_span = match (first.t_mono_ns(), last.t_mono_ns()) {
        (Some(a), Some(b)) => Some(b - a + (gap * 1e9) as i64),
        _ => None,
    };
    let moved = |f: fn(&SeriesSample) -> Option<f64>| match (f(first), f(last)) {
        (Some(a), Some(b)) => b - a,
        _ => 0.0,
    };
    let d_pre = moved(|s| s.preemptions());
    let d_gen = moved(|s| s.generation_tokens());
    let d_prompt = moved(|s| s.prompt_tokens());
    let mut out = Vec::with_capacity(samples);
    let mut k = 0.0;
    'outer: loop {
        for s in rows {
            if out.len() == samples {
                break 'outer;
            }
            let mut s = s.clone();
            s.t_wall += k * wall_span;
            s.set_t_mono_ns(
                s.t_mono_ns()
                    .zip(mono_span)
                    .map(|(t, span)| t + (k as i64) * span),
            );
            s.set_preemptions(s.preemptions().map(|v| v + k * d_pre));
            s.set_generation_tokens(s.generation_tokens().map(|v| v + k * d_gen));
            s.set_prompt_tokens(s.prompt_tokens().map(|v| v + k * d_prompt));
            out.push(s);
        }
        k += 1.0;
    }
    Series::from_samples(base.header.clone(), out)
}
