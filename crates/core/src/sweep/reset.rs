//! Whether a server's command line lets a reset of its prompt cache between a sweep's points
//! take (docs/design/sweeps.md#between-the-points).
//!
//! llama.cpp's `llama-server` keeps prompts in two places: each slot's own cells, which
//! `POST /slots/ID?action=erase` clears, and a prompt cache in host memory (`--cache-ram`,
//! 8,192 MiB unless set), which a slot restores from when a prompt it holds comes again and
//! which no endpoint clears. The erase itself is served only with `--slot-save-path` (the same
//! switch turns on saving slots to files). So a reset takes only on a server started with both
//! `--slot-save-path DIR` and `--cache-ram 0`; inferlint adds neither to the user's command,
//! since one widens what the server does on request and the other changes what is measured.

use crate::argv::{flag_value, strip_launchers};

/// The prompt cache in host memory llama-server keeps unless told otherwise, in MiB.
pub const LLAMACPP_DEFAULT_CACHE_RAM_MIB: i64 = 8192;

/// Why a reset between points cannot take on the llama-server `argv` starts, or None when it
/// can. llama.cpp reads `LLAMA_ARG_CACHE_RAM` and `LLAMA_ARG_SLOT_SAVE_PATH` where the flags
/// are not given: from an `env NAME=VALUE` in front of the command, else from `env`, the
/// environment the server inherits.
pub fn llamacpp_reset_blocker(
    argv: &[String],
    env: impl Fn(&str) -> Option<String>,
) -> Option<String> {
    let start = strip_launchers(argv).start;
    let assigned = |var: &str| {
        let prefix = format!("{var}=");
        argv[..start]
            .iter()
            .rev()
            .find_map(|w| w.strip_prefix(&prefix).map(str::to_string))
    };
    let command = &argv[start..];
    let flag = |long: &str, short: Option<&str>, var: &str| {
        flag_value(command, long)
            .or_else(|| short.and_then(|s| flag_value(command, s)))
            .or_else(|| assigned(var))
            .or_else(|| env(var))
    };
    let save_path =
        flag("--slot-save-path", None, "LLAMA_ARG_SLOT_SAVE_PATH").filter(|p| !p.trim().is_empty());
    let cache_ram = flag("--cache-ram", Some("-cram"), "LLAMA_ARG_CACHE_RAM");
    let cache_ram_mib = match &cache_ram {
        None => Some(LLAMACPP_DEFAULT_CACHE_RAM_MIB),
        Some(v) => v.trim().parse::<i64>().ok(),
    };
    let mut missing = Vec::new();
    if save_path.is_none() {
        missing.push("--slot-save-path DIR (llama-server erases a slot only with it)".to_string());
    }
    match cache_ram_mib {
        Some(0) => {}
        Some(n) => missing.push(format!(
            "--cache-ram 0 (its prompt cache in host memory, {}, keeps the earlier points' prompts, and no endpoint clears it)",
            if n < 0 {
                "unlimited".to_string()
            } else if cache_ram.is_none() {
                format!("{n} MiB by default")
            } else {
                format!("{n} MiB")
            }
        )),
        None => missing.push(format!(
            "--cache-ram 0 (its --cache-ram is {:?}, which llama.cpp does not read as a size)",
            cache_ram.unwrap_or_default()
        )),
    }
    if missing.is_empty() {
        None
    } else {
        Some(format!(
            "llama-server resets its prompt cache only when started with {}",
            missing.join(" and ")
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn argv(s: &str) -> Vec<String> {
        s.split_whitespace().map(str::to_string).collect()
    }

    fn no_env(_: &str) -> Option<String> {
        None
    }

    #[test]
    fn both_switches_let_the_reset_take() {
        let a = argv("llama-server -m m.gguf --slot-save-path /tmp/s --cache-ram 0");
        assert_eq!(llamacpp_reset_blocker(&a, no_env), None);
        let a = argv("llama-server -m m.gguf --slot-save-path=/tmp/s -cram 0");
        assert_eq!(llamacpp_reset_blocker(&a, no_env), None);
    }

    #[test]
    fn each_missing_switch_is_named() {
        let why = llamacpp_reset_blocker(&argv("llama-server -m m.gguf"), no_env).unwrap();
        assert!(why.contains("--slot-save-path DIR"), "{why}");
        assert!(why.contains("--cache-ram 0"), "{why}");
        assert!(why.contains("8192 MiB by default"), "{why}");
        let why = llamacpp_reset_blocker(
            &argv("llama-server --slot-save-path /s --cache-ram 512"),
            no_env,
        )
        .unwrap();
        assert!(!why.contains("--slot-save-path DIR"), "{why}");
        assert!(why.contains("512 MiB,"), "{why}");
        let why = llamacpp_reset_blocker(&argv("llama-server --cache-ram -1"), no_env).unwrap();
        assert!(why.contains("unlimited"), "{why}");
        let why = llamacpp_reset_blocker(
            &argv("llama-server --slot-save-path /s --cache-ram x"),
            no_env,
        )
        .unwrap();
        assert!(why.contains("\"x\""), "{why}");
    }

    #[test]
    fn the_environment_stands_in_for_the_flags() {
        let env = |k: &str| match k {
            "LLAMA_ARG_CACHE_RAM" => Some("0".to_string()),
            "LLAMA_ARG_SLOT_SAVE_PATH" => Some("/s".to_string()),
            _ => None,
        };
        assert_eq!(
            llamacpp_reset_blocker(&argv("llama-server -m m"), env),
            None
        );
        let a = argv("env LLAMA_ARG_CACHE_RAM=0 LLAMA_ARG_SLOT_SAVE_PATH=/s llama-server -m m");
        assert_eq!(llamacpp_reset_blocker(&a, no_env), None);
        let a = argv("env LLAMA_ARG_CACHE_RAM=0 llama-server -m m");
        let why = llamacpp_reset_blocker(&a, no_env).unwrap();
        assert!(
            why.contains("--slot-save-path DIR") && !why.contains("--cache-ram"),
            "{why}"
        );
        // A flag on the command line wins over the environment, as llama.cpp's own reading does.
        let why = llamacpp_reset_blocker(&argv("llama-server --cache-ram 64"), env).unwrap();
        assert!(why.contains("64 MiB"), "{why}");
    }
}
