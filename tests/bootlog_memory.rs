//! A 50 MB log that is one single line, read by the real binary: it must finish, report the cut
//! line, and stay small in memory. (Alone in its test binary so that the children's peak memory
//! measured here is this command's.)

use std::io::Write;
use std::process::Command;

#[test]
fn a_50_mb_single_line_keeps_memory_bounded() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("huge.log");
    let mut f = std::io::BufWriter::new(std::fs::File::create(&p).unwrap());
    f.write_all(b"[2026-10-01 00:37:47] server_args={'model_path': '")
        .unwrap();
    let chunk = vec![b'x'; 1 << 20];
    for _ in 0..50 {
        f.write_all(&chunk).unwrap();
    }
    f.write_all(b"'}\n[2026-10-01 00:40:00] KV Cache is allocated. #tokens: 1000, K size: 0.50 GB, V size: 0.50 GB\n")
        .unwrap();
    f.flush().unwrap();
    drop(f);

    let o = Command::new(env!("CARGO_BIN_EXE_inferlint"))
        .args(["check-log", p.to_str().unwrap()])
        .env_remove("INFERLINT_ENGINE")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(2), "{stdout}");
    assert!(
        stdout.contains("[T12] ????  1 line(s) longer than 65,536 bytes were cut"),
        "{stdout}"
    );
    assert!(
        stdout.contains("[T12] ????  1 recognised line(s) in an unknown format"),
        "{stdout}"
    );

    // SAFETY: getrusage only writes the struct it is given.
    let usage = unsafe {
        let mut u: libc::rusage = std::mem::zeroed();
        assert_eq!(libc::getrusage(libc::RUSAGE_CHILDREN, &mut u), 0);
        u
    };
    let peak_mib = usage.ru_maxrss as f64 / 1024.0;
    assert!(
        peak_mib < 40.0,
        "check-log peaked at {peak_mib:.1} MiB on a 50 MB line"
    );
}
