//! libFuzzer on [`inferlint_fuzz::bench_read`]: what it checks is said there.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| inferlint_fuzz::bench_read(data));
