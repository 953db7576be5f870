//! One running copy of the action executable, spoken to as the ActionLoop proxy does: a line on
//! stdin per activation, a line back on fd 3.
//!
//! Each copy leads a process group of its own, so stopping it (`killpg`) also stops whatever
//! the executable started, and the terminal's Ctrl-C reaches the host, not the copies.

use std::collections::{BTreeMap, BTreeSet};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::Stdio;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use anyhow::{Context as _, anyhow, bail};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::unix::pipe;
use tokio::process::{Child, ChildStdin};

/// The process groups of the copies alive, so shutdown can stop the busy ones too.
#[derive(Default)]
pub struct Groups(Mutex<BTreeSet<libc::pid_t>>);

impl Groups {
    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeSet<libc::pid_t>> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Kills every copy and all it started.
    pub fn kill_all(&self) {
        for &group in self.lock().iter() {
            kill_group(group);
        }
    }
}

fn kill_group(group: libc::pid_t) {
    // SAFETY: killpg only sends a signal; `group` is a copy's pid, which leads its group.
    unsafe { libc::killpg(group, libc::SIGKILL) };
}

pub struct Copy {
    child: Child,
    group: libc::pid_t,
    groups: Arc<Groups>,
    /// Killed and reaped: its group is gone and its id may be reused.
    stopped: bool,
    stdin: ChildStdin,
    results: BufReader<pipe::Receiver>,
}

/// Why an activation got no answer.
pub enum Failure {
    /// The executable exited (or closed its pipes).
    Exited,
}

/// What `__OW_PROXY_VERSION` says to the executable.
const PROXY_VERSION: &str = concat!("ferry-actionloop-host/", env!("CARGO_PKG_VERSION"));

impl Copy {
    /// Starts the executable with the proxy's environment: nothing inherited but `__OW_*`, plus
    /// what the Go proxy always sets (`__OW_PROXY_VERSION`, `__OW_EXECUTION_ENV` from
    /// `OW_EXECUTION_ENV`), by which an executable such as a ferry program knows it runs under a
    /// proxy; waits for `{"ok":true}` when `wait_for_ack`. Errors read as the Go proxy's after its
    /// `cannot start action: `.
    pub async fn start(
        exec: &Path,
        env: &BTreeMap<String, String>,
        wait_for_ack: bool,
        groups: &Arc<Groups>,
    ) -> anyhow::Result<Self> {
        let mut fds = [0; 2];
        // SAFETY: pipe2 writes two descriptors into the array.
        if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
            return Err(std::io::Error::last_os_error()).context("cannot create the result pipe");
        }
        // SAFETY: both descriptors were just created and are owned here alone.
        let (read_end, write_end) =
            unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
        let write_fd = fds[1];
        let mut command = std::process::Command::new(exec);
        command.env_clear().env("__OW_PROXY_VERSION", PROXY_VERSION);
        if let Some(execution_env) = std::env::var_os("OW_EXECUTION_ENV") {
            command.env("__OW_EXECUTION_ENV", execution_env);
        }
        command
            .envs(std::env::vars().filter(|(key, _)| key.starts_with("__OW_")))
            .envs(env)
            .stdin(Stdio::piped())
            .current_dir(exec.parent().unwrap_or(Path::new("/")))
            .process_group(0);
        if wait_for_ack {
            command.env("__OW_WAIT_FOR_ACK", "true");
        } else {
            command.env_remove("__OW_WAIT_FOR_ACK");
        }
        // SAFETY: only dup2/fcntl between fork and exec; fd 3 becomes the result pipe.
        unsafe {
            command.pre_exec(move || {
                let placed = if write_fd == 3 {
                    libc::fcntl(3, libc::F_SETFD, 0)
                } else {
                    libc::dup2(write_fd, 3)
                };
                if placed < 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        let mut child = tokio::process::Command::from(command)
            .kill_on_drop(true)
            .spawn()
            .map_err(|e| anyhow!("exec: {e}"))?;
        let group = child
            .id()
            .and_then(|id| libc::pid_t::try_from(id).ok())
            .context("the action has no pid")?;
        groups.lock().insert(group);
        drop(write_end);
        let mut copy = Self {
            stdin: child.stdin.take().context("no stdin pipe")?,
            child,
            group,
            groups: groups.clone(),
            stopped: false,
            results: BufReader::new(
                pipe::Receiver::from_owned_fd(read_end).context("cannot read the result pipe")?,
            ),
        };
        if wait_for_ack {
            copy.acknowledged().await?;
        }
        Ok(copy)
    }

    async fn acknowledged(&mut self) -> anyhow::Result<()> {
        const ABRUPT: &str = "Command exited abruptly during initialization.";
        let mut line = String::new();
        tokio::select! {
            read = self.results.read_line(&mut line) => {
                if read.unwrap_or(0) == 0 {
                    // fd 3 closed: most likely the copy is exiting; say so if it has.
                    return match tokio::time::timeout(START_GRACE, self.child.wait()).await {
                        Ok(_) => Err(anyhow!(ABRUPT)),
                        Err(_) => Err(anyhow!("the action closed fd 3 without acknowledging")),
                    };
                }
            }
            _ = self.child.wait() => bail!(ABRUPT),
        }
        let ack: serde_json::Value = serde_json::from_str(&line).unwrap_or_default();
        if ack.get("ok") != Some(&serde_json::Value::Bool(true)) {
            bail!("The action did not initialize properly.");
        }
        Ok(())
    }

    /// Without an ack, a copy counts as started when it is still running after a short grace.
    pub async fn still_running(&mut self) -> anyhow::Result<()> {
        match tokio::time::timeout(START_GRACE, self.child.wait()).await {
            Ok(_) => bail!("command exited"),
            Err(_) => Ok(()),
        }
    }

    /// Whether the copy has written nothing unasked since its last answer and still has fd 3
    /// open: a stray line would otherwise become the next caller's answer.
    pub fn in_step(&self) -> bool {
        if !self.results.buffer().is_empty() {
            return false;
        }
        let mut poll = libc::pollfd {
            fd: self.results.get_ref().as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: one valid pollfd, zero timeout.
        let ready = unsafe { libc::poll(&mut poll, 1, 0) };
        ready == 0
    }

    /// Sends one activation and reads its answer line.
    pub async fn activate(&mut self, activation: &[u8]) -> Result<Vec<u8>, Failure> {
        let mut request = Vec::with_capacity(activation.len() + 1);
        request.extend_from_slice(activation);
        request.push(b'\n');
        if self.stdin.write_all(&request).await.is_err() || self.stdin.flush().await.is_err() {
            return Err(Failure::Exited);
        }
        let mut line = Vec::new();
        tokio::select! {
            biased;
            read = self.results.read_until(b'\n', &mut line) => match read {
                Ok(n) if n > 0 => Ok(line),
                _ => Err(Failure::Exited),
            },
            _ = self.child.wait() => Err(Failure::Exited),
        }
    }

    /// Kills the copy and its group and reaps it.
    pub async fn stop(mut self) {
        kill_group(self.group);
        let _ = self.child.wait().await;
        self.stopped = true;
    }

    pub fn id(&self) -> libc::pid_t {
        self.group
    }
}

/// How long a copy started without an ack must stay up to count as started. The Go proxy waits
/// 5 ms; a little longer catches an interpreter that fails on its first line.
pub const START_GRACE: Duration = Duration::from_millis(100);

impl Drop for Copy {
    fn drop(&mut self) {
        // The group outlives its leader while anything the executable started still runs.
        if !self.stopped {
            kill_group(self.group);
        }
        self.groups.lock().remove(&self.group);
    }
}
