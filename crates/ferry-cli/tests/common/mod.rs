//! Shared by the `ferry build`, `deploy` and `ls` tests: running `ferry`, the fixture program
//! built once per test binary, and scratch directories.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU32, Ordering};

/// The workspace root (where `cargo metadata` finds the fixture's package).
pub fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .ancestors()
        .nth(2)
        .expect("workspace root")
        .to_path_buf()
}

/// `ferry <args>` in the workspace root.
pub fn ferry(args: &[&str]) -> Output {
    ferry_in(&workspace(), args, &[])
}

/// `ferry <args>` in `dir` with extra environment variables.
pub fn ferry_in(dir: &Path, args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut command = Command::new(env!("CARGO_BIN_EXE_ferry"));
    command
        .current_dir(dir)
        .args(args)
        .env_remove("FERRY_BACKEND");
    for (key, value) in env {
        command.env(key, value);
    }
    command.output().expect("run ferry")
}

pub fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

pub fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// Asserts success and returns stdout.
pub fn ok(output: &Output, what: &str) -> String {
    assert!(
        output.status.success(),
        "{what} failed ({}):\nstdout:\n{}\nstderr:\n{}",
        output.status,
        stdout(output),
        stderr(output)
    );
    stdout(output)
}

/// Asserts failure with exit code 1 and returns stderr.
pub fn fails(output: &Output, what: &str) -> String {
    assert_eq!(
        output.status.code(),
        Some(1),
        "{what} should fail with code 1:\nstdout:\n{}\nstderr:\n{}",
        stdout(output),
        stderr(output)
    );
    stderr(output)
}

/// A fresh directory under the temp dir, removed on drop.
pub struct Scratch(pub PathBuf);

impl Scratch {
    pub fn new(name: &str) -> Self {
        static NEXT: AtomicU32 = AtomicU32::new(0);
        let dir = std::env::temp_dir().join(format!(
            "ferry-cli-{name}-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("scratch dir");
        Self(dir)
    }

    pub fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// The fixture program (`ferry-tests`' `ferry-fixture`, functions with varied settings)
/// built by `ferry build` for `platforms`, once per test binary, into a directory of cargo's
/// target dir for tests (rewritten by every run). The dev profile with `--strip` keeps the
/// build and the packages small; the build is static, as by default.
pub fn fixture(platforms: &'static str) -> &'static Path {
    static BUILT: OnceLock<PathBuf> = OnceLock::new();
    built_once(&BUILT, "ferry-fixture", platforms)
}

/// The web fixture (`ferry-tests`' `web-fixture`: an axum router served by `ferry::web::serve`
/// whose handlers call the fixture functions), built like [`fixture`], once per test binary.
pub fn web_fixture(platforms: &'static str) -> &'static Path {
    static BUILT: OnceLock<PathBuf> = OnceLock::new();
    built_once(&BUILT, "web-fixture", platforms)
}

/// `ferry-tests`' binary `bin` built for `platforms` the first time `built` is asked.
fn built_once(built: &'static OnceLock<PathBuf>, bin: &str, platforms: &str) -> &'static Path {
    built.get_or_init(|| {
        let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
            .join(format!("{bin}-{}", platforms.replace(',', "-")));
        let output = ferry(&[
            "build",
            "--platform",
            platforms,
            "-p",
            "ferry-tests",
            "--bin",
            bin,
            "--profile",
            "dev",
            "--strip",
            "--dir",
            dir.to_str().unwrap(),
        ]);
        ok(&output, &format!("ferry build of `{bin}`"));
        dir
    })
}

/// The fixture's manifest as JSON.
pub fn manifest(dir: &Path) -> serde_json::Value {
    let text = std::fs::read_to_string(dir.join("manifest.json")).expect("manifest.json");
    serde_json::from_str(&text).expect("manifest json")
}

/// The one file of a single-entry zip: `(name, unix mode, bytes)`.
pub fn only_zip_entry(path: &Path) -> (String, u32, Vec<u8>) {
    use std::io::Read as _;
    let file = std::fs::File::open(path).expect("zip");
    let mut zip = zip::ZipArchive::new(file).expect("a zip file");
    assert_eq!(zip.len(), 1, "{} holds one file", path.display());
    let mut entry = zip.by_index(0).unwrap();
    let mut bytes = Vec::new();
    entry.read_to_end(&mut bytes).unwrap();
    (
        entry.name().expect("entry name").into_owned(),
        entry.unix_mode().expect("unix mode"),
        bytes,
    )
}

/// `ferry <args>` in the workspace root with extra environment variables.
pub fn ferry_with(args: &[&str], env: &[(&str, &str)]) -> Output {
    ferry_in(&workspace(), args, env)
}

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
