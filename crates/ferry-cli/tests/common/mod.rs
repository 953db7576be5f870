//! What the CLI's tests share: workspace programs built by cargo, and `ferry` itself.

#![allow(dead_code)]

use std::path::PathBuf;
use std::process::{Command, Output};

/// A binary of this workspace, built (or found up to date) by cargo.
pub fn workspace_binary(package: &str, binary: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_BIN_EXE_ferry"))
        .parent()
        .expect("target dir")
        .to_path_buf();
    // Always ask cargo: a binary left over from an earlier build may be stale.
    let mut build = Command::new(env!("CARGO"));
    build.args(["build", "--quiet", "--package", package, "--bin", binary]);
    if dir.ends_with("release") {
        build.arg("--release");
    }
    let status = build.status().expect("cargo build");
    assert!(status.success(), "cannot build {binary}");
    dir.join(binary)
}

/// Runs `ferry` with `args`.
pub fn ferry(args: &[&str]) -> Output {
    ferry_with(args, &[])
}

/// Runs `ferry` with `args` and extra environment variables.
pub fn ferry_with(args: &[&str], env: &[(&str, &str)]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_ferry"))
        .args(args)
        .envs(env.iter().copied())
        .env_remove("FERRY_BACKEND")
        .output()
        .expect("run ferry")
}
