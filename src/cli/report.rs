//! `inferlint report`: the HTML report of a saved run (a run folder, or files named one by one),
//! a comparison of runs, or the data read back from a saved page.

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context};

use inferlint_core::engine::{self, NamedEngine};
use inferlint_core::output;
use inferlint_report::compare::Comparison;
use inferlint_report::discover::{self, RunFiles};
use inferlint_report::{embed, sweep_page, Report};

#[derive(clap::Args, Debug)]
pub struct Args {
    /// The run folder (what `run` wrote): its files are found by name.
    #[arg(value_name = "RUN")]
    pub run: Option<PathBuf>,
    /// Where to write the page (default RUN/report.html).
    #[arg(short = 'o', long = "out", value_name = "FILE")]
    pub out: Option<PathBuf>,
    /// The server's boot log; give it again for other starts (T4, T11).
    #[arg(long = "boot-log", value_name = "LOG")]
    pub boot_log: Vec<PathBuf>,
    /// The snapshot taken before the load.
    #[arg(long, value_name = "SNAPSHOT")]
    pub before: Option<PathBuf>,
    /// The snapshot taken after the load.
    #[arg(long, value_name = "SNAPSHOT")]
    pub after: Option<PathBuf>,
    /// The recording of the run (a .series.jsonl file).
    #[arg(long, value_name = "REC")]
    pub series: Option<PathBuf>,
    /// The load tool's result file (default bench.json or bench.jsonl in RUN).
    #[arg(long = "bench-result", value_name = "PATH")]
    pub bench_result: Option<PathBuf>,
    /// The concurrency the load asked for (default: the result file's max_concurrency).
    #[arg(long, value_name = "N")]
    pub requested: Option<u64>,
    /// The page's title.
    #[arg(long)]
    pub title: Option<String>,
    /// vllm, sglang, trtllm or llamacpp (default: read from the files, or INFERLINT_ENGINE).
    #[arg(long)]
    pub engine: Option<String>,
    /// Print only the results as a JSON array.
    #[arg(long)]
    pub json: bool,
    /// Read the results back from a saved report page instead of writing one.
    #[arg(long = "from-html", value_name = "FILE", conflicts_with_all = ["run", "compare", "boot_log", "before", "after", "series", "bench_result"])]
    pub from_html: Option<PathBuf>,
    /// Compare two or more run folders on one page.
    #[arg(long, value_name = "RUN", num_args = 2.., conflicts_with_all = ["run", "boot_log", "before", "after", "series", "bench_result"])]
    pub compare: Vec<PathBuf>,
}

pub fn run(args: Args) -> anyhow::Result<i32> {
    let named = engine::named_engine(args.engine.as_deref())?;
    if let Some(page) = &args.from_html {
        return from_html(page, args.json);
    }
    if !args.compare.is_empty() {
        if args.compare.iter().any(|d| sweep_page::is_sweep_folder(d)) {
            return sweep::compare(&args);
        }
        return compare(&args, named.as_ref());
    }
    if let Some(dir) = args.run.as_ref().filter(|d| sweep_page::is_sweep_folder(d)) {
        return sweep::report(dir, &args);
    }
    let files = RunFiles {
        folder: args.run.clone(),
        boot_logs: args.boot_log.clone(),
        before: args.before.clone(),
        after: args.after.clone(),
        series: args.series.clone(),
        bench: args.bench_result.clone(),
        load_log: None,
        load_started: false,
    };
    if args.run.is_none() && args.out.is_none() {
        bail!("give a run folder, or -o and the files to read");
    }
    let files = files.discover()?;
    let out = match (&args.out, &args.run) {
        (Some(o), _) => o.clone(),
        (None, Some(run)) => run.join("report.html"),
        (None, None) => bail!("give a run folder, or -o and the files to read"),
    };
    refuse_overwriting_inputs(&out, &files.paths())?;
    let mut inputs = files.load(named.as_ref().map(|n| n.engine))?;
    let mut err = std::io::stderr();
    match &named {
        Some(n) => {
            if let Some((what, actual)) = discover::engine_mismatch(&inputs, &files, n.engine) {
                eprintln!("inferlint: {}", engine::refusal(n, &what, actual));
                return Ok(2);
            }
        }
        None if !discover::engine_known(&inputs) => {
            let note = match &args.run {
                Some(r) => engine::read_as_vllm_note(&r.display().to_string(), false),
                None => engine::read_as_vllm_note("the files", true),
            };
            writeln!(err, "{note}")?;
        }
        None => {}
    }
    if args.requested.is_some() {
        inputs.requested = args.requested;
    }
    inputs.title = args.title.clone();
    // Never dropped: a day's recording is tens of MiB in many small allocations (docs/benchmarks.md
    // measured freeing them at ~12 ms), and the process ends after printing, which returns the
    // memory at once.
    let report = std::mem::ManuallyDrop::new(Report::build(inputs));
    if let Some(note) = report
        .first_facts()
        .and_then(inferlint_core::bootlog::untested_version_note)
    {
        writeln!(err, "{note}")?;
    }
    report
        .write(&out)
        .with_context(|| format!("cannot write {}", out.display()))?;
    let mut stdout = std::io::stdout().lock();
    if args.json {
        output::print_results(&mut stdout, report.results(), true)?;
        return Ok(0);
    }
    output::print_results(&mut stdout, report.results(), false)?;
    if !report.insights().is_empty() {
        writeln!(stdout, "What limited this run:")?;
        for line in report.insight_lines() {
            writeln!(stdout, "{line}")?;
        }
    }
    writeln!(
        stdout,
        "{} -> {}",
        output::counts_line(report.results()),
        out.display()
    )?;
    Ok(0)
}

/// The report must never replace a file it was made from.
fn refuse_overwriting_inputs(out: &Path, inputs: &[&Path]) -> anyhow::Result<()> {
    let canon = |p: &Path| std::fs::canonicalize(p).ok();
    if let Some(o) = canon(out) {
        if inputs.iter().any(|i| canon(i).as_ref() == Some(&o)) {
            bail!(
                "{} is one of the report's input files; choose another -o",
                out.display()
            );
        }
    }
    Ok(())
}

fn from_html(page: &Path, json: bool) -> anyhow::Result<i32> {
    let bytes = std::fs::read(page).with_context(|| format!("{}", page.display()))?;
    let html = String::from_utf8_lossy(&bytes);
    let data = embed::read_back(&html, &page.display().to_string())?;
    let mut stdout = std::io::stdout().lock();
    if json {
        output::print_results(&mut stdout, &data.results, true)?;
        return Ok(0);
    }
    writeln!(stdout, "{}", data.title)?;
    output::print_results(&mut stdout, &data.results, false)?;
    if !data.insights.is_empty() {
        writeln!(stdout, "What limited this run:")?;
        for i in &data.insights {
            writeln!(stdout, "  - {}", i.line())?;
        }
    }
    writeln!(stdout, "{}", output::counts_line(&data.results))?;
    Ok(0)
}

fn compare(args: &Args, named: Option<&NamedEngine>) -> anyhow::Result<i32> {
    let labels = inferlint_core::bootlog::log_labels(&args.compare);
    let mut runs = Vec::new();
    let mut inputs_seen: Vec<PathBuf> = Vec::new();
    for (folder, label) in args.compare.iter().zip(labels) {
        let files = RunFiles {
            folder: Some(folder.clone()),
            ..RunFiles::default()
        }
        .discover()?;
        inputs_seen.extend(files.paths().into_iter().map(Path::to_path_buf));
        let mut inputs = files.load(named.map(|n| n.engine))?;
        if let Some(n) = named {
            if let Some((what, actual)) = discover::engine_mismatch(&inputs, &files, n.engine) {
                eprintln!("inferlint: {}", engine::refusal(n, &what, actual));
                return Ok(2);
            }
        }
        if args.requested.is_some() {
            inputs.requested = args.requested;
        }
        runs.push((label, Report::build(inputs)));
    }
    let out = args
        .out
        .clone()
        .unwrap_or_else(|| PathBuf::from("compare.html"));
    let seen: Vec<&Path> = inputs_seen.iter().map(PathBuf::as_path).collect();
    refuse_overwriting_inputs(&out, &seen)?;
    let comparison = Comparison::new(runs);
    inferlint_report::write_atomically(&out, comparison.render_page().as_bytes())
        .with_context(|| format!("cannot write {}", out.display()))?;
    let mut stdout = std::io::stdout().lock();
    if args.json {
        output::print_results(&mut stdout, &comparison.all_results(), true)?;
        return Ok(0);
    }
    for (label, r) in &comparison.runs {
        writeln!(stdout, "{label}: {}", output::counts_line(r.results()))?;
    }
    for r in &comparison.across {
        writeln!(stdout, "{}", r.line())?;
    }
    writeln!(
        stdout,
        "{} runs compared -> {}",
        comparison.runs.len(),
        out.display()
    )?;
    Ok(0)
}

/// `report SWEEP_DIR` and `report --compare SWEEP_A SWEEP_B`: the sweep page
/// (docs/design/report.md#the-sweep-page).
mod sweep {
    use std::io::Write;
    use std::path::{Path, PathBuf};

    use anyhow::{bail, Context};

    use inferlint_core::output;
    use inferlint_core::result::CheckResult;
    use inferlint_core::sweep::Sweep;
    use inferlint_report::sweep_page::{self, Curve, SweepPage};

    use super::{refuse_overwriting_inputs, Args};

    /// The options that name a run's files one by one: a sweep folder is read whole.
    fn refuse_file_options(args: &Args) -> anyhow::Result<()> {
        let given = [
            (!args.boot_log.is_empty(), "--boot-log"),
            (args.before.is_some(), "--before"),
            (args.after.is_some(), "--after"),
            (args.series.is_some(), "--series"),
            (args.bench_result.is_some(), "--bench-result"),
            (args.requested.is_some(), "--requested"),
            (args.engine.is_some(), "--engine"),
        ];
        if let Some((_, name)) = given.iter().find(|(on, _)| *on) {
            bail!("{name} names a run's file; a sweep folder's page is made from its sweep.json (report each point's folder for its own page)");
        }
        Ok(())
    }

    /// The sweep's curve as seen from the page's folder `page_dir`.
    fn curve(dir: &Path, label: String, page_dir: &Path) -> anyhow::Result<Curve> {
        let sweep = sweep_page::read_sweep(dir)?;
        let abs = |p: &Path| std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf());
        Ok(Curve {
            label,
            sweep,
            href_base: sweep_page::relative_base(&abs(page_dir), &abs(dir)),
            server: sweep_page::server_of(dir),
        })
    }

    /// The folder a page written to `out` lies in (created, so that links can be made from it).
    fn page_dir(out: &Path) -> anyhow::Result<PathBuf> {
        let dir = match out.parent() {
            Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
            _ => PathBuf::from("."),
        };
        std::fs::create_dir_all(&dir)
            .with_context(|| format!("cannot create {}", dir.display()))?;
        Ok(dir)
    }

    /// The run's own verdicts (`results.json` beside `sweep.json`); none when it is absent.
    fn own_results(dir: &Path) -> anyhow::Result<Vec<CheckResult>> {
        let path = dir.join("results.json");
        if !path.is_file() {
            return Ok(Vec::new());
        }
        let text = std::fs::read_to_string(&path).with_context(|| format!("{}", path.display()))?;
        serde_json::from_str(&text)
            .with_context(|| format!("{} is not a results file", path.display()))
    }

    /// The run's verdicts and every point's, and its exit status as core decides it: over all
    /// of them, 130 if a point was interrupted, 1 if a point's load exited non-zero
    /// (docs/design/formats.md#sweepjson).
    fn verdicts(own: Vec<CheckResult>, sweep: &Sweep) -> (Vec<CheckResult>, i32) {
        let mut all = own;
        all.extend(sweep.points.iter().flat_map(|p| p.results.iter().cloned()));
        let interrupted = sweep.points.iter().any(|p| p.interrupted);
        let load_exit = sweep
            .points
            .iter()
            .filter_map(|p| p.load_exit)
            .find(|&c| c != 0);
        let code = output::run_exit_code(&all, false, interrupted, false, load_exit);
        (all, code)
    }

    pub fn report(dir: &Path, args: &Args) -> anyhow::Result<i32> {
        refuse_file_options(args)?;
        let out = args.out.clone().unwrap_or_else(|| dir.join("sweep.html"));
        let mut inputs = vec![dir.join("sweep.json")];
        inputs.push(dir.join("results.json"));
        let seen: Vec<&Path> = inputs.iter().map(PathBuf::as_path).collect();
        refuse_overwriting_inputs(&out, &seen)?;
        let cv = curve(dir, String::new(), &page_dir(&out)?)?;
        let (all, code) = verdicts(own_results(dir)?, &cv.sweep);
        let lines = inferlint_core::sweep::table(&cv.sweep);
        let findings: Vec<String> = cv
            .sweep
            .findings
            .iter()
            .map(|f| f.message.clone())
            .collect();
        let mut page = SweepPage::new(vec![cv]);
        page.title = args.title.clone();
        page.write(&out)
            .with_context(|| format!("cannot write {}", out.display()))?;
        let mut stdout = std::io::stdout().lock();
        if args.json {
            output::print_results(&mut stdout, &all, true)?;
            return Ok(code);
        }
        for f in &findings {
            writeln!(stdout, "- {f}")?;
        }
        for line in &lines {
            writeln!(stdout, "{line}")?;
        }
        writeln!(stdout, "{} -> {}", output::counts_line(&all), out.display())?;
        Ok(code)
    }

    pub fn compare(args: &Args) -> anyhow::Result<i32> {
        refuse_file_options(args)?;
        if let Some(run) = args
            .compare
            .iter()
            .find(|d| !sweep_page::is_sweep_folder(d))
        {
            bail!(
                "{} has no sweep.json: --compare takes run folders or sweep folders, not both",
                run.display()
            );
        }
        let out = args
            .out
            .clone()
            .unwrap_or_else(|| PathBuf::from("compare.html"));
        let inputs: Vec<PathBuf> = args.compare.iter().map(|d| d.join("sweep.json")).collect();
        let seen: Vec<&Path> = inputs.iter().map(PathBuf::as_path).collect();
        refuse_overwriting_inputs(&out, &seen)?;
        let dir = page_dir(&out)?;
        let labels = inferlint_core::bootlog::log_labels(&args.compare);
        let curves = args
            .compare
            .iter()
            .zip(labels)
            .map(|(d, label)| curve(d, label, &dir))
            .collect::<anyhow::Result<Vec<Curve>>>()?;
        let mut page = SweepPage::new(curves);
        page.title = args.title.clone();
        page.write(&out)
            .with_context(|| format!("cannot write {}", out.display()))?;
        let mut stdout = std::io::stdout().lock();
        let mut every = Vec::new();
        for cv in &page.curves {
            let (all, _) = verdicts(Vec::new(), &cv.sweep);
            if !args.json {
                writeln!(stdout, "{}: {}", cv.label, output::counts_line(&all))?;
                for line in inferlint_core::sweep::table(&cv.sweep) {
                    writeln!(stdout, "  {line}")?;
                }
            }
            every.extend(all);
        }
        if args.json {
            output::print_results(&mut stdout, &every, true)?;
            return Ok(0);
        }
        writeln!(
            stdout,
            "{} sweeps compared -> {}",
            page.curves.len(),
            out.display()
        )?;
        Ok(0)
    }
}
