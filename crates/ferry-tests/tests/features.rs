//! ferry's Cargo features and crates: a program built with `default-features = false, features =
//! ["lambda"]` (`examples/lambda-only`) links the Lambda runtime and client and nothing else of
//! ferry's platforms, and still serves its functions behind the Lambda emulator; `ferry-core`
//! links no async runtime and no network stack.

mod common;

use std::path::PathBuf;
use std::process::Command;

use common::Emulator;
use serde_json::json;

/// The packages `package` links, by name.
fn linked_packages(package: &str) -> Vec<String> {
    let output = Command::new(env!("CARGO"))
        .args([
            "tree",
            "--package",
            package,
            "--edges",
            "normal",
            "--prefix",
            "none",
            "--format",
            "{p}",
        ])
        .output()
        .expect("cargo tree");
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let mut names: Vec<String> = String::from_utf8_lossy(&output.stdout)
        .lines()
        .filter_map(|line| line.split_whitespace().next().map(str::to_owned))
        .collect();
    names.sort();
    names.dedup();
    names
}

#[test]
fn a_lambda_only_program_links_neither_redis_nor_axum() {
    let linked = linked_packages("lambda-only");
    for absent in [
        "redis",
        "axum",
        "axum-core",
        "indicatif",
        "tower-http-server",
    ] {
        assert!(
            !linked.iter().any(|p| p == absent),
            "{absent} is linked: {linked:?}"
        );
    }
    for present in ["ferry", "reqwest", "aws-sigv4"] {
        assert!(linked.iter().any(|p| p == present), "{present} missing");
    }
}

#[test]
fn ferry_core_links_no_async_runtime_and_no_network_stack() {
    let linked = linked_packages("ferry-core");
    for absent in [
        "tokio", "futures", "mio", "hyper", "reqwest", "axum", "ferry",
    ] {
        assert!(
            !linked.iter().any(|p| p == absent),
            "{absent} is linked: {linked:?}"
        );
    }
    assert!(linked.iter().any(|p| p == "serde"), "{linked:?}");
}

/// Builds `lambda-only` with its own (reduced) features.
fn lambda_only() -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_BIN_EXE_ferry-fixture"))
        .parent()
        .expect("target dir")
        .to_path_buf();
    let status = Command::new(env!("CARGO"))
        .args(["build", "--quiet", "--package", "lambda-only"])
        .status()
        .expect("cargo build");
    assert!(status.success(), "cannot build lambda-only");
    dir.join("lambda-only")
}

#[tokio::test]
async fn a_lambda_only_program_runs_inline_and_serves_on_the_lambda_emulator() {
    let program = lambda_only();
    let inline = Command::new(&program)
        .args(["--backend", "inline"])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&inline.stdout);
    assert!(stdout.starts_with("pi ≈ 3.1"), "{stdout}");
    // The local platform is not in this build: asking for it says so.
    let local = Command::new(&program)
        .env_remove("FERRY_BACKEND")
        .output()
        .unwrap();
    assert_eq!(local.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&local.stderr).contains("without ferry's `local` feature"),
        "{}",
        String::from_utf8_lossy(&local.stderr)
    );

    let emulator = Emulator::start();
    let _bootstrap = emulator.bootstrap(program.to_str().unwrap(), "count_inside", &[]);
    let (status, _, body) = emulator
        .invoke(&json!({"seed": 7, "samples": 10_000}))
        .await;
    assert_eq!(status, 200, "{body}");
    let inside: u64 = body.parse().expect("a count");
    assert!((7_500..8_200).contains(&inside), "{inside}");
}
