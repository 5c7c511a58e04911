//! The Prometheus text parser on any bytes: it must return samples or an error naming a line,
//! never panic, and every lookup on what it returns must agree with the samples themselves.
#![no_main]

use inferlint::prom::{Metrics, PromError};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let m = match Metrics::parse(&text) {
        Ok(m) => m,
        Err(PromError::NotASample { line, .. } | PromError::MalformedLabels { line, .. }) => {
            assert!(line >= 1 && line <= text.split('\n').count(), "line {line} out of range");
            return;
        }
        Err(e) => panic!("parse gave a lookup error: {e}"),
    };
    let names: Vec<&str> = m.names().collect();
    let mut counted = 0;
    for name in &names {
        assert!(m.has(name));
        let all = m.series(name, &[]);
        assert!(!all.is_empty(), "{name} listed but has no series");
        counted += all.len();
        // A name with samples always has a total (possibly NaN), never "absent".
        assert!(m.total(name).is_some());
        match m.single(name) {
            Ok(v) => assert!(all.len() == 1 && v.is_some()),
            Err(_) => assert!(all.len() > 1),
        }
        let first = all[0];
        let labels: Vec<(&str, &str)> = first
            .labels
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect();
        assert!(m.series(name, &labels).iter().any(|s| std::ptr::eq(*s, first)));
        assert!(m.total_where(name, &labels).is_some());
        let _ = m.info_labels(name);
        assert!(m.names_with_prefix(name).any(|n| n == *name));
    }
    assert_eq!(counted, m.samples().len());
    assert!(m.total("\u{0}no such metric").is_none());
    for s in m.samples() {
        assert!(s.labels.windows(2).all(|w| w[0].0 <= w[1].0), "labels not sorted");
    }
    let _ = m.engine();
    let _ = m.created_stamps().count();
});
