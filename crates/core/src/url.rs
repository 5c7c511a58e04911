//! The server's address, read from the command that starts it
//! (docs/design/run.md#the-servers-address).

use crate::argv::{command_engine, flag_value, has_flag};
use crate::engine::Engine;

/// The base URL a `--serve` command will answer at: its `--host` (default `127.0.0.1`; a
/// wildcard address is reached through `127.0.0.1`; IPv6 bracketed) and `--port`, else the
/// engine's default port; `https` when the command gives the server a certificate
/// (`--ssl-certfile`, vLLM's and SGLang's). The engine is the one named, else the one the
/// command starts, else vLLM.
pub fn server_url(serve_argv: &[String], named: Option<Engine>) -> String {
    let engine = named
        .or_else(|| command_engine(serve_argv))
        .unwrap_or(Engine::Vllm);
    let host = flag_value(serve_argv, "--host");
    let host = match host.as_deref().map(str::trim) {
        None | Some("" | "0.0.0.0" | "::" | "[::]") => "127.0.0.1".to_string(),
        Some(h) if h.contains(':') && !h.starts_with('[') => format!("[{h}]"),
        Some(h) => h.to_string(),
    };
    let port = flag_value(serve_argv, "--port")
        .and_then(|p| p.trim().parse::<u16>().ok())
        .unwrap_or_else(|| engine.default_port());
    let scheme = if has_flag(serve_argv, "--ssl-certfile") {
        "https"
    } else {
        "http"
    };
    format!("{scheme}://{host}:{port}")
}

/// Whether a `--serve` command's server listens on the loopback address alone, so no other
/// host can reach it: its `--host` is `127.0.0.1` (any of 127.0.0.0/8), `localhost` or `::1`.
/// vLLM without `--host` listens on every address, so that is not loopback.
pub fn listens_on_loopback_only(serve_argv: &[String]) -> bool {
    let Some(host) = flag_value(serve_argv, "--host") else {
        return false;
    };
    let host = host.trim().trim_start_matches('[').trim_end_matches(']');
    host == "localhost"
        || host
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn url(cmd: &str, named: Option<Engine>) -> String {
        server_url(&shlex::split(cmd).unwrap(), named)
    }

    #[test]
    fn derives_host_and_port() {
        assert_eq!(url("vllm serve m", None), "http://127.0.0.1:8000");
        assert_eq!(
            url("vllm serve m --port 8001", None),
            "http://127.0.0.1:8001"
        );
        assert_eq!(
            url("vllm serve m --port=8002", None),
            "http://127.0.0.1:8002"
        );
        assert_eq!(
            url("vllm serve m --host 0.0.0.0 --port 9000", None),
            "http://127.0.0.1:9000"
        );
        assert_eq!(url("vllm serve m --host ::", None), "http://127.0.0.1:8000");
        assert_eq!(url("vllm serve m --host=", None), "http://127.0.0.1:8000");
        assert_eq!(url("vllm serve m --host ::1", None), "http://[::1]:8000");
        assert_eq!(
            url("vllm serve m --host 10.0.0.5", None),
            "http://10.0.0.5:8000"
        );
    }

    #[test]
    fn a_server_given_a_certificate_is_reached_over_https() {
        assert_eq!(
            url(
                "vllm serve m --ssl-keyfile k.pem --ssl-certfile c.pem --port 8443",
                None
            ),
            "https://127.0.0.1:8443"
        );
        assert_eq!(
            url("vllm serve m --ssl-certfile=c.pem", None),
            "https://127.0.0.1:8000"
        );
    }

    #[test]
    fn default_port_follows_the_engine() {
        assert_eq!(
            url("python -m sglang.launch_server --model-path m", None),
            "http://127.0.0.1:30000"
        );
        assert_eq!(url("trtllm-serve serve m", None), "http://127.0.0.1:8000");
        assert_eq!(
            url("my-server --model m", Some(Engine::Sglang)),
            "http://127.0.0.1:30000"
        );
        assert_eq!(url("my-server --model m", None), "http://127.0.0.1:8000");
        // The named engine wins over the command's.
        assert_eq!(
            url("python -m sglang.launch_server", Some(Engine::Vllm)),
            "http://127.0.0.1:8000"
        );
    }

    #[test]
    fn flag_values() {
        let argv: Vec<String> = ["a", "--x", "1", "--x=2", "--y"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        assert_eq!(flag_value(&argv, "--x").as_deref(), Some("2"));
        assert_eq!(flag_value(&argv, "--y"), None);
        assert!(has_flag(&argv, "--y"));
        assert!(!has_flag(&argv, "--z"));
    }

    #[test]
    fn only_a_loopback_host_is_loopback_only() {
        let argv = |s: &str| shlex::split(s).unwrap();
        assert!(listens_on_loopback_only(&argv(
            "vllm serve m --host 127.0.0.1"
        )));
        assert!(listens_on_loopback_only(&argv(
            "vllm serve m --host=localhost"
        )));
        assert!(listens_on_loopback_only(&argv("vllm serve m --host ::1")));
        assert!(!listens_on_loopback_only(&argv("vllm serve m")));
        assert!(!listens_on_loopback_only(&argv(
            "vllm serve m --host 0.0.0.0"
        )));
        assert!(!listens_on_loopback_only(&argv(
            "vllm serve m --host 10.0.0.5"
        )));
    }
}
