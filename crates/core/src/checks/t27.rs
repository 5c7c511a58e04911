//! T27 gpu-clocks: whether the run's cards ran throttled, by power or heat, while the load ran
//! (docs/design/tripwires.md#t27).
//!
//! A card at its power limit or too hot lowers its clocks without an error: the benchmark then
//! measures a throttled card (reported: SM clock 1965 → ~1580 MHz at ~1000 W, −15 % TFLOPS; a
//! −13 % CI regression no one could explain without the clocks). The driver says why its clocks
//! are below their maximum (the clock event reasons); the readings taken during the load are
//! judged per card, and the card that throttled most is named.

use std::collections::BTreeMap;

use crate::evidence::{JsonF64, T27Evidence};
use crate::fmt::{g, pct};
use crate::gpu::clocks::{throttle_names, ClockSample};
use crate::result::{CheckResult, Tripwire};

/// A throttling reason on this share of a card's busy readings or more is a finding: a tenth of
/// the load at clocks a sixth lower costs a percent or two of throughput, which is the size of
/// the differences benchmarks are run to find; a reading or two at a burst's peak is less.
pub const THROTTLED_SHARE: f64 = 0.10;

/// One card's readings summed up.
#[derive(Default)]
struct Card {
    busy: u64,
    throttled: u64,
    reasons: u64,
    sm_min: Option<f64>,
    sm_max: Option<f64>,
    power_max: Option<f64>,
    power_limit: Option<f64>,
    temp_max: Option<f64>,
}

fn max_opt(a: Option<f64>, b: Option<f64>) -> Option<f64> {
    match (a, b) {
        (Some(x), Some(y)) => Some(x.max(y)),
        (x, y) => x.or(y),
    }
}

impl Card {
    fn add(&mut self, s: &ClockSample) {
        let (Some(true), Some(bits)) = (s.busy(), s.throttled()) else {
            return;
        };
        self.busy += 1;
        if bits != 0 {
            self.throttled += 1;
            self.reasons |= bits;
        }
        self.sm_min = match (self.sm_min, s.sm_mhz) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        self.sm_max = max_opt(self.sm_max, s.sm_max_mhz);
        self.power_max = max_opt(self.power_max, s.power_w);
        self.power_limit = max_opt(self.power_limit, s.power_limit_w);
        self.temp_max = max_opt(self.temp_max, s.temp_c);
    }

    fn share(&self) -> f64 {
        self.throttled as f64 / self.busy.max(1) as f64
    }
}

/// T27 on what run saw of the load: the readings where there are any, else a "can't tell"
/// naming why every reading failed; None where the cards were not read at all (no GPU source),
/// so T27 is left out as T2 is without a GPU.
pub fn judge(o: &crate::observed::LoadObserved) -> Option<CheckResult> {
    match (o.gpu_clocks.as_deref(), o.gpu_clocks_error.as_deref()) {
        (Some(c), _) if !c.is_empty() => Some(check(c)),
        (_, Some(why)) => Some(
            CheckResult::unknown(
                Tripwire::T27,
                format!("no GPU clock reading during the load: {why}"),
            )
            .with_evidence(T27Evidence {
                readings: Some(0),
                ..Default::default()
            }),
        ),
        (Some(c), None) => Some(check(c)),
        (None, None) => None,
    }
}

/// T27 on the readings taken during the load (every card in them).
pub fn check(samples: &[ClockSample]) -> CheckResult {
    let mut cards: BTreeMap<u32, Card> = BTreeMap::new();
    for s in samples {
        cards.entry(s.gpu).or_default().add(s);
    }
    let mut ev = T27Evidence {
        readings: Some(samples.len() as u64),
        cards: Some(cards.len() as u64),
        ..Default::default()
    };
    if samples.is_empty() {
        return CheckResult::unknown(Tripwire::T27, "no GPU clock reading during the load")
            .with_evidence(ev);
    }
    if samples.iter().all(|s| s.reasons.is_none()) {
        return CheckResult::unknown(
            Tripwire::T27,
            "the driver reported no clock event reasons (an old driver, or a card that does not expose them): whether the cards throttled cannot be told",
        )
        .with_evidence(ev);
    }
    let Some((&gpu, worst)) = cards
        .iter()
        .filter(|(_, c)| c.busy > 0)
        .max_by(|a, b| a.1.share().total_cmp(&b.1.share()).then(b.0.cmp(a.0)))
    else {
        return CheckResult::unknown(
            Tripwire::T27,
            "every GPU reading during the load found the cards idle: the load's clocks cannot be told",
        )
        .with_evidence(ev);
    };
    ev.gpu = Some(gpu);
    ev.busy_readings = Some(worst.busy);
    ev.throttled_readings = Some(worst.throttled);
    ev.throttled_share = Some(JsonF64(worst.share()));
    ev.reasons = Some(
        throttle_names(worst.reasons)
            .iter()
            .map(|s| s.to_string())
            .collect(),
    );
    ev.sm_min_mhz = worst.sm_min;
    ev.sm_max_mhz = worst.sm_max;
    ev.power_max_w = worst.power_max;
    ev.power_limit_w = worst.power_limit;
    ev.temp_max_c = worst.temp_max;
    let busy: u64 = cards.values().map(|c| c.busy).sum();
    verdict(gpu, worst, (busy, cards.len()), ev)
}

/// The verdict on the most throttled card `c`; `all` is the busy readings and the cards in all.
fn verdict(gpu: u32, c: &Card, all: (u64, usize), ev: T27Evidence) -> CheckResult {
    let clocks = match (c.sm_min, c.sm_max) {
        (Some(lo), Some(hi)) => format!("; its SM clock fell to {} MHz of {} MHz", g(lo), g(hi)),
        _ => String::new(),
    };
    let power = match (c.power_max, c.power_limit) {
        (Some(p), Some(l)) => format!(", drawing up to {} W of its {} W limit", g(p), g(l)),
        _ => String::new(),
    };
    let heat = c
        .temp_max
        .filter(|_| {
            c.reasons & (crate::gpu::clocks::SW_THERMAL | crate::gpu::clocks::HW_THERMAL) != 0
        })
        .map(|t| format!(", at up to {} °C", g(t)))
        .unwrap_or_default();
    if c.share() >= THROTTLED_SHARE {
        return CheckResult::warn(
            Tripwire::T27,
            format!(
                "GPU {gpu} was throttled ({}) on {} of its {} busy readings during the load ({}){clocks}{power}{heat}: the figures are a throttled card's, not what the card does at its clocks",
                throttle_names(c.reasons).join(", "),
                c.throttled,
                c.busy,
                pct(c.share(), 0)
            ),
        )
        .with_evidence(ev);
    }
    let (busy, n_cards) = all;
    let cards = if n_cards == 1 {
        "the GPU".to_string()
    } else {
        format!("{n_cards} GPUs")
    };
    let msg = if c.throttled == 0 {
        format!("no throttle reason on any of the {busy} busy readings of {cards} during the load")
    } else {
        format!(
            "GPU {gpu} was throttled ({}) on {} of its {} busy readings during the load ({}), under the {} that changes the figures",
            throttle_names(c.reasons).join(", "),
            c.throttled,
            c.busy,
            pct(c.share(), 0),
            pct(THROTTLED_SHARE, 0)
        )
    };
    CheckResult::pass(Tripwire::T27, msg).with_evidence(ev)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gpu::clocks::parse_smi_line;
    use crate::result::Status;

    fn lines(rows: &[&str]) -> Vec<ClockSample> {
        rows.iter()
            .enumerate()
            .map(|(i, l)| parse_smi_line(l, i as f64).unwrap())
            .collect()
    }

    #[test]
    fn a_power_capped_card_warns_and_one_capped_reading_in_eleven_passes() {
        let capped = "0, GPU-a, 0x0000000000000004, 1580, 1980, 998.5, 1000, 71";
        let free = "0, GPU-a, 0x0000000000000000, 1965, 1980, 700, 1000, 65";
        let r = check(&lines(&[free, capped, capped, free]));
        assert_eq!(r.status, Status::Warn, "{}", r.message);
        assert_eq!(
            r.message,
            "GPU 0 was throttled (SwPowerCap) on 2 of its 4 busy readings during the load (50%); its SM clock fell to 1580 MHz of 1980 MHz, drawing up to 998.5 W of its 1000 W limit: the figures are a throttled card's, not what the card does at its clocks"
        );
        let mut rows = vec![free; 10];
        rows.push(capped);
        let r = check(&lines(&rows));
        assert_eq!(r.status, Status::Pass, "{}", r.message);
    }

    #[test]
    fn unread_cards_are_left_out_and_failed_readings_cannot_tell_why() {
        use crate::observed::LoadObserved;
        assert!(judge(&LoadObserved::default()).is_none());
        let failed = LoadObserved {
            gpu_clocks_error: Some("nvidia-smi failed: exit 9".into()),
            ..Default::default()
        };
        let r = judge(&failed).unwrap();
        assert_eq!(r.status, Status::Unknown);
        assert_eq!(
            r.message,
            "no GPU clock reading during the load: nvidia-smi failed: exit 9"
        );
        let read = LoadObserved {
            gpu_clocks: Some(lines(&[
                "0, GPU-a, 0x0000000000000000, 1965, 1980, 700, 1000, 65",
            ])),
            ..failed
        };
        assert_eq!(judge(&read).unwrap().status, Status::Pass);
    }

    #[test]
    fn no_reasons_or_only_idle_readings_cannot_tell() {
        assert_eq!(check(&[]).status, Status::Unknown);
        let na = "0, GPU-a, [N/A], 1965, 1980, 700, 1000, 65";
        assert_eq!(check(&lines(&[na])).status, Status::Unknown);
        let idle = "0, GPU-a, 0x0000000000000001, 210, 1980, 60, 1000, 35";
        assert_eq!(check(&lines(&[idle])).status, Status::Unknown);
    }
}
