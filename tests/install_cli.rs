//! What a package installs beside the binary: `inferlint completions SHELL` and `inferlint man`
//! (docs/reference.md, "Install"). The bash script is run in bash and completes; every script
//! and page names every command `--help` lists and none of the internal ones.

use std::process::{Command, Stdio};

fn inferlint(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_inferlint"))
        .args(args)
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// The commands of the grouped `--help`.
fn commands() -> Vec<String> {
    let (_, help, _) = inferlint(&["--help"]);
    let re = regex::Regex::new(r"^  ([a-z][a-z-]*)(?: \(([a-z]+)\))?\s{2,}\S").unwrap();
    let cmds: Vec<String> = help
        .lines()
        .filter_map(|l| re.captures(l).map(|c| c[1].to_string()))
        .collect();
    assert!(cmds.contains(&"completions".to_string()) && cmds.contains(&"man".to_string()));
    cmds
}

/// What bash offers after `words` (the last one being completed).
fn bash_complete(script: &str, words: &[&str]) -> Vec<String> {
    let cword = words.len() - 1;
    let line = words.join(" ");
    let program = format!(
        "{script}\nCOMP_WORDS=({line})\nCOMP_CWORD={cword}\nCOMP_LINE='{line}'\nCOMP_POINT=${{#COMP_LINE}}\n\
         _inferlint inferlint '{cur}' '{prev}'\nprintf '%s\\n' \"${{COMPREPLY[@]}}\"\n",
        cur = words[cword],
        prev = words[cword - 1],
    );
    let out = Command::new("bash")
        .args(["--norc", "--noprofile", "-c", &program])
        .stdin(Stdio::null())
        .output()
        .expect("bash runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| l.trim().to_string())
        .filter(|l| !l.is_empty())
        .collect()
}

#[test]
fn bash_completes_commands_and_options() {
    let (code, script, err) = inferlint(&["completions", "bash"]);
    assert_eq!(code, 0, "{err}");
    assert!(script.contains("complete -F _inferlint"), "{script}");
    let all = bash_complete(&script, &["inferlint", ""]);
    for c in commands() {
        assert!(all.contains(&c), "{c} not offered: {all:?}");
    }
    for hidden in ["sim", "shepherd"] {
        assert!(
            !all.contains(&hidden.to_string()),
            "{hidden} offered: {all:?}"
        );
    }
    let mut rep = bash_complete(&script, &["inferlint", "re"]);
    rep.sort();
    assert_eq!(rep, ["reap", "report"].map(String::from));
    let opts = bash_complete(&script, &["inferlint", "series", "--sn"]);
    assert_eq!(opts, ["--snapshot"]);
    let shells = bash_complete(&script, &["inferlint", "completions", "f"]);
    assert_eq!(shells, ["fish"]);
}

#[test]
fn zsh_and_fish_scripts_name_every_command() {
    for shell in ["zsh", "fish", "elvish", "powershell"] {
        let (code, script, err) = inferlint(&["completions", shell]);
        assert_eq!(code, 0, "{shell}: {err}");
        for c in commands() {
            assert!(script.contains(&c), "{shell}: no {c}");
        }
        assert!(
            !script.contains("shepherd"),
            "{shell} lists an internal command"
        );
    }
    let (code, _, err) = inferlint(&["completions", "tcsh"]);
    assert_eq!(code, 2);
    assert!(err.contains("invalid value 'tcsh'"), "{err}");
}

#[test]
fn the_man_page_and_one_page_per_command() {
    let (code, page, err) = inferlint(&["man"]);
    assert_eq!(code, 0, "{err}");
    assert!(page.contains(".TH inferlint 1"), "{page}");
    assert!(page.contains(".SH SUBCOMMANDS"), "{page}");
    let cmds = commands();
    for c in &cmds {
        assert!(
            page.contains(&format!("inferlint\\-{}(1)", c.replace('-', "\\-"))),
            "inferlint(1) does not list {c}"
        );
    }
    assert!(!page.contains("shepherd"));

    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("man1");
    let (code, _, err) = inferlint(&["man", "-o", dir.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    let mut pages: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    pages.sort();
    let mut want: Vec<String> = cmds.iter().map(|c| format!("inferlint-{c}.1")).collect();
    want.push("inferlint.1".into());
    want.sort();
    assert_eq!(pages, want);
    let series = std::fs::read_to_string(dir.join("inferlint-series.1")).unwrap();
    assert!(series.contains("\\-\\-snapshot"), "{series}");
}

/// `inferlint man | head -1` ends quietly: a closed pipe is not an error.
#[test]
fn a_closed_pipe_is_no_error() {
    let mut child = Command::new(env!("CARGO_BIN_EXE_inferlint"))
        .args(["man"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(String::from_utf8_lossy(&out.stderr), "");
}
