//! `ferry watch` (issue #10): a change to a crate's source rebuilds it and reruns the program,
//! or restarts its HTTP service, which then answers with the new code.

mod common;
#[path = "common/crates.rs"]
mod crates;

use std::io::{BufRead, BufReader, Read as _, Write as _};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::process::{Child, Stdio};
use std::sync::mpsc::{Receiver, channel};
use std::time::{Duration, Instant};

use common::{ferry_in, ok};
use crates::{build_lock, command, outside_workspace, shared_target};

/// `ferry watch args…` in `dir`, its stdout and stderr lines sent to the receiver.
fn watch(dir: &Path, args: &[&str]) -> (Child, Receiver<String>) {
    let mut child = command(env!("CARGO_BIN_EXE_ferry"), dir, &["watch"])
        .args(args)
        .env("CARGO_TARGET_DIR", shared_target())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let (lines, received) = channel();
    for stream in [
        Box::new(child.stdout.take().unwrap()) as Box<dyn std::io::Read + Send>,
        Box::new(child.stderr.take().unwrap()),
    ] {
        let lines = lines.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(stream).lines().map_while(Result::ok) {
                let _ = lines.send(line);
            }
        });
    }
    (child, received)
}

/// Waits for a line containing `text`, up to `within`; returns what was seen on failure.
fn wait_for(lines: &Receiver<String>, text: &str, within: Duration) -> Result<(), String> {
    let deadline = Instant::now() + within;
    let mut seen = String::new();
    while let Some(left) = deadline.checked_duration_since(Instant::now()) {
        match lines.recv_timeout(left) {
            Ok(line) if line.contains(text) => return Ok(()),
            Ok(line) => {
                seen.push_str(&line);
                seen.push('\n');
            }
            Err(_) => break,
        }
    }
    Err(format!("no line with `{text}` in:\n{seen}"))
}

/// GET `path` on 127.0.0.1:`port`: the body, or `None` while nothing answers.
fn get(port: u16, path: &str) -> Option<String> {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).ok()?;
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
    )
    .ok()?;
    let mut response = String::new();
    stream.read_to_string(&mut response).ok()?;
    response
        .split_once("\r\n\r\n")
        .map(|(_, body)| body.to_owned())
}

fn edit(file: &Path, from: &str, to: &str) {
    let text = std::fs::read_to_string(file).unwrap();
    assert!(text.contains(from), "`{from}` not in {}", file.display());
    std::fs::write(file, text.replace(from, to)).unwrap();
}

#[test]
fn a_change_reruns_the_program_and_restarts_its_http_service() {
    let _build = build_lock();

    // The program's `main`, run again after each change.
    let scratch = outside_workspace("watch-fanout");
    ok(
        &ferry_in(scratch.path(), &["new", "counter"], &[]),
        "ferry new",
    );
    let dir = scratch.path().join("counter");
    let (mut child, lines) = watch(&dir, &["--", "--backend", "inline"]);
    let first = wait_for(
        &lines,
        "invocations on the inline backend",
        Duration::from_secs(600),
    );
    edit(
        &dir.join("src/main.rs"),
        "words, {} distinct",
        "words (watched), {} distinct",
    );
    let second = wait_for(&lines, "words (watched)", Duration::from_secs(300));
    let _ = child.kill();
    let _ = child.wait();
    first.unwrap();
    second.unwrap();

    // A web app's HTTP service, restarted with the new code.
    let scratch = outside_workspace("watch-web");
    ok(
        &ferry_in(scratch.path(), &["new", "site", "--template", "web"], &[]),
        "ferry new",
    );
    let dir = scratch.path().join("site");
    let port = TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .unwrap()
        .port();
    let listen = format!("127.0.0.1:{port}");
    let (mut child, lines) = watch(&dir, &["--http", "--listen", &listen]);
    let answered = |expected: &str, within: Duration| {
        let deadline = Instant::now() + within;
        loop {
            match get(port, "/hello/ferry") {
                Some(body) if body.contains(expected) => return Ok(()),
                other if Instant::now() > deadline => {
                    return Err(format!("last answer: {other:?}"));
                }
                _ => std::thread::sleep(Duration::from_millis(100)),
            }
        }
    };
    let before = answered("hello, ferry!", Duration::from_secs(600));
    edit(
        &dir.join("src/lib.rs"),
        "format!(\"hello, {name}!\")",
        "format!(\"ahoy, {name}!\")",
    );
    let after = answered("ahoy, ferry!", Duration::from_secs(300));
    let restarted = wait_for(&lines, "change detected", Duration::from_secs(5));
    let _ = child.kill();
    let _ = child.wait();
    before.unwrap();
    after.unwrap();
    restarted.unwrap();
    // The service ended with `ferry watch`.
    let deadline = Instant::now() + Duration::from_secs(5);
    while get(port, "/hello/ferry").is_some() {
        assert!(
            Instant::now() < deadline,
            "the service outlived `ferry watch`"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}
