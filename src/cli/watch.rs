//! `inferlint watch URL -o FILE`: record a server's gauges and counters to a series file until
//! the duration has passed or SIGINT/SIGTERM arrives.

use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context;

use crate::cli::snapshot::how_to_serve_metrics;
use inferlint_core::engine;
use inferlint_http::scrape::split_metrics_url;
use inferlint_run::record::{record, RecordError, RecordOptions};

#[derive(clap::Args, Debug)]
pub struct Args {
    /// The server's address (e.g. http://127.0.0.1:8000), or its metrics URL.
    pub url: String,
    /// Where to write the recording (JSON lines; parent folders are created).
    #[arg(short = 'o', long = "out", value_name = "FILE")]
    pub out: PathBuf,
    /// Seconds between samples.
    #[arg(long, default_value_t = 0.5, value_name = "S")]
    pub interval: f64,
    /// Stop after this many seconds (default: until Ctrl-C or SIGTERM).
    #[arg(long, value_name = "S")]
    pub duration: Option<f64>,
    /// The engine the server runs (vllm, sglang, trtllm, llamacpp); a server running another is refused.
    #[arg(long, value_name = "ENGINE")]
    pub engine: Option<String>,
    #[command(flatten)]
    pub http: super::HttpOptions,
}

fn seconds(flag: &str, s: f64) -> anyhow::Result<Duration> {
    Duration::try_from_secs_f64(s)
        .ok()
        .filter(|d| !d.is_zero())
        .with_context(|| format!("{flag} must be a positive number of seconds, not {s}"))
}

pub fn run(args: Args) -> anyhow::Result<i32> {
    args.http.apply()?;
    let named = engine::named_engine(args.engine.as_deref())?;
    let interval = seconds("--interval", args.interval)?;
    let duration = args
        .duration
        .map(|d| seconds("--duration", d))
        .transpose()?;
    let (base, path) = split_metrics_url(&args.url);
    let opts = RecordOptions {
        interval,
        duration,
        metrics_path: path,
        engine: named.as_ref().map(|n| n.engine),
        require_engine_metrics: true,
        ..RecordOptions::default()
    };
    let rt = crate::cli::runtime()?;
    let outcome = rt.block_on(async {
        let stop = async {
            use tokio::signal::unix::{signal, SignalKind};
            match (
                signal(SignalKind::interrupt()),
                signal(SignalKind::terminate()),
            ) {
                (Ok(mut int), Ok(mut term)) => {
                    tokio::select! {
                        _ = int.recv() => {}
                        _ = term.recv() => {}
                    }
                }
                _ => std::future::pending::<()>().await,
            }
        };
        record(&base, &args.out, opts, stop, |e| {
            eprintln!("scrape failed: {e}");
        })
        .await
    });
    match outcome {
        Ok(summary) => {
            println!("{} samples -> {}", summary.samples, args.out.display());
            Ok(0)
        }
        Err(RecordError::NoEngineMetrics { url }) => {
            eprintln!(
                "inferlint: {url} serves no metrics of vLLM, SGLang or TensorRT-LLM; {}",
                how_to_serve_metrics(named.as_ref().map(|n| n.engine))
            );
            Ok(2)
        }
        Err(RecordError::WrongEngine { actual, .. }) => {
            let what = format!("the server at {}", args.url);
            match &named {
                Some(named) => eprintln!("inferlint: {}", engine::refusal(named, &what, actual)),
                // Only a named engine can be the wrong one; said plainly all the same.
                None => eprintln!("inferlint: {what} serves {} metrics", actual.name()),
            }
            Ok(2)
        }
        Err(e) => Err(e.into()),
    }
}
