//! Property tests for secret redaction (crates/run/src/redact.rs): a secret given on a command line
//! in any of the forms users write it (`--api-key S`, `--api-key=S`, `HF_TOKEN=S`, `--hf-token S`,
//! a URL password or token parameter), or in a secret-named environment variable, never appears in
//! the redacted command nor in text scrubbed of the collected secrets, wherever it sits.
//!
//! For a long run: `PROPTEST_CASES=100000 cargo test --release --test proptests proptest_redact::`.

use crate::proptest_support;

use inferlint_run::redact::{redact_command, Secrets, MASK};
use proptest::prelude::*;

fn cases(default: u32) -> ProptestConfig {
    proptest_support::config(default, "tests/proptest-regressions/proptest_redact.txt")
}

/// Secrets as tokens look: letters, digits and `_-.`, 8 to 48 characters (shorter values are
/// deliberately never masked: masking `1` everywhere would protect nothing).
fn secret() -> impl Strategy<Value = String> {
    "[A-Za-z0-9_.-]{8,48}"
}

/// An ordinary word of a command line.
fn word() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("vllm".to_string()),
        Just("serve".to_string()),
        Just("--port".to_string()),
        Just("8000".to_string()),
        Just("--max-num-seqs".to_string()),
        Just("http://127.0.0.1:8000/v1".to_string()),
        "[a-z/-]{1,12}",
    ]
}

/// The argument words that carry `s`, in one of the ways a user writes a secret.
fn carrying(s: &str, form: usize) -> Vec<String> {
    match form % 8 {
        0 => vec!["--api-key".into(), s.into()],
        1 => vec![format!("--api-key={s}")],
        2 => vec![format!("HF_TOKEN={s}")],
        3 => vec!["--hf-token".into(), s.into()],
        4 => vec![format!("https://user:{s}@hub.example/models")],
        5 => vec![format!("http://127.0.0.1:8000/v1?token={s}&x=1")],
        6 => vec!["--api_key".into(), s.into()],
        _ => vec![format!("OPENAI_API_KEY={s}")],
    }
}

proptest! {
    #![proptest_config(cases(256))]

    /// The secret is gone from the redacted command and from any text scrubbed of the secrets
    /// the command line named (server and load output, files of the run folder).
    #[test]
    fn a_secret_on_a_command_line_reaches_no_output(
        s in secret(),
        form in any::<usize>(),
        before in prop::collection::vec(word(), 0..6),
        after in prop::collection::vec(word(), 0..6),
        noise in prop::collection::vec(prop_oneof![word(), any::<String>()], 0..6),
    ) {
        let mut argv = before.clone();
        argv.extend(carrying(&s, form));
        argv.extend(after.clone());
        let secrets = Secrets::from_argvs([argv.as_slice()]);
        prop_assert!(!secrets.is_empty());
        let shown = redact_command(&argv, &secrets);
        prop_assert!(!shown.contains(&s), "{}", shown);
        prop_assert!(shown.contains(MASK), "{}", shown);

        // Output that echoes the secret anywhere: glued to other text, at the ends, repeated.
        let mut text = String::new();
        for (i, n) in noise.iter().enumerate() {
            text.push_str(n);
            if i % 2 == 0 {
                text.push_str(&s);
            }
        }
        text.push_str(&s);
        text.push_str(&shown);
        let scrubbed = secrets.scrub(&text);
        prop_assert!(!scrubbed.contains(&s), "{}", scrubbed);
        prop_assert!(!secrets.found_in(&scrubbed));
    }

    /// A secret-named environment variable's value (8 characters or more) is scrubbed too; a
    /// variable with an ordinary name is left alone.
    #[test]
    fn a_secret_variable_is_scrubbed(
        s in secret(),
        name in prop::sample::select(vec!["HF_TOKEN", "OPENAI_API_KEY", "WANDB_API_KEY", "DB_PASSWORD", "X_SECRET"]),
        plain in "[a-z]{8,16}",
    ) {
        let mut secrets = Secrets::default();
        secrets.add_env([(name.to_string(), s.clone()), ("HOME_DIR".to_string(), plain.clone())]);
        let text = format!("token {s} in {plain} and {s}");
        let scrubbed = secrets.scrub(&text);
        prop_assert!(!scrubbed.contains(&s));
        prop_assert!(scrubbed.contains(&plain));
    }

    /// Several secrets, one inside another: each is masked whole and none survives.
    #[test]
    fn nested_secrets_are_all_masked(
        inner in secret(),
        pre in "[A-Za-z0-9]{1,8}",
        post in "[A-Za-z0-9]{1,8}",
        other in secret(),
    ) {
        let outer = format!("{pre}{inner}{post}");
        let argv: Vec<String> = vec![
            "--api-key".into(), inner.clone(),
            format!("HF_TOKEN={outer}"),
            "--hf-token".into(), other.clone(),
        ];
        let secrets = Secrets::from_argvs([argv.as_slice()]);
        let text = format!("{outer} {inner} {other}{outer}{inner}");
        let scrubbed = secrets.scrub(&text);
        for s in [&inner, &outer, &other] {
            prop_assert!(!scrubbed.contains(s.as_str()), "{} in {}", s, scrubbed);
        }
        prop_assert!(!redact_command(&argv, &secrets).contains(&inner));
    }
}
