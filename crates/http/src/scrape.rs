//! Live scrapes: one GET of a server's Prometheus text between two clock readings, and where
//! each server serves it (TensorRT-LLM's `/prometheus/metrics` found and remembered per server).

use std::sync::Arc;
use std::time::Duration;

use inferlint_core::clock::{Clock, SystemClock};
use inferlint_core::endpoints::{MetricsPlaces, PlaceError, Reading};
use inferlint_core::prom::PromError;
use inferlint_core::snapshot::{Snapshot, SCRAPE_TIMEOUT};

/// Why a live scrape failed.
#[derive(Debug, thiserror::Error)]
pub enum ScrapeError {
    /// No answer: cannot connect, timed out, or the connection broke. (The cause is in the
    /// message, not chained, so `{:#}` does not repeat it.)
    #[error("{url}: {}", describe_http(.error))]
    Http { url: String, error: reqwest::Error },
    #[error("{url} answered HTTP {status}")]
    Status { url: String, status: u16 },
    #[error("{url} returned JSON, not Prometheus text (TensorRT-LLM serves its metrics at /prometheus/metrics)")]
    Json { url: String },
    /// The answer is larger than [`MAX_BODY_BYTES`]: no server's metrics are that large, and
    /// reading on would only fill the memory.
    #[error("{url}: the answer is larger than {} MiB; stopped reading it", MAX_BODY_BYTES >> 20)]
    TooLarge { url: String },
    #[error("{url}: {source}")]
    Parse {
        url: String,
        #[source]
        source: PromError,
    },
}

/// What went wrong with a request, in a few words: reqwest's own message repeats the URL and
/// wraps the cause that matters (e.g. `Connection refused`) in several layers.
fn describe_http(e: &reqwest::Error) -> String {
    let mut root: &dyn std::error::Error = e;
    while let Some(next) = root.source() {
        root = next;
    }
    let cause = root.to_string();
    if e.is_timeout() {
        "no answer in time (timed out)".to_string()
    } else if e.is_connect() {
        format!("cannot connect ({cause})")
    } else if e.is_body() || e.is_decode() {
        format!("the answer broke off ({cause})")
    } else {
        format!("request failed ({cause})")
    }
}

/// The largest `/metrics` answer read. A vLLM server's is about 50 KB; one with every LoRA
/// adapter and route labelled may reach tens of MB. Past this, a scrape is an error rather than
/// a process that grows without bound.
pub const MAX_BODY_BYTES: usize = 512 << 20;

/// Reads a body up to `limit` bytes: the declared length is checked first, then what arrives.
async fn read_body(
    mut resp: reqwest::Response,
    limit: usize,
) -> Result<Option<String>, reqwest::Error> {
    if resp.content_length().is_some_and(|n| n > limit as u64) {
        return Ok(None);
    }
    let mut body: Vec<u8> = Vec::with_capacity(resp.content_length().unwrap_or(0) as usize);
    while let Some(chunk) = resp.chunk().await? {
        if body.len() + chunk.len() > limit {
            return Ok(None);
        }
        body.extend_from_slice(&chunk);
    }
    Ok(Some(match String::from_utf8(body) {
        Ok(s) => s,
        Err(e) => String::from_utf8_lossy(e.as_bytes()).into_owned(),
    }))
}

/// Splits a URL the user gave into the server's base URL and a metrics path, when the URL
/// already ends with one (`http://h:8000/metrics`).
pub fn split_metrics_url(url: &str) -> (String, Option<String>) {
    let url = url.trim_end_matches('/');
    for path in ["/prometheus/metrics", "/metrics"] {
        if let Some(base) = url.strip_suffix(path) {
            if base.find("://").is_some_and(|at| base.len() > at + 3) {
                return (base.to_string(), Some(path.to_string()));
            }
        }
    }
    (url.to_string(), None)
}

/// Scrapes servers over HTTP with injectable clocks, remembering where each base URL serves its
/// Prometheus text.
pub struct Scraper {
    client: reqwest::Client,
    clock: Arc<dyn Clock + Send + Sync>,
    places: MetricsPlaces,
}

impl Default for Scraper {
    fn default() -> Self {
        Scraper::new()
    }
}

impl Scraper {
    pub fn new() -> Scraper {
        Scraper::with_clock(Arc::new(SystemClock))
    }

    pub fn with_clock(clock: Arc<dyn Clock + Send + Sync>) -> Scraper {
        let client = crate::client(|b| b.connect_timeout(SCRAPE_TIMEOUT));
        Scraper {
            client,
            clock,
            places: MetricsPlaces::new(),
        }
    }

    /// Reads the metrics of the server at `base_url`: at `metrics_path`, else where core's
    /// [`MetricsPlaces`] says this server serves them (`/metrics`, and when that answers JSON,
    /// TensorRT-LLM's `/prometheus/metrics`, then remembered for this base URL until it fails).
    pub async fn scrape(
        &self,
        base_url: &str,
        metrics_path: Option<&str>,
        timeout: Duration,
    ) -> Result<Snapshot, ScrapeError> {
        let read = self
            .places
            .read_async(base_url, metrics_path, |url| {
                let url = url.to_string();
                async move { self.get(&url, timeout).await }
            })
            .await;
        let (url, r) = read.map_err(|e| match e {
            PlaceError::Fetch(e) => e,
            PlaceError::Json { url } => ScrapeError::Json { url },
        })?;
        Snapshot::from_reading(&url, r.text, r.before, r.after)
            .map_err(|source| ScrapeError::Parse { url, source })
    }

    /// One GET of a metrics URL, between two clock readings: its text if the server answered.
    async fn get(&self, url: &str, timeout: Duration) -> Result<Reading, ScrapeError> {
        let http = |error| ScrapeError::Http {
            url: url.to_string(),
            error,
        };
        let before = self.clock.now();
        let resp = self
            .client
            .get(url)
            .timeout(timeout)
            .send()
            .await
            .map_err(http)?;
        let status = resp.status();
        let Some(text) = read_body(resp, MAX_BODY_BYTES).await.map_err(http)? else {
            return Err(ScrapeError::TooLarge {
                url: url.to_string(),
            });
        };
        let after = self.clock.now();
        if !status.is_success() {
            return Err(ScrapeError::Status {
                url: url.to_string(),
                status: status.as_u16(),
            });
        }
        Ok(Reading {
            text,
            before,
            after,
        })
    }
}

/// Scrapes `base_url` with one scraper shared by the whole process (TensorRT-LLM's
/// `/prometheus/metrics` found as in docs/design/formats.md#snapshot, and remembered per base URL).
pub async fn scrape(
    base_url: &str,
    metrics_path: Option<&str>,
    timeout: Duration,
) -> Result<Snapshot, ScrapeError> {
    static SHARED: std::sync::OnceLock<Scraper> = std::sync::OnceLock::new();
    let scraper = SHARED.get_or_init(Scraper::new);
    scraper.scrape(base_url, metrics_path, timeout).await
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    /// Serves one raw HTTP answer on 127.0.0.1 and returns its URL.
    async fn answer_once(head: &'static str, body: Vec<u8>) -> String {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/metrics", listener.local_addr().unwrap());
        tokio::spawn(async move {
            let (mut sock, _) = listener.accept().await.unwrap();
            let mut buf = [0u8; 1024];
            let _ = sock.read(&mut buf).await;
            let _ = sock.write_all(head.as_bytes()).await;
            let _ = sock.write_all(&body).await;
            let _ = sock.shutdown().await;
        });
        url
    }

    #[tokio::test]
    async fn bodies_past_the_limit_are_refused_whether_declared_or_not() {
        let client = reqwest::Client::new();
        let body = vec![b'a'; 100];
        let declared = answer_once(
            "HTTP/1.1 200 OK\r\ncontent-length: 100\r\nconnection: close\r\n\r\n",
            body.clone(),
        )
        .await;
        let resp = client.get(&declared).send().await.unwrap();
        assert_eq!(read_body(resp, 10).await.unwrap(), None);
        // No length given: the body is cut off once it passes the limit.
        let undeclared =
            answer_once("HTTP/1.1 200 OK\r\nconnection: close\r\n\r\n", body.clone()).await;
        let resp = client.get(&undeclared).send().await.unwrap();
        assert_eq!(read_body(resp, 10).await.unwrap(), None);
        // Within the limit, the whole body; invalid UTF-8 is replaced, not an error.
        let mut odd = body.clone();
        odd.push(0xff);
        let within = answer_once("HTTP/1.1 200 OK\r\nconnection: close\r\n\r\n", odd).await;
        let resp = client.get(&within).send().await.unwrap();
        let text = read_body(resp, 1000).await.unwrap().unwrap();
        assert_eq!(text, format!("{}\u{fffd}", "a".repeat(100)));
    }
    #[test]
    fn split_metrics_urls() {
        assert_eq!(
            split_metrics_url("http://h:8000/metrics"),
            ("http://h:8000".to_string(), Some("/metrics".to_string()))
        );
        assert_eq!(
            split_metrics_url("http://h:8000/prometheus/metrics/"),
            (
                "http://h:8000".to_string(),
                Some("/prometheus/metrics".to_string())
            )
        );
        assert_eq!(
            split_metrics_url("http://h:8000/"),
            ("http://h:8000".to_string(), None)
        );
    }
}
