//! The sweep page (docs/design/report.md#the-sweep-page) from a sweep folder the program made on
//! the simulator (tests/fixtures/sim-sweep): every point, a hollow mark and its reasons for a
//! point that does not hold, the knee, the links to each point's page; balanced and offline;
//! `inferlint report SWEEP_DIR` and `report --compare` of two sweeps; a flipped verdict flips
//! its mark; 32 points render fast and small; and the page in Chromium (tests/browser/sweep.mjs).

use crate::report_support::*;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use inferlint_core::result::Status;
use inferlint_core::sweep::{Between, Sweep};
use inferlint_report::sweep_page::{self, Curve, SweepPage};

fn fixture() -> PathBuf {
    inferlint_core::testkit::evidence("sim-sweep").expect("tests/fixtures/sim-sweep is committed")
}

fn page_of(sweep: Sweep) -> String {
    let mut page = SweepPage::new(vec![Curve {
        label: String::new(),
        sweep,
        href_base: String::new(),
        server: Some("vLLM 0.28.0".into()),
    }]);
    page.generated_at = Some("2026-09-26 17:52 UTC-7".into());
    page.render_page()
}

/// The chart marks of point `i`: `<a class="bar point" … data-point="i" …>` … `</a>`.
fn marks(html: &str, i: usize) -> Vec<&str> {
    let key = format!("data-point=\"{i}\" data-holds=");
    html.match_indices(&key)
        .map(|(at, _)| {
            let start = html[..at].rfind("<a ").unwrap();
            let end = at + html[at..].find("</a>").unwrap();
            &html[start..end]
        })
        .collect()
}

/// The table row of point `i`.
fn row(html: &str, i: usize) -> &str {
    let key = format!("<tr class=\"holds\" data-point=\"{i}\"");
    let alt = format!("<tr class=\"not-holds\" data-point=\"{i}\"");
    let start = html.find(&key).or_else(|| html.find(&alt)).unwrap();
    let end = start + html[start..].find("</tr>").unwrap();
    &html[start..end]
}

#[test]
fn the_page_shows_every_point_its_verdict_the_knee_and_the_links() {
    let sweep = sweep_page::read_sweep(&fixture()).unwrap();
    assert_eq!(sweep.points.len(), 4);
    assert_eq!(sweep.knee, Some(4));
    let html = page_of(sweep.clone());
    check_balanced(&html).unwrap();
    assert_offline(&html);
    for p in &sweep.points {
        let why = sweep.why_not(p.index);
        // One mark on each of the two charts.
        let m = marks(&html, p.index);
        assert_eq!(m.len(), 2, "point {}", p.index);
        let link = format!("href=\"{}/report.html\"", p.folder);
        assert!(link.contains("points/0"), "{link}");
        for mark in &m {
            assert!(mark.contains(&link), "{mark}");
            assert_eq!(mark.contains("hollow"), !why.is_empty(), "{mark}");
        }
        let r = row(&html, p.index);
        assert!(r.contains(&link), "{r}");
        assert!(r.contains(&p.label), "{r}");
        if why.is_empty() {
            assert!(r.contains("yes"), "{r}");
        } else {
            for w in &why {
                assert!(r.contains(w.as_str()), "{w}: {r}");
                assert!(m[0].contains(w.as_str()), "the tooltip says {w}: {}", m[0]);
            }
        }
    }
    // Point 1 holds; 2 to 4 were served from point 1's cache; 4 is the knee.
    assert!(marks(&html, 1)[0].contains("data-holds=\"yes\""));
    assert!(row(&html, 2).contains("cache of point 1"));
    assert!(row(&html, 4).contains("T8 failed"));
    for (i, m) in (1..=4).flat_map(|i| marks(&html, i).into_iter().map(move |m| (i, m))) {
        assert_eq!(m.contains("class=\"knee\""), i == 4, "point {i}: {m}");
    }
    assert!(row(&html, 4).contains("knee-badge"));
    assert!(html.contains("The knee is point 4 (--max-concurrency 8)"));
    // Every finding across the points is on the page, and the data is embedded.
    for f in &sweep.findings {
        assert!(html.contains(&f.message.replace('\'', "&#39;")) || html.contains(&f.message));
    }
    assert!(html.contains("id=\"inferlint-data\""));
    assert!(html.contains(sweep_page::SCHEMA));
}

#[test]
fn a_flipped_verdict_flips_its_mark() {
    let mut sweep = sweep_page::read_sweep(&fixture()).unwrap();
    // Point 1 held: one failed check makes it hollow, and the table says which.
    sweep.points[0].results[0].status = Status::Fail;
    let t = sweep.points[0].results[0].tripwire;
    // Point 2 did not: its failures passed and no finding naming it, it holds.
    for r in &mut sweep.points[1].results {
        r.status = Status::Pass;
    }
    sweep.findings.retain(|f| f.point != 2);
    let html = page_of(sweep);
    check_balanced(&html).unwrap();
    for m in marks(&html, 1) {
        assert!(
            m.contains("hollow") && m.contains("data-holds=\"no\""),
            "{m}"
        );
    }
    assert!(row(&html, 1).contains(&format!("{t} failed")));
    for m in marks(&html, 2) {
        assert!(
            !m.contains("hollow") && m.contains("data-holds=\"yes\""),
            "{m}"
        );
    }
    assert!(row(&html, 2).contains("yes"));
}

fn copy_sweep(to: &Path) {
    copy_dir(&fixture(), to);
}

fn report(args: &[&str], cwd: &Path) -> (i32, String, String) {
    let out = Command::new(bin())
        .arg("report")
        .args(args)
        .current_dir(cwd)
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn report_of_a_sweep_folder_writes_sweep_html_and_exits_as_the_results_say() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("sw");
    copy_sweep(&dir);
    let (code, stdout, stderr) = report(&["sw"], tmp.path());
    // T8 and T16 failed at points 2 to 4.
    assert_eq!(code, 1, "{stdout}{stderr}");
    let page = dir.join("sweep.html");
    assert!(
        stdout.ends_with(&format!(
            "-> {}\n",
            Path::new("sw").join("sweep.html").display()
        )),
        "{stdout}"
    );
    let sweep = sweep_page::read_sweep(&dir).unwrap();
    for line in inferlint_core::sweep::table(&sweep) {
        assert!(stdout.contains(&line), "{line}\n{stdout}");
    }
    let html = std::fs::read_to_string(&page).unwrap();
    check_balanced(&html).unwrap();
    assert_offline(&html);
    assert!(html.contains("href=\"points/01-max-concurrency-1/report.html\""));
    // With every verdict passing and nothing found across the points, it exits 0.
    let mut sweep = sweep;
    for p in &mut sweep.points {
        for r in &mut p.results {
            r.status = Status::Pass;
        }
    }
    sweep.findings.clear();
    sweep.knee = None;
    std::fs::write(dir.join("sweep.json"), sweep.to_json()).unwrap();
    let (code, stdout, stderr) = report(&["sw"], tmp.path());
    assert_eq!(code, 0, "{stdout}{stderr}");
    let table: Vec<&str> = stdout
        .lines()
        .filter(|l| l.contains("--max-concurrency"))
        .collect();
    assert_eq!(table.len(), 4, "{stdout}");
    assert!(table.iter().all(|l| l.ends_with(" yes")), "{stdout}");
}

#[test]
fn compare_lays_two_sweeps_on_one_chart() {
    let tmp = tempfile::tempdir().unwrap();
    copy_sweep(&tmp.path().join("engine-a"));
    copy_sweep(&tmp.path().join("engine-b"));
    let (code, stdout, stderr) = report(
        &["--compare", "engine-a", "engine-b", "-o", "out/sweeps.html"],
        tmp.path(),
    );
    assert_eq!(code, 0, "{stdout}{stderr}");
    assert!(stdout.contains("2 sweeps compared -> "), "{stdout}");
    let html = std::fs::read_to_string(tmp.path().join("out/sweeps.html")).unwrap();
    check_balanced(&html).unwrap();
    assert_offline(&html);
    for (label, class) in [("engine-a", "s1"), ("engine-b", "s2")] {
        assert_eq!(
            html.matches(&format!("class=\"curve {class}\" data-sweep=\"{label}\""))
                .count(),
            2,
            "{label}"
        );
        assert!(html.contains(&format!(
            "href=\"../{label}/points/04-max-concurrency-8/report.html\""
        )));
        assert!(html.contains(&format!("{label} knee")));
    }
    // Each point still marked: three hollow rings a curve on each chart.
    for class in ["s1", "s2"] {
        assert_eq!(
            html.matches(&format!("class=\"pt {class} hollow\""))
                .count(),
            2 * 3
        );
        assert_eq!(html.matches(&format!("class=\"pt {class}\"")).count(), 2);
    }
    // A run folder cannot be compared with a sweep folder.
    std::fs::create_dir_all(tmp.path().join("plain")).unwrap();
    let (code, _, stderr) = report(&["--compare", "engine-a", "plain"], tmp.path());
    assert_ne!(code, 0);
    assert!(stderr.contains("not both"), "{stderr}");
}

/// A sweep of `n` points made from the fixture's first point, judged across by core.
fn synthetic(n: usize) -> Sweep {
    let base = sweep_page::read_sweep(&fixture()).unwrap();
    let points = (1..=n)
        .map(|i| {
            let mut p = base.points[(i - 1) % base.points.len()].clone();
            let c = i as u64 * 4;
            p.index = i;
            p.value = c.to_string();
            p.label = format!("--max-concurrency {c}");
            p.folder = format!("points/{i:02}-max-concurrency-{c}");
            p.asked_concurrency = Some(c);
            p.figures.output_tokens_per_s = Some(50.0 * (i as f64).sqrt());
            p.figures.ttft_p50_ms = Some(10.0 * i as f64 * i as f64);
            p
        })
        .collect();
    Sweep::new("max-concurrency", Between::ResetCache, points)
}

#[test]
fn a_sweep_of_32_points_renders_in_under_a_second_and_2_mb() {
    let sweep = synthetic(32);
    let start = Instant::now();
    let html = page_of(sweep);
    let took = start.elapsed();
    eprintln!("32 points: {} bytes in {took:?}", html.len());
    assert!(took.as_secs_f64() <= 1.0, "{took:?}");
    assert!(html.len() <= 2_000_000, "{}", html.len());
    check_balanced(&html).unwrap();
    assert_eq!(marks(&html, 32).len(), 2);
}

/// Why the browser cannot run here (tests/report_browser.rs needs the same tools), if it cannot;
/// panics under CI=true, where the browser test must run.
fn browser_missing() -> Option<String> {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let chromium = std::env::var("CHROMIUM").unwrap_or_else(|_| "/usr/bin/chromium".into());
    let why = if !Path::new(&chromium).exists() {
        Some(format!("no Chromium at {chromium}"))
    } else if Command::new("node").arg("--version").output().is_err() {
        Some("no node".to_string())
    } else if !root
        .join("tests/browser/node_modules/playwright-core")
        .is_dir()
    {
        Some("no playwright-core (npm ci --prefix tests/browser)".to_string())
    } else {
        None
    };
    if let Some(w) = &why {
        assert!(
            !std::env::var("CI").is_ok_and(|v| v == "true"),
            "the browser test cannot run under CI=true: {w}"
        );
        eprintln!("skipping the sweep page's browser test: {w}");
    }
    why
}

/// Runs tests/browser/sweep.mjs on a page of `points` points; its exit code and JSON report.
fn browser_check(page: &Path, points: usize, shots: Option<&Path>) -> (i32, serde_json::Value) {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let mut cmd = Command::new("node");
    cmd.arg(root.join("tests/browser/sweep.mjs"))
        .arg(page)
        .arg(points.to_string());
    if let Some(dir) = shots {
        cmd.arg(dir);
    }
    let out = cmd.output().expect("node runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let v = serde_json::from_str(&stdout).unwrap_or_else(|_| {
        panic!(
            "sweep.mjs said: {stdout}\n{}",
            String::from_utf8_lossy(&out.stderr)
        )
    });
    (out.status.code().unwrap_or(-1), v)
}

/// The sweep page in Chromium: the curves, a hollow mark exactly where a point does not hold,
/// the knee, the links, the reasons on hover and focus, nothing fetched.
/// `INFERLINT_UPDATE_SCREENSHOTS=1` writes docs/sweep-page.png.
#[test]
fn the_sweep_page_works_in_a_browser() {
    if browser_missing().is_some() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("sweep");
    copy_sweep(&dir);
    let page = dir.join("sweep.html");
    let mut html = page_of(sweep_page::read_sweep(&dir).unwrap());
    std::fs::write(&page, &html).unwrap();
    let shots = if std::env::var("INFERLINT_UPDATE_SCREENSHOTS").is_ok_and(|v| v == "1") {
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("docs")
    } else {
        tmp.path().to_path_buf()
    };
    let (code, v) = browser_check(&page, 4, Some(&shots));
    assert_eq!(code, 0, "{v:#}");
    assert!(shots.join("sweep-page.png").metadata().unwrap().len() > 10_000);
    // The check can fail: a point that does not hold drawn filled is caught.
    let at = html.find("class=\"pt s1 hollow\"").unwrap();
    html.replace_range(at..at + "class=\"pt s1 hollow\"".len(), "class=\"pt s1\"");
    std::fs::write(&page, &html).unwrap();
    let (code, v) = browser_check(&page, 4, None);
    assert_eq!(code, 1, "{v:#}");
    assert_ne!(
        v["checks"]["hollow exactly where a point does not hold"], true,
        "{v:#}"
    );
}
