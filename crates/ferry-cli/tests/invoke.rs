//! `ferry invoke` on the local platform (workers of a real ferry program) and on a program
//! serving in HTTP mode.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};

mod common;
use common::{ferry, ferry_with, workspace_binary};

fn stdout(output: &std::process::Output) -> String {
    common::stdout(output).trim().to_owned()
}

fn stderr(output: &std::process::Output) -> String {
    common::stderr(output).trim().to_owned()
}

fn fixture() -> String {
    workspace_binary("ferry-tests", "ferry-fixture")
        .display()
        .to_string()
}

#[test]
fn invokes_on_the_local_platform() {
    let program = fixture();
    let output = ferry(&[
        "invoke",
        "add",
        "--data",
        r#"{"a": 40, "b": 2}"#,
        "--program",
        &program,
    ]);
    assert!(output.status.success(), "{}", stderr(&output));
    assert_eq!(stdout(&output), "42");

    let args = std::env::temp_dir().join(format!("ferry-invoke-{}.json", std::process::id()));
    std::fs::write(
        &args,
        r#"{"greeting": {"name": "cli", "times": 1}, "punctuation": "?"}"#,
    )
    .unwrap();
    let output = ferry(&[
        "invoke",
        "greet",
        "--file",
        args.to_str().unwrap(),
        "--backend",
        "local",
        "--program",
        &program,
    ]);
    std::fs::remove_file(&args).unwrap();
    assert!(output.status.success(), "{}", stderr(&output));
    assert_eq!(stdout(&output), r#""hello cli?""#);
}

/// The worker's memory limit is its own functions' largest `memory_mb` (256 for the fixture's),
/// not the calling program's: `ferry` itself has no functions, and once let the fixture's 128 MB
/// `hog_memory` take 1 GiB here.
#[test]
fn the_workers_memory_limit_comes_from_its_own_functions() {
    let output = ferry(&[
        "invoke",
        "hog_memory",
        "--data",
        r#"{"mb": 1024}"#,
        "--program",
        &fixture(),
    ]);
    let said = stderr(&output);
    assert_eq!(output.status.code(), Some(1), "{said}");
    assert!(said.contains("ran out of memory"), "{said}");
    assert!(said.contains("limit 256 MiB"), "{said}");
}

#[test]
fn failures_are_clear_and_exit_1() {
    let program = fixture();
    let output = ferry(&[
        "invoke",
        "require_even",
        "--data",
        r#"{"n": 3}"#,
        "--program",
        &program,
    ]);
    assert_eq!(output.status.code(), Some(1));
    assert!(stderr(&output).contains("3 is odd"), "{}", stderr(&output));

    let output = ferry(&[
        "invoke",
        "add",
        "--data",
        r#"{"a": 1, "b": "x"}"#,
        "--program",
        &program,
    ]);
    assert_eq!(output.status.code(), Some(1));
    assert!(
        stderr(&output).contains("bad input at `b`"),
        "{}",
        stderr(&output)
    );

    let output = ferry(&["invoke", "addd", "--program", &program]);
    assert_eq!(output.status.code(), Some(1));
    assert!(
        stderr(&output).contains("has no function `addd`") && stderr(&output).contains("`add`"),
        "{}",
        stderr(&output)
    );

    let output = ferry(&["invoke", "add", "--data", "[1, 2]", "--program", &program]);
    assert!(
        stderr(&output).contains("must be a JSON object"),
        "{}",
        stderr(&output)
    );

    let output = ferry(&["invoke", "add"]);
    assert!(stderr(&output).contains("--program"), "{}", stderr(&output));

    let output = ferry(&["invoke", "add", "--backend", "cloud"]);
    assert!(
        stderr(&output).contains("unknown backend `cloud`"),
        "{}",
        stderr(&output)
    );
}

struct Service(Child);

impl Drop for Service {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn invokes_a_program_served_over_http() {
    let mut child = Command::new(fixture())
        .env("FERRY_ROLE", "http")
        .env("FERRY_LISTEN", "127.0.0.1:0")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start the service");
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let service = Service(child);
    let base = lines
        .by_ref()
        .map_while(Result::ok)
        .find_map(|line| line.strip_prefix("ferry: listening on ").map(str::to_owned))
        .expect("the service announces its address");
    std::thread::spawn(move || lines.for_each(drop));
    let output = ferry_with(
        &[
            "invoke",
            "add",
            "--backend",
            "http",
            "--data",
            r#"{"a": 2, "b": 3}"#,
        ],
        &[("FERRY_HTTP_URL", &base)],
    );
    assert!(output.status.success(), "{}", stderr(&output));
    assert_eq!(stdout(&output), "5");
    drop(service);
    let output = ferry_with(
        &["invoke", "add", "--backend", "http"],
        &[("FERRY_HTTP_URL", &base)],
    );
    assert!(
        stderr(&output).contains("cannot reach"),
        "{}",
        stderr(&output)
    );
}
