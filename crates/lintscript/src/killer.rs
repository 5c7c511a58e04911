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
    let (valued_short, valued_long) = match tool {
        KillTool::Killall => (KILLALL_VALUED_SHORT, KILLALL_VALUED_LONG),
        _ => (PKILL_VALUED_SHORT, PKILL_VALUED_LONG),
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
        let takes_next = if let Some(long) = w.strip_prefix("--") {
            k.long_option(long, valued_long)
        } else if is_signal(&w[1..]) {
            false
        } else {
            k.short_options(&w[1..], valued_short)
        };
        i += if takes_next { 2 } else { 1 };
    }
    Some(k)
}

/// killall's short options that take a value.
const KILLALL_VALUED_SHORT: &str = "suoyn";

/// killall's long options that take a value.
const KILLALL_VALUED_LONG: &[&str] = &[
    "--signal",
    "--user",
    "--older-than",
    "--younger-than",
    "--ns",
];

/// pkill's and pgrep's short options that take a value.
const PKILL_VALUED_SHORT: &str = "uUgGPstFdrq";

/// pkill's and pgrep's long options that take a value.
const PKILL_VALUED_LONG: &[&str] = &[
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
];

/// Whether the body of an option word is a signal given as `-9`, `-KILL`, `-SIGTERM`.
fn is_signal(body: &str) -> bool {
    body.chars().all(|c| c.is_ascii_digit())
        || (body.len() > 1
            && body
                .chars()
                .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit()))
}

impl Killer {
    /// Applies the long option `--long` (without its dashes); true when its value is the next
    /// word.
    fn long_option(&mut self, long: &str, valued_long: &[&str]) -> bool {
        let (name, has_value) = match long.split_once('=') {
            Some((n, _)) => (n, true),
            None => (long, false),
        };
        match name {
            "full" => self.full = true,
            "exact" => self.exact = true,
            "ignore-case" => self.ignore_case = true,
            "inverse" => self.inverted = true,
            "regexp" => self.exact = false,
            _ => {}
        }
        valued_long.contains(&format!("--{name}").as_str()) && !has_value
    }

    /// Applies a cluster of short options (`-fx`, without its dash); true when the last takes a
    /// value and it is the next word.
    fn short_options(&mut self, body: &str, valued_short: &str) -> bool {
        let tool = self.tool;
        for (pos, c) in body.char_indices() {
            if valued_short.contains(c) {
                // The value is the rest of the cluster, or the next word.
                return pos + c.len_utf8() == body.len();
            }
            match (tool, c) {
                (KillTool::Killall, 'r') => self.exact = false,
                (KillTool::Killall, 'I') => self.ignore_case = true,
                (KillTool::Killall, 'e') => self.exact = true,
                (_, 'f') if tool != KillTool::Killall => self.full = true,
                (_, 'x') if tool != KillTool::Killall => self.exact = true,
                (_, 'i') if tool != KillTool::Killall => self.ignore_case = true,
                (_, 'v') if tool != KillTool::Killall => self.inverted = true,
                _ => {}
            }
        }
        false
    }
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
