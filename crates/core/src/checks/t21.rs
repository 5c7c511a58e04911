//! T21 client-pace: whether the load's client kept up with what it asked of the server, and
//! so which of the two held the run back (docs/design/tripwires.md#t21).

use crate::bench::BenchResult;
use crate::evidence::{JsonF64, T21Evidence};
use crate::fmt::{g, pct, shorten};
use crate::load::LoadIntent;
use crate::observed::ClientCpu;
use crate::result::{CheckResult, Tripwire};
use crate::series::Series;

/// A client that sent this much less than the rate asked for fell behind its schedule.
pub const RATE_SHORTFALL: f64 = 0.05;
/// A process at this share of a core (or a tree at this share of its CPU quota) is saturated.
pub const SATURATED: f64 = 0.9;
/// The server had room when on at least this share of its busy samples it ran fewer requests
/// than asked with none waiting.
pub const ROOM_SHARE: f64 = 0.5;
/// Fewer send times than this say nothing of a rate.
pub const MIN_SENDS: usize = 8;

/// Whether T21 has anything to judge: a rate asked of a client with an exact schedule, or the
/// client's CPU measured.
pub fn due(load: &LoadIntent, cpu: Option<&ClientCpu>) -> bool {
    (load.exact_schedule && load.request_rate.is_some()) || cpu.is_some()
}

/// T21 from the rate asked and the result's send times, the client's CPU as `run` measured it,
/// and the recording's busy samples against the concurrency asked for.
pub fn check(
    load: &LoadIntent,
    bench: Option<&BenchResult>,
    series: Option<&Series>,
    requested: Option<u64>,
    cpu: Option<&ClientCpu>,
) -> CheckResult {
    let mut ev = T21Evidence::default();
    let rate = sent_rate(load, bench, &mut ev);
    let saturated = cpu.and_then(|c| saturation(c, &mut ev));
    let room = room(series, requested, &mut ev);
    let short = rate.filter(|(asked, sent)| *sent < asked * (1.0 - RATE_SHORTFALL));
    let r = if let Some((asked, sent)) = short {
        ev.bound_by = Some("client".into());
        let cause = saturated
            .as_deref()
            .map_or_else(String::new, |s| format!("; {s}"));
        CheckResult::fail(
            Tripwire::T21,
            format!(
                "the client sent {} requests/s of the {} asked ({} short){cause}: the load measured is not the one asked for",
                g_rate(sent),
                g_rate(asked),
                pct(1.0 - sent / asked, 2)
            ),
        )
    } else if let Some(s) = &saturated {
        match room {
            Some((with_room, busy)) if with_room as f64 >= ROOM_SHARE * busy as f64 => {
                ev.bound_by = Some("client".into());
                CheckResult::fail(
                    Tripwire::T21,
                    format!(
                        "the client held the run back: {s} while the server ran fewer than the {} requests asked with none waiting on {with_room} of {busy} busy samples",
                        requested.unwrap_or_default()
                    ),
                )
            }
            Some((with_room, busy)) => {
                ev.bound_by = Some("server".into());
                CheckResult::warn(
                    Tripwire::T21,
                    format!(
                        "{s}; the server was the bound (room on only {with_room} of {busy} busy samples), but the client's own timings (TTFT, ITL) include its delays"
                    ),
                )
            }
            None => CheckResult::warn(
                Tripwire::T21,
                format!("{s}; whether the server had room for more cannot be told, and the client's own timings (TTFT, ITL) include its delays"),
            ),
        }
    } else if rate.is_some() || cpu.is_some_and(|c| c.busy_s > 0.0) {
        CheckResult::pass(Tripwire::T21, kept_up(rate, cpu))
    } else {
        CheckResult::unknown(
            Tripwire::T21,
            "neither the client's send times (--save-detailed) nor its CPU are known: whether it kept up cannot be told",
        )
    };
    r.with_evidence(ev)
}

/// The rate asked and the rate sent: requests over their send span. On an exact schedule the
/// span is at most requests / rate, so requests / span is at least the rate when on time.
fn sent_rate(
    load: &LoadIntent,
    bench: Option<&BenchResult>,
    ev: &mut T21Evidence,
) -> Option<(f64, f64)> {
    let asked = load.request_rate.filter(|_| load.exact_schedule)?;
    ev.asked_rate = Some(JsonF64(asked));
    let bench = bench?;
    // Under a concurrency cap a request starts when a slot frees: a late start is then the
    // server's pace, not the client's.
    if bench.max_concurrency.is_some() {
        return None;
    }
    let sends = &bench.start_times;
    if sends.len() < MIN_SENDS {
        return None;
    }
    let (lo, hi) = sends
        .iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), &t| {
            (lo.min(t), hi.max(t))
        });
    let span = hi - lo;
    if !(span > 0.0 && span.is_finite()) {
        return None;
    }
    let sent = sends.len() as f64 / span;
    ev.sent_rate = Some(JsonF64(sent));
    Some((asked, sent))
}

/// The client's CPU while the server was busy, as a phrase when it was saturated.
fn saturation(c: &ClientCpu, ev: &mut T21Evidence) -> Option<String> {
    let hottest = c.hottest_share();
    let limit = c.limit_share();
    ev.hottest_core_share = hottest.map(JsonF64);
    ev.hottest = c.hottest.clone();
    let demand = c.hottest_demand_share();
    ev.hottest_demand_share = demand.map(JsonF64);
    ev.limit_cores = c.limit_cores.map(JsonF64);
    ev.limit_share = limit.map(JsonF64);
    let who = c
        .hottest
        .as_deref()
        .map_or_else(String::new, |h| format!(" ({})", shorten(h, 60)));
    if let Some(h) = hottest.filter(|h| *h >= SATURATED) {
        return Some(format!(
            "its busiest process{who} used {} of a core while the server was busy",
            pct(h.min(1.0), 0)
        ));
    }
    // A client the node's other work keeps off the CPU sets the pace as surely as a busy one.
    if let Some(d) = demand.filter(|d| *d >= SATURATED) {
        return Some(format!(
            "its busiest process{who} was running or waiting for a CPU {} of the time while the \
             server was busy, but ran only {} of a core: the node's CPUs were oversubscribed",
            pct(d.min(1.0), 0),
            pct(hottest.unwrap_or(0.0).min(1.0), 0)
        ));
    }
    let l = limit.filter(|l| *l >= SATURATED)?;
    Some(format!(
        "it used {} of its CPU limit of {} cores while the server was busy",
        pct(l.min(1.0), 0),
        g(c.limit_cores.unwrap_or_default())
    ))
}

/// Busy samples on which the server had room (fewer running than asked, none waiting), and all
/// busy samples; None without a concurrency asked for or busy samples with both gauges.
fn room(
    series: Option<&Series>,
    requested: Option<u64>,
    ev: &mut T21Evidence,
) -> Option<(u64, u64)> {
    let n = requested? as f64;
    let mut busy = 0u64;
    let mut with_room = 0u64;
    for s in series?.busy() {
        let (Some(running), Some(waiting)) = (s.running(), s.waiting()) else {
            continue;
        };
        busy += 1;
        if running < n && waiting == 0.0 {
            with_room += 1;
        }
    }
    if busy == 0 {
        return None;
    }
    ev.busy_samples = Some(busy);
    ev.room_samples = Some(with_room);
    Some((with_room, busy))
}

/// PASS's message: what was measured of the client, none of it at its limit.
fn kept_up(rate: Option<(f64, f64)>, cpu: Option<&ClientCpu>) -> String {
    let mut parts = Vec::new();
    if let Some((asked, sent)) = rate {
        parts.push(format!(
            "sent {} requests/s of the {} asked",
            g_rate(sent),
            g_rate(asked)
        ));
    }
    if let Some(h) = cpu.and_then(ClientCpu::hottest_share) {
        parts.push(format!(
            "its busiest process used {} of a core while the server was busy",
            pct(h, 0)
        ));
    }
    format!("the client kept up: {}", parts.join("; "))
}

/// A rate for people: two decimals, so that a rate just past the threshold reads as past it.
fn g_rate(r: f64) -> String {
    format!("{r:.2}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::result::Status;

    fn paced(rate: f64) -> LoadIntent {
        LoadIntent {
            request_rate: Some(rate),
            exact_schedule: true,
            ..LoadIntent::unknown()
        }
    }

    fn sends(n: usize, span: f64) -> BenchResult {
        BenchResult {
            start_times: (0..n).map(|i| i as f64 * span / (n - 1) as f64).collect(),
            ..Default::default()
        }
    }

    fn cpu(hottest: f64) -> ClientCpu {
        ClientCpu {
            busy_s: 10.0,
            tree_cpu_s: hottest * 10.0,
            hottest_cpu_s: hottest * 10.0,
            hottest: Some("vllm bench serve".into()),
            limit_cores: None,
            hottest_wait_s: None,
        }
    }

    #[test]
    fn a_client_behind_its_schedule_fails_and_one_on_it_passes() {
        let r = check(&paced(100.0), Some(&sends(64, 0.70)), None, None, None);
        assert_eq!(r.status, Status::Fail, "{}", r.message);
        assert!(
            r.message
                .starts_with("the client sent 91.43 requests/s of the 100.00 asked (8.57% short)"),
            "{}",
            r.message
        );
        let ok = check(&paced(100.0), Some(&sends(64, 0.63)), None, None, None);
        assert_eq!(ok.status, Status::Pass, "{}", ok.message);
    }

    #[test]
    fn a_saturated_client_warns_without_the_servers_room_and_passes_below_the_threshold() {
        let r = check(&LoadIntent::unknown(), None, None, None, Some(&cpu(0.95)));
        assert_eq!(r.status, Status::Warn, "{}", r.message);
        assert!(r.message.contains("used 95% of a core"), "{}", r.message);
        let ok = check(&LoadIntent::unknown(), None, None, None, Some(&cpu(0.85)));
        assert_eq!(ok.status, Status::Pass, "{}", ok.message);
    }

    /// A client that ran 50% of a core and waited for a CPU 45% of the time wanted a whole
    /// core (95%): it warns; waiting 35% (85%) passes.
    #[test]
    fn a_client_kept_off_the_cpu_is_saturation_too() {
        let starved = |wait: f64| ClientCpu {
            hottest_wait_s: Some(wait * 10.0),
            ..cpu(0.5)
        };
        let r = check(
            &LoadIntent::unknown(),
            None,
            None,
            None,
            Some(&starved(0.45)),
        );
        assert_eq!(r.status, Status::Warn, "{}", r.message);
        assert!(
            r.message.contains(
                "was running or waiting for a CPU 95% of the time while the server was busy, but \
                 ran only 50% of a core: the node's CPUs were oversubscribed"
            ),
            "{}",
            r.message
        );
        let ok = check(
            &LoadIntent::unknown(),
            None,
            None,
            None,
            Some(&starved(0.35)),
        );
        assert_eq!(ok.status, Status::Pass, "{}", ok.message);
    }

    #[test]
    fn a_quota_used_up_is_saturation() {
        let c = ClientCpu {
            busy_s: 10.0,
            tree_cpu_s: 0.95,
            hottest_cpu_s: 0.95,
            hottest: None,
            limit_cores: Some(0.1),
            hottest_wait_s: None,
        };
        let r = check(&LoadIntent::unknown(), None, None, None, Some(&c));
        assert_eq!(r.status, Status::Warn);
        assert!(
            r.message.contains("95% of its CPU limit of 0.1 cores"),
            "{}",
            r.message
        );
    }

    #[test]
    fn nothing_measured_is_unknown() {
        let r = check(&paced(10.0), None, None, None, None);
        assert_eq!(r.status, Status::Unknown);
    }
}
