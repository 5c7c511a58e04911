//! prometheus_client's default collectors in a single-API-server vLLM: Python's GC counters
//! and version, and this process's memory, CPU and file descriptors.

use crate::expo::go_float;

/// prometheus_client's default collectors: Python GC, Python info and this process.
pub fn render(out: &mut String, start_unix: f64, scrapes: u64) {
    use std::fmt::Write;
    let g = scrapes;
    let _ = writeln!(out, "# HELP python_gc_objects_collected_total Objects collected during gc\n# TYPE python_gc_objects_collected_total counter");
    for (gen, base) in [(0, 16_825), (1, 4_052), (2, 584)] {
        let _ = writeln!(
            out,
            "python_gc_objects_collected_total{{generation=\"{gen}\"}} {}",
            go_float((base + g * (3 - gen)) as f64)
        );
    }
    let _ = writeln!(out, "# HELP python_gc_objects_uncollectable_total Uncollectable objects found during GC\n# TYPE python_gc_objects_uncollectable_total counter");
    for gen in 0..3 {
        let _ = writeln!(
            out,
            "python_gc_objects_uncollectable_total{{generation=\"{gen}\"}} 0.0"
        );
    }
    let _ = writeln!(out, "# HELP python_gc_collections_total Number of times this generation was collected\n# TYPE python_gc_collections_total counter");
    for (gen, base) in [(0, 3_362), (1, 306), (2, 15)] {
        let _ = writeln!(
            out,
            "python_gc_collections_total{{generation=\"{gen}\"}} {}",
            go_float((base + g / (1 + gen * 10)) as f64)
        );
    }
    let _ = writeln!(
        out,
        "# HELP python_info Python platform information\n# TYPE python_info gauge"
    );
    let _ = writeln!(out, "python_info{{implementation=\"CPython\",major=\"3\",minor=\"12\",patchlevel=\"14\",version=\"3.12.14\"}} 1.0");
    let p = ProcSelf::read();
    let _ = writeln!(out, "# HELP process_virtual_memory_bytes Virtual memory size in bytes.\n# TYPE process_virtual_memory_bytes gauge\nprocess_virtual_memory_bytes {}", go_float(p.vsize));
    let _ = writeln!(out, "# HELP process_resident_memory_bytes Resident memory size in bytes.\n# TYPE process_resident_memory_bytes gauge\nprocess_resident_memory_bytes {}", go_float(p.rss));
    let _ = writeln!(out, "# HELP process_start_time_seconds Start time of the process since unix epoch in seconds.\n# TYPE process_start_time_seconds gauge\nprocess_start_time_seconds {}", go_float((start_unix * 100.0).round() / 100.0));
    let _ = writeln!(out, "# HELP process_cpu_seconds_total Total user and system CPU time spent in seconds.\n# TYPE process_cpu_seconds_total counter\nprocess_cpu_seconds_total {}", go_float(p.cpu_s));
    let _ = writeln!(out, "# HELP process_open_fds Number of open file descriptors.\n# TYPE process_open_fds gauge\nprocess_open_fds {}", go_float(p.open_fds));
    let _ = writeln!(out, "# HELP process_max_fds Maximum number of open file descriptors.\n# TYPE process_max_fds gauge\nprocess_max_fds {}", go_float(p.max_fds));
}

/// This process's numbers for the `process_*` collector (zeros where /proc is unreadable).
struct ProcSelf {
    vsize: f64,
    rss: f64,
    cpu_s: f64,
    open_fds: f64,
    max_fds: f64,
}

impl ProcSelf {
    fn read() -> ProcSelf {
        let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
        let after = stat.rsplit_once(')').map(|(_, a)| a).unwrap_or("");
        // Fields after the comm: state is field 3, so index k here is field k + 3.
        let fields: Vec<&str> = after.split_whitespace().collect();
        let num = |field: usize| {
            fields
                .get(field - 3)
                .and_then(|s| s.parse::<f64>().ok())
                .unwrap_or(0.0)
        };
        let ticks = 100.0;
        let page = 4096.0;
        let open_fds = std::fs::read_dir("/proc/self/fd")
            .map(|d| d.count() as f64)
            .unwrap_or(0.0);
        let max_fds = nix::sys::resource::getrlimit(nix::sys::resource::Resource::RLIMIT_NOFILE)
            .map_or(0.0, |(soft, _)| soft as f64);
        ProcSelf {
            vsize: num(23),
            rss: num(24) * page,
            cpu_s: ((num(14) + num(15)) / ticks * 100.0).round() / 100.0,
            open_fds,
            max_fds,
        }
    }
}
