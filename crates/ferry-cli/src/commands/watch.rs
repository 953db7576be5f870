//! `ferry watch`: rebuilds the program whenever its package's files change and runs it again,
//! as the host on the local platform (`cargo run` that re-runs itself) or, with `--http`, as the
//! HTTP service of its functions (or its web app), restarted on every change.
//!
//! The running program gets SIGTERM, the way platforms stop a container, so an HTTP service
//! drains its in-flight invocations before the new build takes over; one that lingers past
//! `--grace` is killed.

use std::path::PathBuf;
use std::process::{Child, Command};
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

use anyhow::Context as _;
use notify::event::{MetadataKind, ModifyKind};
use notify::{Event, EventKind, RecursiveMode, Watcher as _};

use crate::artifacts::Linkage;
use crate::commands::build::cargo;
use crate::program::ProgramArgs;

#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(flatten)]
    pub program: ProgramArgs,
    /// Serve the functions (or the web app) over HTTP (`FERRY_ROLE=http`) instead of running the
    /// program's `main`.
    #[arg(long)]
    pub http: bool,
    /// Where the HTTP service listens (`FERRY_LISTEN`).
    #[arg(long, default_value = "127.0.0.1:8080", requires = "http")]
    pub listen: String,
    /// The cargo profile to build with.
    #[arg(long, default_value = "dev")]
    pub profile: String,
    /// How long a stopped program may take to exit before it is killed.
    #[arg(long, default_value = "5s", value_parser = parse_seconds)]
    pub grace: Duration,
    /// Arguments passed to the program.
    #[arg(last = true)]
    pub args: Vec<String>,
}

fn parse_seconds(text: &str) -> Result<Duration, String> {
    text.strip_suffix('s')
        .unwrap_or(text)
        .parse::<f64>()
        .ok()
        .filter(|s| s.is_finite() && *s >= 0.0)
        .map(Duration::from_secs_f64)
        .ok_or_else(|| format!("`{text}` is not a number of seconds (e.g. `5s`)"))
}

pub fn run(args: &Args) -> anyhow::Result<()> {
    let program = args.program.resolve()?;
    let (events, changes) = std::sync::mpsc::channel::<notify::Result<Event>>();
    let mut watcher = notify::recommended_watcher(move |event| {
        let _ = events.send(event);
    })
    .context("cannot watch the package's files")?;
    watcher
        .watch(&program.root, RecursiveMode::Recursive)
        .with_context(|| format!("cannot watch `{}`", program.root.display()))?;
    let ignored = [
        program.target_dir.clone(),
        program.root.join("target"),
        program.root.join(".git"),
    ];
    eprintln!(
        "watching `{}`: a change rebuilds `{}` and {}",
        program.root.display(),
        program.bin,
        if args.http {
            format!("restarts its HTTP service on {}", args.listen)
        } else {
            "runs it again".to_owned()
        }
    );
    loop {
        let mut running = build_and_start(args, &program)?;
        // Until a change: a program that ends is reported; a service that dies is too.
        loop {
            match changes.recv_timeout(Duration::from_millis(200)) {
                Ok(Ok(event)) if is_change(&event, &ignored) => break,
                Ok(_) | Err(RecvTimeoutError::Timeout) => {}
                Err(RecvTimeoutError::Disconnected) => return Ok(()),
            }
            if let Some(child) = &mut running {
                if let Some(status) = child.try_wait()? {
                    eprintln!("`{}` ended ({status}); waiting for a change", program.bin);
                    running = None;
                }
            }
        }
        // An editor's save is several events: let them settle, then take them all as one.
        std::thread::sleep(Duration::from_millis(300));
        drain(&changes);
        if let Some(child) = running {
            stop(child, args.grace);
        }
        eprintln!("change detected: rebuilding `{}`", program.bin);
    }
}

/// Builds, then starts the program; a failed build waits for the next change.
fn build_and_start(
    args: &Args,
    program: &crate::program::Program,
) -> anyhow::Result<Option<Child>> {
    let built = cargo::build(&cargo::BuildRequest {
        program,
        profile: &args.profile,
        target: None,
        linkage: Linkage::Dynamic,
        position_independent: true,
        strip: false,
        verbose: false,
    });
    let binary = match built {
        Ok(binary) => binary,
        Err(error) => {
            eprintln!("error: {error:#}\nwaiting for a change");
            return Ok(None);
        }
    };
    let mut command = Command::new(&binary);
    command.args(&args.args);
    // However `ferry watch` ends (Ctrl-C, SIGTERM, SIGKILL), the program it runs ends with it:
    // an orphaned service would hold the port.
    // SAFETY: only prctl, async-signal-safe, runs between fork and exec.
    unsafe {
        std::os::unix::process::CommandExt::pre_exec(&mut command, || {
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    if args.http {
        command
            .env(ferry::config::ROLE.name, "http")
            .env(ferry::config::LISTEN.name, &args.listen);
    }
    let child = command
        .spawn()
        .with_context(|| format!("cannot start `{}`", binary.display()))?;
    Ok(Some(child))
}

/// SIGTERM, then SIGKILL past `grace`.
fn stop(mut child: Child, grace: Duration) {
    if let Ok(pid) = libc::pid_t::try_from(child.id()) {
        // SAFETY: plain syscall on our own child, not yet reaped.
        unsafe {
            libc::kill(pid, libc::SIGTERM);
        }
    }
    let deadline = Instant::now() + grace;
    while Instant::now() < deadline {
        if matches!(child.try_wait(), Ok(Some(_)) | Err(_)) {
            return;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let _ = child.kill();
    let _ = child.wait();
}

/// Events that arrived while stopping or building belong to the change being handled.
fn drain(changes: &Receiver<notify::Result<Event>>) {
    while changes.try_recv().is_ok() {}
}

/// Whether `event` changed a file of the package: reads (cargo reading the sources) do not, and
/// nor does what a build writes (the target directory) or a VCS folder.
fn is_change(event: &Event, ignored: &[PathBuf]) -> bool {
    let changed = match event.kind {
        EventKind::Modify(ModifyKind::Metadata(MetadataKind::AccessTime)) => false,
        EventKind::Create(_) | EventKind::Modify(_) | EventKind::Remove(_) => true,
        _ => false,
    };
    changed
        && event
            .paths
            .iter()
            .any(|path| !ignored.iter().any(|dir| path.starts_with(dir)))
}
