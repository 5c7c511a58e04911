//! Helpers shared by the report tests: building a report from a recorded run folder, a small
//! HTML tag-balance checker, and readers for the page's charts.
#![allow(dead_code)]

pub mod long;

use std::path::{Path, PathBuf};

use inferlint_report::discover::RunFiles;
use inferlint_report::{Inputs, Report};

/// The inputs of a recorded run folder (files found by name), or None when the evidence is
/// absent outside CI.
pub fn inputs(rel: &str) -> Option<Inputs> {
    let dir = inferlint_core::testkit::evidence(rel)?;
    let files = RunFiles {
        folder: Some(dir),
        ..RunFiles::default()
    }
    .discover()
    .expect("run files found");
    let mut inputs = files.load(None).expect("run files read");
    inputs.generated_at = Some("2026-09-26 17:52 UTC-7".into());
    Some(inputs)
}

pub fn build(inputs: Inputs) -> Report {
    Report::build(inputs)
}

/// Elements that have no closing tag.
const VOID: [&str; 14] = [
    "area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track",
    "wbr", "param",
];

/// Checks that every element is closed in order. Script and style contents are raw text.
pub fn check_balanced(html: &str) -> Result<usize, String> {
    let bytes = html.as_bytes();
    let mut stack: Vec<String> = Vec::new();
    let mut i = 0;
    let mut elements = 0;
    while let Some(off) = html[i..].find('<') {
        i += off;
        if html[i..].starts_with("<!--") {
            i += html[i..].find("-->").ok_or("unclosed comment")? + 3;
            continue;
        }
        if html[i..].starts_with("<!") {
            i += html[i..].find('>').ok_or("unclosed doctype")? + 1;
            continue;
        }
        // Find the end of the tag, skipping quoted attribute values.
        let mut j = i + 1;
        let mut quote: Option<u8> = None;
        while j < bytes.len() {
            let b = bytes[j];
            match quote {
                Some(q) if b == q => quote = None,
                Some(_) => {}
                None if b == b'"' || b == b'\'' => quote = Some(b),
                None if b == b'>' => break,
                None if b == b'<' => return Err(format!("'<' inside a tag at byte {j}")),
                None => {}
            }
            j += 1;
        }
        if j >= bytes.len() {
            return Err(format!("unterminated tag at byte {i}"));
        }
        let tag = &html[i + 1..j];
        let self_closing = tag.ends_with('/');
        if let Some(name) = tag.strip_prefix('/') {
            let name = name.trim().to_ascii_lowercase();
            match stack.pop() {
                Some(open) if open == name => {}
                Some(open) => return Err(format!("</{name}> closes <{open}> at byte {i}")),
                None => return Err(format!("</{name}> with nothing open at byte {i}")),
            }
            i = j + 1;
            continue;
        }
        let name: String = tag
            .split(|c: char| c.is_whitespace() || c == '/')
            .next()
            .unwrap_or("")
            .to_ascii_lowercase();
        if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '-') {
            return Err(format!("bad tag name {name:?} at byte {i}"));
        }
        elements += 1;
        i = j + 1;
        if self_closing || VOID.contains(&name.as_str()) {
            continue;
        }
        if name == "script" || name == "style" {
            let close = format!("</{name}>");
            let end = html[i..]
                .find(&close)
                .ok_or_else(|| format!("unclosed <{name}>"))?;
            i += end + close.len();
            continue;
        }
        stack.push(name);
    }
    if let Some(open) = stack.pop() {
        return Err(format!("<{open}> never closed"));
    }
    Ok(elements)
}

/// The part of the page inside `<figure … id="ID" …>` … `</figure>`.
pub fn figure<'a>(html: &'a str, id: &str) -> Option<&'a str> {
    let start = html.find(&format!("id=\"{id}\""))?;
    let start = html[..start].rfind("<figure")?;
    let end = html[start..].find("</figure>")? + start;
    Some(&html[start..end])
}

/// The sum of the counts on a chart's event triangles.
pub fn triangle_sum(figure: &str) -> f64 {
    figure
        .match_indices("class=\"ev\" data-count=\"")
        .map(|(i, m)| {
            let rest = &figure[i + m.len()..];
            rest[..rest.find('"').unwrap()].parse::<f64>().unwrap()
        })
        .sum()
}

/// No external resource: no http(s):// or // in src/href, no @import, no url(http.
pub fn assert_offline(html: &str) {
    for attr in ["src=\"", "href=\"", "src='", "href='"] {
        for (i, m) in html.match_indices(attr) {
            let v = &html[i + m.len()..];
            assert!(
                !(v.starts_with("http://") || v.starts_with("https://") || v.starts_with("//")),
                "external {attr}{}",
                &v[..v.len().min(60)]
            );
        }
    }
    assert!(!html.contains("@import"));
    assert!(!html.contains("url(http"));
    assert!(html.contains("default-src 'none'"));
}

pub fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_inferlint")
}

/// A copy of a recorded run folder in a temporary folder (the evidence is read-only).
pub fn copy_run(rel: &str) -> Option<(tempfile::TempDir, PathBuf)> {
    let src = inferlint_core::testkit::evidence(rel)?;
    let tmp = tempfile::tempdir().unwrap();
    let dst = tmp.path().join("run");
    copy_dir(&src, &dst);
    Some((tmp, dst))
}

pub fn copy_dir(src: &Path, dst: &Path) {
    std::fs::create_dir_all(dst).unwrap();
    for e in std::fs::read_dir(src).unwrap() {
        let e = e.unwrap();
        if e.file_type().unwrap().is_file() {
            let to = dst.join(e.file_name());
            std::fs::copy(e.path(), &to).unwrap();
            let mut perm = std::fs::metadata(&to).unwrap().permissions();
            #[allow(clippy::permissions_set_readonly_false)]
            perm.set_readonly(false);
            std::fs::set_permissions(&to, perm).unwrap();
        }
    }
}

#[test]
fn the_balance_checker_can_fail() {
    assert!(check_balanced("<div><p>x</p></div>").is_ok());
    assert!(check_balanced("<div><p>x</div>").is_err());
    assert!(check_balanced("<div>").is_err());
    assert!(
        check_balanced("<script>if (a < b) {}</script><br><svg><path d=\"M0 0\"/></svg>").is_ok()
    );
    assert!(check_balanced("<svg><path d=\"M0 0\"></svg>").is_err());
}
