//! The series reader on any bytes, through a file (`Series::load`, which reads raw bytes line by
//! line) and through text (`Series::from_text`); both must decide alike on plain text. Then the
//! checks that read a series.
#![no_main]

#[path = "common.rs"]
mod common;

use inferlint::checks::{blocks, t8, t9};
use inferlint::series::Series;
use inferlint::Engine;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let from_file = Series::load(&common::scratch_file("series.jsonl", data));
    let text = String::from_utf8_lossy(data);
    let from_text = Series::from_text(&text, "fuzz.series.jsonl");
    if common::plain_text(data).is_some() {
        match (&from_file, &from_text) {
            (Ok(f), Ok(t)) => {
                assert_eq!(f.samples.len(), t.samples.len());
                assert_eq!(f.skipped_lines, t.skipped_lines);
                assert_eq!(f.header.engine, t.header.engine);
            }
            (Err(_), Err(_)) => {}
            (f, t) => panic!("file and text readers disagree: {:?} vs {:?}", f.as_ref().err(), t.as_ref().err()),
        }
    }
    let Ok(series) = from_file else {
        return;
    };
    let rows = text.split('\n').filter(|l| !l.trim().is_empty()).count();
    assert!(series.samples.len() + series.skipped_lines <= rows);
    let _ = series.busy().count();
    let peak = series.peak_running();
    if let Some(p) = peak {
        assert!(series.samples.iter().filter_map(|s| s.running).all(|r| r.is_nan() || r <= p));
    }
    let readings = series.usage_readings();
    assert!(readings.iter().all(|u| *u != 0.0 && !u.is_nan()));
    let inference = blocks::infer_blocks(&readings);
    if let Some(n) = inference.blocks {
        assert!((1..=blocks::MAX_DENOMINATOR).contains(&n));
    }
    for s in series.busy() {
        if let (Some(u), Some(r)) = (s.kv_usage, s.running) {
            let _ = blocks::predicted_ceiling(u, r, None);
            let _ = blocks::predicted_ceiling(u, r, inference.blocks);
        }
    }
    for engine in Engine::ALL {
        let _ = t8::check(&series, 32, None, engine).line();
        let _ = t9::check(&series, None, engine).line();
        let _ = t9::check(&series, inference.trusted_blocks(), engine).line();
    }
});
