//! Names for logs in verdict lines: the shortest path suffix that tells a log from the others,
//! so two `boot.log` files in different run folders are not merged (`run1/boot.log`).

use std::path::{Component, PathBuf};

/// The shortest distinct path suffix of each path, in order.
pub fn log_labels(paths: &[PathBuf]) -> Vec<String> {
    let parts: Vec<Vec<String>> = paths
        .iter()
        .map(|p| {
            p.components()
                .filter(|c| !matches!(c, Component::CurDir))
                .map(|c| c.as_os_str().to_string_lossy().into_owned())
                .filter(|s| !s.is_empty() && s != "/")
                .collect()
        })
        .collect();
    let suffix = |i: usize, k: usize| -> String {
        let p = &parts[i];
        p[p.len().saturating_sub(k)..].join("/")
    };
    (0..paths.len())
        .map(|i| {
            let n = parts[i].len().max(1);
            (1..=n)
                .map(|k| suffix(i, k))
                .find(|label| {
                    let k = label.matches('/').count() + 1;
                    (0..paths.len()).all(|j| j == i || suffix(j, k) != *label)
                })
                .unwrap_or_else(|| paths[i].display().to_string())
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn labels(ps: &[&str]) -> Vec<String> {
        log_labels(&ps.iter().map(PathBuf::from).collect::<Vec<_>>())
    }

    #[test]
    fn shortest_distinct_suffixes() {
        assert_eq!(
            labels(&["/x/run1/boot.log", "/x/run2/boot.log"]),
            ["run1/boot.log", "run2/boot.log"]
        );
        assert_eq!(
            labels(&[
                "f/vllm-0.28/boot_pool_level_hi.log",
                "f/vllm-0.28/boot_pool_level_lo.log"
            ]),
            ["boot_pool_level_hi.log", "boot_pool_level_lo.log"]
        );
        assert_eq!(
            labels(&["a/b/boot.log", "c/b/boot.log", "x.log"]),
            ["a/b/boot.log", "c/b/boot.log", "x.log"]
        );
        assert_eq!(
            labels(&["boot.log", "run1/boot.log"]),
            ["boot.log", "run1/boot.log"]
        );
        assert_eq!(labels(&["./one.log"]), ["one.log"]);
        assert_eq!(labels(&["same.log", "same.log"]), ["same.log", "same.log"]);
    }
}
