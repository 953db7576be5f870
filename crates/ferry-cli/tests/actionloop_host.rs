//! `ferry actionloop-host` with real ActionLoop executables in other languages — a Python script
//! and a C program compiled here — zipped as OpenWhisk delivers them, driven over HTTP.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

const SENTINEL: &str = "XXX_THE_END_OF_A_WHISK_ACTIVATION_XXX";

/// The interpreter by absolute path: the proxy gives actions no `PATH`.
fn python() -> String {
    let output = Command::new("python3")
        .args(["-c", "import sys; print(sys.executable)"])
        .output()
        .expect("python3 is installed");
    String::from_utf8(output.stdout).unwrap().trim().to_owned()
}

fn python_action() -> String {
    format!(
        r#"#!{}
import json, os, sys, time
results = os.fdopen(3, "w")
if os.environ.get("__OW_WAIT_FOR_ACK"):
    results.write('{{"ok": true}}\n'); results.flush()
for line in sys.stdin:
    activation = json.loads(line)
    value = activation.get("value", {{}})
    print("python log for", activation.get("activation_id")); sys.stdout.flush()
    if value.get("exit"):
        sys.exit(3)
    if value.get("scalar"):
        results.write("42\n"); results.flush(); continue
    time.sleep(value.get("sleep", 0))
    results.write(json.dumps({{"echo": value, "pid": os.getpid(), "path": os.environ.get("PATH")}}) + "\n")
    results.flush()
"#,
        python()
    )
}

const C_ACTION: &str = r#"
#include <stdio.h>
#include <string.h>
#include <unistd.h>
int main(void) {
    FILE *results = fdopen(3, "w");
    char line[65536];
    while (fgets(line, sizeof line, stdin)) {
        fprintf(stderr, "c log\n");
        if (strstr(line, "\"sleep\"")) usleep(300000);
        fprintf(results, "{\"hello\": \"from c\", \"pid\": %d, \"bytes\": %zu}\n", (int)getpid(), strlen(line));
        fflush(results);
    }
    return 0;
}
"#;

/// A zip with `exec` at its top level, base64'd as `/init` carries it.
fn zipped_exec(exec: &[u8]) -> String {
    let mut buffer = std::io::Cursor::new(Vec::new());
    {
        let mut zip = zip::ZipWriter::new(&mut buffer);
        let options = zip::write::SimpleFileOptions::default().unix_permissions(0o755);
        zip.start_file("exec", options).unwrap();
        zip.write_all(exec).unwrap();
        zip.finish().unwrap();
    }
    base64_simd::STANDARD.encode_to_string(buffer.into_inner())
}

fn c_exec(dir: &Path) -> Vec<u8> {
    let source = dir.join("action.c");
    let binary = dir.join("action");
    std::fs::write(&source, C_ACTION).unwrap();
    let status = Command::new("cc")
        .arg("-O2")
        .arg("-o")
        .arg(&binary)
        .arg(&source)
        .status()
        .expect("a C compiler");
    assert!(status.success());
    std::fs::read(binary).unwrap()
}

struct Host {
    child: Child,
    base: String,
    stdout: Arc<Mutex<Vec<String>>>,
    stderr: Arc<Mutex<Vec<String>>>,
    http: reqwest::Client,
    workdir: PathBuf,
}

impl Host {
    fn start(copies: u32, wait_for_ack: bool) -> Self {
        let workdir = std::env::temp_dir().join(format!(
            "ferry-actionloop-test-{}-{}",
            std::process::id(),
            rand_suffix()
        ));
        let mut command = Command::new(env!("CARGO_BIN_EXE_ferry"));
        command
            .args([
                "actionloop-host",
                "--listen",
                "127.0.0.1:0",
                "--copies",
                &copies.to_string(),
            ])
            .arg("--workdir")
            .arg(&workdir)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .env_remove("__OW_WAIT_FOR_ACK");
        if wait_for_ack {
            command.arg("--wait-for-ack");
        }
        let mut child = command.spawn().expect("start ferry actionloop-host");
        let mut stderr = BufReader::new(child.stderr.take().unwrap()).lines();
        let base = stderr
            .by_ref()
            .map_while(Result::ok)
            .find_map(|l| l.strip_prefix("ferry: listening on ").map(str::to_owned))
            .expect("the host announces its address");
        let stderr_lines = Arc::new(Mutex::new(Vec::new()));
        let stderr_sink = stderr_lines.clone();
        std::thread::spawn(move || {
            for line in stderr.map_while(Result::ok) {
                stderr_sink.lock().unwrap().push(line);
            }
        });
        let stdout = Arc::new(Mutex::new(Vec::new()));
        let sink = stdout.clone();
        let out = child.stdout.take().unwrap();
        std::thread::spawn(move || {
            for line in BufReader::new(out).lines().map_while(Result::ok) {
                sink.lock().unwrap().push(line);
            }
        });
        Self {
            child,
            base,
            stdout,
            stderr: stderr_lines,
            http: reqwest::Client::new(),
            workdir,
        }
    }

    async fn post(&self, route: &str, body: Value) -> (u16, Value) {
        let response = tokio::time::timeout(
            Duration::from_secs(30),
            self.http
                .post(format!("{}{route}", self.base))
                .json(&body)
                .send(),
        )
        .await
        .expect("the host hung")
        .expect("request");
        (
            response.status().as_u16(),
            response.json().await.unwrap_or(Value::Null),
        )
    }

    async fn run(&self, value: Value) -> (u16, Value) {
        self.post("/run", json!({"value": value, "activation_id": "act"}))
            .await
    }
}

impl Drop for Host {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.workdir);
    }
}

fn rand_suffix() -> u128 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos()
}

#[tokio::test]
async fn a_python_action_with_ack_runs_with_sentinels() {
    let host = Host::start(2, true);
    let (status, body) = host.run(json!({})).await;
    assert_eq!(
        (status, body),
        (500, json!({"error": "no action defined yet"}))
    );
    let init = json!({"value": {"code": zipped_exec(python_action().as_bytes()), "binary": true, "main": "main"}});
    assert_eq!(
        host.post("/init", init.clone()).await,
        (200, json!({"ok": true}))
    );
    assert_eq!(
        host.post("/init", init).await,
        (
            403,
            json!({"error": "Cannot initialize the action more than once."})
        )
    );
    let (status, body) = host.run(json!({"n": 1})).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["echo"], json!({"n": 1}));
    assert_eq!(body["path"], Value::Null, "the action inherited PATH");
    // The action's log line, then the sentinel, on stdout; the sentinel on stderr too.
    let started = Instant::now();
    loop {
        let lines = host.stdout.lock().unwrap().clone();
        let on_stderr = host.stderr.lock().unwrap().iter().any(|l| l == SENTINEL);
        if let (Some(at), true) = (lines.iter().position(|l| l == SENTINEL), on_stderr) {
            assert!(
                lines[..at].iter().any(|l| l.starts_with("python log for")),
                "{lines:?}"
            );
            break;
        }
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "no sentinel: {lines:?}"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}

#[tokio::test]
async fn concurrent_runs_are_served_by_parallel_copies() {
    let host = Host::start(4, true);
    let init = json!({"value": {"code": zipped_exec(python_action().as_bytes()), "binary": true}});
    assert_eq!(host.post("/init", init).await.0, 200);
    let runs = (0..4).map(|i| host.run(json!({"sleep": 0.3, "i": i})));
    let answers = futures::future::join_all(runs).await;
    let mut pids: Vec<u64> = answers
        .iter()
        .map(|(status, body)| {
            assert_eq!(*status, 200, "{body}");
            body["pid"].as_u64().unwrap()
        })
        .collect();
    pids.sort_unstable();
    pids.dedup();
    assert_eq!(
        pids.len(),
        4,
        "four overlapping runs need four copies: {pids:?}"
    );
}

#[tokio::test]
async fn go_proxy_errors_exited_and_not_a_dictionary() {
    let host = Host::start(1, true);
    assert_eq!(
        host.post("/init", json!({"value": {"code": ""}})).await.0,
        403
    );
    let init = json!({"value": {"code": zipped_exec(python_action().as_bytes()), "binary": true}});
    assert_eq!(host.post("/init", init).await.0, 200);
    assert_eq!(
        host.run(json!({"scalar": true})).await,
        (
            502,
            json!({"error": "The action did not return a dictionary or array."})
        )
    );
    assert_eq!(
        host.run(json!({"exit": true})).await,
        (400, json!({"error": "command exited"}))
    );
    // A fresh copy serves the next activation.
    let (status, body) = host.run(json!({"after": "exit"})).await;
    assert_eq!(status, 200, "{body}");
}

#[tokio::test]
async fn a_c_action_without_ack() {
    let dir = std::env::temp_dir().join(format!("ferry-c-action-{}", rand_suffix()));
    std::fs::create_dir_all(&dir).unwrap();
    let host = Host::start(2, false);
    let init = json!({"value": {"code": zipped_exec(&c_exec(&dir)), "binary": true}});
    assert_eq!(host.post("/init", init).await, (200, json!({"ok": true})));
    for _ in 0..3 {
        let (status, body) = host.run(json!({"x": 1})).await;
        assert_eq!(status, 200, "{body}");
        assert_eq!(body["hello"], "from c");
    }
    // Overlapping activations are served by different copies at once.
    let runs = (0..2).map(|_| host.run(json!({"sleep": true})));
    let pids: std::collections::BTreeSet<u64> = futures::future::join_all(runs)
        .await
        .into_iter()
        .map(|(status, body)| {
            assert_eq!(status, 200, "{body}");
            body["pid"].as_u64().unwrap()
        })
        .collect();
    assert_eq!(
        pids.len(),
        2,
        "two overlapping runs need two copies: {pids:?}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
