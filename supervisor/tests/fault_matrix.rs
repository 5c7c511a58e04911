//! The fault matrix: every way a run can end × every shape of server tree, on the cgroup
//! backend (as root) and on the process-group fallback (as an unprivileged user). Each cell
//! asserts that every process the tree recorded is gone, that the shepherd is gone, that no
//! process carries the run's marker and that the cgroup was removed, and records the time to
//! clear in `$CARGO_TARGET_TMPDIR/fault-matrix.tsv` (docs/supervision.md has the table).

mod harness;

use std::time::{Duration, Instant};

use harness::*;
use inferlint_supervisor::{ProcId, ProcScanner};
use nix::sys::signal::Signal;

fn cell(backend: Backend, ending: Ending, shape: Shape) {
    if !backend_available(backend) {
        return;
    }
    let mut g = Guard::new();
    let end = match ending {
        Ending::Normal => "normal",
        Ending::Error => "error",
        _ => "wait",
    };
    launch(
        &mut g,
        &Launch {
            backend,
            shape,
            end,
            pty: ending == Ending::SighupTerminalGone,
            cgroup_arg: None,
            subreaper: true,
            env: Vec::new(),
        },
    );
    let backend_text = g.status.as_ref().unwrap()["backend"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    match backend {
        Backend::Cgroup => assert!(backend_text.starts_with("cgroup "), "{backend_text}"),
        Backend::Group => assert!(backend_text.starts_with("process group "), "{backend_text}"),
    }
    let scan = ProcScanner::system();
    let records = g.records();
    let ids: Vec<ProcId> = records.iter().map(|r| r.id).collect();
    let expected = match shape {
        Shape::Setsid => 2,
        Shape::Renamed => 4,
        _ => 3,
    };
    assert_eq!(ids.len(), expected, "recorded tree\n{}", g.logs());
    let shepherd = scan.id_of(g.pid_of("shepherd")).expect("shepherd runs");
    let sup = g.pid_of("supervisor");

    let t0 = Instant::now();
    match ending {
        Ending::Normal | Ending::Error => {}
        // The terminal sends Ctrl-C to its foreground group: the supervisor's own group.
        Ending::Sigint => send_group(sup, Signal::SIGINT),
        Ending::SigintTwice => {
            send_group(sup, Signal::SIGINT);
            std::thread::sleep(Duration::from_millis(150));
            send_group(sup, Signal::SIGINT);
        }
        Ending::Sigterm => send(sup, Signal::SIGTERM),
        Ending::SighupTerminalGone => close_terminal(&mut g),
        Ending::KillSupervisor => send(sup, Signal::SIGKILL),
        Ending::KillShepherd => send(shepherd.pid, Signal::SIGKILL),
    }
    let clear = match wait_gone(&ids, CLEAR_LIMIT) {
        Some(_) => t0.elapsed(),
        None => {
            let alive: Vec<String> = records
                .iter()
                .filter(|r| scan.is_alive(r.id))
                .map(|r| format!("{} {}", r.id.pid, r.role))
                .collect();
            panic!(
                "{backend:?} {ending:?} {shape:?}: still alive after {CLEAR_LIMIT:?}: {alive:?}\n{}",
                g.logs()
            );
        }
    };
    assert!(
        wait_gone(&[shepherd], Duration::from_secs(8)).is_some(),
        "the shepherd outlived its teardown\n{}",
        g.logs()
    );
    let code = wait_child(&mut g, Duration::from_secs(10)).unwrap_or_else(|| {
        panic!("the test supervisor did not exit\n{}", g.logs());
    });
    let want = match ending {
        Ending::Normal | Ending::KillShepherd => 0,
        Ending::Error => 2,
        Ending::Sigint | Ending::SigintTwice => 130,
        Ending::Sigterm => 143,
        Ending::SighupTerminalGone => 129,
        Ending::KillSupervisor => 128 + libc::SIGKILL,
    };
    assert_eq!(
        code,
        want,
        "supervisor exit status (101 = panic)\n{}",
        g.logs()
    );
    assert!(
        marked(&g.run_id()).is_empty(),
        "processes still carry the marker\n{}",
        g.logs()
    );
    if let Some(cg) = g.status.as_ref().unwrap()["cgroup"].as_str() {
        assert!(
            !std::path::Path::new(cg).exists(),
            "cgroup {cg} not removed\n{}",
            g.logs()
        );
    }

    // The teardown report of whoever ran it.
    let (file, actor) = match ending {
        Ending::KillSupervisor => ("report.shepherd.json", "shepherd (supervisor gone)"),
        Ending::KillShepherd => ("report.json", "supervisor (shepherd gone)"),
        Ending::Error => ("", ""),
        _ => ("report.json", "shepherd"),
    };
    if !file.is_empty() {
        let text = std::fs::read_to_string(g.path(file))
            .unwrap_or_else(|_| panic!("no {file}\n{}", g.logs()));
        let report: serde_json::Value = serde_json::from_str(&text)
            .unwrap_or_else(|e| panic!("{file} is not JSON ({e}): {text:?}\n{}", g.logs()));
        assert_eq!(report["actor"], actor, "{text}");
        assert_eq!(report["leftovers"], serde_json::json!([]), "{text}");
        if ending != Ending::KillSupervisor {
            assert_eq!(report["pipes_at_eof"], true, "{text}");
        }
        if ending == Ending::SigintTwice && shape == Shape::IgnoreTerm {
            assert_eq!(report["escalated"], true, "{text}");
        }
    }

    // A terminal's signal reaches the server exactly once (the shepherd's session shields it).
    if shape == Shape::Cooperative
        && matches!(
            ending,
            Ending::Sigint | Ending::Sigterm | Ending::SighupTerminalGone
        )
    {
        let leader = records.iter().find(|r| r.role == "leader").unwrap().id.pid;
        let got: Vec<String> = std::fs::read_to_string(g.path("signals.txt"))
            .unwrap_or_default()
            .lines()
            .filter(|l| l.starts_with(&format!("{leader} ")))
            .map(String::from)
            .collect();
        assert_eq!(
            got,
            vec![format!("{leader} leader SIGTERM")],
            "{}",
            g.logs()
        );
    }
    record_row(backend, ending, shape, clear);
}

macro_rules! row {
    ($name:ident, $backend:expr, $ending:expr) => {
        mod $name {
            use super::*;
            #[test]
            fn cooperative() {
                cell($backend, $ending, Shape::Cooperative)
            }
            #[test]
            fn ignores_sigterm() {
                cell($backend, $ending, Shape::IgnoreTerm)
            }
            #[test]
            fn setsid_escape() {
                cell($backend, $ending, Shape::Setsid)
            }
            #[test]
            fn double_fork() {
                cell($backend, $ending, Shape::DoubleFork)
            }
            #[test]
            fn renamed_engine_outlives_parent() {
                cell($backend, $ending, Shape::Renamed)
            }
        }
    };
}

row!(cgroup_normal_end, Backend::Cgroup, Ending::Normal);
row!(cgroup_error, Backend::Cgroup, Ending::Error);
row!(cgroup_sigint_once, Backend::Cgroup, Ending::Sigint);
row!(cgroup_sigint_twice, Backend::Cgroup, Ending::SigintTwice);
row!(cgroup_sigterm, Backend::Cgroup, Ending::Sigterm);
row!(
    cgroup_sighup_terminal_gone,
    Backend::Cgroup,
    Ending::SighupTerminalGone
);
row!(
    cgroup_sigkill_supervisor,
    Backend::Cgroup,
    Ending::KillSupervisor
);
row!(
    cgroup_sigkill_shepherd,
    Backend::Cgroup,
    Ending::KillShepherd
);

row!(group_normal_end, Backend::Group, Ending::Normal);
row!(group_error, Backend::Group, Ending::Error);
row!(group_sigint_once, Backend::Group, Ending::Sigint);
row!(group_sigint_twice, Backend::Group, Ending::SigintTwice);
row!(group_sigterm, Backend::Group, Ending::Sigterm);
row!(
    group_sighup_terminal_gone,
    Backend::Group,
    Ending::SighupTerminalGone
);
row!(
    group_sigkill_supervisor,
    Backend::Group,
    Ending::KillSupervisor
);
row!(group_sigkill_shepherd, Backend::Group, Ending::KillShepherd);
