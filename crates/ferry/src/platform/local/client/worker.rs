//! Starting a worker process and reading what it sends.

use std::os::fd::AsRawFd;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::Path;
use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use tokio::io::BufReader;
use tokio::net::unix::OwnedReadHalf;
use tokio::process::Child;
use tokio::sync::mpsc;

use super::{Ending, Scheduler};
use crate::ExitReason;
use crate::platform::local::{WORKER_FD, protocol};

pub(super) struct Started {
    pub pid: u32,
    pub frames: mpsc::UnboundedSender<Bytes>,
}

pub(super) fn start(shared: Arc<Scheduler>, id: u64, exe: &Path) -> std::io::Result<Started> {
    let (host_end, worker_end) = std::os::unix::net::UnixStream::pair()?;
    let worker_fd = worker_end.as_raw_fd();
    let mut command = std::process::Command::new(exe);
    command
        .envs(shared.config.env.iter().map(|(k, v)| (k, v)))
        .env(crate::role::ROLE_VAR, crate::role::ROLE_LOCAL_WORKER)
        .env(crate::role::HOST_PID_VAR, std::process::id().to_string())
        .env(crate::config::WORKER_ID.name, id.to_string())
        .stdin(Stdio::null());
    // SAFETY: between fork and exec only async-signal-safe calls (dup2, fcntl) are made.
    unsafe {
        command.pre_exec(move || {
            if worker_fd == WORKER_FD {
                // Already in place: only clear close-on-exec.
                if libc::fcntl(WORKER_FD, libc::F_SETFD, 0) < 0 {
                    return Err(std::io::Error::last_os_error());
                }
            } else if libc::dup2(worker_fd, WORKER_FD) < 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let mut command = tokio::process::Command::from(command);
    command.kill_on_drop(true);
    let child = command.spawn()?;
    drop(worker_end);
    let pid = child
        .id()
        .ok_or_else(|| std::io::Error::other("the worker exited at once"))?;

    host_end.set_nonblocking(true)?;
    let stream = tokio::net::UnixStream::from_std(host_end)?;
    let (read, write) = stream.into_split();
    let (frames, queued) = mpsc::unbounded_channel();
    tokio::spawn(protocol::write_loop(write, queued));
    tokio::spawn(read_worker(shared, id, read, child));
    Ok(Started { pid, frames })
}

/// Reports the worker's end to the platform, even when the task is dropped with its runtime.
struct EndGuard {
    shared: Arc<Scheduler>,
    id: u64,
    ending: Ending,
}

impl Drop for EndGuard {
    fn drop(&mut self) {
        self.shared.on_exit(self.id, self.ending);
    }
}

async fn read_worker(shared: Arc<Scheduler>, id: u64, read: OwnedReadHalf, mut child: Child) {
    let mut end = EndGuard {
        shared: shared.clone(),
        id,
        ending: Ending::RuntimeGone,
    };
    let mut reader = BufReader::with_capacity(64 * 1024, read);
    loop {
        match protocol::read_frame(&mut reader).await {
            Ok(Some(frame)) => match protocol::decode(frame) {
                Ok(frame) => shared.on_frame(id, frame),
                Err(error) => {
                    shared.on_violation(id, error.to_string());
                    let _ = child.start_kill();
                    break;
                }
            },
            Ok(None) => break,
            Err(error) if error.kind() == std::io::ErrorKind::InvalidData => {
                shared.on_violation(id, error.to_string());
                let _ = child.start_kill();
                break;
            }
            Err(error) => {
                tracing::error!(worker = id, %error, "cannot read from a local worker; stopping it");
                let _ = child.start_kill();
                break;
            }
        }
    }
    shared.on_exiting(id);
    // The socket closed: the worker is exiting or was killed. Reap it, killing it if it lingers.
    let status = match tokio::time::timeout(Duration::from_secs(2), child.wait()).await {
        Ok(status) => status.ok(),
        Err(_) => {
            let _ = child.start_kill();
            child.wait().await.ok()
        }
    };
    let reason = match status {
        Some(status) => match (status.signal(), status.code()) {
            (Some(signal), _) => ExitReason::Signal(signal),
            (None, Some(code)) => ExitReason::Code(code),
            (None, None) => ExitReason::Unknown,
        },
        None => ExitReason::Unknown,
    };
    end.ending = Ending::Exited(reason);
}

/// Whether a process is stopped (by SIGSTOP, or a tracer), from `/proc/<pid>/stat`: then none of
/// its invocations is overdue by its own doing.
pub(super) fn is_stopped(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|stat| {
            // `pid (comm) state …`: the command may hold spaces, so read after its `)`.
            let (_, rest) = stat.rsplit_once(") ")?;
            rest.chars().next()
        })
        .is_some_and(|state| matches!(state, 'T' | 't'))
}

/// Resident memory of a process, from `/proc/<pid>/statm`.
pub(super) fn rss_bytes(pid: u32) -> Option<u64> {
    let statm = std::fs::read_to_string(format!("/proc/{pid}/statm")).ok()?;
    let pages: u64 = statm.split_whitespace().nth(1)?.parse().ok()?;
    // SAFETY: sysconf has no preconditions.
    let page_size = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    Some(pages * u64::try_from(page_size).unwrap_or(4096))
}

/// One thread of a worker, from `/proc/<pid>/task/<tid>/stat`.
pub(super) struct ThreadFaults {
    pub tid: u32,
    /// The low bits of the slot whose sync body it runs or last ran, from its name
    /// (see [`crate::platform::local::THREAD_LABEL`]).
    pub label: Option<u64>,
    /// Minor page faults it has taken: the pages it brought in, a measure of how much the
    /// process grew by its doing (no per-thread resident size exists).
    pub minor_faults: u64,
}

/// Every thread of a process, with its page faults; empty once the process is gone.
pub(super) fn thread_faults(pid: u32) -> Vec<ThreadFaults> {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return Vec::new();
    };
    tasks
        .filter_map(|task| {
            let task = task.ok()?;
            let tid: u32 = task.file_name().to_str()?.parse().ok()?;
            let stat = std::fs::read_to_string(task.path().join("stat")).ok()?;
            // `tid (comm) state ppid pgrp session tty tpgid flags minflt …`: the name may hold
            // spaces or parentheses, so split at its last `)`.
            let (head, rest) = stat.rsplit_once(") ")?;
            let (_, name) = head.split_once(" (")?;
            let minor_faults = rest.split_whitespace().nth(7)?.parse().ok()?;
            let label = name
                .strip_prefix(crate::platform::local::THREAD_LABEL)
                .and_then(|hex| u64::from_str_radix(hex, 16).ok());
            Some(ThreadFaults {
                tid,
                label,
                minor_faults,
            })
        })
        .collect()
}
