//! One running copy of the action executable, spoken to as the ActionLoop proxy does: a line on
//! stdin per activation, a line back on fd 3.

use std::collections::BTreeMap;
use std::os::fd::{FromRawFd, OwnedFd};
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::Stdio;

use anyhow::{Context as _, bail};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::unix::pipe;
use tokio::process::{Child, ChildStdin};

pub struct Copy {
    child: Child,
    stdin: ChildStdin,
    results: BufReader<pipe::Receiver>,
}

/// Why an activation got no answer.
pub enum Failure {
    /// The executable exited (or closed its pipes).
    Exited,
}

impl Copy {
    /// Starts the executable with the proxy's environment (nothing inherited but `__OW_*`),
    /// waiting for `{"ok":true}` when `wait_for_ack`.
    pub async fn start(
        exec: &Path,
        env: &BTreeMap<String, String>,
        wait_for_ack: bool,
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
        command
            .env_clear()
            .envs(std::env::vars().filter(|(key, _)| key.starts_with("__OW_")))
            .envs(env)
            .stdin(Stdio::piped())
            .current_dir(exec.parent().unwrap_or(Path::new("/")));
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
            .with_context(|| format!("cannot start `{}`", exec.display()))?;
        drop(write_end);
        let stdin = child.stdin.take().context("no stdin pipe")?;
        let results = BufReader::new(
            pipe::Receiver::from_owned_fd(read_end).context("cannot read the result pipe")?,
        );
        let mut copy = Self {
            child,
            stdin,
            results,
        };
        if wait_for_ack {
            let mut line = String::new();
            tokio::select! {
                read = copy.results.read_line(&mut line) => {
                    if read.unwrap_or(0) == 0 {
                        bail!("the action exited before acknowledging");
                    }
                }
                _ = copy.child.wait() => bail!("Command exited abruptly during initialization."),
            }
            let ack: serde_json::Value = serde_json::from_str(&line).unwrap_or_default();
            if ack.get("ok") != Some(&serde_json::Value::Bool(true)) {
                bail!("The action did not initialize properly.");
            }
        }
        Ok(copy)
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

    pub fn id(&self) -> Option<u32> {
        self.child.id()
    }
}
