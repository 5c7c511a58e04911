//! T20 warm-up-in-window: the first requests of the measured window paid for the server's
//! warm-up (docs/design/tripwires.md#t20). Two signals: the warm-up work the server logged
//! while the load ran, which is certain, and the first requests' time to first token against
//! the rest's, which is a warning only beyond what sharing one prefill explains.

use crate::bench::BenchResult;
use crate::checks::t18::median;
use crate::evidence::{JsonF64, T20Evidence};
use crate::fmt::{g_prec, millis, shorten, thousands_f};
use crate::result::{CheckResult, Tripwire};

/// Fewer requests with a TTFT than this, and the first ones cannot be told from the rest.
pub const MIN_REQUESTS: usize = 8;
/// The first requests' median TTFT must be more than this many times the rest's, and more than
/// their batching allowance, to be called warm-up.
pub const SLOW_FIRST_RATIO: f64 = 3.0;

/// T20 from the load tool's result (its per-request `ttfts`) and the warm-up lines the server
/// logged while the load ran (None when its log was not watched).
pub fn check(bench: Option<&BenchResult>, warmup_work: Option<&[String]>) -> CheckResult {
    let mut ev = T20Evidence {
        warmup_lines: warmup_work.map(|w| w.len() as u64),
        first_warmup_line: warmup_work.and_then(|w| w.first()).cloned(),
        ..Default::default()
    };
    let first = bench.and_then(|b| first_requests(b, &mut ev));
    let slow = first.as_ref().filter(|f| f.slow());
    let comparison = first.as_ref().map(First::describe);
    let logged = warmup_work.filter(|w| !w.is_empty());
    let r = match (logged, slow, &comparison) {
        (Some(lines), _, _) => {
            let also = comparison
                .as_deref()
                .map_or_else(String::new, |c| format!("; {c}"));
            CheckResult::fail(
                Tripwire::T20,
                format!(
                    "the server did warm-up work while the load ran ({} line{}, first: \"{}\"): requests of the measured window waited for it{also}; add --num-warmups N or a warm-up load before the measured one",
                    lines.len(),
                    if lines.len() == 1 { "" } else { "s" },
                    shorten(&lines[0], 120),
                ),
            )
        }
        (None, Some(_), Some(c)) => CheckResult::warn(
            Tripwire::T20,
            format!("{c}, more than sharing one prefill explains: warm-up is inside the measured window; add --num-warmups N"),
        ),
        (None, None, Some(c)) => {
            let log = match warmup_work {
                Some(_) => ", and the server logged no warm-up work while the load ran",
                None => "",
            };
            CheckResult::pass(Tripwire::T20, format!("{c}{log}"))
        }
        (None, _, None) => CheckResult::unknown(Tripwire::T20, unknown_why(bench, warmup_work)),
    };
    r.with_evidence(ev)
}

/// Why the first requests cannot be compared with the rest.
fn unknown_why(bench: Option<&BenchResult>, warmup_work: Option<&[String]>) -> String {
    let per_request = match bench {
        None => "no result file".to_string(),
        Some(b) if b.ttfts.is_empty() => {
            "the result file has no per-request TTFTs (vllm bench serve --save-detailed)".into()
        }
        Some(_) => format!("fewer than {MIN_REQUESTS} requests succeeded"),
    };
    let log = if warmup_work.is_some() {
        "the server logged no warm-up work while the load ran, but "
    } else {
        ""
    };
    format!("{log}{per_request}: whether the first requests paid for warm-up cannot be told")
}

/// The first requests of the window and the rest, by TTFT.
struct First {
    n: usize,
    first_median: f64,
    rest_median: f64,
    allowance: f64,
}

impl First {
    fn ratio(&self) -> f64 {
        self.first_median / self.rest_median
    }

    fn slow(&self) -> bool {
        self.ratio() > SLOW_FIRST_RATIO.max(self.allowance)
    }

    fn describe(&self) -> String {
        let who = if self.n == 1 {
            "the first request's TTFT".to_string()
        } else {
            format!("the first {} requests' median TTFT", self.n)
        };
        format!(
            "{who} {} is {}× the rest's {}",
            millis(self.first_median * 1000.0),
            times(self.ratio()),
            millis(self.rest_median * 1000.0)
        )
    }
}

/// A ratio in two significant digits below 100 (2, 3.1, 18), whole above (980, 1,200): never
/// in exponent form, which a ticket's reader cannot read at a glance.
fn times(r: f64) -> String {
    if r >= 100.0 {
        thousands_f(r, 0)
    } else {
        g_prec(r, 2)
    }
}

/// The first requests (the first wave: as many as the concurrency asked for, at most half)
/// against the rest, in the order they were sent. Failed requests (TTFT 0) are left out.
fn first_requests(b: &BenchResult, ev: &mut T20Evidence) -> Option<First> {
    let mut reqs: Vec<(f64, f64, Option<f64>)> = b
        .ttfts
        .iter()
        .enumerate()
        .map(|(i, &t)| {
            let sent = if b.start_times.len() == b.ttfts.len() {
                b.start_times[i]
            } else {
                i as f64
            };
            let prompt = (b.input_lens.len() == b.ttfts.len()).then(|| b.input_lens[i]);
            (sent, t, prompt)
        })
        .filter(|(s, t, _)| *t > 0.0 && t.is_finite() && s.is_finite())
        .collect();
    ev.requests = Some(reqs.len() as u64);
    if reqs.len() < MIN_REQUESTS {
        return None;
    }
    reqs.sort_by(|a, b| a.0.total_cmp(&b.0));
    let wave = b
        .max_concurrency
        .filter(|c| *c >= 1.0)
        .map_or(1, |c| c as usize);
    let n = wave.min(reqs.len() / 2).max(1);
    let (head, tail) = reqs.split_at(n);
    let first_median = median(&mut head.iter().map(|r| r.1).collect::<Vec<_>>())?;
    let rest_median = median(&mut tail.iter().map(|r| r.1).collect::<Vec<_>>())?;
    // Sharing one prefill, the first wave may take as long as all its prompts' tokens take,
    // against one typical prompt of the rest.
    let allowance = match (
        head.iter().map(|r| r.2).sum::<Option<f64>>(),
        median(&mut tail.iter().filter_map(|r| r.2).collect::<Vec<_>>()),
    ) {
        (Some(tokens), Some(typical)) if typical > 0.0 => tokens / typical,
        _ => n as f64,
    };
    let f = First {
        n,
        first_median,
        rest_median,
        allowance,
    };
    ev.first_requests = Some(n as u64);
    ev.first_median_ttft_s = Some(JsonF64(first_median));
    ev.rest_median_ttft_s = Some(JsonF64(rest_median));
    ev.batching_allowance = Some(JsonF64(allowance));
    if rest_median <= 0.0 {
        return None;
    }
    ev.ratio = Some(JsonF64(f.ratio()));
    Some(f)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::result::Status;

    fn bench(ttfts: &[f64], conc: f64) -> BenchResult {
        BenchResult {
            ttfts: ttfts.to_vec(),
            start_times: (0..ttfts.len()).map(|i| i as f64 * 0.01).collect(),
            input_lens: vec![100.0; ttfts.len()],
            max_concurrency: Some(conc),
            ..Default::default()
        }
    }

    #[test]
    fn a_first_wave_far_slower_than_batching_explains_warns() {
        let b = bench(&[9.0, 9.0, 0.5, 0.5, 0.6, 0.5, 0.5, 0.5], 2.0);
        let r = check(Some(&b), None);
        assert_eq!(r.status, Status::Warn, "{}", r.message);
        assert!(
            r.message
                .starts_with("the first 2 requests' median TTFT 9.0 s is 18× the rest's 500 ms"),
            "{}",
            r.message
        );
    }

    #[test]
    fn a_large_ratio_is_written_whole() {
        let b = bench(&[4.0, 4.0, 0.004, 0.004, 0.004, 0.004, 0.004, 0.004], 2.0);
        let r = check(Some(&b), None);
        assert!(
            r.message.contains("is 1,000× the rest's 4 ms"),
            "{}",
            r.message
        );
    }

    #[test]
    fn a_first_wave_within_its_batching_allowance_passes() {
        // Four prompts sharing one prefill may take four times one prompt's.
        let b = bench(&[2.0, 2.0, 2.0, 2.0, 0.5, 0.5, 0.6, 0.5], 4.0);
        let r = check(Some(&b), Some(&[]));
        assert_eq!(r.status, Status::Pass, "{}", r.message);
        assert!(r
            .message
            .ends_with("and the server logged no warm-up work while the load ran"));
    }

    #[test]
    fn warm_up_work_logged_during_the_load_fails_even_without_per_request_data() {
        let lines = vec!["Compiling a graph for compile range (1, 2048) takes 11.07 s".to_string()];
        let r = check(None, Some(&lines));
        assert_eq!(r.status, Status::Fail);
        assert!(
            r.message.contains("(1 line, first: \"Compiling a graph"),
            "{}",
            r.message
        );
    }

    #[test]
    fn failed_requests_and_too_few_requests_are_not_compared() {
        let b = bench(&[9.0, 0.0, 0.0, 0.5, 0.5, 0.5, 0.5, 0.5], 1.0);
        let r = check(Some(&b), None);
        assert_eq!(r.status, Status::Unknown);
        assert!(
            r.message.contains("fewer than 8 requests succeeded"),
            "{}",
            r.message
        );
        let none = check(Some(&BenchResult::default()), None);
        assert!(none.message.contains("--save-detailed"), "{}", none.message);
    }
}
