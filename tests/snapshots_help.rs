//! `--help` of the binary and of each of its commands, under snapshot (wrapped at 100 columns).

use crate::snapshots_support;

use snapshots_support::cli;

/// The commands `inferlint --help` lists, in its order (the hidden internal ones, `sim` and
/// `shepherd`, are not part of the interface a user reads).
const COMMANDS: [&str; 19] = [
    "run",
    "demo",
    "report",
    "check-log",
    "boot-facts",
    "preemption",
    "rate",
    "series",
    "window",
    "lint-script",
    "snapshot",
    "watch",
    "probe",
    "gpu-inspect",
    "teardown",
    "reap",
    "explain",
    "completions",
    "man",
];

#[test]
fn help_of_the_binary() {
    let text = cli(&["--help"]);
    snap!("help", &text);
    // A command added to the binary must be added here (and so get its snapshot).
    let listed: Vec<&str> = text
        .lines()
        .filter(|l| l.starts_with("  ") && !l.starts_with("  -"))
        .filter_map(|l| l.split_whitespace().next())
        .collect();
    assert_eq!(listed, COMMANDS, "{text}");
    snap!("version", cli(&["--version"]));
}

#[test]
fn help_of_each_command() {
    for command in COMMANDS {
        snap!(format!("help_{command}"), cli(&[command, "--help"]));
    }
}
