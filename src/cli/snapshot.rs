//! `inferlint snapshot URL -o FILE`: one reading of a server's metrics with its clocks.

use std::path::PathBuf;

use inferlint_core::engine::{self, Engine};
use inferlint_core::snapshot::SCRAPE_TIMEOUT;
use inferlint_http::scrape::{self, split_metrics_url, ScrapeError};

#[derive(clap::Args, Debug)]
pub struct Args {
    /// The server's address (e.g. http://127.0.0.1:8000), or its metrics URL.
    pub url: String,
    /// Where to write the snapshot (parent folders are created).
    #[arg(short = 'o', long = "out", value_name = "FILE")]
    pub out: PathBuf,
    /// The engine the server runs (vllm, sglang, trtllm, llamacpp); a server running another is refused.
    #[arg(long, value_name = "ENGINE")]
    pub engine: Option<String>,
    #[command(flatten)]
    pub http: super::HttpOptions,
}

pub fn run(args: Args) -> anyhow::Result<i32> {
    args.http.apply()?;
    let named = engine::named_engine(args.engine.as_deref())?;
    let (base, path) = split_metrics_url(&args.url);
    let scraped =
        crate::cli::runtime()?.block_on(scrape::scrape(&base, path.as_deref(), SCRAPE_TIMEOUT));
    let snap = match scraped {
        Ok(s) => s,
        Err(ScrapeError::Status { url, status: 404 }) => {
            eprintln!(
                "inferlint: {url} answered HTTP 404: the server serves no metrics there; {}",
                how_to_serve_metrics(named.as_ref().map(|n| n.engine))
            );
            return Ok(2);
        }
        Err(ScrapeError::Json { url }) => {
            eprintln!(
                "inferlint: {url} answered JSON, not Prometheus text, and /prometheus/metrics serves none either; {}",
                Engine::Trtllm.metrics_hint()
            );
            return Ok(2);
        }
        Err(e) => return Err(e.into()),
    };
    match (snap.engine(), &named) {
        (None, _) => {
            eprintln!(
                "inferlint: {} serves no metrics of vLLM, SGLang or TensorRT-LLM ({} samples); {}",
                snap.url,
                snap.metrics.len(),
                how_to_serve_metrics(named.as_ref().map(|n| n.engine))
            );
            return Ok(2);
        }
        (Some(actual), Some(n)) if actual != n.engine => {
            let what = format!("the server at {}", args.url);
            eprintln!("inferlint: {}", engine::refusal(n, &what, actual));
            return Ok(2);
        }
        _ => {}
    }
    snap.save(&args.out)?;
    println!(
        "{} samples, scrape {:.3}s -> {}",
        snap.metrics.len(),
        snap.latency_s.unwrap_or(f64::NAN),
        args.out.display()
    );
    Ok(0)
}

/// How to make the server serve its metrics: the named engine's hint, else every engine's
/// (SGLang's last: it is the one that serves none by default).
pub(crate) fn how_to_serve_metrics(named: Option<Engine>) -> String {
    match named {
        Some(e) => e.metrics_hint().to_string(),
        None => format!(
            "vLLM serves them at /metrics; TensorRT-LLM: {}; SGLang: {}",
            Engine::Trtllm.metrics_hint(),
            Engine::Sglang.metrics_hint()
        ),
    }
}
