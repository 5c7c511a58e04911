//! What a command line does in a script: the shell strings it runs and whether it reads a script
//! from standard input. The launchers, servers and loads are the core's one reading of an
//! argument vector ([`inferlint_core::argv`]).

use inferlint_core::argv::skip_options;
pub use inferlint_core::argv::{basename, is_load, server_engine, strip_launchers, Stripped};

pub fn is_shell(word: &str) -> bool {
    matches!(basename(word), "bash" | "sh" | "dash" | "zsh" | "ksh")
}

/// A shell string that a command runs (`bash -c STR`, `su -c STR`, `ssh host STR`,
/// `sbatch --wrap STR`), with the command lines of the processes that hold it in /proc.
#[derive(Debug, Clone, PartialEq)]
pub struct ShellString {
    /// Index of the word holding the string, or of the first of several words ssh joins.
    pub word: usize,
    /// With ssh the remaining words are joined by spaces.
    pub joined: bool,
    /// Word ranges (start..end) of argv, each the command line of one process whose argv
    /// contains the string: every launcher that stays, and the shell itself.
    pub holders: Vec<std::ops::Range<usize>>,
    /// The holder runs elsewhere (ssh): the string is its own remote `bash -c` command line.
    pub remote: bool,
}

pub fn shell_string(argv: &[String]) -> Option<ShellString> {
    let s = strip_launchers(argv);
    let rest_at = s.start;
    let first = argv.get(rest_at)?;
    let end = argv.len();
    let holders = |shell_at: usize| {
        let mut h: Vec<_> = s.parents.iter().map(|&p| p..end).collect();
        h.push(shell_at..end);
        h
    };
    let name = basename(first);
    if is_shell(first) {
        let mut c_mode = false;
        let mut k = rest_at + 1;
        while k < end {
            let w = argv[k].as_str();
            if w == "-o" || w == "+o" || w == "-O" || w == "+O" {
                k += 2;
                continue;
            }
            if w.starts_with("--") {
                k += 1;
                continue;
            }
            if (w.starts_with('-') || w.starts_with('+')) && w.len() > 1 {
                c_mode |= w.starts_with('-') && w[1..].contains('c');
                k += 1;
                continue;
            }
            break;
        }
        return (c_mode && k < end).then(|| ShellString {
            word: k,
            joined: false,
            holders: holders(rest_at),
            remote: false,
        });
    }
    if matches!(name, "su" | "runuser") {
        let k = (rest_at + 1..end).find(|&k| argv[k] == "-c" || argv[k] == "--command")?;
        return (k + 1 < end).then(|| ShellString {
            word: k + 1,
            joined: false,
            holders: holders(rest_at),
            remote: false,
        });
    }
    if name == "ssh" {
        let k = skip_options(
            argv,
            rest_at + 1,
            &[
                "-b", "-c", "-D", "-E", "-e", "-F", "-I", "-i", "-J", "-L", "-l", "-m", "-O", "-o",
                "-p", "-Q", "-R", "-S", "-W", "-w",
            ],
            1,
        );
        return (k < end).then(|| ShellString {
            word: k,
            joined: true,
            holders: Vec::new(),
            remote: true,
        });
    }
    if name == "sbatch" {
        let k = (rest_at + 1..end).find(|&k| argv[k] == "--wrap")?;
        return (k + 1 < end).then(|| ShellString {
            word: k + 1,
            joined: false,
            // The batch script runs as `/bin/sh …/slurm_script`: the string is in no argv.
            holders: Vec::new(),
            remote: false,
        });
    }
    None
}

/// True when the command is a shell reading its script from standard input (`bash`, `bash -s`,
/// `ssh host bash -s`), so a here-document given to it is code.
pub fn reads_script_from_stdin(argv: &[String]) -> bool {
    let s = strip_launchers(argv);
    let Some(first) = argv.get(s.start) else {
        return false;
    };
    if basename(first) == "ssh" {
        return argv[s.start + 1..].iter().any(|w| is_shell(w));
    }
    is_shell(first)
        && argv[s.start + 1..]
            .iter()
            .all(|w| w.starts_with('-') && !w[1..].contains('c'))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(s: &str) -> Vec<String> {
        shlex::split(s).unwrap()
    }

    #[test]
    fn shell_strings_and_their_holders() {
        let a = v("timeout 60 bash -lc 'pkill -f x'");
        let s = shell_string(&a).unwrap();
        assert_eq!(s.word, 4);
        assert_eq!(s.holders, vec![0..5, 2..5]);
        assert_eq!(shell_string(&v("bash script.sh")), None);
        assert_eq!(shell_string(&v("sh -e -c 'x'")).unwrap().word, 3);
        assert_eq!(shell_string(&v("su bob -c 'x'")).unwrap().word, 3);
        let ssh = shell_string(&v("ssh -p 22 node1 pkill -f x")).unwrap();
        assert_eq!((ssh.word, ssh.joined, ssh.remote), (4, true, true));
        assert_eq!(shell_string(&v("sbatch --wrap 'x'")).unwrap().word, 2);
    }

    #[test]
    fn stdin_shells() {
        assert!(reads_script_from_stdin(&v("bash")));
        assert!(reads_script_from_stdin(&v("bash -s")));
        assert!(reads_script_from_stdin(&v("ssh node bash -s")));
        assert!(!reads_script_from_stdin(&v("bash -c x")));
        assert!(!reads_script_from_stdin(&v("bash run.sh")));
        assert!(!reads_script_from_stdin(&v("cat")));
    }
}
