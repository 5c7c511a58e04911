//! The boot-log analyzer fed any bytes in chunks cut anywhere (mid-line, mid-character), as a
//! live server's output arrives. The first byte picks the engine hint and the chunk sizes. The
//! facts must not depend on where the chunks were cut: they must equal those of the whole text
//! read at once. Then the boot-log checks run on them.
#![no_main]

use inferlint::bootlog::{self, Analyzer};
use inferlint::checks::{t12, t4_t11, t5, t6};
use inferlint::Engine;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((&control, log)) = data.split_first() else {
        return;
    };
    let hint = match control % 4 {
        0 => None,
        k => Some(Engine::ALL[usize::from(k - 1)]),
    };
    // Chunk sizes from a small generator seeded by the control byte: 1..=64 bytes, or larger.
    let mut state = u32::from(control) | 0x9e37_0000;
    let mut a = Analyzer::new(hint);
    let mut rest = log;
    while !rest.is_empty() {
        state ^= state << 13;
        state ^= state >> 17;
        state ^= state << 5;
        let n = if state % 8 == 0 { 4096 } else { 1 + (state % 64) as usize };
        let (chunk, tail) = rest.split_at(n.min(rest.len()));
        for e in a.feed_bytes(chunk) {
            assert!(e.lineno >= 1 && e.lineno <= a.lines(), "event at line {} of {}", e.lineno, a.lines());
        }
        let _ = a.last_line();
        rest = tail;
    }
    let chunked = a.finish();
    let whole = bootlog::parse_bytes(log, hint);
    // Compared as JSON: a NaN field is then equal to itself.
    assert_eq!(
        serde_json::to_value(&chunked).expect("facts serialize"),
        serde_json::to_value(&whole).expect("facts serialize"),
        "facts depend on where the input was cut"
    );

    let text = String::from_utf8_lossy(log);
    let _ = t5::check(&whole).line();
    let _ = t6::check(&whole).line();
    let _ = t12::check(&text, &whole).line();
    let pair = [("a".to_string(), &whole), ("b".to_string(), &chunked)];
    let _ = t4_t11::check_t4(&pair);
    let _ = t4_t11::check_t11(&pair);
    let _ = bootlog::result_block(&whole);
    let _ = bootlog::untested_version_note(&whole);
    if let Some(f) = &whole.failure {
        let _ = f.summary();
    }
});
