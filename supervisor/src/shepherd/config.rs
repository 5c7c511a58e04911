//! What a shepherd is told on its command line, written by the supervisor side and read back
//! by the shepherd.

use std::ffi::OsString;
use std::os::fd::RawFd;
use std::path::PathBuf;
use std::time::Duration;

use crate::cgroup::CgroupMode;
use crate::names::Names;
use crate::procfs::ProcId;
use crate::teardown::Graces;

/// What a shepherd is told on its command line.
#[derive(Clone, Debug, PartialEq)]
pub struct ShepherdConfig {
    pub run_id: String,
    /// The names the run shows under (marker and owners variables, cgroup prefix, title).
    pub names: Names,
    /// The supervisor's identity (and any other owner); the shepherd adds its own.
    pub owners: Vec<ProcId>,
    pub cgroup: CgroupMode,
    /// Graces for the teardown it starts by itself (supervisor gone, signal, leader exit).
    pub graces: Graces,
    /// Use the `(pid, start time)` identity, not pidfds ([`crate::pidfd::switch_off`]).
    pub no_pidfd: bool,
    /// The control socket (fd 3 when started by [`crate::Supervised`]).
    pub control_fd: Option<RawFd>,
    /// Read ends of the server's output pipes, drained only after the supervisor is gone.
    pub drain_fds: Vec<RawFd>,
    pub drain_to: Option<PathBuf>,
    pub log: Option<PathBuf>,
    pub report: Option<PathBuf>,
    pub cwd: Option<PathBuf>,
    pub command: Vec<OsString>,
}

impl ShepherdConfig {
    /// A configuration with nothing but the names set.
    pub fn new(names: Names) -> Self {
        ShepherdConfig {
            run_id: String::new(),
            names,
            owners: Vec::new(),
            cgroup: CgroupMode::default(),
            graces: Graces::default(),
            no_pidfd: false,
            control_fd: None,
            drain_fds: Vec::new(),
            drain_to: None,
            log: None,
            report: None,
            cwd: None,
            command: Vec::new(),
        }
    }

    /// The command-line arguments that [`ShepherdConfig::from_args`] reads back.
    pub fn to_args(&self) -> Vec<OsString> {
        let mut a: Vec<OsString> = Vec::new();
        let mut push = |k: &str, v: OsString| {
            a.push(k.into());
            a.push(v);
        };
        push("--run-id", self.run_id.clone().into());
        for o in &self.owners {
            push("--owner", o.to_string().into());
        }
        push("--cgroup", self.cgroup.to_string().into());
        let g = &self.graces;
        push(
            "--grace-ms",
            format!(
                "{},{},{},{}",
                g.leader.as_millis(),
                g.after_leader.as_millis(),
                g.group.as_millis(),
                g.force.as_millis()
            )
            .into(),
        );
        if let Some(fd) = self.control_fd {
            push("--control-fd", fd.to_string().into());
        }
        for fd in &self.drain_fds {
            push("--drain-fd", fd.to_string().into());
        }
        for (k, v) in [
            ("--drain-to", &self.drain_to),
            ("--log", &self.log),
            ("--report", &self.report),
            ("--cwd", &self.cwd),
        ] {
            if let Some(p) = v {
                push(k, p.clone().into_os_string());
            }
        }
        a.extend(self.names.to_args());
        if self.no_pidfd {
            a.push("--no-pidfd".into());
        }
        a.push("--".into());
        a.extend(self.command.iter().cloned());
        a
    }

    /// Parses the arguments written by [`ShepherdConfig::to_args`]. The names the arguments
    /// do not give are `names` (a shepherd started by hand runs under its program's own).
    pub fn from_args<I: IntoIterator<Item = OsString>>(
        names: Names,
        args: I,
    ) -> Result<Self, String> {
        let mut cfg = ShepherdConfig::new(names);
        let mut it = args.into_iter();
        while let Some(k) = it.next() {
            if k == "--" {
                cfg.command = it.collect();
                break;
            }
            if k == "--no-pidfd" {
                cfg.no_pidfd = true;
                continue;
            }
            let key = k.to_string_lossy().into_owned();
            let v = it
                .next()
                .ok_or_else(|| format!("shepherd: {key} needs a value"))?;
            let s = v.to_string_lossy().into_owned();
            let num = |s: &str| -> Result<i32, String> {
                s.parse().map_err(|_| format!("shepherd: bad {key} '{s}'"))
            };
            match key.as_str() {
                "--run-id" => cfg.run_id = s,
                "--owner" => cfg.owners.push(
                    s.parse()
                        .map_err(|_| format!("shepherd: bad --owner '{s}'"))?,
                ),
                "--cgroup" => cfg.cgroup = s.parse()?,
                "--grace-ms" => cfg.graces = parse_graces(&s)?,
                "--control-fd" => cfg.control_fd = Some(num(&s)?),
                "--drain-fd" => cfg.drain_fds.push(num(&s)?),
                "--drain-to" => cfg.drain_to = Some(PathBuf::from(v)),
                "--log" => cfg.log = Some(PathBuf::from(v)),
                "--report" => cfg.report = Some(PathBuf::from(v)),
                "--cwd" => cfg.cwd = Some(PathBuf::from(v)),
                _ if cfg.names.set(&key, s) => {}
                _ => return Err(format!("shepherd: unknown option {key}")),
            }
        }
        if cfg.command.is_empty() {
            return Err("shepherd: no command after --".into());
        }
        if cfg.run_id.is_empty() {
            return Err("shepherd: --run-id is required".into());
        }
        // The shepherd takes ownership of each handed-down descriptor: each once, and never
        // one of the standard three.
        let mut fds: Vec<RawFd> = cfg
            .control_fd
            .iter()
            .chain(&cfg.drain_fds)
            .copied()
            .collect();
        fds.sort_unstable();
        if let Some(fd) = fds.iter().find(|&&fd| fd <= 2) {
            return Err(format!("shepherd: descriptor {fd} is a standard one"));
        }
        if let Some(w) = fds.windows(2).find(|w| w[0] == w[1]) {
            return Err(format!("shepherd: descriptor {} named twice", w[0]));
        }
        Ok(cfg)
    }
}

/// `--grace-ms L,A,G,F`.
fn parse_graces(s: &str) -> Result<Graces, String> {
    let v: Vec<u64> = s
        .split(',')
        .map(|x| {
            x.parse()
                .map_err(|_| format!("shepherd: bad --grace-ms '{s}'"))
        })
        .collect::<Result<_, _>>()?;
    if v.len() != 4 {
        return Err(format!("shepherd: --grace-ms needs 4 values, got '{s}'"));
    }
    let d = Duration::from_millis;
    Ok(Graces {
        leader: d(v[0]),
        after_leader: d(v[1]),
        group: d(v[2]),
        force: d(v[3]),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(tag: &str) -> Names {
        Names {
            marker_env: format!("{tag}_RUN_ID"),
            owners_env: format!("{tag}_RUN_OWNERS"),
            cgroup_prefix: format!("{tag}-"),
            shepherd_title: format!("{tag}-shep"),
        }
    }

    #[test]
    fn a_config_reads_back_what_it_wrote() {
        let mut cfg = ShepherdConfig::new(names("A"));
        cfg.run_id = "r1".into();
        cfg.owners = vec![ProcId {
            pid: 7,
            starttime: 9,
        }];
        cfg.cgroup = CgroupMode::Off;
        cfg.no_pidfd = true;
        cfg.control_fd = Some(3);
        cfg.drain_fds = vec![4, 5];
        cfg.log = Some("/tmp/l".into());
        cfg.command = vec!["srv".into(), "--".into(), "x".into()];
        // The names on the command line win over the program's own.
        let back = ShepherdConfig::from_args(names("B"), cfg.to_args()).unwrap();
        assert_eq!(back, cfg);
    }

    #[test]
    fn a_shepherd_started_by_hand_runs_under_its_programs_names() {
        let args = ["--run-id", "r", "--", "srv"].map(OsString::from);
        let cfg = ShepherdConfig::from_args(names("B"), args).unwrap();
        assert_eq!(cfg.names, names("B"));
        assert!(!cfg.no_pidfd);
        let bad = ["--run-id", "r", "--title"].map(OsString::from);
        assert!(ShepherdConfig::from_args(names("B"), bad).is_err());
    }

    #[test]
    fn each_handed_down_descriptor_is_taken_once() {
        let args = |fds: &[&str]| {
            let mut a: Vec<OsString> = vec!["--run-id".into(), "r".into()];
            for (i, fd) in fds.iter().enumerate() {
                a.push(if i == 0 { "--control-fd" } else { "--drain-fd" }.into());
                a.push(fd.into());
            }
            a.extend(["--".into(), "srv".into()]);
            a
        };
        let parse = |fds: &[&str]| ShepherdConfig::from_args(names("B"), args(fds));
        assert!(parse(&["3", "4", "5"]).is_ok());
        assert_eq!(
            parse(&["3", "4", "4"]).unwrap_err(),
            "shepherd: descriptor 4 named twice"
        );
        assert_eq!(
            parse(&["3", "1"]).unwrap_err(),
            "shepherd: descriptor 1 is a standard one"
        );
    }
}
