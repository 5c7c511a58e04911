//! `inferlint sim bench`'s flags: `vllm bench serve`'s, plus those of SGLang's and
//! TensorRT-LLM's clients that the simulator imitates.

use std::path::PathBuf;

/// The `vllm bench serve` release to copy: whether it sends a test request first, and its
/// result keys.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum BenchRelease {
    #[value(name = "0.11")]
    V011,
    #[value(name = "0.28")]
    V028,
    #[value(name = "0.30")]
    V030,
    #[value(name = "0.33")]
    V033,
}

#[derive(clap::Args, Debug, Clone)]
pub struct BenchArgs {
    /// vLLM's `--backend` (`openai`, `openai-chat`, …); `sglang` or `trtllm` imitate those
    /// engines' own clients instead (their warm-up and result file).
    #[arg(long, default_value = "openai")]
    pub backend: String,
    /// SGLang's client: the JSON-lines file its result line is appended to.
    #[arg(long)]
    pub output_file: Option<PathBuf>,
    #[arg(long)]
    pub base_url: Option<String>,
    #[arg(long, default_value = "127.0.0.1")]
    pub host: String,
    #[arg(long, default_value_t = 8000)]
    pub port: u16,
    #[arg(long)]
    pub endpoint: Option<String>,
    /// Default: the first model /v1/models lists.
    #[arg(long)]
    pub model: Option<String>,
    #[arg(long)]
    pub tokenizer: Option<String>,
    #[arg(long)]
    pub max_concurrency: Option<usize>,
    /// Requests per second, or `inf` (all at once).
    #[arg(long, default_value = "inf")]
    pub request_rate: String,
    #[arg(long, default_value_t = 1.0)]
    pub burstiness: f64,
    #[arg(long, default_value_t = 1000)]
    pub num_prompts: usize,
    #[arg(long, default_value = "random")]
    pub dataset_name: String,
    #[arg(long, default_value_t = 1024)]
    pub random_input_len: u32,
    #[arg(long, default_value_t = 128)]
    pub random_output_len: u32,
    #[arg(long, default_value_t = 0.0)]
    pub random_range_ratio: f64,
    #[arg(long, default_value_t = 0)]
    pub random_prefix_len: u32,
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    #[arg(long)]
    pub ignore_eos: bool,
    /// SGLang's client: let the model stop at end-of-sequence (it ignores EOS by default).
    #[arg(long)]
    pub disable_ignore_eos: bool,
    #[arg(long)]
    pub save_result: bool,
    /// Per-request lists in the result (SGLang's client calls it `--output-details`).
    #[arg(long, visible_alias = "output-details")]
    pub save_detailed: bool,
    #[arg(long)]
    pub append_result: bool,
    #[arg(long)]
    pub result_dir: Option<PathBuf>,
    #[arg(long)]
    pub result_filename: Option<String>,
    #[arg(long, num_args = 1..)]
    pub metadata: Vec<String>,
    /// `KEY=VALUE` headers sent with every request (`--header X-data-parallel-rank=0` pins
    /// a data-parallel engine), as `vllm bench serve --header`.
    #[arg(long, num_args = 1..)]
    pub header: Vec<String>,
    #[arg(long)]
    pub label: Option<String>,
    #[arg(long)]
    pub percentile_metrics: Option<String>,
    #[arg(long, default_value = "99")]
    pub metric_percentiles: String,
    #[arg(long, default_value_t = 0)]
    pub num_warmups: usize,
    /// Seconds to wait for the server with one test request; 0 skips it (the default since
    /// 0.15; `--vllm-version 0.11` defaults to 600).
    #[arg(long)]
    pub ready_check_timeout_sec: Option<u64>,
    #[arg(long)]
    pub request_id_prefix: Option<String>,
    #[arg(long)]
    pub disable_tqdm: bool,
    /// The `vllm bench serve` release to copy.
    #[arg(long, value_enum, default_value = "0.28")]
    pub vllm_version: BenchRelease,
}
