//! `ferry new`: every template makes a crate that is formatted, lint-free, passes its own tests,
//! and whose program prints the right thing on the local platform and inline; names and
//! directories it must refuse are refused, and nothing is left behind.
//!
//! This is also the project's check that a crate outside the workspace builds against ferry by
//! path while resolving its dependencies afresh: there is no `Cargo.lock`, so cargo picks the
//! newest versions compatible with ferry's requirements, as in a user's new crate, not the
//! versions the workspace's lockfile pins.

mod common;
#[path = "common/crates.rs"]
mod crates;

use std::io::{BufRead, BufReader, Read as _, Write as _};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::time::Duration;

use common::{Scratch, fails, ferry_in, ok, workspace};
use crates::{build_lock, cargo, outside_workspace, succeeds};

/// `ferry new NAME --template TEMPLATE` in a fresh directory outside the workspace: the crate's
/// directory, with its scratch parent (removed on drop).
fn generate(name: &str, template: &str) -> (Scratch, PathBuf) {
    let scratch = outside_workspace(&format!("new-{template}"));
    let output = ferry_in(scratch.path(), &["new", name, "--template", template], &[]);
    let said = ok(&output, "ferry new");
    let ferry = workspace().join("crates/ferry").canonicalize().unwrap();
    assert!(
        said.contains(&format!("depending on ferry at `{}`", ferry.display())),
        "{said}"
    );
    assert!(said.contains(&format!("cd {name}")), "{said}");
    let dir = scratch.path().join(name);
    for file in [
        "Cargo.toml",
        ".gitignore",
        "README.md",
        "src/lib.rs",
        "src/main.rs",
        "tests/inline.rs",
        "tests/local.rs",
    ] {
        assert!(dir.join(file).is_file(), "{template}: no {file}");
    }
    assert!(!dir.join("Cargo.lock").exists());
    (scratch, dir)
}

/// The crate depends on ferry alone, by path to this workspace's ferry.
fn assert_only_ferry(dir: &Path) {
    let manifest = std::fs::read_to_string(dir.join("Cargo.toml")).unwrap();
    let dependencies: Vec<&str> = manifest
        .split("[dependencies]")
        .nth(1)
        .expect("a [dependencies] table")
        .lines()
        .map(str::trim)
        .filter(|line| !line.is_empty())
        .collect();
    let ferry = workspace().join("crates/ferry").canonicalize().unwrap();
    assert_eq!(
        dependencies,
        [format!("ferry = {{ path = \"{}\" }}", ferry.display())],
        "{manifest}"
    );
}

/// The checks every template passes before its program runs.
fn formatted_linted_and_tested(dir: &Path, tests: &[&str]) {
    succeeds(&mut cargo(dir, &["fmt", "--check"]), "cargo fmt --check");
    let tested = succeeds(&mut cargo(dir, &["test"]), "cargo test");
    for test in tests {
        assert!(
            tested.contains(&format!("test {test} ... ok")),
            "`{test}` did not pass:\n{tested}"
        );
    }
    assert!(!tested.contains("FAILED"), "{tested}");
    succeeds(
        &mut cargo(dir, &["clippy", "--all-targets", "--", "-D", "warnings"]),
        "cargo clippy",
    );
}

#[test]
fn the_fanout_template_counts_words() {
    let _lock = build_lock();
    let (_scratch, dir) = generate("word-count", "fanout");
    assert_only_ferry(&dir);
    formatted_linted_and_tested(
        &dir,
        &[
            "tests::counts_words_whatever_their_case",
            "tests::chunks_keep_every_line",
            "a_fan_out_counts_what_one_call_counts",
            "workers_count_what_one_call_counts",
        ],
    );
    let top = "  23 the\n   7 and\n   5 at\n   4 bank\n   4 ferry\n";
    let local = succeeds(&mut cargo(&dir, &["run"]), "cargo run");
    assert_eq!(
        local,
        format!("115 words, 65 distinct, counted by 4 invocations on the local backend\n{top}")
    );
    let inline = succeeds(
        &mut cargo(&dir, &["run", "--", "--backend", "inline"]),
        "cargo run -- --backend inline",
    );
    assert_eq!(
        inline,
        format!("115 words, 65 distinct, counted by 4 invocations on the inline backend\n{top}")
    );
}

#[test]
fn the_flow_template_runs_its_stages_in_order() {
    let _lock = build_lock();
    let (_scratch, dir) = generate("shouting-flow", "flow");
    assert_only_ferry(&dir);
    formatted_linted_and_tested(
        &dir,
        &[
            "tests::stages_are_plain_functions",
            "the_flow_runs_inline",
            "chained_and_orchestrated_runs_agree",
        ],
    );
    let results = "\"ferries cross rivers\" -> FERRIES!\n\
                   \"\" -> no words: the flow ended at `longest`\n\
                   \"a pipeline of three functions\" -> FUNCTIONS!\n";
    let local = succeeds(&mut cargo(&dir, &["run"]), "cargo run");
    assert_eq!(local, format!("{results}on the local backend\n"));
    let inline = succeeds(
        &mut cargo(&dir, &["run", "--", "--backend", "inline"]),
        "cargo run -- --backend inline",
    );
    assert_eq!(inline, format!("{results}on the inline backend\n"));
}

/// The web app serves its routes with `cargo run`, its handlers' functions on the local
/// platform and, with `FERRY_BACKEND=inline`, in the server's process (`ferry::web::serve`
/// reads the backend from the environment: a web app's arguments are its own), and drains on
/// SIGTERM.
#[test]
fn the_web_template_serves_routes_that_call_functions() {
    let _lock = build_lock();
    let (_scratch, dir) = generate("web-app", "web");
    assert_only_ferry(&dir);
    formatted_linted_and_tested(
        &dir,
        &[
            "tests::greets_by_name",
            "functions_run_inline",
            "functions_run_on_workers",
        ],
    );
    for backend in ["local", "inline"] {
        let server = Server::start(&dir, backend);
        assert_eq!(
            server.get("/hello/ferry"),
            (200, "hello, ferry!".to_owned()),
            "{backend}"
        );
        assert_eq!(
            server.get("/squares/4"),
            (200, "[1,4,9,16]".to_owned()),
            "{backend}"
        );
        assert_eq!(
            server.get("/squares/101"),
            (400, "at most 100 squares".to_owned()),
            "{backend}"
        );
        server.stop();
    }
}

/// The web template's `cargo run`, on a free loopback port.
struct Server {
    child: Child,
    address: String,
}

impl Server {
    fn start(dir: &Path, backend: &str) -> Self {
        let mut child = cargo(dir, &["run"])
            .env("FERRY_LISTEN", "127.0.0.1:0")
            .env("FERRY_BACKEND", backend)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("cargo run");
        let stderr = child.stderr.take().unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            // Reads to the end, so the server never blocks on a full pipe.
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                let _ = tx.send(line);
            }
        });
        let mut said = Vec::new();
        let address = loop {
            match rx.recv_timeout(Duration::from_secs(300)) {
                Ok(line) => match line.strip_prefix("ferry: listening on http://") {
                    Some(address) => break address.trim().to_owned(),
                    None => said.push(line),
                },
                Err(_) => {
                    let _ = child.kill();
                    let _ = child.wait();
                    panic!("the web app never listened:\n{}", said.join("\n"));
                }
            }
        };
        Self { child, address }
    }

    /// `GET path`: the status and the body.
    fn get(&self, path: &str) -> (u16, String) {
        let mut stream = TcpStream::connect(&self.address).expect("connect to the app");
        stream
            .set_read_timeout(Some(Duration::from_secs(60)))
            .unwrap();
        write!(
            stream,
            "GET {path} HTTP/1.1\r\nHost: {}\r\nConnection: close\r\n\r\n",
            self.address
        )
        .unwrap();
        let mut response = String::new();
        stream.read_to_string(&mut response).expect("a response");
        let (head, body) = response.split_once("\r\n\r\n").expect("an HTTP response");
        let status = head
            .split_whitespace()
            .nth(1)
            .and_then(|s| s.parse().ok())
            .expect("a status");
        (status, body.to_owned())
    }

    /// SIGTERM (`cargo run` has exec'd the app, so this is the app's pid): the app drains and
    /// exits successfully.
    fn stop(mut self) {
        let pid = libc::pid_t::try_from(self.child.id()).unwrap();
        // SAFETY: `pid` is our child, not yet waited for.
        assert_eq!(unsafe { libc::kill(pid, libc::SIGTERM) }, 0);
        let status = self.child.wait().unwrap();
        assert!(status.success(), "the app exited with {status} on SIGTERM");
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn refuses_bad_names_and_taken_directories() {
    let scratch = outside_workspace("new-refusals");
    let here = scratch.path();
    for (name, reason) in [
        (
            "1up",
            "`1up` is not a valid crate name: it must start with a letter or `_`",
        ),
        (
            "my app",
            "`my app` is not a valid crate name: ` ` is not allowed",
        ),
        ("fn", "`fn` is not a valid crate name: it is a Rust keyword"),
        ("ferry", "`ferry` is not a valid crate name: it is taken"),
    ] {
        let error = fails(&ferry_in(here, &["new", name], &[]), "ferry new");
        assert!(error.contains(&format!("error: {reason}")), "{error}");
    }
    assert_eq!(std::fs::read_dir(here).unwrap().count(), 0, "nothing made");

    // A non-empty directory is left as it was; an empty one is used.
    std::fs::create_dir(here.join("taken")).unwrap();
    std::fs::write(here.join("taken/notes.txt"), "mine").unwrap();
    let error = fails(&ferry_in(here, &["new", "taken"], &[]), "ferry new");
    assert!(
        error.contains("error: `taken` already exists and is not empty"),
        "{error}"
    );
    let left: Vec<_> = std::fs::read_dir(here.join("taken")).unwrap().collect();
    assert_eq!(left.len(), 1);
    std::fs::write(here.join("file"), "").unwrap();
    let error = fails(&ferry_in(here, &["new", "file"], &[]), "ferry new");
    assert!(
        error.contains("error: `file` already exists and is not a directory"),
        "{error}"
    );
    std::fs::create_dir(here.join("empty")).unwrap();
    ok(
        &ferry_in(here, &["new", "empty"], &[]),
        "ferry new in an empty directory",
    );
    assert!(here.join("empty/src/main.rs").is_file());

    // `--ferry-path` must name the ferry crate; `--template` one of the templates.
    let error = fails(
        &ferry_in(here, &["new", "other", "--ferry-path", "."], &[]),
        "ferry new --ferry-path .",
    );
    assert!(error.contains("is not the ferry crate"), "{error}");
    let output = ferry_in(here, &["new", "other", "--template", "cli"], &[]);
    assert_eq!(output.status.code(), Some(2), "bad usage");
    assert!(!here.join("other").exists());
}

#[test]
fn ferry_path_and_path_choose_the_dependency_and_the_place() {
    let scratch = outside_workspace("new-paths");
    let ferry = workspace().join("crates/ferry");
    // A relative `--ferry-path` becomes absolute: the crate may be anywhere.
    let output = ferry_in(
        &workspace(),
        &[
            "new",
            "elsewhere",
            "--path",
            scratch.path().to_str().unwrap(),
            "--ferry-path",
            "crates/ferry",
            "--template",
            "web",
        ],
        &[],
    );
    ok(&output, "ferry new --path --ferry-path");
    let manifest = std::fs::read_to_string(scratch.path().join("elsewhere/Cargo.toml")).unwrap();
    assert!(
        manifest.contains(&format!(
            "ferry = {{ path = \"{}\" }}",
            ferry.canonicalize().unwrap().display()
        )),
        "{manifest}"
    );
    let readme = std::fs::read_to_string(scratch.path().join("elsewhere/README.md")).unwrap();
    assert!(readme.starts_with("# elsewhere\n"), "{readme}");
    assert!(readme.contains("ferry::web::serve"), "{readme}");
}
