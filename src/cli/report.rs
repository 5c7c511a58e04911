//! `inferlint report`: the HTML report of a saved run (a run folder, or files named one by one),
//! a comparison of runs, or the data read back from a saved page.

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context};

use inferlint_core::engine::{self, NamedEngine};
use inferlint_core::output;
use inferlint_report::compare::Comparison;
use inferlint_report::discover::{self, RunFiles};
use inferlint_report::{embed, Report};

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
    /// vllm, sglang or trtllm (default: read from the files, or INFERLINT_ENGINE).
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
        return compare(&args, named.as_ref());
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
    add_t15(&mut inputs);
    let report = Report::build(inputs);
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

/// T15 runs when the result file and both snapshots exist (untimed requests from load.log).
fn add_t15(inputs: &mut inferlint_report::Inputs) {
    // The snapshots' engine decides which counters T15 compares.
    let engine = inferlint_report::engine_of(inputs, &[]);
    if let Some(r) = inputs.t15(engine) {
        inputs.extra_results.push(r);
    }
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
        add_t15(&mut inputs);
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
