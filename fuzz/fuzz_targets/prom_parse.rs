//! libFuzzer on [`inferlint_fuzz::prom_parse`]: what it checks is said there.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| inferlint_fuzz::prom_parse(data));
