//! The load command: which benchmark client it is, how many concurrent requests it asks for,
//! how it is rewritten to save its result in the run folder (docs/design/run.md#the-load), and
//! where its result file is found afterwards.

use std::path::{Path, PathBuf};
use std::time::SystemTime;

use super::{load_tool, LoadTool};
use crate::argv::{flag_value, has_flag};
use crate::engine::Engine;

/// The engine whose benchmark client the load command is (`vllm`, `sglang`, `trtllm`), or None.
pub fn known_client(argv: &[String]) -> Option<Engine> {
    load_tool(argv).and_then(LoadTool::engine)
}

/// The concurrency the load asks for: `--max-concurrency N` (vLLM, SGLang, TensorRT-LLM),
/// `--concurrency N` (aiperf), GuideLLM's `--profile kind=concurrent,streams=N` or
/// `--rate-type concurrent --rate N`. A sweep (`4,8`) is not one number: None.
pub fn requested_concurrency(argv: &[String]) -> Option<u64> {
    let number = |s: &str| s.trim().parse::<u64>().ok().filter(|n| *n > 0);
    if let Some(v) = flag_value(argv, "--max-concurrency") {
        return number(&v);
    }
    if let Some(v) = flag_value(argv, "--concurrency") {
        return number(&v);
    }
    if let Some(profile) = flag_value(argv, "--profile") {
        let kv: Vec<(&str, &str)> = profile
            .split(',')
            .filter_map(|p| p.split_once('='))
            .collect();
        let concurrent = kv
            .iter()
            .any(|(k, v)| (*k == "kind" || *k == "type") && *v == "concurrent");
        if concurrent {
            if let Some((_, n)) = kv.iter().find(|(k, _)| *k == "streams" || *k == "rate") {
                return number(n);
            }
        } else if profile == "concurrent" {
            return flag_value(argv, "--rate").and_then(|v| number(&v));
        }
    }
    if flag_value(argv, "--rate-type").as_deref() == Some("concurrent") {
        return flag_value(argv, "--rate").and_then(|v| number(&v));
    }
    None
}

/// Where the load's result file will be.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ResultLocation {
    /// A known path.
    File(PathBuf),
    /// The newest `*.json` in this folder written since the load started (vLLM/TRT with
    /// `--save-result` but no `--result-filename`).
    NewestJsonIn(PathBuf),
    /// The newest `profile_export_aiperf.json` under this artifact folder.
    AiperfIn(PathBuf),
    /// GuideLLM's JSON output (written since the load started).
    Guidellm(PathBuf),
    /// An unknown load tool: no result file unless `--bench-result` names one.
    None,
}

/// The load command as it will run, and where its result will be.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rewrite {
    pub argv: Vec<String>,
    pub tool: Option<LoadTool>,
    pub result: ResultLocation,
}

/// The options by which the known clients say where their result goes (read above), not what
/// they load: two runs that differ only there ran the same load.
pub const OUTPUT_OPTIONS: &[&str] = &[
    "--result-dir",
    "--result-filename",
    "--output-file",
    "--artifact-dir",
    "--output-artifact-dir",
    "--output",
    "--output-path",
    "--output-dir",
];

/// Rewrites a known client so it saves its result in the run folder `out`, unless it already
/// saves one (docs/design/run.md#the-load). Other commands run unchanged.
pub fn rewrite(argv: &[String], out: &Path) -> Rewrite {
    let tool = load_tool(argv);
    let mut new = argv.to_vec();
    let out_s = out.to_string_lossy().into_owned();
    let result = match tool {
        Some(LoadTool::VllmBench | LoadTool::TrtllmBench) => {
            if has_flag(argv, "--save-result") {
                let dir = flag_value(argv, "--result-dir").unwrap_or_else(|| ".".to_string());
                match flag_value(argv, "--result-filename") {
                    Some(name) => ResultLocation::File(Path::new(&dir).join(name)),
                    None => ResultLocation::NewestJsonIn(PathBuf::from(dir)),
                }
            } else {
                new.extend(
                    [
                        "--save-result",
                        "--result-dir",
                        &out_s,
                        "--result-filename",
                        "bench.json",
                    ]
                    .map(String::from),
                );
                ResultLocation::File(out.join("bench.json"))
            }
        }
        Some(LoadTool::SglangBench) => match flag_value(argv, "--output-file") {
            Some(p) => ResultLocation::File(PathBuf::from(p)),
            None => {
                let path = out.join("bench.jsonl");
                new.push("--output-file".to_string());
                new.push(path.to_string_lossy().into_owned());
                ResultLocation::File(path)
            }
        },
        Some(LoadTool::Aiperf) => ResultLocation::AiperfIn(PathBuf::from(
            flag_value(argv, "--artifact-dir")
                .or_else(|| flag_value(argv, "--output-artifact-dir"))
                .unwrap_or_else(|| "artifacts".to_string()),
        )),
        Some(LoadTool::Guidellm) => ResultLocation::Guidellm(guidellm_output(argv)),
        None => ResultLocation::None,
    };
    Rewrite {
        argv: new,
        tool,
        result,
    }
}

/// GuideLLM's JSON output path: `--output kind=json,path=P` (0.8), `--output-path P` (a file,
/// or a folder holding `benchmarks.json`), `--output-dir D`, else `./benchmarks.json`.
fn guidellm_output(argv: &[String]) -> PathBuf {
    let mut i = 0;
    while i < argv.len() {
        let spec = if argv[i] == "--output" {
            argv.get(i + 1).cloned()
        } else {
            argv[i].strip_prefix("--output=").map(String::from)
        };
        if let Some(spec) = spec {
            let kv: Vec<(&str, &str)> = spec.split(',').filter_map(|p| p.split_once('=')).collect();
            let json = kv.iter().any(|(k, v)| *k == "kind" && *v == "json");
            if let Some((_, p)) = kv.iter().find(|(k, _)| *k == "path") {
                if json || p.ends_with(".json") {
                    return PathBuf::from(p);
                }
            }
        }
        i += 1;
    }
    if let Some(p) = flag_value(argv, "--output-path") {
        let p = PathBuf::from(p);
        return if p.extension().is_some() {
            p
        } else {
            p.join("benchmarks.json")
        };
    }
    if let Some(d) = flag_value(argv, "--output-dir") {
        return PathBuf::from(d).join("benchmarks.json");
    }
    PathBuf::from("benchmarks.json")
}

/// The result file the load left, written at or after `since` where the location is a search.
pub fn find_result(location: &ResultLocation, since: SystemTime) -> Option<PathBuf> {
    match location {
        ResultLocation::File(p) => p.is_file().then(|| p.clone()),
        ResultLocation::NewestJsonIn(dir) => newest(dir, since, 0, &|name| name.ends_with(".json")),
        ResultLocation::AiperfIn(dir) => {
            newest(dir, since, 3, &|name| name == "profile_export_aiperf.json")
        }
        ResultLocation::Guidellm(p) => {
            let fresh = std::fs::metadata(p)
                .and_then(|m| m.modified())
                .is_ok_and(|t| t >= since);
            (p.is_file() && fresh).then(|| p.clone())
        }
        ResultLocation::None => None,
    }
}

/// The newest file under `dir` (down to `depth` sub-folders) whose name matches and that was
/// modified at or after `since`.
fn newest(
    dir: &Path,
    since: SystemTime,
    depth: usize,
    matches: &dyn Fn(&str) -> bool,
) -> Option<PathBuf> {
    let mut best: Option<(SystemTime, PathBuf)> = None;
    let mut stack = vec![(dir.to_path_buf(), 0usize)];
    while let Some((d, level)) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            let Ok(meta) = entry.metadata() else { continue };
            if meta.is_dir() {
                if level < depth {
                    stack.push((path, level + 1));
                }
                continue;
            }
            let name = entry.file_name().to_string_lossy().into_owned();
            if !matches(&name) {
                continue;
            }
            let Ok(modified) = meta.modified() else {
                continue;
            };
            if modified >= since && best.as_ref().is_none_or(|(t, _)| modified > *t) {
                best = Some((modified, path));
            }
        }
    }
    best.map(|(_, p)| p)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn argv(s: &str) -> Vec<String> {
        shlex::split(s).unwrap()
    }

    #[test]
    fn recognises_clients() {
        let t = |s: &str| load_tool(&argv(s));
        assert_eq!(t("vllm bench serve --model m"), Some(LoadTool::VllmBench));
        assert_eq!(
            t("python -m vllm.entrypoints.cli.main bench serve"),
            Some(LoadTool::VllmBench)
        );
        assert_eq!(
            t("/usr/bin/inferlint sim bench --max-concurrency 4"),
            Some(LoadTool::VllmBench)
        );
        assert_eq!(
            t("python3 -m sglang.bench_serving --backend sglang"),
            Some(LoadTool::SglangBench)
        );
        assert_eq!(
            t("python -m sglang.benchmark.serving"),
            Some(LoadTool::SglangBench)
        );
        assert_eq!(
            t("python -m tensorrt_llm.serve.scripts.benchmark_serving --model m"),
            Some(LoadTool::TrtllmBench)
        );
        assert_eq!(t("aiperf profile --model m"), Some(LoadTool::Aiperf));
        assert_eq!(t("guidellm run --backend x"), Some(LoadTool::Guidellm));
        assert_eq!(t("python my_load.py --max-concurrency 4"), None);
        assert_eq!(known_client(&argv("vllm bench serve")), Some(Engine::Vllm));
        assert_eq!(known_client(&argv("aiperf profile")), None);
    }

    #[test]
    fn reads_requested_concurrency() {
        let r = |s: &str| requested_concurrency(&argv(s));
        assert_eq!(r("vllm bench serve --max-concurrency 32"), Some(32));
        assert_eq!(r("vllm bench serve --max-concurrency=4"), Some(4));
        assert_eq!(r("aiperf profile --concurrency 8"), Some(8));
        assert_eq!(
            r("guidellm run --profile kind=concurrent,streams=4"),
            Some(4)
        );
        assert_eq!(
            r("guidellm benchmark --rate-type concurrent --rate 6"),
            Some(6)
        );
        assert_eq!(r("guidellm run --profile kind=constant,rate=4"), None);
        assert_eq!(r("vllm bench serve --max-concurrency 4,8"), None);
        assert_eq!(r("vllm bench serve"), None);
    }

    #[test]
    fn rewrites_vllm_and_trt() {
        let out = Path::new("run");
        let rw = rewrite(
            &argv("vllm bench serve --model m --max-concurrency 32"),
            out,
        );
        assert_eq!(
            rw.argv.join(" "),
            "vllm bench serve --model m --max-concurrency 32 --save-result --result-dir run --result-filename bench.json"
        );
        assert_eq!(
            rw.result,
            ResultLocation::File(PathBuf::from("run/bench.json"))
        );

        let rw = rewrite(
            &argv("vllm bench serve --save-result --result-dir /r --result-filename x.json"),
            out,
        );
        assert_eq!(
            rw.argv,
            argv("vllm bench serve --save-result --result-dir /r --result-filename x.json")
        );
        assert_eq!(rw.result, ResultLocation::File(PathBuf::from("/r/x.json")));

        let rw = rewrite(
            &argv("vllm bench serve --save-result --result-filename x.json"),
            out,
        );
        assert_eq!(rw.result, ResultLocation::File(PathBuf::from("./x.json")));

        let rw = rewrite(&argv("vllm bench serve --save-result --result-dir /r"), out);
        assert_eq!(rw.result, ResultLocation::NewestJsonIn(PathBuf::from("/r")));

        let rw = rewrite(
            &argv("python -m tensorrt_llm.serve.scripts.benchmark_serving --model m"),
            out,
        );
        assert!(rw.argv.ends_with(&argv(
            "--save-result --result-dir run --result-filename bench.json"
        )));
    }

    #[test]
    fn rewrites_sglang() {
        let out = Path::new("run");
        let rw = rewrite(&argv("python -m sglang.bench_serving --num-prompts 6"), out);
        assert!(rw.argv.ends_with(&argv("--output-file run/bench.jsonl")));
        assert_eq!(
            rw.result,
            ResultLocation::File(PathBuf::from("run/bench.jsonl"))
        );
        let rw = rewrite(
            &argv("python -m sglang.bench_serving --output-file o.jsonl"),
            out,
        );
        assert_eq!(
            rw.argv,
            argv("python -m sglang.bench_serving --output-file o.jsonl")
        );
        assert_eq!(rw.result, ResultLocation::File(PathBuf::from("o.jsonl")));
    }

    #[test]
    fn others_run_unchanged() {
        let a = argv("python my_load.py --n 3");
        let rw = rewrite(&a, Path::new("run"));
        assert_eq!(rw.argv, a);
        assert_eq!(rw.result, ResultLocation::None);
        let rw = rewrite(&argv("aiperf profile --artifact-dir art"), Path::new("run"));
        assert_eq!(rw.result, ResultLocation::AiperfIn(PathBuf::from("art")));
        let rw = rewrite(
            &argv("aiperf profile --output-artifact-dir out/a"),
            Path::new("run"),
        );
        assert_eq!(rw.result, ResultLocation::AiperfIn(PathBuf::from("out/a")));
        let rw = rewrite(&argv("aiperf profile"), Path::new("run"));
        assert_eq!(
            rw.result,
            ResultLocation::AiperfIn(PathBuf::from("artifacts"))
        );
    }

    #[test]
    fn guidellm_paths() {
        let g = |s: &str| guidellm_output(&argv(s));
        assert_eq!(
            g("guidellm run --output kind=json,path=/o/b.json --output kind=html,path=/o/b.html"),
            PathBuf::from("/o/b.json")
        );
        assert_eq!(
            g("guidellm benchmark --output-path res.json"),
            PathBuf::from("res.json")
        );
        assert_eq!(
            g("guidellm benchmark --output-path res"),
            PathBuf::from("res/benchmarks.json")
        );
        assert_eq!(g("guidellm run"), PathBuf::from("benchmarks.json"));
    }

    #[test]
    fn finds_newest_results_since_start() {
        let dir = tempfile::tempdir().unwrap();
        let old = dir.path().join("old.json");
        std::fs::write(&old, "{}").unwrap();
        let since = SystemTime::now() + std::time::Duration::from_secs(3600);
        assert_eq!(
            find_result(&ResultLocation::NewestJsonIn(dir.path().into()), since),
            None
        );
        let epoch = SystemTime::UNIX_EPOCH;
        assert_eq!(
            find_result(&ResultLocation::NewestJsonIn(dir.path().into()), epoch),
            Some(old.clone())
        );
        let sub = dir.path().join("m-chat-concurrency8");
        std::fs::create_dir(&sub).unwrap();
        let a = sub.join("profile_export_aiperf.json");
        std::fs::write(&a, "{}").unwrap();
        assert_eq!(
            find_result(&ResultLocation::AiperfIn(dir.path().into()), epoch),
            Some(a)
        );
        assert_eq!(
            find_result(&ResultLocation::File(dir.path().join("none.json")), epoch),
            None
        );
    }
}
