//! `inferlint probe URL`: T7 from a live server (one request, then a burst, then `/health`).

use inferlint_core::output::{exit_code, print_results};
use inferlint_http::probe::{probe, ProbeOptions};

#[derive(clap::Args, Debug)]
pub struct Args {
    /// The server's base URL, e.g. http://127.0.0.1:8000
    pub url: String,
    /// The model to ask for (default: the first one /v1/models lists)
    #[arg(long)]
    pub model: Option<String>,
    /// How many requests to send at once after the first one
    #[arg(long, default_value_t = 8)]
    pub concurrency: usize,
    /// Tokens each request asks for
    #[arg(long, default_value_t = 16)]
    pub max_tokens: u32,
    /// The server's API key, when it was started with one (default: $OPENAI_API_KEY)
    #[arg(long)]
    pub api_key: Option<String>,
    /// Print the result as JSON
    #[arg(long)]
    pub json: bool,
    /// A warning makes the exit status 1
    #[arg(long)]
    pub strict: bool,
    #[command(flatten)]
    pub http: super::HttpOptions,
}

pub fn run(args: Args) -> anyhow::Result<i32> {
    args.http.apply()?;
    if args.concurrency == 0 {
        anyhow::bail!("--concurrency must be at least 1");
    }
    let opts = ProbeOptions {
        model: args.model,
        concurrency: args.concurrency,
        max_tokens: args.max_tokens,
        api_key: args
            .api_key
            .or_else(|| std::env::var("OPENAI_API_KEY").ok())
            .filter(|k| !k.is_empty()),
        ..ProbeOptions::default()
    };
    let result = super::runtime()?.block_on(probe(&args.url, &opts));
    let results = [result];
    print_results(&mut std::io::stdout().lock(), &results, args.json)?;
    Ok(exit_code(&results, args.strict))
}
