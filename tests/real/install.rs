//! The install the lane runs: vLLM and the model (`INFERLINT_REAL_VLLM`), aiperf
//! (`INFERLINT_AIPERF`), and the commands that start and load the server.

use std::path::{Path, PathBuf};

/// The variable that turns the lane on: the prefix given to real-vllm-setup.sh.
pub const PREFIX_ENV: &str = "INFERLINT_REAL_VLLM";
/// The aiperf program (default: `aiperf/venv/bin/aiperf` next to the vLLM prefix).
pub const AIPERF_ENV: &str = "INFERLINT_AIPERF";
/// The served model name.
pub const MODEL: &str = "smollm2-135m";

/// docs/real-vllm.md#what-the-server-gets: the CPU platform, a 1 GiB KV budget, no CPU pinning on a
/// small box, no hub.
pub const SERVER_ENV: [(&str, &str); 7] = [
    ("VLLM_TARGET_DEVICE", "cpu"),
    ("VLLM_CPU_KVCACHE_SPACE", "1"),
    ("VLLM_CPU_OMP_THREADS_BIND", "nobind"),
    ("HF_HUB_OFFLINE", "1"),
    ("TRANSFORMERS_OFFLINE", "1"),
    ("VLLM_NO_USAGE_STATS", "1"),
    ("DO_NOT_TRACK", "1"),
];

fn ci() -> bool {
    std::env::var("CI").is_ok_and(|v| v == "true" || v == "1")
}

/// Prints the skip line, or fails under CI, where a lane that was asked for must run.
fn skip_or_fail(test: &str, why: &str) {
    if ci() {
        panic!("{test}: {why} (CI=true and {PREFIX_ENV} is set, so the lane must run; run .ci/real-vllm.sh)");
    }
    println!("skipped {test}: {why}");
}

/// aiperf's request count: one wave at its `--concurrency 8`, which is all the aiperf test needs
/// (its result file read for T15, its concurrency for T8); a second wave only added a minute.
pub const AIPERF_REQUESTS: u32 = 8;

/// The installed vLLM, model and (optionally) aiperf.
#[derive(Clone, Debug)]
pub struct Install {
    pub vllm: PathBuf,
    pub model: PathBuf,
    pub aiperf: PathBuf,
}

impl Install {
    /// The install named by `INFERLINT_REAL_VLLM`; None (after a skip line) when the lane is off.
    pub fn find(test: &str) -> Option<Install> {
        let Some(prefix) = std::env::var_os(PREFIX_ENV).filter(|p| !p.is_empty()) else {
            println!("skipped {test}: {PREFIX_ENV} is not set (the real-vLLM lane: .ci/real-vllm.sh, docs/real-vllm.md)");
            return None;
        };
        let prefix = PathBuf::from(prefix);
        let vllm = prefix.join("venv/bin/vllm");
        let model = prefix.join(MODEL);
        let aiperf = std::env::var_os(AIPERF_ENV)
            .map(PathBuf::from)
            .unwrap_or_else(|| {
                prefix
                    .parent()
                    .unwrap_or(Path::new("/"))
                    .join("aiperf/venv/bin/aiperf")
            });
        if !vllm.is_file() || !model.join("config.json").is_file() {
            skip_or_fail(
                test,
                &format!(
                    "{} has no venv/bin/vllm or {MODEL}/config.json (install with ../shared/tools/real-vllm-setup.sh {})",
                    prefix.display(),
                    prefix.display()
                ),
            );
            return None;
        }
        Some(Install {
            vllm,
            model,
            aiperf,
        })
    }

    /// The aiperf program, or None (after a skip line, or a failure under CI) when absent.
    pub fn aiperf(&self, test: &str) -> Option<PathBuf> {
        if self.aiperf.is_file() {
            return Some(self.aiperf.clone());
        }
        skip_or_fail(
            test,
            &format!(
                "no aiperf at {} (set {AIPERF_ENV}; .ci/real-vllm.sh installs it)",
                self.aiperf.display()
            ),
        );
        None
    }

    /// `vllm serve` as docs/real-vllm.md#what-the-server-gets starts it: eager (boot in ~40 s
    /// instead of ~170 s), at most 8 sequences, and `blocks` KV blocks of 128 tokens (5 → 640
    /// tokens: it preempts; 4 → vLLM refuses to start).
    pub fn serve(&self, port: u16, blocks: u32) -> String {
        format!(
            "{} serve {} --served-model-name {MODEL} --host 127.0.0.1 --port {port} --max-model-len 512 --dtype bfloat16 --max-num-seqs 8 --num-gpu-blocks-override {blocks} --enforce-eager",
            self.vllm.display(),
            self.model.display()
        )
    }

    /// `vllm bench serve`: 16 random prompts of `input_len` tokens, each made to generate
    /// exactly `output_len` tokens, 8 at a time.
    pub fn bench(&self, port: u16, input_len: u32, output_len: u32) -> Vec<String> {
        let mut v = self.bench_on(port, &self.model);
        v.extend([
            "--dataset-name".into(),
            "random".into(),
            "--random-input-len".into(),
            input_len.to_string(),
            "--random-output-len".into(),
            output_len.to_string(),
        ]);
        v.extend(
            [
                "--num-prompts",
                "16",
                "--max-concurrency",
                "8",
                "--ignore-eos",
            ]
            .map(String::from),
        );
        v
    }

    /// `vllm bench serve --model … --tokenizer TOKENIZER --base-url …` against `port`, the
    /// options of its load to follow.
    pub fn bench_on(&self, port: u16, tokenizer: &Path) -> Vec<String> {
        vec![
            self.vllm.display().to_string(),
            "bench".into(),
            "serve".into(),
            "--model".into(),
            MODEL.into(),
            "--tokenizer".into(),
            tokenizer.display().to_string(),
            "--base-url".into(),
            format!("http://127.0.0.1:{port}"),
        ]
    }

    /// `aiperf profile` with the same shape of load as [`Install::bench`], its artifacts in
    /// `artifact_dir`. aiperf reads a local tokenizer only without `HF_HUB_OFFLINE` (its offline
    /// branch treats the path as a hub id), which the server needs: so `env -u`.
    pub fn aiperf_profile(
        &self,
        aiperf: &Path,
        port: u16,
        input_len: u32,
        output_len: u32,
        artifact_dir: &str,
    ) -> Vec<String> {
        let mut v: Vec<String> = ["env", "-u", "HF_HUB_OFFLINE", "-u", "TRANSFORMERS_OFFLINE"]
            .map(String::from)
            .to_vec();
        v.push(aiperf.display().to_string());
        v.extend(
            [
                "profile",
                "--model",
                MODEL,
                "--url",
                &format!("http://127.0.0.1:{port}"),
                "--endpoint-type",
                "completions",
                "--streaming",
                "--tokenizer",
                &self.model.display().to_string(),
                "--concurrency",
                "8",
                "--request-count",
                &AIPERF_REQUESTS.to_string(),
                "--synthetic-input-tokens-mean",
                &input_len.to_string(),
                "--synthetic-input-tokens-stddev",
                "0",
                "--output-tokens-mean",
                &output_len.to_string(),
                "--extra-inputs",
                "ignore_eos:true",
                "--artifact-dir",
                artifact_dir,
                "--ui-type",
                "simple",
            ]
            .map(String::from),
        );
        v
    }
}
