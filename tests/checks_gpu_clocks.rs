//! T27 (GPU clocks throttled during the load) on nvidia-smi clock readings
//! (tests/fixtures/gpu-clocks/: two cards read once a second through a load, in nvidia-smi's
//! documented `--format=csv,noheader,nounits` form, since no GPU was lent to record them): both
//! verdicts and a one-field mutation that flips each (docs/design/evidence.md#mutations).

use inferlint_core::checks::t27;
use inferlint_core::gpu::clocks::{parse_smi_line, ClockSample};
use inferlint_core::testkit::evidence_text;
use inferlint_core::Status;

fn readings(text: &str) -> Vec<ClockSample> {
    text.lines()
        .enumerate()
        .map(|(i, l)| {
            parse_smi_line(l, (i / 2) as f64).unwrap_or_else(|e| panic!("line {}: {e}", i + 1))
        })
        .collect()
}

#[test]
fn t27_warns_on_the_power_capped_card_and_one_mask_flips_it() {
    let Some(text) = evidence_text("gpu-clocks/throttled.csv") else {
        return;
    };
    let r = t27::check(&readings(&text));
    assert_eq!(r.status, Status::Warn, "{}", r.message);
    assert_eq!(
        r.message,
        "GPU 1 was throttled (SwPowerCap) on 12 of its 18 busy readings during the load (67%); its SM clock fell to 1545 MHz of 1980 MHz, drawing up to 699.7 W of its 700 W limit: the figures are a throttled card's, not what the card does at its clocks"
    );
    // Under a tenth: the same readings with all but one of the capped masks cleared.
    let mut seen = 0;
    let one: String = text
        .lines()
        .map(|l| {
            if l.contains("0x0000000000000004") {
                seen += 1;
                if seen > 1 {
                    return l.replace("0x0000000000000004", "0x0000000000000000") + "\n";
                }
            }
            format!("{l}\n")
        })
        .collect();
    assert_eq!(t27::check(&readings(&one)).status, Status::Pass);
}

#[test]
fn t27_passes_on_unthrottled_cards_and_two_capped_readings_of_eighteen_warn() {
    let Some(text) = evidence_text("gpu-clocks/clean.csv") else {
        return;
    };
    let r = t27::check(&readings(&text));
    assert_eq!(r.status, Status::Pass, "{}", r.message);
    assert_eq!(
        r.message,
        "no throttle reason on any of the 36 busy readings of 2 GPUs during the load"
    );
    // Two of card 0's 18 busy readings power-capped: 11 %, over the tenth.
    let capped = text
        .lines()
        .filter(|l| l.starts_with("0, ") && l.contains("0x0000000000000000"))
        .take(2)
        .map(str::to_string)
        .collect::<Vec<_>>();
    let mut mutated = text.clone();
    for l in &capped {
        mutated = mutated.replacen(
            l.as_str(),
            &l.replace("0x0000000000000000", "0x0000000000000004"),
            1,
        );
    }
    assert_eq!(t27::check(&readings(&mutated)).status, Status::Warn);
}

/// The NVML reader's readings (the shape run writes to run.json's `during_load.gpu_clocks`).
fn nvml(text: &str) -> Vec<ClockSample> {
    serde_json::from_str(text).unwrap_or_else(|e| panic!("nvml-thermal.json: {e}"))
}

#[test]
fn t27_names_a_thermal_slowdown_with_its_temperature_and_one_hot_reading_passes() {
    let Some(text) = evidence_text("gpu-clocks/nvml-thermal.json") else {
        return;
    };
    let r = t27::check(&nvml(&text));
    assert_eq!(r.status, Status::Warn, "{}", r.message);
    assert_eq!(
        r.message,
        "GPU 0 was throttled (SwThermalSlowdown, HwThermalSlowdown) on 4 of its 18 busy readings during the load (22%); its SM clock fell to 1410 MHz of 1980 MHz, drawing up to 589.2 W of its 700 W limit, at up to 91 °C: the figures are a throttled card's, not what the card does at its clocks"
    );
    // One hot reading of 18 (6 %) is under the tenth: the other three masks cleared.
    let mut samples = nvml(&text);
    for s in samples
        .iter_mut()
        .filter(|s| s.reasons == Some(0x60))
        .skip(1)
    {
        s.reasons = Some(0);
    }
    assert_eq!(t27::check(&samples).status, Status::Pass);
}
