//! The one HTTP policy for talking to the server under test (docs/design/run.md#http): the
//! scrapes, the recorder, the probe, readiness and the version query all build their client
//! here, so a proxy, a private CA or `--insecure` means the same thing everywhere.
//!
//! The environment's proxy is never used for the server: on a cluster with an outbound proxy
//! `http_proxy` would send loopback and in-cluster requests to a machine that cannot reach them.
//! A proxy is used only when asked for (`--proxy URL`, `INFERLINT_PROXY`).
//!
//! Beside the policy, everything inferlint asks the server: [`scrape`] (its Prometheus text),
//! [`probe`] (T7's requests and `/health`) and [`server_version`].
#![expect(
    missing_docs,
    reason = "public items (mostly struct fields and variants) moved here undocumented from inferlint-run; document them, then drop this"
)]
#![forbid(unsafe_code)]
#![cfg_attr(not(test), warn(clippy::unwrap_used, clippy::expect_used))]

pub mod probe;
pub mod reset;
pub mod scrape;

use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::time::Duration;

/// The variable that names a proxy for the server (as `--proxy`).
pub const PROXY_ENV: &str = "INFERLINT_PROXY";
/// The variable that names a PEM file of CA certificates to trust (as `--cacert`).
pub const CACERT_ENV: &str = "INFERLINT_CACERT";
/// The variable that turns off certificate checks when `1` (as `--insecure`).
pub const INSECURE_ENV: &str = "INFERLINT_INSECURE";

/// How inferlint reaches the server under test.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct HttpPolicy {
    /// A proxy every request to the server goes through; None: straight to the server.
    pub proxy: Option<String>,
    /// A PEM file of CA certificates trusted beside the built-in roots (a private CA).
    pub cacert: Option<PathBuf>,
    /// Accept any certificate (a self-signed server on a test cluster).
    pub insecure: bool,
}

/// Why a policy cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum PolicyError {
    #[error("--proxy {url}: not a proxy URL ({why})")]
    Proxy { url: String, why: String },
    #[error("--cacert {}: {why}", path.display())]
    Cacert { path: PathBuf, why: String },
    #[error("the HTTP policy was already set")]
    AlreadySet,
}

/// What the policy resolved to: the reqwest pieces, built once.
#[derive(Debug)]
struct Resolved {
    policy: HttpPolicy,
    proxy: Option<reqwest::Proxy>,
    roots: Vec<reqwest::Certificate>,
}

static POLICY: OnceLock<Resolved> = OnceLock::new();

impl HttpPolicy {
    /// The policy the environment asks for (`INFERLINT_PROXY`, `INFERLINT_CACERT`,
    /// `INFERLINT_INSECURE=1`); the standard proxy variables are not read.
    pub fn from_env() -> HttpPolicy {
        let var = |k: &str| std::env::var(k).ok().filter(|v| !v.trim().is_empty());
        HttpPolicy {
            proxy: var(PROXY_ENV),
            cacert: var(CACERT_ENV).map(PathBuf::from),
            insecure: var(INSECURE_ENV).is_some_and(|v| v == "1" || v == "true"),
        }
    }

    /// Each option the user gave wins over the environment's.
    pub fn or_env(self) -> HttpPolicy {
        let env = HttpPolicy::from_env();
        HttpPolicy {
            proxy: self.proxy.or(env.proxy),
            cacert: self.cacert.or(env.cacert),
            insecure: self.insecure || env.insecure,
        }
    }

    fn resolve(self) -> Result<Resolved, PolicyError> {
        let proxy = match &self.proxy {
            Some(url) => Some(reqwest::Proxy::all(url).map_err(|e| PolicyError::Proxy {
                url: url.clone(),
                why: e.to_string(),
            })?),
            None => None,
        };
        let roots = match &self.cacert {
            Some(path) => read_roots(path)?,
            None => Vec::new(),
        };
        Ok(Resolved {
            policy: self,
            proxy,
            roots,
        })
    }
}

fn read_roots(path: &Path) -> Result<Vec<reqwest::Certificate>, PolicyError> {
    let bad = |why: String| PolicyError::Cacert {
        path: path.to_path_buf(),
        why,
    };
    let pem = std::fs::read(path).map_err(|e| bad(e.to_string()))?;
    let roots = reqwest::Certificate::from_pem_bundle(&pem).map_err(|e| bad(e.to_string()))?;
    if roots.is_empty() {
        return Err(bad("no PEM certificate in it".into()));
    }
    Ok(roots)
}

/// Sets the process's policy, once, before the first request (the command line's options, or
/// Python's). A bad proxy URL or CA file is an error here, not a failed scrape later.
pub fn set_policy(policy: HttpPolicy) -> Result<(), PolicyError> {
    let resolved = policy.resolve()?;
    POLICY.set(resolved).map_err(|_| PolicyError::AlreadySet)
}

fn resolved() -> &'static Resolved {
    POLICY.get_or_init(|| {
        // Without a call to set_policy (a library user): the environment's, and where that
        // is unusable, none (the error is then the scrape's, naming the server).
        HttpPolicy::from_env()
            .resolve()
            .unwrap_or_else(|_| Resolved {
                policy: HttpPolicy::default(),
                proxy: None,
                roots: Vec::new(),
            })
    })
}

/// The policy in force.
pub fn policy() -> &'static HttpPolicy {
    &resolved().policy
}

/// A client under the policy with the caller's settings (timeouts, pooling). Should the policy's
/// client not build, the caller's settings alone, still without the environment's proxy.
pub fn client(
    configure: impl Fn(reqwest::ClientBuilder) -> reqwest::ClientBuilder,
) -> reqwest::Client {
    configure(builder())
        .build()
        .or_else(|_| configure(reqwest::Client::builder().no_proxy()).build())
        .unwrap_or_else(|e| {
            panic!("no HTTP client can be built on this machine (its TLS backend): {e}")
        })
}

/// A client builder under the policy, for a client that talks to the server under test.
pub fn builder() -> reqwest::ClientBuilder {
    let r = resolved();
    let mut b = reqwest::Client::builder().no_proxy();
    if let Some(p) = &r.proxy {
        b = b.proxy(p.clone());
    }
    for root in &r.roots {
        b = b.add_root_certificate(root.clone());
    }
    if r.policy.insecure {
        b = b.danger_accept_invalid_certs(true);
    }
    b
}

/// `req` with the user's API key as its bearer token, where there is one: the one way every
/// request to the server under test carries it.
pub(crate) fn keyed(
    req: reqwest::RequestBuilder,
    api_key: Option<&str>,
) -> reqwest::RequestBuilder {
    match api_key {
        Some(k) => req.bearer_auth(k),
        None => req,
    }
}

/// The version a live server reports, asked where core's [`endpoints`] says each engine answers
/// it (`/version`, then SGLang's `/get_server_info`).
///
/// [`endpoints`]: inferlint_core::endpoints
pub async fn server_version(url: &str, api_key: Option<&str>) -> Option<String> {
    let client = client(|b| b);
    for path in inferlint_core::endpoints::SERVER_VERSION_PATHS {
        let req = keyed(
            client
                .get(format!("{}{path}", url.trim_end_matches('/')))
                .timeout(Duration::from_secs(10)),
            api_key,
        );
        let Ok(resp) = req.send().await else { continue };
        if !resp.status().is_success() {
            continue;
        }
        let Ok(body) = resp.text().await else {
            continue;
        };
        if let Some(v) = inferlint_core::endpoints::version_in_answer(&body) {
            return Some(v);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bad_proxy_or_ca_file_is_named() {
        let e = HttpPolicy {
            proxy: Some("not a url".into()),
            ..Default::default()
        }
        .resolve()
        .unwrap_err();
        assert!(
            e.to_string()
                .starts_with("--proxy not a url: not a proxy URL"),
            "{e}"
        );
        let dir = tempfile::tempdir().unwrap();
        let empty = dir.path().join("ca.pem");
        std::fs::write(&empty, "no certificate here\n").unwrap();
        let e = HttpPolicy {
            cacert: Some(empty.clone()),
            ..Default::default()
        }
        .resolve()
        .unwrap_err();
        assert_eq!(
            e.to_string(),
            format!("--cacert {}: no PEM certificate in it", empty.display())
        );
        let missing = dir.path().join("absent.pem");
        let e = HttpPolicy {
            cacert: Some(missing.clone()),
            ..Default::default()
        }
        .resolve()
        .unwrap_err();
        assert!(
            e.to_string()
                .starts_with(&format!("--cacert {}: ", missing.display())),
            "{e}"
        );
    }

    #[test]
    fn the_users_options_win_over_the_environment() {
        let p = HttpPolicy {
            proxy: Some("http://127.0.0.1:3128".into()),
            ..Default::default()
        }
        .or_env();
        assert_eq!(p.proxy.as_deref(), Some("http://127.0.0.1:3128"));
    }
}
