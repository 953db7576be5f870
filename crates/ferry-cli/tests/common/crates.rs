//! Crates that `ferry new` makes outside the workspace, built by cargo as a user's crate is:
//! resolved afresh (no `Cargo.lock`), with ferry as a path dependency. Include it with
//! `#[path = "common/crates.rs"] mod crates;` next to `mod common;`.
//!
//! Their builds share one target directory under the workspace's (`target/ferry-new`), so
//! dependencies compile once for every template and every later run; they take a lock, since
//! each build uses every core.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::{Mutex, MutexGuard};
use std::time::Instant;

use crate::common::{Scratch, stderr, stdout, workspace};

/// The target directory the generated crates share.
pub fn shared_target() -> PathBuf {
    Path::new(env!("CARGO_TARGET_TMPDIR"))
        .parent()
        .expect("cargo's target directory")
        .join("ferry-new")
}

/// Held while a generated crate builds or runs: one at a time.
pub fn build_lock() -> MutexGuard<'static, ()> {
    static LOCK: Mutex<()> = Mutex::new(());
    LOCK.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// A scratch directory under the temp dir, checked to lie outside the workspace: cargo must
/// treat what is made there as a crate of its own.
pub fn outside_workspace(name: &str) -> Scratch {
    let scratch = Scratch::new(name);
    let workspace = workspace().canonicalize().unwrap();
    let dir = scratch.path().canonicalize().unwrap();
    assert!(
        !dir.starts_with(&workspace),
        "the temp dir `{}` lies inside the workspace; set TMPDIR elsewhere",
        dir.display()
    );
    scratch
}

/// `program args…` in `dir`, with none of this machine's ferry or AWS settings: a generated
/// crate sees what a fresh shell would.
pub fn command(program: impl AsRef<std::ffi::OsStr>, dir: &Path, args: &[&str]) -> Command {
    let mut command = Command::new(program);
    command.current_dir(dir).args(args);
    for (key, _) in std::env::vars_os() {
        let key = key.to_string_lossy();
        if key.starts_with("FERRY_") || key.starts_with("AWS_") {
            command.env_remove(&*key);
        }
    }
    command
}

/// `cargo args…` in `dir`, building into the shared target directory.
pub fn cargo(dir: &Path, args: &[&str]) -> Command {
    let mut cargo = command(env!("CARGO"), dir, args);
    cargo.env("CARGO_TARGET_DIR", shared_target());
    cargo
}

/// Runs `command`, asserts it succeeded, says how long it took on stderr, and returns stdout.
pub fn succeeds(command: &mut Command, what: &str) -> String {
    let output = timed(command, what);
    assert!(
        output.status.success(),
        "{what} failed ({}):\nstdout:\n{}\nstderr:\n{}",
        output.status,
        stdout(&output),
        stderr(&output)
    );
    stdout(&output)
}

/// Runs `command` and says how long it took on stderr (`cargo test -- --nocapture` shows it).
pub fn timed(command: &mut Command, what: &str) -> Output {
    let started = Instant::now();
    let output = command
        .output()
        .unwrap_or_else(|e| panic!("cannot run {what}: {e}"));
    eprintln!("{what}: {:.1}s", started.elapsed().as_secs_f64());
    output
}
