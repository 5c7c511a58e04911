//! A process holding memory on a card, as attributed by a reader, and the pure parts of the
//! attribution (the command shown, a `status` file's `NSpid` line).

use serde::Serialize;

/// The longest command kept (as teardown's target lines, docs/supervision.md).
const COMMAND_CHARS: usize = 100;

/// A process holding memory on a card in the scope.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct GpuHolder {
    /// The card's index (as in `Gpu::index`).
    pub gpu: u32,
    /// As the driver reported it; when the driver reported the pid a nested pid namespace
    /// gives it, the pid that process has here (found through its `NSpid` line).
    pub pid: u32,
    pub used_mib: Option<u64>,
    pub uid: Option<u32>,
    pub user: Option<String>,
    pub command: Option<String>,
    /// false: the pid is not in this pid namespace ("a process outside this pid namespace").
    pub visible: bool,
}

impl GpuHolder {
    /// "pid 4711 (alice) VLLM::EngineCore, 21768 MiB on GPU 1" or "a process outside this pid
    /// namespace, 900 MiB on GPU 0".
    pub fn describe(&self) -> String {
        let mib = self
            .used_mib
            .map_or("? MiB".to_string(), |m| format!("{m} MiB"));
        if !self.visible {
            return format!(
                "a process outside this pid namespace, {mib} on GPU {}",
                self.gpu
            );
        }
        let mut who = format!("pid {}", self.pid);
        match (&self.user, self.uid) {
            (Some(u), _) => who.push_str(&format!(" ({u})")),
            (None, Some(uid)) => who.push_str(&format!(" (uid {uid})")),
            (None, None) => {}
        }
        if let Some(c) = &self.command {
            who.push(' ');
            who.push_str(c);
        }
        format!("{who}, {mib} on GPU {}", self.gpu)
    }
}

/// The command shown for a process: a retitled process (`VLLM::EngineCore`, `sglang::…`,
/// `ray::…`; setproctitle pads or NUL-fills the rest of argv) by its title alone, anything else
/// by its argument vector, at most 100 characters; `[comm]` when argv is empty.
pub fn command_of(argv: &[String], comm: &str) -> Option<String> {
    let Some(first) = argv.first() else {
        return (!comm.is_empty()).then(|| format!("[{comm}]"));
    };
    if first.contains("::") {
        return Some(first.clone());
    }
    let joined = argv.join(" ");
    Some(match joined.char_indices().nth(COMMAND_CHARS) {
        Some((cut, _)) => format!("{}…", &joined[..cut]),
        None => joined,
    })
}

/// The `NSpid:` line of a `status` file: this process's pid in every namespace from the
/// reader's down to its own.
pub fn parse_nspid(status: &str) -> Vec<u32> {
    status
        .lines()
        .find_map(|l| l.strip_prefix("NSpid:"))
        .map(|rest| {
            rest.split_whitespace()
                .filter_map(|p| p.parse().ok())
                .collect()
        })
        .unwrap_or_default()
}
