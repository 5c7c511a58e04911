//! The documentation a newcomer reads first holds: docs/reference.md documents exactly the
//! commands, options and arguments `--help` lists (a command or option added, renamed or
//! removed without the page fails here), README's first lines link the docs set, and README's
//! "try it" command prints the three lines it shows, which are the original 0.3.1's.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn read(rel: &str) -> String {
    std::fs::read_to_string(root().join(rel)).unwrap_or_else(|e| panic!("{rel}: {e}"))
}

fn help(args: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_inferlint"))
        .args(args)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{args:?}");
    String::from_utf8(out.stdout).unwrap()
}

/// The commands `inferlint --help` lists (with `run`'s alias).
fn help_commands(text: &str) -> BTreeSet<String> {
    let re = regex::Regex::new(r"^  ([a-z][a-z-]*)(?: \(([a-z]+)\))?\s{2,}\S").unwrap();
    let mut out = BTreeSet::new();
    for line in text.lines() {
        if let Some(c) = re.captures(line) {
            out.insert(c[1].to_string());
        }
    }
    out
}

/// What one command's `--help` lists: its flags (`--out`, `-o`) and its arguments (`RUN`),
/// less `-h, --help`.
#[derive(Debug, Default, PartialEq)]
struct Surface {
    flags: BTreeSet<String>,
    args: BTreeSet<String>,
}

fn help_surface(text: &str) -> Surface {
    // An option starts its line at column 2 (`-o, --out`) or 6 (`    --json`); a description
    // that wraps onto a line starting with `--` is indented further.
    let flag = regex::Regex::new(r"^  (?:-([A-Za-z]), |    )--([a-z][a-z0-9-]*)").unwrap();
    let arg = regex::Regex::new(r"^  [<\[]([A-Z][A-Z _]*)[>\]](?:\.\.\.)?\s").unwrap();
    let mut s = Surface::default();
    let mut section = "";
    for line in text.lines() {
        if !line.starts_with(' ') {
            section = line;
            continue;
        }
        match section {
            "Options:" => {
                if let Some(c) = flag.captures(line) {
                    if let Some(short) = c.get(1) {
                        s.flags.insert(format!("-{}", short.as_str()));
                    }
                    s.flags.insert(format!("--{}", &c[2]));
                }
            }
            "Arguments:" => {
                if let Some(c) = arg.captures(line) {
                    s.args.insert(c[1].to_string());
                }
            }
            _ => {}
        }
    }
    s.flags.remove("--help");
    s.flags.remove("-h");
    s
}

/// The command sections of docs/reference.md (`### \`inferlint NAME\``), each with its text.
fn doc_sections(doc: &str) -> Vec<(String, String)> {
    let head = regex::Regex::new(r"^### `inferlint ([a-z-]+)`").unwrap();
    let mut out: Vec<(String, String)> = Vec::new();
    for line in doc.lines() {
        if let Some(c) = head.captures(line) {
            out.push((c[1].to_string(), String::new()));
            continue;
        }
        if line.starts_with("## ") || line.starts_with("### ") {
            // A heading that is no command ends the section.
            out.push((String::new(), String::new()));
            continue;
        }
        if let Some((_, text)) = out.last_mut() {
            text.push_str(line);
            text.push('\n');
        }
    }
    out.retain(|(name, _)| !name.is_empty());
    out
}

/// What a section's option table documents: the first cell of each row.
fn doc_surface(section: &str) -> Surface {
    let long = regex::Regex::new(r"--([a-z][a-z0-9-]*)").unwrap();
    let short = regex::Regex::new(r"(?:^|[ `,])-([A-Za-z])\b").unwrap();
    let mut s = Surface::default();
    for line in section.lines() {
        let Some(rest) = line.strip_prefix("| `") else {
            continue;
        };
        let cell = rest.split(" |").next().unwrap().trim_end_matches('`');
        if cell.starts_with('-') {
            for c in long.captures_iter(cell) {
                s.flags.insert(format!("--{}", &c[1]));
            }
            for c in short.captures_iter(cell) {
                s.flags.insert(format!("-{}", &c[1]));
            }
        } else {
            s.args
                .insert(cell.trim_end_matches("...").trim().to_string());
        }
    }
    s
}

#[test]
fn the_reference_documents_every_command_and_option_help_lists() {
    let doc = read("docs/reference.md");
    let sections = doc_sections(&doc);
    let documented: BTreeSet<String> = sections.iter().map(|(n, _)| n.clone()).collect();
    assert_eq!(
        documented.len(),
        sections.len(),
        "a command documented twice"
    );
    let listed = help_commands(&help(&["--help"]));
    assert!(listed.len() >= 18, "{listed:?}");
    assert_eq!(
        documented, listed,
        "docs/reference.md's commands (left) against `inferlint --help` (right)"
    );
    assert!(doc.contains("`inferlint xray`"), "run's alias");
    for (name, text) in &sections {
        let want = help_surface(&help(&[name, "--help"]));
        let got = doc_surface(text);
        assert_eq!(
            got.flags, want.flags,
            "`inferlint {name}`: options in docs/reference.md (left) against --help (right)"
        );
        assert_eq!(
            got.args, want.args,
            "`inferlint {name}`: arguments in docs/reference.md (left) against --help (right)"
        );
        assert!(
            text.contains("**Exit status:**"),
            "`inferlint {name}` has no exit status in docs/reference.md"
        );
    }
}

/// The parsers above can fail: an option missing from the page, or one the command lacks.
#[test]
fn the_reference_check_can_fail() {
    let doc = read("docs/reference.md");
    let sections = doc_sections(&doc);
    let (_, series) = sections.iter().find(|(n, _)| n == "series").unwrap();
    let want = help_surface(&help(&["series", "--help"]));
    assert_eq!(doc_surface(series), want);
    let without = series.replace("| `--requested N` |", "| (gone) |");
    assert_ne!(doc_surface(&without).flags, want.flags);
    let extra = format!("{series}| `--no-such-option` | nothing |\n");
    assert_ne!(doc_surface(&extra).flags, want.flags);
    let renamed_arg = series.replace("| `REC` |", "| `RECORDING` |");
    assert_ne!(doc_surface(&renamed_arg).args, want.args);
    // And a command the page lacks.
    let mut fewer: BTreeSet<String> = sections.iter().map(|(n, _)| n.clone()).collect();
    fewer.remove("series");
    assert_ne!(fewer, help_commands(&help(&["--help"])));
}

#[test]
fn readme_links_the_docs_set_from_its_first_lines() {
    let readme = read("README.md");
    let head: String = readme.lines().take(5).collect::<Vec<_>>().join("\n");
    for (label, target) in [
        ("Tutorial", "docs/tutorial.md"),
        ("Example report", "docs/example-report.html"),
        ("Reference", "docs/reference.md"),
        ("Changelog", "CHANGELOG.md"),
    ] {
        assert!(
            head.contains(&format!("[{label}]({target})")),
            "README's first lines lack [{label}]({target}):\n{head}"
        );
        assert!(root().join(target).is_file(), "{target} is missing");
    }
    for file in ["CONTRIBUTING.md", "SECURITY.md"] {
        assert!(root().join(file).is_file(), "{file} is missing");
        assert!(
            readme.contains(&format!("]({file})")),
            "README does not link {file}"
        );
    }
    // The recorded evidence's licence, said where the licence is.
    let licence = readme
        .split("## License")
        .nth(1)
        .expect("a License section");
    assert!(licence.contains("tests/fixtures"), "{licence}");
    for f in ["LICENSE", "NOTICE"] {
        assert!(
            root().join("tests/fixtures").join(f).is_file(),
            "tests/fixtures/{f}"
        );
    }
}

/// The three lines the original 0.3.1 printed for the same command on the same files.
const ORIGINAL: [&str; 3] = [
    "[T14] PASS  gauge denominator is 42 = num_gpu_blocks (43) - 1 null block",
    "[ T9] WARN  ceiling moved between 7 and 10 as requests grew (one request held 9.5% to 14.3% of the cache); concurrency was not a constant of this run",
    "[ T8] TRIPWIRE-FAILED  requested 32 concurrent, server never ran more than 10",
];

/// The fenced blocks of a README section, as (language, lines).
fn blocks(section: &str) -> Vec<(String, Vec<String>)> {
    let mut out = Vec::new();
    let mut open: Option<(String, Vec<String>)> = None;
    for line in section.lines() {
        match (&mut open, line.strip_prefix("```")) {
            (None, Some(lang)) => open = Some((lang.to_string(), Vec::new())),
            (Some(_), Some(_)) => out.push(open.take().unwrap()),
            (Some((_, lines)), None) => lines.push(line.to_string()),
            (None, None) => {}
        }
    }
    out
}

#[test]
fn readmes_try_it_command_prints_the_original_three_lines() {
    let readme = read("README.md");
    let first = readme
        .split("\n## ")
        .nth(1)
        .expect("a section after the pitch");
    assert!(
        first.starts_with("Try it without a GPU"),
        "README's first section is not the try-it: {}",
        first.lines().next().unwrap()
    );
    let bs = blocks(first);
    let (_, sh) = bs.iter().find(|(l, _)| l == "sh").expect("a sh block");
    let command = sh
        .iter()
        .skip_while(|l| !l.starts_with("inferlint series "))
        .take_while(|l| !l.trim().is_empty())
        .map(|l| l.trim().trim_end_matches('\\').trim())
        .collect::<Vec<_>>()
        .join(" ");
    let words = shlex::split(&command).expect("a shell command");
    assert_eq!(words[0], "inferlint", "{command}");
    for w in &words[1..] {
        if w.starts_with("tests/") {
            assert!(
                Path::new(w).is_relative() && root().join(w).is_file(),
                "{w}"
            );
        }
    }
    let (_, console) = bs
        .iter()
        .find(|(l, _)| l == "console")
        .expect("a console block with what it prints");
    assert_eq!(console, &ORIGINAL, "README's lines are the original's");
    let out = Command::new(env!("CARGO_BIN_EXE_inferlint"))
        .args(&words[1..])
        .current_dir(root())
        .output()
        .unwrap();
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert_eq!(stdout.lines().collect::<Vec<_>>(), ORIGINAL, "{command}");
    assert_eq!(out.status.code(), Some(1), "a failed tripwire exits 1");
    // Then the demo, on the simulated server.
    assert!(
        bs.iter()
            .any(|(l, lines)| l == "sh" && lines.iter().any(|x| x.trim() == "inferlint demo")),
        "the try-it section goes on with `inferlint demo`"
    );
}

/// README's tripwire table lists the catalogue's tripwires, each once, in order, and its text
/// says how many there are: a tripwire added to the catalogue without its row fails here.
#[test]
fn readmes_tripwire_table_is_the_catalogue() {
    let readme = read("README.md");
    let section = readme
        .split("## The tripwires")
        .nth(1)
        .expect("README has a section \"The tripwires\"");
    let row = regex::Regex::new(r"^\| (T\d+) \| \S").unwrap();
    let rows: Vec<String> = section
        .lines()
        .skip_while(|l| !l.starts_with('|'))
        .take_while(|l| l.starts_with('|'))
        .filter_map(|l| row.captures(l).map(|c| c[1].to_string()))
        .collect();
    let catalogue: Vec<String> = inferlint_core::catalogue::all()
        .iter()
        .map(|e| e.id())
        .collect();
    assert_eq!(rows, catalogue, "README's table against the catalogue");
    let n = catalogue.len();
    let claim = format!("checks {n} tripwires (T1–T{n})");
    assert!(
        readme.replace('\n', " ").contains(&claim),
        "README says how many tripwires there are: {claim:?}"
    );
}
