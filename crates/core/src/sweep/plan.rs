//! `--sweep OPTION=V1,V2,…`: which option of the load is set to which value at each point, and
//! what is done between points.

use serde::{Deserialize, Serialize};

use crate::load::{load_tool, LoadTool};

/// Why a sweep cannot be run as asked; said before the server starts (exit 2).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SweepError {
    #[error("--sweep {0:?}: give OPTION=V1,V2,... (e.g. max-concurrency=1,4,16)")]
    Shape(String),
    #[error("--sweep {arg:?}: value {n} is empty")]
    EmptyValue { arg: String, n: usize },
    #[error("--sweep {arg:?}: {value:?} is given twice")]
    Repeated { arg: String, value: String },
    #[error("--sweep: inferlint sets an option on a load it knows (vllm bench serve, SGLang's bench_serving, TensorRT-LLM's benchmark client, aiperf, guidellm); {0} is not one. Loop over the points in the script itself, or run the client directly after --")]
    UnknownLoad(String),
    #[error("--sweep: {tool} does not take --{option}; it takes {known}")]
    NotAnOption {
        tool: &'static str,
        option: String,
        known: String,
    },
    #[error("--between {0:?}: give reset-cache, restart or nothing")]
    Between(String),
    #[error("--repeat {0}: give how many times each point runs, 1 or more")]
    Repeat(u32),
}

/// What is done to the server between two points.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Between {
    /// Reset the prefix cache through the engine's own endpoint, and verify it took.
    ResetCache,
    /// Stop the server and start it again.
    Restart,
    /// Nothing: each point sees what the earlier ones left (a warm cache among it).
    Nothing,
}

impl Between {
    pub fn parse(s: &str) -> Result<Between, SweepError> {
        match s {
            "reset-cache" => Ok(Between::ResetCache),
            "restart" => Ok(Between::Restart),
            "nothing" => Ok(Between::Nothing),
            other => Err(SweepError::Between(other.to_string())),
        }
    }

    pub fn word(self) -> &'static str {
        match self {
            Between::ResetCache => "reset-cache",
            Between::Restart => "restart",
            Between::Nothing => "nothing",
        }
    }
}

/// The options each known load client takes that a sweep may set, beyond those its command
/// already gives (which are always settable). From each client's own argument parser.
const SETTABLE: &[(LoadTool, &[&str])] = &[
    (
        LoadTool::VllmBench,
        &[
            "max-concurrency",
            "request-rate",
            "num-prompts",
            "random-input-len",
            "random-output-len",
            "burstiness",
            "seed",
            "num-warmups",
        ],
    ),
    (
        LoadTool::SglangBench,
        &[
            "max-concurrency",
            "request-rate",
            "num-prompts",
            "random-input-len",
            "random-output-len",
            "seed",
        ],
    ),
    (
        LoadTool::Aiperf,
        &["concurrency", "request-rate", "request-count", "isl", "osl"],
    ),
];

/// A sweep's plan: the option and its values, in the order given, each run `repeat` times.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Plan {
    /// Without its dashes (`max-concurrency`).
    pub option: String,
    pub values: Vec<String>,
    /// How many times each value runs in a row (`--repeat`), 1 or more.
    pub repeat: u32,
}

/// One run of the load in a plan: the option's value, and which repeat of it (None when each
/// value runs once).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Planned<'a> {
    pub value: &'a str,
    pub repeat: Option<u32>,
}

impl Plan {
    /// `max-concurrency=1,4,16` (a leading `--` on the option is allowed).
    pub fn parse(arg: &str) -> Result<Plan, SweepError> {
        let (option, list) = arg
            .split_once('=')
            .ok_or_else(|| SweepError::Shape(arg.to_string()))?;
        let option = option.trim().trim_start_matches('-').to_string();
        let valid = !option.is_empty()
            && option
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
        if !valid || list.trim().is_empty() {
            return Err(SweepError::Shape(arg.to_string()));
        }
        let mut values: Vec<String> = Vec::new();
        for (n, v) in list.split(',').enumerate() {
            let v = v.trim();
            if v.is_empty() {
                return Err(SweepError::EmptyValue {
                    arg: arg.to_string(),
                    n: n + 1,
                });
            }
            if values.iter().any(|x| x == v) {
                return Err(SweepError::Repeated {
                    arg: arg.to_string(),
                    value: v.to_string(),
                });
            }
            values.push(v.to_string());
        }
        Ok(Plan {
            option,
            values,
            repeat: 1,
        })
    }

    /// The plan with each value run `n` times in a row.
    pub fn repeated(self, n: u32) -> Result<Plan, SweepError> {
        if n == 0 {
            return Err(SweepError::Repeat(n));
        }
        Ok(Plan { repeat: n, ..self })
    }

    /// Every run of the load, in order: each value, `repeat` times in a row.
    pub fn points(&self) -> Vec<Planned<'_>> {
        let many = self.repeat > 1;
        self.values
            .iter()
            .flat_map(|v| {
                (1..=self.repeat).map(move |k| Planned {
                    value: v,
                    repeat: many.then_some(k),
                })
            })
            .collect()
    }

    /// `--max-concurrency`.
    pub fn flag(&self) -> String {
        format!("--{}", self.option)
    }

    /// Whether the load can be swept on this option: a client inferlint knows, which gives the
    /// option already or takes it.
    pub fn check_load(&self, load: &[String]) -> Result<(), SweepError> {
        let Some(tool) = load_tool(load) else {
            let shown = load.first().map_or("the load", String::as_str);
            return Err(SweepError::UnknownLoad(shown.to_string()));
        };
        if crate::argv::has_flag(load, &self.flag()) {
            return Ok(());
        }
        let known: &[&str] = SETTABLE
            .iter()
            .find(|(t, _)| *t == tool)
            .map_or(&[], |(_, o)| o);
        if known.contains(&self.option.as_str()) {
            return Ok(());
        }
        Err(SweepError::NotAnOption {
            tool: tool.name(),
            option: self.option.clone(),
            known: if known.is_empty() {
                "only the options its command already gives".to_string()
            } else {
                known
                    .iter()
                    .map(|o| format!("--{o}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            },
        })
    }

    /// The load's command for one point: the option's value set ([`set_option`]).
    pub fn argv(&self, load: &[String], value: &str) -> Vec<String> {
        set_option(load, &self.option, value)
    }

    /// The point's label (`--max-concurrency 16`, `--max-concurrency 16 (2 of 3)`) and folder
    /// name (`03-max-concurrency-16`, `05-max-concurrency-16-r2`).
    pub fn label(&self, p: Planned<'_>) -> String {
        match p.repeat {
            Some(k) => format!("{} {} ({k} of {})", self.flag(), p.value, self.repeat),
            None => format!("{} {}", self.flag(), p.value),
        }
    }

    pub fn folder(&self, index: usize, p: Planned<'_>) -> String {
        let label = match p.repeat {
            Some(k) => format!("{} {} r{k}", self.option, p.value),
            None => format!("{} {}", self.option, p.value),
        };
        point_folder(index, &label)
    }
}

/// `load` with `--option` set to `value`: replaced where the command gives it (`--opt V` or
/// `--opt=V`, every occurrence), else appended. The one rule for setting a load's option, for
/// `--sweep` and for the points of a tool's own sweep.
pub fn set_option(load: &[String], option: &str, value: &str) -> Vec<String> {
    let flag = format!("--{option}");
    let prefix = format!("{flag}=");
    let mut out = Vec::with_capacity(load.len() + 2);
    let mut set = false;
    let mut i = 0;
    while i < load.len() {
        let w = &load[i];
        if *w == flag && i + 1 < load.len() {
            out.push(flag.clone());
            out.push(value.to_string());
            set = true;
            i += 2;
            continue;
        }
        if w.starts_with(&prefix) {
            out.push(format!("{prefix}{value}"));
            set = true;
        } else {
            out.push(w.clone());
        }
        i += 1;
    }
    if !set {
        out.push(flag);
        out.push(value.to_string());
    }
    out
}

/// A point's folder name: its index and its label's words, joined by `-`, every character a path
/// could not hold as given made `_` (`03-max-concurrency-16`, `02-run-2`).
pub fn point_folder(index: usize, label: &str) -> String {
    let words: Vec<String> = label
        .split_whitespace()
        .map(|w| {
            w.trim_start_matches('-')
                .chars()
                .map(|c| {
                    if c.is_ascii_alphanumeric() || c == '.' || c == '-' {
                        c
                    } else {
                        '_'
                    }
                })
                .collect()
        })
        .collect();
    format!("{index:02}-{}", words.join("-"))
}

/// The labels of a sweep written as a loop: each point's value of the first option whose value
/// differs between the points' commands (`--max-concurrency 4`), else `run K`. Where the result
/// goes is no part of the load (`--result-filename pass-2.json` labels nothing).
pub fn script_labels(argvs: &[Vec<String>]) -> Vec<String> {
    let flags: Vec<&str> = argvs
        .first()
        .map(|a| {
            a.iter()
                .filter(|w| w.starts_with("--"))
                .map(|w| w.split('=').next().unwrap_or(w))
                .filter(|f| !crate::load::rewrite::OUTPUT_OPTIONS.contains(f))
                .collect()
        })
        .unwrap_or_default();
    let differing = flags.into_iter().find(|f| {
        let values: Vec<Option<String>> = argvs
            .iter()
            .map(|a| crate::argv::flag_value(a, f))
            .collect();
        values.iter().any(|v| *v != values[0])
    });
    argvs
        .iter()
        .enumerate()
        .map(
            |(k, a)| match differing.and_then(|f| Some((f, crate::argv::flag_value(a, f)?))) {
                Some((f, v)) => format!("{f} {v}"),
                None => format!("run {}", k + 1),
            },
        )
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn argv(s: &str) -> Vec<String> {
        shlex::split(s).unwrap()
    }

    #[test]
    fn a_plan_reads_its_option_and_values() {
        let p = Plan::parse("max-concurrency=1, 4,16").unwrap();
        assert_eq!(p.option, "max-concurrency");
        assert_eq!(p.values, ["1", "4", "16"]);
        assert_eq!(
            Plan::parse("--request-rate=2").unwrap().option,
            "request-rate"
        );
        for bad in ["max-concurrency", "=1,2", "max-concurrency=", "a b=1"] {
            assert!(
                matches!(Plan::parse(bad), Err(SweepError::Shape(_))),
                "{bad}"
            );
        }
        assert!(matches!(
            Plan::parse("max-concurrency=1,,4"),
            Err(SweepError::EmptyValue { n: 2, .. })
        ));
        assert!(matches!(
            Plan::parse("max-concurrency=4,4"),
            Err(SweepError::Repeated { .. })
        ));
    }

    #[test]
    fn the_value_replaces_the_commands_own_or_is_appended() {
        let p = Plan::parse("max-concurrency=1,8").unwrap();
        let load = argv("vllm bench serve --model m --max-concurrency 32 --seed 0");
        assert_eq!(
            p.argv(&load, "8"),
            argv("vllm bench serve --model m --max-concurrency 8 --seed 0")
        );
        let load = argv("vllm bench serve --max-concurrency=32");
        assert_eq!(
            p.argv(&load, "1"),
            argv("vllm bench serve --max-concurrency=1")
        );
        let load = argv("vllm bench serve --model m");
        assert_eq!(
            p.argv(&load, "1"),
            argv("vllm bench serve --model m --max-concurrency 1")
        );
        let once = |value| Planned {
            value,
            repeat: None,
        };
        assert_eq!(p.folder(3, once("16")), "03-max-concurrency-16");
        assert_eq!(p.folder(1, once("a/b")), "01-max-concurrency-a_b");
        assert_eq!(point_folder(2, "run 2"), "02-run-2");
    }

    #[test]
    fn each_value_runs_its_repeats_in_a_row() {
        let p = Plan::parse("max-concurrency=1,8").unwrap();
        assert_eq!(p.points().len(), 2);
        assert_eq!(p.label(p.points()[1]), "--max-concurrency 8");
        let p = p.repeated(3).unwrap();
        let points = p.points();
        let got: Vec<(&str, Option<u32>)> = points.iter().map(|q| (q.value, q.repeat)).collect();
        assert_eq!(
            got,
            [
                ("1", Some(1)),
                ("1", Some(2)),
                ("1", Some(3)),
                ("8", Some(1)),
                ("8", Some(2)),
                ("8", Some(3))
            ]
        );
        assert_eq!(p.label(points[4]), "--max-concurrency 8 (2 of 3)");
        assert_eq!(p.folder(5, points[4]), "05-max-concurrency-8-r2");
        assert_eq!(
            Plan::parse("seed=0").unwrap().repeated(0),
            Err(SweepError::Repeat(0))
        );
    }

    #[test]
    fn only_a_known_load_with_the_option_is_swept() {
        let p = Plan::parse("max-concurrency=1,8").unwrap();
        assert!(p.check_load(&argv("vllm bench serve --model m")).is_ok());
        assert!(matches!(
            p.check_load(&argv("sh -c 'for c in 1 2; do :; done'")),
            Err(SweepError::UnknownLoad(_))
        ));
        let odd = Plan::parse("max-num-seqs=1,8").unwrap();
        let e = odd
            .check_load(&argv("vllm bench serve --model m"))
            .unwrap_err();
        assert!(
            e.to_string().contains("does not take --max-num-seqs"),
            "{e}"
        );
        // An option the command already gives is the user's word that it takes it.
        assert!(odd
            .check_load(&argv("vllm bench serve --max-num-seqs 4"))
            .is_ok());
    }

    #[test]
    fn a_loops_points_are_labelled_by_the_option_that_differs() {
        let a = [
            argv("vllm bench serve --seed 0 --max-concurrency 1"),
            argv("vllm bench serve --seed 0 --max-concurrency=4"),
        ];
        assert_eq!(
            script_labels(&a),
            ["--max-concurrency 1", "--max-concurrency 4"]
        );
        let same = [
            argv("vllm bench serve --seed 0"),
            argv("vllm bench serve --seed 0"),
        ];
        assert_eq!(script_labels(&same), ["run 1", "run 2"]);
        // The real lane's loop: two passes that differ only in their result file.
        let passes = [
            argv("vllm bench serve --seed 0 --save-result --result-filename pass-1.json"),
            argv("vllm bench serve --seed 0 --save-result --result-filename pass-2.json"),
        ];
        assert_eq!(script_labels(&passes), ["run 1", "run 2"]);
    }
}
