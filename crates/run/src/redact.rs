//! Secrets never reach a run folder: `--api-key` values, `*_TOKEN`/`*_KEY` variables and
//! credentials in URLs are replaced by `***` in commands, and every secret value found is also
//! scrubbed from the server's and the load's output before it is written.

use std::collections::BTreeSet;
use std::path::Path;

/// What a secret is replaced with.
pub const MASK: &str = "***";

/// Values shorter than this are never treated as secrets: masking `1` everywhere would ruin
/// every log without protecting anything.
const MIN_SECRET_LEN: usize = 4;
/// Secrets read from the environment alone (not named on a command line) must be longer still:
/// the environment holds many short `*_KEY` values that are not credentials.
const MIN_ENV_SECRET_LEN: usize = 8;

/// Whether a command-line flag carries a secret value (`--api-key`, `--hf-token`, …).
pub fn is_secret_flag(flag: &str) -> bool {
    let name = flag
        .trim_start_matches('-')
        .to_ascii_lowercase()
        .replace('_', "-");
    if name.is_empty() || flag.len() == name.len() {
        return false;
    }
    name == "api-key"
        || name.ends_with("-api-key")
        || name == "token"
        || name.ends_with("-token")
        || name.ends_with("password")
        || name == "secret"
        || name.ends_with("-secret")
}

/// Whether an environment variable's value is a secret (`HF_TOKEN`, `OPENAI_API_KEY`, …).
pub fn is_secret_var(name: &str) -> bool {
    let upper = name.to_ascii_uppercase();
    upper.ends_with("_TOKEN")
        || upper.ends_with("_KEY")
        || upper.ends_with("_SECRET")
        || upper.ends_with("_PASSWORD")
        || upper == "TOKEN"
        || upper == "PASSWORD"
}

/// URL query parameters whose value is a credential.
fn is_secret_param(name: &str) -> bool {
    let lower = name.to_ascii_lowercase();
    matches!(
        lower.as_str(),
        "token" | "access_token" | "api_key" | "apikey" | "key" | "sig" | "signature" | "password"
    ) || lower.ends_with("_token")
        || lower.ends_with("_key")
}

/// The secret values collected from commands and the environment; scrubs text of them.
#[derive(Clone, Debug, Default)]
pub struct Secrets {
    values: BTreeSet<String>,
}

impl Secrets {
    /// Secrets named on these argument vectors (flag values, `VAR=value` words, URL credentials).
    pub fn from_argvs<'a>(argvs: impl IntoIterator<Item = &'a [String]>) -> Secrets {
        let mut s = Secrets::default();
        for argv in argvs {
            s.add_argv(argv);
        }
        s
    }

    /// Adds the secrets of one argument vector.
    pub fn add_argv(&mut self, argv: &[String]) {
        let mut i = 0;
        while i < argv.len() {
            let word = &argv[i];
            if let Some((flag, value)) = word.split_once('=') {
                if is_secret_assignment(flag) {
                    self.add(value);
                }
            } else if word.starts_with('-') && is_secret_flag(word) {
                if let Some(value) = argv.get(i + 1) {
                    self.add(value);
                    i += 1;
                }
            }
            for cred in url_credentials(&argv[i]) {
                self.add(&cred);
            }
            i += 1;
        }
    }

    /// Adds the values of secret-named variables of an environment (e.g. `std::env::vars()`).
    pub fn add_env(&mut self, vars: impl IntoIterator<Item = (String, String)>) {
        for (k, v) in vars {
            if is_secret_var(&k) && v.len() >= MIN_ENV_SECRET_LEN {
                self.values.insert(v);
            }
        }
    }

    /// Adds one secret value (ignored when too short to be one).
    pub fn add(&mut self, value: &str) {
        if value.len() >= MIN_SECRET_LEN {
            self.values.insert(value.to_string());
        }
    }

    pub fn is_empty(&self) -> bool {
        self.values.is_empty()
    }

    /// Text with every known secret value replaced by [`MASK`]. Longer values go first so that a
    /// secret containing another is masked whole.
    pub fn scrub(&self, text: &str) -> String {
        if self.values.is_empty() || !self.values.iter().any(|v| text.contains(v.as_str())) {
            return text.to_string();
        }
        let mut values: Vec<&String> = self.values.iter().collect();
        values.sort_by_key(|v| std::cmp::Reverse(v.len()));
        let mut out = text.to_string();
        for v in values {
            out = out.replace(v.as_str(), MASK);
        }
        out
    }

    /// Whether the text holds any known secret.
    pub fn found_in(&self, text: &str) -> bool {
        self.values.iter().any(|v| text.contains(v.as_str()))
    }

    /// Rewrites every regular file directly inside `dir` that holds a secret, atomically. The
    /// last line of defence: whatever a server or a load tool printed, the folder is clean.
    pub fn scrub_folder(&self, dir: &Path) -> std::io::Result<Vec<String>> {
        let mut scrubbed = Vec::new();
        if self.values.is_empty() {
            return Ok(scrubbed);
        }
        for entry in std::fs::read_dir(dir)? {
            let entry = entry?;
            if !entry.file_type()?.is_file() {
                continue;
            }
            let path = entry.path();
            let bytes = std::fs::read(&path)?;
            let text = String::from_utf8_lossy(&bytes);
            if self.found_in(&text) {
                super::folder::write_atomic(&path, self.scrub(&text).as_bytes())?;
                scrubbed.push(entry.file_name().to_string_lossy().into_owned());
            }
        }
        Ok(scrubbed)
    }
}

/// `--api-key=…` or `HF_TOKEN=…`: the part before `=` names a secret.
fn is_secret_assignment(name: &str) -> bool {
    if name.starts_with('-') {
        is_secret_flag(name)
    } else {
        is_env_name(name) && is_secret_var(name)
    }
}

fn is_env_name(s: &str) -> bool {
    !s.is_empty()
        && s.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
        && !s.as_bytes()[0].is_ascii_digit()
}

/// The credentials inside URLs in a word: `user:PASS@host` passwords and secret query values.
fn url_credentials(word: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = word;
    while let Some(i) = rest.find("://") {
        let after = &rest[i + 3..];
        let end = after
            .find(|c: char| c.is_whitespace() || c == '"' || c == '\'')
            .unwrap_or(after.len());
        let url = &after[..end];
        let authority_end = url.find(['/', '?', '#']).unwrap_or(url.len());
        let authority = &url[..authority_end];
        if let Some((userinfo, _)) = authority.rsplit_once('@') {
            match userinfo.split_once(':') {
                Some((_, pass)) => out.push(pass.to_string()),
                None => out.push(userinfo.to_string()),
            }
        }
        if let Some(q) = url.find('?') {
            let query = &url[q + 1..];
            let query = query.split('#').next().unwrap_or("");
            for pair in query.split('&') {
                if let Some((k, v)) = pair.split_once('=') {
                    if is_secret_param(k) && !v.is_empty() {
                        out.push(v.to_string());
                    }
                }
            }
        }
        rest = &after[end..];
    }
    out
}

/// An argument vector with its secrets masked, joined shell-style for display and `run.json`.
pub fn redact_command(argv: &[String], secrets: &Secrets) -> String {
    let masked: Vec<String> = redact_argv(argv)
        .into_iter()
        .map(|w| secrets.scrub(&w))
        .collect();
    join(&masked)
}

/// The argument vector with secret flag values, secret variables and URL credentials masked.
pub fn redact_argv(argv: &[String]) -> Vec<String> {
    let mut out = Vec::with_capacity(argv.len());
    let mut mask_next = false;
    for word in argv {
        if mask_next {
            out.push(MASK.to_string());
            mask_next = false;
            continue;
        }
        if let Some((flag, _)) = word.split_once('=') {
            if is_secret_assignment(flag) {
                out.push(format!("{flag}={MASK}"));
                continue;
            }
        } else if word.starts_with('-') && is_secret_flag(word) {
            mask_next = true;
            out.push(word.clone());
            continue;
        }
        let mut w = word.clone();
        for cred in url_credentials(word).iter().filter(|c| !c.is_empty()) {
            w = w.replace(cred.as_str(), MASK);
        }
        out.push(w);
    }
    out
}

/// Shell-style join (quotes only where needed).
pub fn join(argv: &[String]) -> String {
    argv.iter()
        .map(|w| {
            // A mask stays readable as one (`--api-key ***`, `HF_TOKEN=***`), not quoted.
            if w == MASK || w.ends_with(&format!("={MASK}")) && !w.contains(' ') {
                w.clone()
            } else {
                shlex::try_quote(w).map_or_else(|_| w.clone(), |q| q.into_owned())
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(s: &[&str]) -> Vec<String> {
        s.iter().map(|x| x.to_string()).collect()
    }

    #[test]
    fn flags_and_variables_are_masked() {
        let argv = v(&[
            "env",
            "HF_TOKEN=hf_abcdef123",
            "vllm",
            "serve",
            "m",
            "--api-key",
            "sk-secret-1",
            "--hf-token=tok12345",
            "--max-tokens",
            "16",
        ]);
        let red = redact_argv(&argv);
        assert_eq!(
            red,
            v(&[
                "env",
                "HF_TOKEN=***",
                "vllm",
                "serve",
                "m",
                "--api-key",
                "***",
                "--hf-token=***",
                "--max-tokens",
                "16"
            ])
        );
        let s = Secrets::from_argvs([argv.as_slice()]);
        assert_eq!(
            s.scrub("non-default args: {'api_key': ['sk-secret-1']} hf_abcdef123"),
            "non-default args: {'api_key': ['***']} ***"
        );
        assert!(!s.found_in("16 tokens"));
    }

    #[test]
    fn url_credentials_are_masked() {
        let argv = v(&[
            "bench",
            "--base-url",
            "https://user:pa55word@host:8000/v1?api_key=abcd1234&x=1",
        ]);
        let red = redact_argv(&argv);
        assert_eq!(red[2], "https://user:***@host:8000/v1?api_key=***&x=1");
        let s = Secrets::from_argvs([argv.as_slice()]);
        assert!(s.found_in("pa55word"));
        assert!(s.found_in("abcd1234"));
    }

    #[test]
    fn commands_join_with_readable_masks() {
        let argv = v(&[
            "vllm",
            "serve",
            "my model",
            "--api-key",
            "sk-12345",
            "HF_TOKEN=abcdefgh",
        ]);
        let s = Secrets::from_argvs([argv.as_slice()]);
        assert_eq!(
            redact_command(&argv, &s),
            "vllm serve 'my model' --api-key *** HF_TOKEN=***"
        );
    }

    #[test]
    fn names() {
        assert!(is_secret_flag("--api-key"));
        assert!(is_secret_flag("--api_key"));
        assert!(is_secret_flag("--hf-token"));
        assert!(!is_secret_flag("--max-tokens"));
        assert!(!is_secret_flag("--tokenizer"));
        assert!(!is_secret_flag("api-key"));
        assert!(is_secret_var("OPENAI_API_KEY"));
        assert!(is_secret_var("HF_TOKEN"));
        assert!(!is_secret_var("CUDA_VISIBLE_DEVICES"));
    }

    #[test]
    fn short_values_and_env() {
        let mut s = Secrets::default();
        s.add("ab");
        assert!(s.is_empty());
        s.add_env([
            ("HF_TOKEN".to_string(), "short".to_string()),
            ("OPENAI_API_KEY".to_string(), "sk-0123456789".to_string()),
            ("PATH".to_string(), "/usr/bin:/bin".to_string()),
        ]);
        assert!(s.found_in("key sk-0123456789"));
        assert!(!s.found_in("short"));
        assert!(!s.found_in("/usr/bin:/bin"));
    }

    #[test]
    fn longer_secret_masked_whole() {
        let mut s = Secrets::default();
        s.add("abcd");
        s.add("abcdefgh");
        assert_eq!(s.scrub("x abcdefgh y abcd"), "x *** y ***");
    }
}
