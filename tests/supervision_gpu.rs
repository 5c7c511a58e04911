//! GPU facts (docs/design/gpus.md#gpu-facts): nvidia-smi parsing on the recorded samples, the
//! family table, the simulated GPU, NVML's absence, and the "N consecutive clear readings" waiter
//! (docs/design/gpus.md#two-consecutive-clear-readings) on a substituted clock.

use inferlint_core::clock::{Clock, ClockReading};
use inferlint_host::gpu::{self, ClearOptions, GpuSource, Reading};

#[test]
fn the_recorded_card_parses() {
    let gpus = gpu::parse_query_gpu(
        "0, NVIDIA GeForce RTX 4090, 24564, 0, 24138, 616.56, 8.9\n",
        true,
    )
    .unwrap();
    assert_eq!(gpus.len(), 1);
    let g = &gpus[0];
    assert_eq!(g.index, 0);
    assert_eq!(g.name, "NVIDIA GeForce RTX 4090");
    assert_eq!(
        (g.memory_total_mib, g.memory_used_mib, g.memory_free_mib),
        (Some(24564), Some(0), Some(24138))
    );
    assert_eq!(g.driver.as_deref(), Some("616.56"));
    assert_eq!(g.compute_cap.as_deref(), Some("8.9"));
    assert_eq!(g.family(), Some("Ada Lovelace"));
    let j = g.to_json();
    for key in [
        "index",
        "name",
        "memory_total_mib",
        "memory_used_mib",
        "memory_free_mib",
        "driver",
        "compute_cap",
        "family",
    ] {
        assert!(j.get(key).is_some(), "{key}");
    }
}

#[test]
fn names_with_commas_missing_values_and_old_drivers() {
    let text = "index, name, memory.total [MiB], memory.used [MiB], memory.free [MiB], driver_version, compute_cap\n\
                1, Tesla V100-SXM2-16GB, rev A, 16160, [N/A], 16150, 535.1, 7.0\n\
                2, NVIDIA H200, 143771, 130013, 13758, 570.1, [Not Supported]\n";
    let gpus = gpu::parse_query_gpu(text, true).unwrap();
    assert_eq!(gpus[0].name, "Tesla V100-SXM2-16GB, rev A");
    assert_eq!(gpus[0].memory_used_mib, None);
    assert_eq!(gpus[0].family(), Some("Volta"));
    assert_eq!(gpus[1].compute_cap, None);
    assert_eq!(gpus[1].family(), None);
    // Without compute_cap (the second question to an old driver).
    let old = gpu::parse_query_gpu("0, Tesla P100, 16280, 10, 16270, 418.0\n", false).unwrap();
    assert_eq!(old[0].name, "Tesla P100");
    assert_eq!(old[0].driver.as_deref(), Some("418.0"));
    assert_eq!(old[0].compute_cap, None);
    // Garbage names the line.
    let err = gpu::parse_query_gpu("0, a, 1, 2, 3, 4, 5\nnot a row\n", true).unwrap_err();
    assert!(err.to_string().contains("line 2"), "{err}");
    assert!(gpu::parse_query_gpu("", true).unwrap().is_empty());
}

#[test]
fn family_table() {
    let cases = [
        ("6.1", Some("Pascal")),
        ("7.0", Some("Volta")),
        ("7.2", Some("Volta")),
        ("7.5", Some("Turing")),
        ("8.0", Some("Ampere")),
        ("8.6", Some("Ampere")),
        ("8.7", Some("Ampere")),
        ("8.9", Some("Ada Lovelace")),
        ("9.0", Some("Hopper")),
        ("10.0", Some("Blackwell")),
        ("11.0", Some("Blackwell")),
        ("12.0", Some("Blackwell")),
        ("7.1", None),
        ("5.2", None),
        ("13.0", None),
        ("x", None),
        ("", None),
    ];
    for (cap, fam) in cases {
        assert_eq!(gpu::family(cap), fam, "{cap}");
    }
}

#[test]
fn compute_apps_of_the_recorded_samples() {
    let Some(text) =
        inferlint_core::testkit::evidence_text("nvidia-smi/compute-apps-vllm-enginecore.csv.txt")
    else {
        return;
    };
    let apps = gpu::parse_compute_apps(&text);
    assert_eq!(apps.len(), 2);
    assert_eq!(apps[0].pid, 3858903);
    assert_eq!(apps[0].process_name.as_deref(), Some("VLLM::EngineCore"));
    assert_eq!(apps[0].used_mib, Some(6265));
    assert_eq!(apps[1].used_mib, Some(5530));

    let Some(text) = inferlint_core::testkit::evidence_text(
        "nvidia-smi/h200x8-query-gpu-and-compute-apps-before-after.txt",
    ) else {
        return;
    };
    let (before, after) = text.split_once("## After").unwrap();
    let b = gpu::parse_compute_apps(before);
    assert_eq!(b.len(), 8);
    let hidden = b.iter().find(|a| a.pid == 1758887).unwrap();
    assert_eq!(hidden.process_name, None, "[Not Found] is no name");
    assert_eq!(hidden.used_mib, Some(58060));
    assert_eq!(
        hidden.gpu_uuid.as_deref(),
        Some("GPU-28780eb0-24d5-1f13-59b8-ae5c23617a72")
    );
    assert_eq!(gpu::parse_compute_apps(after).len(), 4);

    let Some(text) =
        inferlint_core::testkit::evidence_text("nvidia-smi/csv-header-vs-noheader-nounits.txt")
    else {
        return;
    };
    let apps = gpu::parse_compute_apps(&text);
    assert_eq!(apps.len(), 2, "{apps:?}");
    assert!(apps
        .iter()
        .all(|a| a.pid == 1106871 && a.used_mib == Some(23342)));
}

#[test]
fn the_simulated_gpu_is_held_while_its_holder_lives() {
    let dir = tempfile::tempdir().unwrap();
    let source = GpuSource::Sim(dir.path().to_path_buf());
    assert_eq!(gpu::max_used_mib(&source), Some(0));
    let hold = inferlint_sim::gpu::hold(dir.path(), 21_768, 0).unwrap();
    let gpus = gpu::read_gpus(&source).unwrap();
    assert_eq!(gpus[0].memory_used_mib, Some(21_768));
    assert_eq!(gpu::max_used_mib(&source), Some(21_768));
    assert_eq!(
        gpu::mib_by_pid(&source).get(&std::process::id()),
        Some(&21_768)
    );
    drop(hold);
    assert_eq!(gpu::max_used_mib(&source), Some(0));
}

#[test]
fn nvml_absent_fails_gracefully() {
    if gpu::nvml::available() {
        assert!(gpu::nvml::gpus().is_ok());
    } else {
        assert!(gpu::nvml::gpus().is_err());
        assert!(gpu::nvml::compute_apps().is_err());
    }
    assert!(gpu::read_gpus(&GpuSource::None).is_err());
    assert_eq!(gpu::max_used_mib(&GpuSource::None), None);
}

/// A virtual clock: sleeping advances it.
struct Fake(f64);
impl Clock for Fake {
    fn now(&self) -> ClockReading {
        ClockReading::at(self.0)
    }
    fn sleep(&mut self, s: f64) {
        self.0 += s;
    }
}

fn run(seq: &[(Option<u64>, usize)], opts: ClearOptions) -> gpu::ClearResult {
    let mut i = 0;
    let mut clock = Fake(100.0);
    let readings = std::cell::RefCell::new(seq.iter().cycle());
    let cur = std::cell::Cell::new((None, 0));
    let mut used = || {
        let r = *readings.borrow_mut().next().unwrap();
        cur.set(r);
        i += 1;
        r.0
    };
    let mut n_live = || cur.get().1;
    gpu::wait_until_clear(&opts, &mut n_live, &mut used, &mut clock).unwrap()
}

#[test]
fn one_low_reading_is_not_proof() {
    let seq = [
        (Some(18900), 1),
        (Some(300), 0),
        (Some(18500), 1),
        (Some(250), 0),
        (Some(240), 0),
    ];
    let r = run(&seq, ClearOptions::default());
    assert!(r.clear);
    assert_eq!(r.readings.len(), 5);
    assert_eq!(r.reason, "2 consecutive clear readings");
    assert_eq!(r.readings[4].elapsed_s, 8.0);
    assert_eq!(
        r.readings_json(),
        serde_json::json!([
            [0.0, 18900, 1],
            [2.0, 300, 0],
            [4.0, 18500, 1],
            [6.0, 250, 0],
            [8.0, 240, 0]
        ])
    );
}

#[test]
fn unclear_readings() {
    let short = ClearOptions {
        timeout_s: 4.0,
        ..ClearOptions::default()
    };
    // Low memory but a live server.
    let r = run(&[(Some(100), 1)], short);
    assert!(!r.clear);
    assert!(
        r.reason.contains("1 server processes alive"),
        "{}",
        r.reason
    );
    assert_eq!(
        r.reason,
        "not clear after 4s: last reading 100 MiB used, 1 server processes alive"
    );
    assert_eq!(r.readings.len(), 3);
    // Unreadable (or no GPU at all): never clear.
    let r = run(&[(None, 0)], short);
    assert!(!r.clear);
    assert!(r.reason.contains("last reading ? MiB used"), "{}", r.reason);
    // Over the limit.
    let r = run(&[(Some(801), 0)], short);
    assert!(!r.clear);
    // Exactly at the limit is clear.
    let r = run(&[(Some(800), 0)], short);
    assert!(r.clear);
    // Timeout 0: one reading, then the verdict.
    let r = run(
        &[(Some(21768), 1)],
        ClearOptions {
            timeout_s: 0.0,
            ..ClearOptions::default()
        },
    );
    assert_eq!(r.readings.len(), 1);
    assert_eq!(
        r.reason,
        "not clear after 0s: last reading 21768 MiB used, 1 server processes alive"
    );
    // consecutive 1 passes on the first clear reading.
    let r = run(
        &[(Some(0), 0)],
        ClearOptions {
            consecutive: 1,
            ..ClearOptions::default()
        },
    );
    assert_eq!(r.reason, "1 consecutive clear readings");
    assert_eq!(r.readings.len(), 1);
}

#[test]
fn consecutive_below_one_is_refused() {
    let mut c = Fake(0.0);
    let err = gpu::wait_until_clear(
        &ClearOptions {
            consecutive: 0,
            ..ClearOptions::default()
        },
        &mut || 0,
        &mut || Some(0),
        &mut c,
    )
    .unwrap_err();
    assert!(err.to_string().contains("at least 1"));
}

#[test]
fn reading_json_rounds_to_milliseconds() {
    let r = Reading {
        elapsed_s: 2.000_4,
        used: None,
        n_live: 0,
    };
    assert_eq!(r.to_json(), serde_json::json!([2.0, null, 0]));
}
