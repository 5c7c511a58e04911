//! The server behind a URL in attach mode (`--url`, no `--serve`): the process listening on the
//! URL's port, found from the socket tables (`/proc/net/tcp`, `/proc/net/tcp6`, LISTEN state)
//! and the socket inodes in `/proc/*/fd`, plus its descendants (docs/supervision.md, "Sharing
//! the node"). A name match would pick any server of the node; the port names the one measured.
//!
//! When it cannot be found — another user's process whose fds cannot be read, another pid or
//! network namespace, a host that is not this machine — the answer says why and names nobody.

use std::collections::HashSet;
use std::path::Path;

use crate::procs::{ProcInfo, ProcScanner};

/// The attached server's processes, or why they are unknown.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Found {
    /// The listener first, then its descendants.
    Tree(Vec<ProcInfo>),
    NotFound(String),
}

/// The TCP port of a URL on this machine; None for another host.
pub fn local_port(url: &str) -> Result<u16, String> {
    let rest = url
        .split_once("://")
        .map_or(url, |(_, r)| r)
        .split(['/', '?', '#'])
        .next()
        .unwrap_or("");
    let rest = rest.rsplit_once('@').map_or(rest, |(_, h)| h);
    let (host, port) = if let Some(h) = rest.strip_prefix('[') {
        let (h, p) = h
            .split_once(']')
            .ok_or_else(|| format!("{url}: unbalanced ["))?;
        (h.to_string(), p.strip_prefix(':').map(str::to_string))
    } else {
        match rest.rsplit_once(':') {
            Some((h, p)) => (h.to_string(), Some(p.to_string())),
            None => (rest.to_string(), None),
        }
    };
    let local = matches!(
        host.as_str(),
        "127.0.0.1" | "localhost" | "::1" | "0.0.0.0" | "::" | ""
    ) || host.starts_with("127.")
        || host == crate::host_name();
    if !local {
        return Err(format!(
            "{host} is not this machine, so its server's processes cannot be seen from here"
        ));
    }
    let default = if url.starts_with("https://") { 443 } else { 80 };
    match port {
        Some(p) => p.parse().map_err(|_| format!("{url}: {p:?} is not a port")),
        None => Ok(default),
    }
}

/// Socket inodes listening on `port`, from a `/proc/net/tcp`-format table.
pub fn listening_inodes(table: &str, port: u16) -> Vec<u64> {
    table
        .lines()
        .skip(1)
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            // sl local rem st tx:rx tr:when retrnsmt uid timeout inode
            let local = f.get(1)?;
            let st = f.get(3)?;
            let (_, p) = local.rsplit_once(':')?;
            let p = u16::from_str_radix(p, 16).ok()?;
            (p == port && *st == "0A")
                .then(|| f.get(9)?.parse().ok())
                .flatten()
        })
        .filter(|i| *i != 0)
        .collect()
}

/// The pids whose fd table holds one of `inodes`, and how many fd tables could not be read.
fn holders_of(root: &Path, pids: &[i32], inodes: &HashSet<u64>) -> (Vec<i32>, usize) {
    let mut found = Vec::new();
    let mut unreadable = 0;
    for &pid in pids {
        let Ok(fds) = std::fs::read_dir(root.join(pid.to_string()).join("fd")) else {
            unreadable += 1;
            continue;
        };
        let hit = fds.flatten().any(|fd| {
            std::fs::read_link(fd.path()).is_ok_and(|t| {
                let t = t.to_string_lossy();
                t.strip_prefix("socket:[")
                    .and_then(|r| r.strip_suffix(']'))
                    .and_then(|n| n.parse::<u64>().ok())
                    .is_some_and(|n| inodes.contains(&n))
            })
        });
        if hit {
            found.push(pid);
        }
    }
    (found, unreadable)
}

/// The server listening at `url`, under a `/proc`-style root, and its descendants.
pub fn find(root: &Path, url: &str) -> Found {
    let port = match local_port(url) {
        Ok(p) => p,
        Err(e) => return Found::NotFound(e),
    };
    let mut inodes = HashSet::new();
    for t in ["net/tcp", "net/tcp6"] {
        if let Ok(text) = std::fs::read_to_string(root.join(t)) {
            inodes.extend(listening_inodes(&text, port));
        }
    }
    if inodes.is_empty() {
        return Found::NotFound(format!(
            "nothing in this network namespace listens on port {port}"
        ));
    }
    let scan = ProcScanner::new(root);
    let procs: Vec<ProcInfo> = scan.all().into_iter().filter(|p| !p.is_zombie()).collect();
    let pids: Vec<i32> = procs.iter().map(|p| p.pid).collect();
    let (owners, unreadable) = holders_of(root, &pids, &inodes);
    // A forking server shares its listening socket with its children: the listener is the
    // highest owner, the one whose parent holds no copy.
    let owner_set: HashSet<i32> = owners.iter().copied().collect();
    let Some(top) = procs
        .iter()
        .filter(|p| owner_set.contains(&p.pid) && !owner_set.contains(&p.ppid))
        .min_by_key(|p| p.starttime)
        .cloned()
    else {
        let why = if unreadable > 0 {
            format!(
                "port {port} is listened on, but by no process whose file descriptors can be read ({unreadable} could not be: another user's, or another pid namespace's)"
            )
        } else {
            format!("port {port} is listened on, but by no process of this pid namespace")
        };
        return Found::NotFound(why);
    };
    let mut tree = vec![top.clone()];
    let mut i = 0;
    while i < tree.len() {
        let parent = tree[i].pid;
        tree.extend(procs.iter().filter(|p| p.ppid == parent).cloned());
        i += 1;
    }
    Found::Tree(tree)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    const TCP: &str = "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 0100007F:1F40 00000000:0000 0A 00000000:00000000 00:00000000 00000000  1000        0 4711 1 0000000000000000 100 0 0 10 0
   1: 0100007F:1F40 0100007F:9C40 01 00000000:00000000 00:00000000 00000000  1000        0 4712 1 0000000000000000 20 4 30 10 -1
   2: 00000000:1F41 00000000:0000 0A 00000000:00000000 00:00000000 00000000  1001        0 5000 1 0000000000000000 100 0 0 10 0
";

    fn write_proc(root: &Path, pid: i32, ppid: i32, argv: &str, sockets: &[u64]) {
        let d = root.join(pid.to_string());
        std::fs::create_dir_all(d.join("fd")).unwrap();
        std::fs::write(
            d.join("stat"),
            format!(
                "{pid} (x) S {ppid} {pid} {pid} 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 {} 0 0",
                100 + pid
            ),
        )
        .unwrap();
        std::fs::write(d.join("cmdline"), argv.replace(' ', "\0")).unwrap();
        std::fs::write(d.join("comm"), "x\n").unwrap();
        std::fs::write(d.join("status"), "Uid:\t1000\t1000\t1000\t1000\n").unwrap();
        for (i, s) in sockets.iter().enumerate() {
            symlink(
                format!("socket:[{s}]"),
                d.join("fd").join((3 + i).to_string()),
            )
            .unwrap();
        }
        symlink("/dev/null", d.join("fd").join("0")).unwrap();
    }

    #[test]
    fn only_listening_sockets_on_the_port_count() {
        assert_eq!(listening_inodes(TCP, 8000), vec![4711]);
        assert_eq!(listening_inodes(TCP, 8001), vec![5000]);
        assert!(listening_inodes(TCP, 8002).is_empty());
    }

    #[test]
    fn the_listener_and_its_descendants_and_no_one_else() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir_all(root.join("net")).unwrap();
        std::fs::write(root.join("net/tcp"), TCP).unwrap();
        std::fs::write(root.join("net/tcp6"), TCP.lines().next().unwrap()).unwrap();
        write_proc(root, 10, 1, "vllm serve m --port 8000", &[4711]);
        write_proc(root, 11, 10, "VLLM::EngineCore", &[]);
        write_proc(root, 12, 11, "VLLM::Worker_TP0", &[]);
        // Another server of the same user on 8001, and a client of 8000.
        write_proc(root, 20, 1, "vllm serve m --port 8001", &[5000]);
        write_proc(root, 21, 20, "VLLM::EngineCore", &[]);
        write_proc(root, 30, 1, "curl http://127.0.0.1:8000", &[4712]);
        let Found::Tree(t) = find(root, "http://127.0.0.1:8000") else {
            panic!("not found")
        };
        let pids: Vec<i32> = t.iter().map(|p| p.pid).collect();
        assert_eq!(pids, vec![10, 11, 12]);
        let Found::Tree(t) = find(root, "http://localhost:8001/v1") else {
            panic!("not found")
        };
        assert_eq!(t.iter().map(|p| p.pid).collect::<Vec<_>>(), vec![20, 21]);
        assert_eq!(
            find(root, "http://127.0.0.1:8002"),
            Found::NotFound("nothing in this network namespace listens on port 8002".into())
        );
    }

    #[test]
    fn a_listener_whose_fds_cannot_be_read_is_not_guessed() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir_all(root.join("net")).unwrap();
        std::fs::write(root.join("net/tcp"), TCP).unwrap();
        // The listener's fd table is unreadable (no fd folder): another user's process.
        write_proc(root, 10, 1, "vllm serve m --port 8000", &[]);
        std::fs::remove_dir_all(root.join("10/fd")).unwrap();
        write_proc(root, 20, 1, "vllm serve m --port 8001", &[5000]);
        match find(root, "http://127.0.0.1:8000") {
            Found::NotFound(why) => assert!(why.contains("1 could not be"), "{why}"),
            f => panic!("{f:?}"),
        }
    }

    #[test]
    fn another_host_is_not_looked_for() {
        match find(Path::new("/proc"), "http://gpu-node-7:8000") {
            Found::NotFound(why) => {
                assert!(why.contains("gpu-node-7 is not this machine"), "{why}")
            }
            f => panic!("{f:?}"),
        }
        assert_eq!(local_port("http://[::1]:9000/x"), Ok(9000));
        assert_eq!(local_port("http://127.0.0.1"), Ok(80));
    }

    #[test]
    fn a_real_listener_is_found() {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = l.local_addr().unwrap().port();
        match find(Path::new("/proc"), &format!("http://127.0.0.1:{port}")) {
            Found::Tree(t) => assert_eq!(t[0].pid, std::process::id() as i32),
            f => panic!("{f:?}"),
        }
        drop(l);
        assert!(matches!(
            find(Path::new("/proc"), &format!("http://127.0.0.1:{port}")),
            Found::NotFound(_)
        ));
    }
}
