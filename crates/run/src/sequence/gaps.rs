//! Why the run's data could not support a run check ([`inferlint_core::checks::gaps`] turns the reasons
//! into "can't tell" results). A recording is also set aside (with its reason) when it is
//! another engine's, or when its scrapes were too slow to see the load at all.

use super::super::folder;
use super::window::Window;
use super::Run;
use inferlint_core::series::Series;

/// Fewer readings than this, taken at under half the rate asked for, cannot judge a load.
const FEW_READINGS: usize = 20;

impl Run {
    /// Why a recording cannot judge the load: its scrapes were so slow (a huge or slow
    /// `/metrics`) that it took under half the readings asked for and fewer than
    /// [`FEW_READINGS`] in all, although the load had requests served. A reading or two says
    /// nothing of how many requests ran at once (the one seen running may be the only one
    /// caught). A well-sampled recording whose gauge stays at 0 is another matter: T8 judges it.
    fn missed_the_load(&self, w: &Window, s: &Series) -> Option<String> {
        let served = match w.bench.as_ref().and_then(|b| b.completed) {
            Some(n) => n > 0.0,
            None => w.exit == Some(0),
        };
        let load_s = self.timings.load_s;
        let asked = load_s / self.inputs.interval.as_secs_f64().max(1e-3);
        let n = s.samples.len();
        let sparse = asked >= 4.0 && (n as f64) < asked / 2.0 && n < FEW_READINGS;
        (served && sparse).then(|| {
            format!(
                "the recording is too sparse to judge the load: its scrapes were slow, {n} reading{} in the load's {load_s:.1} s instead of one every {} s",
                if n == 1 { "" } else { "s" },
                inferlint_core::fmt::g(self.inputs.interval.as_secs_f64())
            )
        })
    }

    /// The recording as the checks may use it: None (with the reason in the gaps) when it
    /// cannot be read, holds no reading, or recorded another engine's metrics.
    pub(super) fn usable_series(
        &mut self,
        w: &mut Window,
        failures: usize,
        last_error: Option<&str>,
    ) -> Option<Series> {
        let engine = self.engine();
        let why = match Series::load(&w.dir.join(folder::SERIES)) {
            Err(e) => format!("the recording cannot be read ({e})"),
            Ok(s) if s.samples.is_empty() => match (failures, last_error) {
                (n, Some(e)) if n > 0 => format!(
                    "the recording has no readings ({n} scrape{} failed, the last: {e})",
                    if n == 1 { "" } else { "s" }
                ),
                _ => "the recording has no readings (no scrape answered while the load ran)"
                    .to_string(),
            },
            Ok(s) => {
                if let Some(other) = s.engine().filter(|&e| e != engine) {
                    format!(
                        "the recording shows {}'s metrics, not {}'s",
                        other.name(),
                        engine.name()
                    )
                } else if let Some(why) = self.missed_the_load(w, &s) {
                    why
                } else {
                    return Some(s);
                }
            }
        };
        self.line(&format!("note: {why}"));
        w.gaps.recording = Some(why);
        None
    }
}
