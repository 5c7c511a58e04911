//! How `pkill`, `pgrep` and `killall` read their command line: which tool, which options, which
//! words are the patterns.

use super::argv::{basename, strip_launchers};

/// Which process-killing tool a command runs, and how it matches processes.
#[derive(Debug, Clone, PartialEq)]
pub struct Killer {
    pub tool: KillTool,
    /// Index of the tool's own word in argv.
    pub at: usize,
    /// pkill/pgrep `-f`: the pattern is searched in the whole command line, not the name.
    pub full: bool,
    /// pkill/pgrep `-x`, killall without `-r`: the whole name (or command line) must match.
    pub exact: bool,
    pub ignore_case: bool,
    /// pkill/pgrep `-v`: everything but the matches (not analysed).
    pub inverted: bool,
    /// Indices of the pattern words (pkill/pgrep: one; killall: every name).
    pub patterns: Vec<usize>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KillTool {
    Pkill,
    Pgrep,
    Killall,
}

impl KillTool {
    pub fn name(self) -> &'static str {
        match self {
            KillTool::Pkill => "pkill",
            KillTool::Pgrep => "pgrep",
            KillTool::Killall => "killall",
        }
    }
}

pub fn killer(argv: &[String]) -> Option<Killer> {
    let s = strip_launchers(argv);
    let at = s.start;
    let tool = match basename(argv.get(at)?) {
        "pkill" => KillTool::Pkill,
        "pgrep" => KillTool::Pgrep,
        "killall" => KillTool::Killall,
        _ => return None,
    };
    let mut k = Killer {
        tool,
        at,
        full: false,
        exact: tool == KillTool::Killall,
        ignore_case: false,
        inverted: false,
        patterns: Vec::new(),
    };
    let (valued_short, valued_long): (&str, &[&str]) = match tool {
        KillTool::Killall => (
            "suoyn",
            &[
                "--signal",
                "--user",
                "--older-than",
                "--younger-than",
                "--ns",
            ],
        ),
        _ => (
            "uUgGPstFdrq",
            &[
                "--signal",
                "--euid",
                "--uid",
                "--group",
                "--pgroup",
                "--parent",
                "--session",
                "--terminal",
                "--pidfile",
                "--delimiter",
                "--runstates",
                "--ns",
                "--nslist",
                "--cgroup",
                "--env",
                "--queue",
            ],
        ),
    };
    let mut i = at + 1;
    let mut options_done = false;
    while i < argv.len() {
        let w = argv[i].as_str();
        if options_done || !w.starts_with('-') || w == "-" {
            k.patterns.push(i);
            if tool != KillTool::Killall {
                break;
            }
            i += 1;
            continue;
        }
        if w == "--" {
            options_done = true;
            i += 1;
            continue;
        }
        if let Some(long) = w.strip_prefix("--") {
            let (name, has_value) = match long.split_once('=') {
                Some((n, _)) => (n, true),
                None => (long, false),
            };
            match name {
                "full" => k.full = true,
                "exact" => k.exact = true,
                "ignore-case" => k.ignore_case = true,
                "inverse" => k.inverted = true,
                "regexp" => k.exact = false,
                _ => {}
            }
            let takes = valued_long.contains(&format!("--{name}").as_str()) && !has_value;
            i += if takes { 2 } else { 1 };
            continue;
        }
        // A signal given as `-9`, `-KILL`, `-SIGTERM`.
        let body = &w[1..];
        if body.chars().all(|c| c.is_ascii_digit())
            || (body.len() > 1
                && body
                    .chars()
                    .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit()))
        {
            i += 1;
            continue;
        }
        let mut skip_next = false;
        for (pos, c) in body.char_indices() {
            if valued_short.contains(c) {
                // The value is the rest of the cluster, or the next word.
                skip_next = pos + c.len_utf8() == body.len();
                break;
            }
            match (tool, c) {
                (KillTool::Killall, 'r') => k.exact = false,
                (KillTool::Killall, 'I') => k.ignore_case = true,
                (KillTool::Killall, 'e') => k.exact = true,
                (_, 'f') if tool != KillTool::Killall => k.full = true,
                (_, 'x') if tool != KillTool::Killall => k.exact = true,
                (_, 'i') if tool != KillTool::Killall => k.ignore_case = true,
                (_, 'v') if tool != KillTool::Killall => k.inverted = true,
                _ => {}
            }
        }
        i += if skip_next { 2 } else { 1 };
    }
    Some(k)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(s: &str) -> Vec<String> {
        shlex::split(s).unwrap()
    }

    #[test]
    fn kill_tools_and_their_patterns() {
        let k = killer(&v("pkill -9 -f 'vllm serve'")).unwrap();
        assert!(k.full && !k.exact);
        assert_eq!(k.patterns, vec![3]);
        let k = killer(&v("sudo pkill -u me -fx 'vllm serve m'")).unwrap();
        assert!(k.full && k.exact);
        assert_eq!((k.at, k.patterns.clone()), (1, vec![5]));
        let k = killer(&v("pgrep --full --signal TERM vllm")).unwrap();
        assert!(k.full);
        assert_eq!(k.patterns, vec![4]);
        let k = killer(&v("killall -9 -r 'vllm|python' bash")).unwrap();
        assert!(!k.exact);
        assert_eq!(k.patterns, vec![3, 4]);
        let k = killer(&v("pkill vllm")).unwrap();
        assert!(!k.full);
        assert_eq!(killer(&v("kill -9 123")), None);
    }
}
