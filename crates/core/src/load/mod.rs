//! What a load command is and what it asks of the server, read from its argument vector: which
//! benchmark client runs ([`load_tool`]), and [`LoadIntent`]: whether its prompts are meant to be
//! fresh, whether it asked for a fixed output length, the rate it asked for. The checks of the
//! load's window (T16, T18) decide on these; [`rewrite`] rewrites the command with [`LoadTool`]
//! to save its result in the run folder (docs/design/tripwires.md#what-the-load-asked-for).

pub mod rewrite;

use crate::argv::{basename, flag_value, has_flag};
use crate::engine::Engine;

pub use rewrite::{
    find_result, known_client, requested_concurrency, rewrite, ResultLocation, Rewrite,
};

/// The benchmark clients inferlint knows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LoadTool {
    /// `vllm bench serve` (and inferlint's simulated one, `inferlint sim bench`).
    VllmBench,
    /// `python -m sglang.bench_serving` / `sglang.benchmark.serving` (and `inferlint sim bench
    /// --backend sglang`).
    SglangBench,
    /// `python -m tensorrt_llm.serve.scripts.benchmark_serving` (and `inferlint sim bench
    /// --backend trtllm`).
    TrtllmBench,
    /// NVIDIA AIPerf (`aiperf profile`): result `profile_export_aiperf.json` in its artifact dir.
    Aiperf,
    /// GuideLLM (`guidellm run`/`benchmark`): result `benchmarks.json`.
    Guidellm,
}

impl LoadTool {
    /// The engine whose own client this is (the three clients whose untimed requests T15 knows).
    pub fn engine(self) -> Option<Engine> {
        match self {
            LoadTool::VllmBench => Some(Engine::Vllm),
            LoadTool::SglangBench => Some(Engine::Sglang),
            LoadTool::TrtllmBench => Some(Engine::Trtllm),
            LoadTool::Aiperf | LoadTool::Guidellm => None,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            LoadTool::VllmBench => "vllm bench serve",
            LoadTool::SglangBench => "SGLang bench_serving",
            LoadTool::TrtllmBench => "TensorRT-LLM benchmark_serving",
            LoadTool::Aiperf => "aiperf",
            LoadTool::Guidellm => "GuideLLM",
        }
    }
}

/// Which benchmark client a load command runs, if any.
pub fn load_tool(argv: &[String]) -> Option<LoadTool> {
    let modules = |m: &str| argv.iter().any(|w| w == m);
    if modules("sglang.benchmark.serving") || modules("sglang.bench_serving") {
        return Some(LoadTool::SglangBench);
    }
    if modules("tensorrt_llm.serve.scripts.benchmark_serving")
        || argv
            .iter()
            .any(|w| w.ends_with("benchmark_serving.py") && w.contains("tensorrt_llm"))
    {
        return Some(LoadTool::TrtllmBench);
    }
    for (i, w) in argv.iter().enumerate() {
        let next = argv.get(i + 1).map(String::as_str);
        let b = basename(w);
        if w == "bench" && next == Some("serve") {
            return Some(LoadTool::VllmBench);
        }
        if b.starts_with("inferlint")
            && next == Some("sim")
            && argv.get(i + 2).is_some_and(|x| x == "bench")
        {
            return Some(sim_bench_tool(&argv[i + 3..]));
        }
        if b == "aiperf" || (w == "-m" && next == Some("aiperf")) {
            return Some(LoadTool::Aiperf);
        }
        if b == "guidellm" || (w == "-m" && next == Some("guidellm")) {
            return Some(LoadTool::Guidellm);
        }
    }
    None
}

/// The client `inferlint sim bench ARGS` imitates: SGLang's or TensorRT-LLM's as its
/// `--backend` names them, else `vllm bench serve` (whose `--backend` is `openai` and the like).
fn sim_bench_tool(args: &[String]) -> LoadTool {
    match flag_value(args, "--backend").as_deref() {
        Some("sglang") => LoadTool::SglangBench,
        Some("trtllm") => LoadTool::TrtllmBench,
        _ => LoadTool::VllmBench,
    }
}

/// Whether a load's prompts are meant to reach the server fresh.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Prompts {
    /// Random or synthetic prompts: a prompt token served from the prefix cache is an accident.
    Fresh,
    /// A dataset or option whose prompts share text on purpose (a shared prefix, a fixed
    /// system prompt, a conversation dataset): hits are part of what is measured.
    Shared,
    /// Neither can be told from the command.
    Unknown,
}

/// What a load command asks of the server, as far as its argument vector says.
#[derive(Clone, Debug, PartialEq)]
pub struct LoadIntent {
    pub tool: Option<LoadTool>,
    /// The dataset as the tool names it (`random`, `sharegpt`), or `synthetic` for aiperf's and
    /// GuideLLM's generated prompts.
    pub dataset: Option<String>,
    pub prompts: Prompts,
    /// The client asks the server to ignore end-of-sequence (`--ignore-eos`; SGLang's client
    /// does unless `--disable-ignore-eos`).
    pub ignore_eos: bool,
    /// The output length the load asks of every request (`--random-output-len 200`).
    pub output_len: Option<u64>,
    /// The prompt length in tokens the load asks for on average, where the command says it of
    /// generated prompts (`--random-input-len 100`, aiperf's `--isl`, GuideLLM's
    /// `prompt_tokens=`): what the server should count per request (docs/design/tripwires.md#t24).
    pub input_len: Option<u64>,
    pub seed: Option<u64>,
    /// Requests per second asked for; None for "as fast as possible" (`inf`) or unsaid.
    pub request_rate: Option<f64>,
    /// The client sends on a schedule whose whole length is requests / rate, so a send span
    /// longer than that is the client falling behind, not chance: `vllm bench serve` rescales
    /// its random gaps to that length unless it ramps up (docs/design/tripwires.md#t21), and a
    /// constant rate spaces them evenly.
    pub exact_schedule: bool,
}

impl LoadIntent {
    /// An intent nothing is known of (a script, an unknown client).
    pub fn unknown() -> LoadIntent {
        LoadIntent {
            tool: None,
            dataset: None,
            prompts: Prompts::Unknown,
            ignore_eos: false,
            output_len: None,
            input_len: None,
            seed: None,
            request_rate: None,
            exact_schedule: false,
        }
    }

    /// Whether the load asked for outputs of one fixed length: `--ignore-eos`, or an output
    /// length of its own.
    pub fn fixed_output(&self) -> bool {
        self.ignore_eos || self.output_len.is_some()
    }
}

/// The datasets of `vllm bench serve`, SGLang's and TensorRT-LLM's clients whose prompts are
/// random tokens (docs/design/tripwires.md#what-the-load-asked-for).
const RANDOM_DATASETS: [&str; 5] = [
    "random",
    "random-ids",
    "random-mm",
    "random-rerank",
    "random-image",
];

/// Datasets built to share prompt text: their cache hits are the point.
const SHARED_DATASETS: [&str; 3] = [
    "prefix_repetition",
    "generated-shared-prefix",
    "prefix-repetition",
];

/// Reads what a load command asks for. A command of no known client is [`LoadIntent::unknown`].
pub fn intent(argv: &[String]) -> LoadIntent {
    let Some(tool) = load_tool(argv) else {
        return LoadIntent::unknown();
    };
    let mut i = match tool {
        LoadTool::VllmBench | LoadTool::SglangBench | LoadTool::TrtllmBench => {
            bench_intent(argv, tool)
        }
        LoadTool::Aiperf => aiperf_intent(argv),
        LoadTool::Guidellm => guidellm_intent(argv),
    };
    i.tool = Some(tool);
    i.seed = flag_value(argv, "--seed")
        .or_else(|| flag_value(argv, "--random-seed"))
        .and_then(|v| v.trim().parse().ok());
    i
}

/// [`intent`] of a command line as `run.json` records it (`load_command`); a line the shell
/// could not split is unknown.
pub fn intent_of_command(command: &str) -> LoadIntent {
    shlex::split(command).map_or_else(LoadIntent::unknown, |argv| intent(&argv))
}

fn number<T: std::str::FromStr>(argv: &[String], flags: &[&str]) -> Option<T> {
    flags
        .iter()
        .find_map(|f| flag_value(argv, f))
        .and_then(|v| v.trim().parse().ok())
}

/// `vllm bench serve` and the clients that share its options (SGLang's bench_serving,
/// TensorRT-LLM's benchmark_serving).
fn bench_intent(argv: &[String], tool: LoadTool) -> LoadIntent {
    // vLLM's client defaults to the random dataset, SGLang's to ShareGPT
    // (docs/design/tripwires.md#what-the-load-asked-for).
    let default = match tool {
        LoadTool::SglangBench => "sharegpt",
        _ => "random",
    };
    let dataset = flag_value(argv, "--dataset-name")
        .or_else(|| flag_value(argv, "--dataset"))
        .unwrap_or_else(|| default.to_string());
    let prefix: u64 = number(argv, &["--random-prefix-len"]).unwrap_or(0);
    let prompts = if SHARED_DATASETS.contains(&dataset.as_str()) || prefix > 0 {
        Prompts::Shared
    } else if RANDOM_DATASETS.contains(&dataset.as_str()) {
        Prompts::Fresh
    } else {
        // ShareGPT, sonnet, a custom file: whether its prompts repeat depends on the file.
        Prompts::Unknown
    };
    let ignore_eos = match tool {
        LoadTool::SglangBench => !has_flag(argv, "--disable-ignore-eos"),
        _ => has_flag(argv, "--ignore-eos"),
    };
    let output_len = number(
        argv,
        &[
            &format!("--{dataset}-output-len"),
            "--random-output-len",
            "--sharegpt-output-len",
            "--custom-output-len",
            "--sonnet-output-len",
            "--hf-output-len",
            "--output-len",
        ],
    );
    let request_rate =
        number::<f64>(argv, &["--request-rate"]).filter(|r| r.is_finite() && *r > 0.0);
    let input_len = asked_input_len(argv, tool, &dataset, prefix);
    LoadIntent {
        dataset: Some(dataset),
        prompts,
        ignore_eos,
        output_len,
        input_len,
        exact_schedule: request_rate.is_some()
            && tool == LoadTool::VllmBench
            && !has_flag(argv, "--ramp-up-strategy"),
        request_rate,
        ..LoadIntent::unknown()
    }
}

/// The mean prompt length of a random dataset, where the command says it: vLLM's and
/// TensorRT-LLM's clients draw lengths around `--random-input-len` (symmetric in
/// `--random-range-ratio`), SGLang's from ratio × len up to len, so only a ratio of 1 fixes
/// its mean. A shared prefix is part of every prompt.
fn asked_input_len(argv: &[String], tool: LoadTool, dataset: &str, prefix: u64) -> Option<u64> {
    if !RANDOM_DATASETS.contains(&dataset) {
        return None;
    }
    let len: u64 = number(argv, &["--random-input-len", "--input-len"])?;
    if tool == LoadTool::SglangBench && number::<f64>(argv, &["--random-range-ratio"]) != Some(1.0)
    {
        return None;
    }
    Some(len + prefix)
}

/// aiperf: synthetic prompts unless an input file is given; a prompt pool or a shared system
/// prompt shares text on purpose.
fn aiperf_intent(argv: &[String]) -> LoadIntent {
    let file = has_flag(argv, "--input-file") || has_flag(argv, "--public-dataset");
    let shared = number::<u64>(argv, &["--prefix-prompt-pool-size", "--num-prefix-prompts"])
        .unwrap_or(0)
        > 0
        || number::<u64>(argv, &["--shared-system-prompt-length"]).unwrap_or(0) > 0;
    let prompts = if shared {
        Prompts::Shared
    } else if file {
        Prompts::Unknown
    } else {
        Prompts::Fresh
    };
    let extra = argv
        .iter()
        .any(|w| w.replace(' ', "").contains("ignore_eos:true"));
    LoadIntent {
        dataset: (!file).then(|| "synthetic".to_string()),
        prompts,
        ignore_eos: extra,
        output_len: number(argv, &["--output-tokens-mean", "--osl"]),
        input_len: (!file)
            .then(|| {
                number(
                    argv,
                    &[
                        "--synthetic-input-tokens-mean",
                        "--isl",
                        "--input-tokens-mean",
                    ],
                )
            })
            .flatten(),
        request_rate: number::<f64>(argv, &["--request-rate"])
            .filter(|r| r.is_finite() && *r > 0.0),
        ..LoadIntent::unknown()
    }
}

/// GuideLLM: `--data "prompt_tokens=256,output_tokens=128"` is synthetic; anything else is a
/// file or a dataset.
fn guidellm_intent(argv: &[String]) -> LoadIntent {
    let data = flag_value(argv, "--data").unwrap_or_default();
    let kv: Vec<(&str, &str)> = data
        .split(',')
        .filter_map(|p| p.split_once('='))
        .map(|(k, v)| (k.trim(), v.trim()))
        .collect();
    let synthetic = kv.iter().any(|(k, _)| *k == "prompt_tokens");
    let output_len = kv
        .iter()
        .find(|(k, _)| *k == "output_tokens")
        .and_then(|(_, v)| v.parse().ok());
    let input_len = kv
        .iter()
        .find(|(k, _)| *k == "prompt_tokens")
        .and_then(|(_, v)| v.parse().ok());
    let profile = flag_value(argv, "--profile")
        .or_else(|| flag_value(argv, "--rate-type"))
        .unwrap_or_default();
    let paced = ["constant", "poisson"]
        .iter()
        .any(|p| profile.starts_with(p));
    LoadIntent {
        dataset: synthetic.then(|| "synthetic".to_string()),
        prompts: if synthetic {
            Prompts::Fresh
        } else {
            Prompts::Unknown
        },
        output_len,
        input_len,
        request_rate: paced
            .then(|| number::<f64>(argv, &["--rate"]))
            .flatten()
            .filter(|r| r.is_finite() && *r > 0.0),
        exact_schedule: profile.starts_with("constant"),
        ..LoadIntent::unknown()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(cmd: &str) -> LoadIntent {
        intent(
            &cmd.split_whitespace()
                .map(str::to_string)
                .collect::<Vec<_>>(),
        )
    }

    #[test]
    fn the_simulated_client_is_the_tool_its_backend_names() {
        let tool = |c: &str| read(c).tool;
        assert_eq!(
            tool("inferlint sim bench --model m"),
            Some(LoadTool::VllmBench)
        );
        assert_eq!(
            tool("/x/inferlint sim bench --backend openai-chat"),
            Some(LoadTool::VllmBench)
        );
        assert_eq!(
            tool("inferlint sim bench --backend sglang --dataset-name random"),
            Some(LoadTool::SglangBench)
        );
        assert_eq!(
            tool("inferlint sim bench --backend=trtllm"),
            Some(LoadTool::TrtllmBench)
        );
        // SGLang's client ignores EOS unless told not to, the simulated one too.
        assert!(read("inferlint sim bench --backend sglang").ignore_eos);
    }

    #[test]
    fn vllm_bench_random_is_fresh_and_its_lengths_are_read() {
        let i = read("vllm bench serve --model m --dataset-name random --random-input-len 300 --random-output-len 16 --seed 0 --ignore-eos");
        assert_eq!(i.tool, Some(LoadTool::VllmBench));
        assert_eq!(i.dataset.as_deref(), Some("random"));
        assert_eq!(i.prompts, Prompts::Fresh);
        assert!(i.ignore_eos);
        assert_eq!(i.output_len, Some(16));
        assert_eq!(i.seed, Some(0));
        assert_eq!(i.request_rate, None);
        // vLLM's default dataset is random.
        assert_eq!(read("vllm bench serve --model m").prompts, Prompts::Fresh);
    }

    #[test]
    fn shared_prefixes_and_files_are_not_fresh() {
        assert_eq!(
            read("vllm bench serve --dataset-name random --random-prefix-len 64").prompts,
            Prompts::Shared
        );
        assert_eq!(
            read("vllm bench serve --dataset-name prefix_repetition").prompts,
            Prompts::Shared
        );
        assert_eq!(
            read("vllm bench serve --dataset-name sharegpt --dataset-path s.json").prompts,
            Prompts::Unknown
        );
        assert_eq!(
            read("python -m sglang.bench_serving --backend sglang").prompts,
            Prompts::Unknown
        );
        assert_eq!(
            read("python -m sglang.bench_serving --dataset-name generated-shared-prefix").prompts,
            Prompts::Shared
        );
        assert_eq!(
            read("python load.py --dataset-name random").prompts,
            Prompts::Unknown
        );
    }

    #[test]
    fn sglang_ignores_eos_unless_told_not_to() {
        assert!(read("python -m sglang.bench_serving --dataset-name random").ignore_eos);
        assert!(
            !read("python -m sglang.bench_serving --dataset-name random --disable-ignore-eos")
                .ignore_eos
        );
    }

    #[test]
    fn aiperf_and_guidellm_synthetic_prompts_are_fresh() {
        let a = read("aiperf profile --model m --synthetic-input-tokens-mean 100 --output-tokens-mean 40 --request-rate 5");
        assert_eq!(
            (a.prompts, a.output_len, a.request_rate),
            (Prompts::Fresh, Some(40), Some(5.0))
        );
        assert_eq!(
            read("aiperf profile --input-file f.jsonl").prompts,
            Prompts::Unknown
        );
        assert_eq!(
            read("aiperf profile --shared-system-prompt-length 200").prompts,
            Prompts::Shared
        );
        let g = read("guidellm run --target http://x --profile constant --rate 4 --data prompt_tokens=256,output_tokens=128");
        assert_eq!(
            (g.prompts, g.output_len, g.request_rate),
            (Prompts::Fresh, Some(128), Some(4.0))
        );
        assert_eq!(
            read("guidellm run --data my.jsonl").prompts,
            Prompts::Unknown
        );
    }

    #[test]
    fn an_infinite_rate_is_no_rate() {
        assert_eq!(
            read("vllm bench serve --request-rate inf").request_rate,
            None
        );
        assert_eq!(
            read("vllm bench serve --request-rate 12.5").request_rate,
            Some(12.5)
        );
    }
}
