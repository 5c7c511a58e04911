//! Links into the design record must land on a heading that exists.
//!
//! Source comments cite `docs/design/<page>.md#<anchor>` instead of any document outside the
//! repository (docs/design/README.md). A renamed heading would leave those citations dangling
//! without any build noticing, so this test reads every `.rs` and `.md` file of the repository
//! and fails on:
//!
//! - a `docs/<page>.md#<anchor>` mention (in code comments or prose; `docs/design/…` and the
//!   user documentation alike) whose page or anchor does not exist;
//! - a relative Markdown link `[text](path.md#anchor)` in a `.md` file whose target file or
//!   anchor does not exist.
//!
//! Anchors follow GitHub's rule: the heading's text lower-cased, every character that is not a
//! letter, digit, space, `-` or `_` removed, spaces turned into `-`, and `-1`, `-2` … appended
//! to repeated headings. Explicit `<a id="…">` / `<a name="…">` anchors count too.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Component, Path, PathBuf};

/// Whether a path or link names a Markdown file.
fn is_markdown(path: &str) -> bool {
    Path::new(path).extension().is_some_and(|e| e == "md")
}

/// Folders never scanned: build output, VCS data, recorded evidence (third-party files).
const SKIP_DIRS: &[&str] = &["target", ".git", "fixtures", "node_modules", ".venv"];

/// GitHub's anchor for a heading's text.
fn slug(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter(|c| c.is_alphanumeric() || *c == ' ' || *c == '-' || *c == '_')
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

/// Every anchor a Markdown text defines: its headings (outside fenced code) and explicit ids.
fn anchors(markdown: &str) -> BTreeSet<String> {
    let mut seen: BTreeMap<String, usize> = BTreeMap::new();
    let mut out = BTreeSet::new();
    let mut fence: Option<&str> = None;
    for line in markdown.lines() {
        let trimmed = line.trim_start();
        for marker in ["```", "~~~"] {
            if trimmed.starts_with(marker) {
                match fence {
                    None => fence = Some(marker),
                    Some(open) if open == marker => fence = None,
                    Some(_) => {}
                }
            }
        }
        if fence.is_some() || trimmed.starts_with("```") || trimmed.starts_with("~~~") {
            continue;
        }
        let hashes = line.chars().take_while(|c| *c == '#').count();
        if (1..=6).contains(&hashes) && line[hashes..].starts_with(' ') {
            let text = line[hashes..].trim().trim_end_matches('#').trim();
            let base = slug(text);
            let n = seen.entry(base.clone()).or_insert(0);
            out.insert(if *n == 0 {
                base.clone()
            } else {
                format!("{base}-{n}")
            });
            *n += 1;
        }
        for attr in ["id=\"", "name=\""] {
            let mut rest = line;
            while let Some(i) = rest.find(&format!("<a {attr}")) {
                rest = &rest[i + 3 + attr.len()..];
                if let Some(end) = rest.find('"') {
                    out.insert(rest[..end].to_string());
                }
            }
        }
    }
    out
}

/// `a/b/../c` → `a/c`, without touching the file system.
fn normalise(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
}

fn anchor_char(c: char) -> bool {
    c.is_alphanumeric() || c == '-' || c == '_'
}

fn path_char(c: char) -> bool {
    c.is_alphanumeric() || matches!(c, '-' | '_' | '.' | '/')
}

/// The `(page, anchor)` pairs a text cites as `docs/<page>.md[#anchor]` (`docs/design/…` included).
fn docs_mentions(text: &str) -> Vec<(String, Option<String>)> {
    let needle = "docs/";
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(i) = rest.find(needle) {
        rest = &rest[i + needle.len()..];
        let page: String = rest.chars().take_while(|c| path_char(*c)).collect();
        let page = page.trim_end_matches('.').to_string();
        if !is_markdown(&page) {
            continue;
        }
        let after = &rest[page.len()..];
        let anchor = after
            .strip_prefix('#')
            .map(|a| {
                a.chars()
                    .take_while(|c| anchor_char(*c))
                    .collect::<String>()
            })
            .filter(|a| !a.is_empty());
        out.push((page, anchor));
    }
    out
}

/// The relative `.md` targets of a Markdown text's inline links, `](target.md#anchor)`.
fn markdown_links(text: &str) -> Vec<(String, Option<String>)> {
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(i) = rest.find("](") {
        rest = &rest[i + 2..];
        let Some(end) = rest.find(')') else { break };
        let target = &rest[..end];
        if target.contains("://") || target.starts_with('#') || target.starts_with("mailto:") {
            continue;
        }
        let (file, anchor) = match target.split_once('#') {
            Some((f, a)) => (f, Some(a.to_string())),
            None => (target, None),
        };
        if is_markdown(file) && !file.contains(char::is_whitespace) {
            out.push((file.to_string(), anchor.filter(|a| !a.is_empty())));
        }
    }
    out
}

fn walk(dir: &Path, files: &mut Vec<PathBuf>) {
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        let name = entry.file_name().to_string_lossy().into_owned();
        if path.is_dir() {
            if !SKIP_DIRS.contains(&name.as_str()) {
                walk(&path, files);
            }
        } else if path.extension().is_some_and(|e| e == "rs" || e == "md") {
            files.push(path);
        }
    }
}

/// Every dangling link under `root`, as `file: link (why)`.
fn dangling(root: &Path) -> Vec<String> {
    let mut files = Vec::new();
    walk(root, &mut files);
    files.sort();
    let mut cache: BTreeMap<PathBuf, Option<BTreeSet<String>>> = BTreeMap::new();
    let mut anchors_of = |path: &Path| -> Option<BTreeSet<String>> {
        cache
            .entry(path.to_path_buf())
            .or_insert_with(|| fs::read_to_string(path).ok().map(|t| anchors(&t)))
            .clone()
    };
    let mut problems = Vec::new();
    for file in &files {
        let Ok(text) = fs::read_to_string(file) else {
            continue;
        };
        let shown = file
            .strip_prefix(root)
            .unwrap_or(file)
            .display()
            .to_string();
        let mut check =
            |target: PathBuf, anchor: Option<String>, link: String| match anchors_of(&target) {
                None => problems.push(format!("{shown}: {link} (no such file)")),
                Some(known) => {
                    if let Some(a) = anchor {
                        if !known.contains(&a) {
                            problems.push(format!("{shown}: {link} (no heading #{a})"));
                        }
                    }
                }
            };
        for (page, anchor) in docs_mentions(&text) {
            let link = match &anchor {
                Some(a) => format!("docs/{page}#{a}"),
                None => format!("docs/{page}"),
            };
            check(root.join("docs").join(&page), anchor, link);
        }
        if is_markdown(&shown) {
            let dir = file.parent().unwrap_or(root);
            for (target, anchor) in markdown_links(&text) {
                let link = match &anchor {
                    Some(a) => format!("{target}#{a}"),
                    None => target.clone(),
                };
                let resolved = if let Some(abs) = target.strip_prefix('/') {
                    root.join(abs)
                } else {
                    normalise(&dir.join(&target))
                };
                check(resolved, anchor, link);
            }
        }
    }
    problems
}

#[test]
fn every_design_link_lands_on_a_heading() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    assert!(
        root.join("docs/design/README.md").is_file(),
        "docs/design/ is missing"
    );
    let problems = dangling(root);
    assert!(
        problems.is_empty(),
        "dangling documentation links:\n{}",
        problems.join("\n")
    );
}

#[test]
fn slugs_follow_githubs_rule() {
    assert_eq!(slug("T8"), "t8");
    assert_eq!(
        slug("Counter deltas and restarts"),
        "counter-deltas-and-restarts"
    );
    assert_eq!(
        slug("`inferlint run`: the sequence"),
        "inferlint-run-the-sequence"
    );
    assert_eq!(slug("run.json"), "runjson");
    assert_eq!(slug("The server's address"), "the-servers-address");
    assert_eq!(slug("T2 orphaned-engine"), "t2-orphaned-engine");
    assert_eq!(
        slug("Every ending × every tree"),
        "every-ending--every-tree"
    );
}

#[test]
fn repeated_headings_and_fences() {
    let md = "# A\n## A\n```\n# not a heading\n```\n### B b\n<a id=\"x-y\"></a>\n";
    let a = anchors(md);
    for want in ["a", "a-1", "b-b", "x-y"] {
        assert!(a.contains(want), "{want} missing from {a:?}");
    }
    assert!(!a.contains("not-a-heading"));
}

#[test]
fn a_dangling_link_is_found() {
    // Built at run time so that the scan of this file does not see them.
    let dir = std::env::temp_dir().join(format!("docs-links-{}", std::process::id()));
    let design = dir.join("docs").join("design");
    fs::create_dir_all(&design).unwrap();
    fs::write(design.join("README.md"), "# Index\n## Kept\n").unwrap();
    fs::write(
        design.join("page.md"),
        "# Page\n## T8\n[ok](README.md#kept)\n",
    )
    .unwrap();
    let prefix = ["docs", "design"].join("/");
    let good = format!("// {prefix}/page.md#t8\n");
    fs::write(dir.join("good.rs"), &good).unwrap();
    assert!(dangling(&dir).is_empty(), "{:?}", dangling(&dir));

    fs::write(
        dir.join("bad.rs"),
        format!("// see {prefix}/page.md#t99.\n"),
    )
    .unwrap();
    fs::write(dir.join("gone.rs"), format!("// {prefix}/nothing.md#t8\n")).unwrap();
    fs::write(
        design.join("other.md"),
        "[x](page.md#missing) [y](../nope.md)\n",
    )
    .unwrap();
    let found = dangling(&dir);
    fs::remove_dir_all(&dir).unwrap();
    assert_eq!(found.len(), 4, "{found:#?}");
    assert!(found
        .iter()
        .any(|p| p.contains("page.md#t99 (no heading #t99)")));
    assert!(found
        .iter()
        .any(|p| p.contains("nothing.md#t8 (no such file)")));
    assert!(found
        .iter()
        .any(|p| p.contains("page.md#missing (no heading")));
    assert!(found
        .iter()
        .any(|p| p.contains("../nope.md (no such file)")));
}
