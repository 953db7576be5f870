//! `ferry manifest <binary>` on real ferry programs of this workspace, and on programs that are
//! not ferry programs.

mod common;
use common::{ferry, workspace_binary};

fn manifest_of(package: &str, binary: &str) -> serde_json::Value {
    let path = workspace_binary(package, binary);
    let output = ferry(&["manifest", path.to_str().unwrap()]);
    assert!(
        output.status.success(),
        "ferry manifest {binary}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice(&output.stdout).expect("manifest json")
}

#[test]
fn lists_every_function_with_signature_and_config() {
    let manifest = manifest_of("ferry-tests", "ferry-fixture");
    assert_eq!(manifest["manifest_version"], 1);
    let functions = manifest["functions"].as_array().unwrap();
    let add = functions
        .iter()
        .find(|f| f["id"] == "ferry_tests::add")
        .expect("add is listed");
    assert_eq!(add["name"], "add");
    assert_eq!(
        add["params"],
        serde_json::json!([{"name": "a", "type": "i64"}, {"name": "b", "type": "i64"}])
    );
    assert_eq!(add["output"], "i64");
    assert_eq!(add["memory_mb"], 256);
    assert_eq!(add["timeout_ms"], 60_000);
    assert_eq!(add["concurrency"], 64);
    let sleep = functions
        .iter()
        .find(|f| f["id"] == "ferry_tests::sleep_async")
        .unwrap();
    assert_eq!(sleep["timeout_ms"], 300);
    assert_eq!(sleep["async"], true);
    // A `Context` parameter is not an argument.
    let fib = functions
        .iter()
        .find(|f| f["id"] == "ferry_tests::fib")
        .unwrap();
    assert_eq!(fib["params"].as_array().unwrap().len(), 2);
    assert_eq!(fib["output"], "u64");
}

#[test]
fn works_on_every_example() {
    for example in ["pi", "nqueens", "fib"] {
        let manifest = manifest_of(example, example);
        let functions = manifest["functions"].as_array().unwrap();
        assert!(!functions.is_empty(), "{example} lists no functions");
        for function in functions {
            let id = function["id"].as_str().unwrap();
            assert!(id.starts_with(&format!("{example}::")), "{id}");
        }
    }
}

#[test]
fn works_on_a_web_app_without_functions() {
    let manifest = manifest_of("accounts", "accounts");
    assert_eq!(manifest["manifest_version"], 1);
    assert_eq!(manifest["functions"], serde_json::json!([]));
}

#[test]
fn refuses_programs_that_are_not_ferry_programs() {
    let output = ferry(&["manifest", "/bin/true"]);
    assert_eq!(output.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("`/bin/true` is not a ferry program"),
        "{stderr}"
    );

    let output = ferry(&["manifest", "/nonexistent/program"]);
    assert_eq!(output.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("cannot read `/nonexistent/program`"),
        "{stderr}"
    );
}

#[test]
fn compact_output_is_one_line() {
    let path = workspace_binary("ferry-tests", "ferry-fixture");
    let output = ferry(&["manifest", "--compact", path.to_str().unwrap()]);
    assert!(output.status.success());
    assert_eq!(
        String::from_utf8_lossy(&output.stdout)
            .trim()
            .lines()
            .count(),
        1
    );
}
