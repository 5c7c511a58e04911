//! [`Supervised::spawn`], step by step: the channels, the shepherd, its first report, the
//! output pumps and the control thread.

use std::ffi::OsString;
use std::fs::OpenOptions;
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use nix::fcntl::{fcntl, FcntlArg};

use super::control::{ControlLoop, Shared, SHEPHERDS};
use super::{SpawnError, SpawnOptions, SpawnedInfo, Supervised};
use crate::output::{self, LineReceiver, PumpStats, Stream};
use crate::pidfd::Tracked;
use crate::procfs::{ProcId, ProcScanner};
use crate::protocol::{Decoder, Event};
use crate::shepherd::ShepherdConfig;
use crate::sys;

/// The descriptors the shepherd finds at 3, 4 and 5: its end of the control socket and the
/// read ends of the server's output pipes (drained by the shepherd once we are gone).
const HANDED_DOWN: [i32; 3] = [3, 4, 5];

impl Supervised {
    /// Starts `opts.command` under a shepherd. Returns once the server process exists.
    pub fn spawn(opts: SpawnOptions) -> Result<Supervised, SpawnError> {
        let run_id = opts.run_id.clone().unwrap_or_else(crate::new_run_id);
        let ch = Channels::open()?;
        let handed_down = [
            ch.shepherd_control,
            ch.out_read.try_clone()?,
            ch.err_read.try_clone()?,
        ];
        let (mut child, shepherd_pid) = start_shepherd(
            &opts,
            shepherd_config(&opts, &run_id),
            handed_down,
            ch.out_write,
            ch.err_write,
        )?;
        let first = first_report(&ch.control, &mut child, &opts)?;
        let info = spawned_info(first.event, run_id, shepherd_pid, &mut child)?;

        let stats = Arc::new(PumpStats::default());
        let (exits_tx, exits_rx) = tokio::sync::mpsc::unbounded_channel();
        let shared = Arc::new(Shared::new(stats.clone(), exits_tx));
        let lines = start_pumps(&opts, ch.out_read, ch.err_read, stats)?;
        let control = ControlLoop {
            sock: ch.control.try_clone()?,
            decoder: first.decoder,
            pending: first.pending,
            child,
            shared: shared.clone(),
            info: info.clone(),
            names: opts.names.clone(),
            // The leader's pidfd, opened here too: the fallback needs it if the shepherd dies.
            leader: Tracked::open(&ProcScanner::system(), info.leader),
            graces: opts.graces,
        };
        let control_thread = std::thread::Builder::new()
            .name("shepherd-control".into())
            .spawn(move || control.run())?;
        Ok(Supervised {
            info,
            names: opts.names,
            graces: opts.graces,
            control: Mutex::new(Some(ch.control)),
            shared,
            lines: Some(lines),
            member_exits: Some(exits_rx),
            control_thread: Some(control_thread),
        })
    }
}

/// The control socket and the server's output pipes.
struct Channels {
    control: OwnedFd,
    shepherd_control: OwnedFd,
    out_read: OwnedFd,
    out_write: OwnedFd,
    err_read: OwnedFd,
    err_write: OwnedFd,
}

impl Channels {
    fn open() -> std::io::Result<Channels> {
        let (control, shepherd_control) = sys::socketpair()?;
        let (out_read, out_write) = sys::pipe()?;
        let (err_read, err_write) = sys::pipe()?;
        for fd in [&out_read, &err_read] {
            sys::grow_pipe(fd, &[8 << 20, 4 << 20, 1 << 20]);
        }
        Ok(Channels {
            control,
            shepherd_control,
            out_read,
            out_write,
            err_read,
            err_write,
        })
    }
}

/// What the shepherd is told: the run, its names, its owner (us), where the fds are.
fn shepherd_config(opts: &SpawnOptions, run_id: &str) -> ShepherdConfig {
    let me = ProcScanner::system().id_of(sys::getpid());
    let mut cfg = ShepherdConfig::new(opts.names.clone());
    cfg.run_id = run_id.to_string();
    cfg.owners = me.into_iter().collect();
    cfg.cgroup = opts.cgroup;
    cfg.graces = opts.graces;
    cfg.no_pidfd = crate::pidfd::switched_off();
    cfg.control_fd = Some(HANDED_DOWN[0]);
    cfg.drain_fds = HANDED_DOWN[1..].to_vec();
    cfg.drain_to = opts.raw_output.clone();
    cfg.log = opts.shepherd_log.clone();
    cfg.report = opts.shepherd_report.clone();
    cfg.cwd = opts.cwd.clone();
    cfg.command = opts.command.clone();
    cfg
}

/// What to execute for `program`, and the argv[0] to show. A program file replaced on disk
/// since this process started (an upgrade or a rebuild during a long run) reads from
/// `/proc/self/exe` as `PATH (deleted)`, and executing that path fails; when `program` is this
/// process's own image, the kernel's link to it still runs the very image.
fn running_image(program: &Path) -> (PathBuf, OsString) {
    let own = Path::new("/proc/self/exe");
    if !program.exists() && std::fs::read_link(own).is_ok_and(|me| me == program) {
        let shown = program.to_string_lossy();
        let shown = shown.strip_suffix(" (deleted)").unwrap_or(&shown);
        return (own.to_path_buf(), OsString::from(shown));
    }
    (program.to_path_buf(), program.as_os_str().to_owned())
}

/// Starts the shepherd with `handed_down` at fds 3, 4, 5 and the pipes' write ends as its
/// stdout and stderr; records its pid as never to be adopted. Our copies of what it was
/// handed are closed once it runs.
fn start_shepherd(
    opts: &SpawnOptions,
    cfg: ShepherdConfig,
    handed_down: [OwnedFd; 3],
    out_write: OwnedFd,
    err_write: OwnedFd,
) -> Result<(Child, i32), SpawnError> {
    let (program, arg0) = running_image(&opts.shepherd.program);
    let mut cmd = Command::new(program);
    cmd.arg0(arg0)
        .args(&opts.shepherd.args)
        .args(cfg.to_args())
        .stdin(Stdio::null())
        .stdout(Stdio::from(out_write))
        .stderr(Stdio::from(err_write));
    for (k, v) in &opts.env {
        cmd.env(k, v);
    }
    // SAFETY: the hook runs in the forked child before exec, where only async-signal-safe
    // calls may be made: fcntl and dup2 are, and nothing allocates. The dup2 targets 3–5 are
    // owned by nothing in the child (every other descriptor of ours is close-on-exec and
    // no Rust object in the child will close them); they are meant to survive the exec.
    unsafe {
        cmd.pre_exec(move || {
            // First move every source above the targets, so no dup2 overwrites a source.
            let mut high = [0; 3];
            for (h, fd) in high.iter_mut().zip(&handed_down) {
                *h = fcntl(fd.as_fd(), FcntlArg::F_DUPFD_CLOEXEC(10))?;
            }
            for (&h, target) in high.iter().zip(HANDED_DOWN) {
                if libc::dup2(h, target) < 0 {
                    return Err(std::io::Error::last_os_error());
                }
            }
            Ok(())
        });
    }
    let mut registry = SHEPHERDS.lock().unwrap_or_else(|e| e.into_inner());
    let child = cmd.spawn().map_err(|source| SpawnError::Shepherd {
        program: opts.shepherd.program.display().to_string(),
        source,
    })?;
    let shepherd_pid = child.id() as i32;
    registry.push(shepherd_pid);
    drop(registry);
    // Closes our copies of the shepherd's ends (held by the hook).
    drop(cmd);
    Ok((child, shepherd_pid))
}

/// The shepherd's first report and what was read along with it.
struct FirstReport {
    /// Spawned or SpawnFailed.
    event: Event,
    decoder: Decoder,
    /// Events that came in the same reads, for the control thread.
    pending: Vec<Event>,
}

/// Waits for the shepherd's first report, within `opts.start_timeout`.
fn first_report(
    sock: &OwnedFd,
    child: &mut Child,
    opts: &SpawnOptions,
) -> Result<FirstReport, SpawnError> {
    let mut decoder = Decoder::default();
    let mut pending: Vec<Event> = Vec::new();
    let deadline = Instant::now() + opts.start_timeout;
    loop {
        if let Some(pos) = pending
            .iter()
            .position(|e| matches!(e, Event::Spawned { .. } | Event::SpawnFailed { .. }))
        {
            let event = pending.remove(pos);
            return Ok(FirstReport {
                event,
                decoder,
                pending,
            });
        }
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            let _ = child.kill();
            let _ = child.wait();
            return Err(SpawnError::Timeout(opts.start_timeout));
        }
        if !sys::poll_readable(&[sock.as_fd()], Some(left))[0] {
            continue;
        }
        let mut buf = [0u8; 4096];
        match sys::read_fd(sock, &mut buf) {
            Ok(0) | Err(_) => {
                let status = child.wait().ok();
                return Err(SpawnError::Server(format!(
                    "the shepherd exited before starting the command ({})",
                    status.map(|s| s.to_string()).unwrap_or_default()
                )));
            }
            Ok(n) => pending.extend(decoder.feed::<Event>(&buf[..n])),
        }
    }
}

/// The server's identity from a Spawned report; a SpawnFailed one is the error.
fn spawned_info(
    event: Event,
    run_id: String,
    shepherd_pid: i32,
    child: &mut Child,
) -> Result<SpawnedInfo, SpawnError> {
    match event {
        Event::Spawned {
            pid,
            pgid,
            starttime,
            session,
            cgroup,
            cgroup_note,
        } => Ok(SpawnedInfo {
            run_id,
            leader: ProcId { pid, starttime },
            pgid,
            session,
            shepherd_pid,
            cgroup: cgroup.map(PathBuf::from),
            cgroup_note,
        }),
        Event::SpawnFailed { error } => {
            let _ = child.wait();
            Err(SpawnError::Server(error))
        }
        other => unreachable!("not a first report: {other:?}"),
    }
}

/// One pump per output pipe: raw bytes to the raw log, lines to the returned channel.
fn start_pumps(
    opts: &SpawnOptions,
    out_read: OwnedFd,
    err_read: OwnedFd,
    stats: Arc<PumpStats>,
) -> Result<LineReceiver, SpawnError> {
    let raw = match &opts.raw_output {
        Some(p) => Some(Arc::new(Mutex::new(
            OpenOptions::new().create(true).append(true).open(p)?,
        ))),
        None => None,
    };
    let (tx, rx) = output::channel(opts.line_capacity);
    output::spawn_pump(
        out_read,
        Stream::Stdout,
        raw.clone(),
        tx.clone(),
        stats.clone(),
        opts.max_line_bytes,
    )?;
    output::spawn_pump(
        err_read,
        Stream::Stderr,
        raw,
        tx,
        stats,
        opts.max_line_bytes,
    )?;
    Ok(rx)
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_handed_down_descriptors_are_where_the_shepherd_looks() {
        let cfg = super::shepherd_config(
            &super::SpawnOptions::new(
                super::super::ShepherdProgram {
                    program: "shep".into(),
                    args: Vec::new(),
                },
                vec!["srv".into()],
                crate::Names {
                    marker_env: "M".into(),
                    owners_env: "O".into(),
                    cgroup_prefix: "p-".into(),
                    shepherd_title: "t".into(),
                },
            ),
            "r",
        );
        assert_eq!(cfg.control_fd, Some(3));
        assert_eq!(cfg.drain_fds, vec![4, 5]);
        assert_eq!(cfg.names.marker_env, "M");
    }
}
