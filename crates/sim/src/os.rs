//! The Linux process facts the simulator sets and reads: process titles as setproctitle writes
//! them, start times and states from /proc, children, clocks.

use std::fs;

/// Seconds on CLOCK_MONOTONIC, which every process on the machine shares.
pub fn mono_now() -> f64 {
    inferlint_core::clock::monotonic_ns() as f64 * 1e-9
}

pub fn unix_now() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0)
}

/// The fields of /proc/PID/stat after the command name (field 3 onwards); the name may hold
/// spaces and parentheses, so the split is at the last `)`.
fn stat_fields(pid: u32) -> Option<Vec<String>> {
    let text = fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let (_, rest) = text.rsplit_once(')')?;
    Some(rest.split_whitespace().map(str::to_string).collect())
}

fn stat_field(fields: &[String], n: usize) -> Option<&str> {
    fields.get(n.checked_sub(3)?).map(String::as_str)
}

/// Field 22 of /proc/PID/stat: the start time in clock ticks since boot.
pub fn start_time(pid: u32) -> Option<u64> {
    stat_field(&stat_fields(pid)?, 22)?.parse().ok()
}

/// True when the process exists and has not exited (a zombie holds no memory).
pub fn is_alive(pid: u32) -> bool {
    match stat_fields(pid) {
        Some(f) => !matches!(stat_field(&f, 3), Some("Z" | "X" | "x")),
        None => false,
    }
}

pub fn parent_of(pid: u32) -> Option<u32> {
    stat_field(&stat_fields(pid)?, 4)?.parse().ok()
}

/// The live children of `pid`, found by scanning /proc.
pub fn children_of(pid: u32) -> Vec<u32> {
    let Ok(dir) = fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|&p| parent_of(p) == Some(pid) && is_alive(p))
        .collect()
}

/// Sets the kernel's name of this process (`/proc/PID/comm`, 15 bytes at most).
pub fn set_comm(name: &str) {
    let bytes: Vec<u8> = name.bytes().take(15).take_while(|&b| b != 0).collect();
    if let Ok(name) = std::ffi::CString::new(bytes) {
        let _ = nix::sys::prctl::set_name(&name);
    }
}

/// Rewrites this process's argument area as setproctitle does: the title, then NULs to the
/// end, so `/proc/PID/cmdline` reads as the title alone. Call it after the arguments are parsed.
pub fn set_title(title: &str) {
    let Some(fields) = stat_fields(std::process::id()) else {
        return;
    };
    let (Some(start), Some(end)) = (
        stat_field(&fields, 48).and_then(|s| s.parse::<usize>().ok()),
        stat_field(&fields, 49).and_then(|s| s.parse::<usize>().ok()),
    ) else {
        return;
    };
    if end <= start + 1 {
        return;
    }
    let len = end - start;
    let t = title.as_bytes();
    let n = t.len().min(len - 1);
    // SAFETY: [arg_start, arg_end) is this process's own argument area on its initial stack,
    // writable for the life of the process; the strings were parsed into owned values before
    // this call, and the last byte stays NUL so the kernel reads it as plain arguments.
    unsafe {
        let p = start as *mut u8;
        std::ptr::copy_nonoverlapping(t.as_ptr(), p, n);
        std::ptr::write_bytes(p.add(n), 0, len - n);
    }
}

/// Both names of a renamed process (`VLLM::EngineCore`); a title of several words
/// (`python3 -R -m mpi4py.futures.server`) has its first word as the kernel's name, as exec gives it.
pub fn rename(title: &str) {
    set_title(title);
    set_comm(title.split(' ').next().unwrap_or(title));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_process_is_alive_with_a_start_time_and_a_parent() {
        let me = std::process::id();
        assert!(is_alive(me));
        assert!(start_time(me).is_some());
        assert!(parent_of(me).is_some());
        assert!(!is_alive(u32::MAX - 1));
    }

    #[test]
    fn monotonic_clock_moves_forward() {
        let a = mono_now();
        let b = mono_now();
        assert!(b >= a && a > 0.0);
    }
}
