//! The names under which a run shows on the system. They belong to the product that uses the
//! crate (its environment variables, its cgroups, its process titles), so the caller gives
//! them; the crate itself names nothing.

use std::ffi::OsString;

/// What a product calls the traces of its runs. The supervisor and its shepherd must use the
/// same names (the shepherd receives them on its command line), and reconciliation finds an
/// earlier run only under the names that run was started with.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Names {
    /// The environment variable every process of a run carries, its value the run id (the
    /// census and reconciliation find processes by it).
    pub marker_env: String,
    /// The environment variable naming a run's owners, `pid:starttime` comma-separated: the
    /// run is stale once all of them are dead.
    pub owners_env: String,
    /// The prefix of every cgroup folder a shepherd creates (reconciliation finds them by it).
    pub cgroup_prefix: String,
    /// The shepherd's process name, as `ps` and `/proc/PID/comm` show it (15 bytes at most).
    pub shepherd_title: String,
}

impl Names {
    /// The marker of the run `run_id` under these names.
    pub fn marker(&self, run_id: &str) -> Marker {
        Marker {
            env: self.marker_env.clone(),
            run_id: run_id.to_string(),
        }
    }

    /// The shepherd's command-line options that carry these names.
    pub(crate) fn to_args(&self) -> Vec<OsString> {
        [
            ("--marker-env", &self.marker_env),
            ("--owners-env", &self.owners_env),
            ("--cgroup-prefix", &self.cgroup_prefix),
            ("--title", &self.shepherd_title),
        ]
        .into_iter()
        .flat_map(|(k, v)| [OsString::from(k), OsString::from(v)])
        .collect()
    }

    /// Takes one option written by [`Names::to_args`]; false when `key` is not one of them.
    pub(crate) fn set(&mut self, key: &str, value: String) -> bool {
        let field = match key {
            "--marker-env" => &mut self.marker_env,
            "--owners-env" => &mut self.owners_env,
            "--cgroup-prefix" => &mut self.cgroup_prefix,
            "--title" => &mut self.shepherd_title,
            _ => return false,
        };
        *field = value;
        true
    }
}

/// A run's marker: the environment variable and the run's value of it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Marker {
    pub env: String,
    pub run_id: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_travel_on_the_command_line() {
        let names = Names {
            marker_env: "M".into(),
            owners_env: "O".into(),
            cgroup_prefix: "p-".into(),
            shepherd_title: "t".into(),
        };
        let args = names.to_args();
        let mut back = Names {
            marker_env: String::new(),
            owners_env: String::new(),
            cgroup_prefix: String::new(),
            shepherd_title: String::new(),
        };
        for pair in args.chunks(2) {
            let key = pair[0].to_string_lossy();
            assert!(
                back.set(&key, pair[1].to_string_lossy().into_owned()),
                "{key}"
            );
        }
        assert_eq!(back, names);
        assert!(!back.set("--other", "x".into()));
    }
}
