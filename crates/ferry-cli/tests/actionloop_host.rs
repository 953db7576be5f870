//! `ferry actionloop-host` with real ActionLoop executables in other languages — a Python script
//! and a C program compiled here — zipped as OpenWhisk delivers them, driven over HTTP.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

mod common;

use common::Scratch;

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
    /// Removed when the test ends, whatever the host did.
    cleanup: Option<PathBuf>,
}

/// `ferry actionloop-host` on a free loopback port, without an inherited `__OW_WAIT_FOR_ACK`.
fn host_command(copies: u32, wait_for_ack: bool) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_ferry"));
    command
        .args([
            "actionloop-host",
            "--listen",
            "127.0.0.1:0",
            "--copies",
            &copies.to_string(),
        ])
        .env_remove("__OW_WAIT_FOR_ACK");
    if wait_for_ack {
        command.arg("--wait-for-ack");
    }
    command
}

impl Host {
    fn start(copies: u32, wait_for_ack: bool) -> Self {
        let workdir = std::env::temp_dir().join(format!(
            "ferry-actionloop-test-{}-{}",
            std::process::id(),
            rand_suffix()
        ));
        let mut command = host_command(copies, wait_for_ack);
        command.arg("--workdir").arg(&workdir);
        Self::launch(command, Some(workdir))
    }

    /// Runs `command` (which ends up as the host) and waits for its address.
    fn launch(mut command: Command, cleanup: Option<PathBuf>) -> Self {
        command.stdout(Stdio::piped()).stderr(Stdio::piped());
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
            cleanup,
        }
    }

    async fn post(&self, route: &str, body: Value) -> (u16, Value) {
        self.post_bytes(route, serde_json::to_vec(&body).unwrap())
            .await
    }

    async fn post_bytes(&self, route: &str, body: Vec<u8>) -> (u16, Value) {
        let response = tokio::time::timeout(
            Duration::from_secs(30),
            self.http
                .post(format!("{}{route}", self.base))
                .header("content-type", "application/json")
                .body(body)
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

    fn pid(&self) -> i32 {
        i32::try_from(self.child.id()).unwrap()
    }

    fn signal(&self, signal: i32) {
        // SAFETY: kill only sends a signal to the host this test started.
        assert_eq!(unsafe { libc::kill(self.pid(), signal) }, 0);
    }

    /// The host's exit status, failing the test if it is still running after `within`.
    fn exit_within(&mut self, within: Duration) -> std::process::ExitStatus {
        let deadline = Instant::now() + within;
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                return status;
            }
            assert!(
                Instant::now() < deadline,
                "the host still runs after {within:?}: {:?}",
                self.stderr.lock().unwrap()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Host {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        if let Some(dir) = &self.cleanup {
            let _ = std::fs::remove_dir_all(dir);
        }
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

/// A ferry program is an ActionLoop executable like any other: with no `__OW_*` variable in the
/// host's environment and no ack asked for, it still learns from `__OW_PROXY_VERSION` that a proxy
/// started it, as under the Go proxy, and serves activations instead of running as a host.
#[tokio::test]
async fn a_ferry_program_is_recognised_as_the_exec() {
    let fixture = common::workspace_binary("ferry-tests", "ferry-fixture");
    let launcher = format!("#!/bin/sh\nexec {}\n", fixture.display());
    let mut command = host_command(1, false);
    for (key, _) in std::env::vars() {
        if key.starts_with("__OW_") || key.starts_with("FERRY_") {
            command.env_remove(key);
        }
    }
    let workdir = std::env::temp_dir().join(format!("ferry-actionloop-ferry-{}", rand_suffix()));
    command.arg("--workdir").arg(&workdir);
    let host = Host::launch(command, Some(workdir));
    let init = json!({"value": {"code": zipped_exec(launcher.as_bytes()), "binary": true}});
    assert_eq!(host.post("/init", init).await, (200, json!({"ok": true})));
    for n in 0..3 {
        let (status, body) = host
            .post(
                "/run",
                json!({"value": {"a": n, "b": 1}, "action_name": "/guest/add"}),
            )
            .await;
        assert_eq!((status, body), (200, json!({"result": n + 1})));
    }
    let (status, body) = host
        .post(
            "/run",
            json!({"value": {}, "action_name": "/guest/activation", "activation_id": "a1"}),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    assert!(
        body["__OW_PROXY_VERSION"].is_null() && body["__OW_ACTIVATION_ID"] == "a1",
        "{body}"
    );
}

/// `sleep` by absolute path: actions get no `PATH`.
fn sleep_path() -> String {
    let output = Command::new("sh")
        .args(["-c", "command -v sleep"])
        .output()
        .expect("sh");
    String::from_utf8(output.stdout).unwrap().trim().to_owned()
}

/// A shell action that starts a long `sleep` of its own, writes `<its pid> <that pid>` to
/// `$PIDS`, and per activation touches `$PIDS.run`, naps `$NAP` seconds and answers its pid.
fn sleepy_action() -> String {
    let sleep = sleep_path();
    format!(
        r#"#!/bin/sh
{sleep} 1000 </dev/null >/dev/null 2>&1 3>&- &
echo "$$ $!" > "$PIDS"
while read -r line; do
  echo run > "$PIDS.run"
  {sleep} "$NAP"
  echo "{{\"pid\": $$}}" >&3
done
"#
    )
}

/// Running, not a zombie.
fn alive(pid: i32) -> bool {
    let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
        return false;
    };
    let state = stat
        .rsplit_once(')')
        .and_then(|(_, rest)| rest.trim_start().chars().next());
    !matches!(state, Some('Z' | 'X') | None)
}

fn gone_within(pid: i32, within: Duration) -> bool {
    let deadline = Instant::now() + within;
    while alive(pid) {
        if Instant::now() > deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    true
}

/// Kills what a failed test leaves running.
struct Pids(Vec<i32>);

impl Drop for Pids {
    fn drop(&mut self) {
        for &pid in &self.0 {
            if alive(pid) {
                // SAFETY: kill only sends a signal, to a process this test's host started.
                unsafe { libc::kill(pid, libc::SIGKILL) };
            }
        }
    }
}

async fn wait_for_file(path: &Path) -> String {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        if let Ok(text) = std::fs::read_to_string(path)
            && text.ends_with('\n')
        {
            return text;
        }
        assert!(Instant::now() < deadline, "no {}", path.display());
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// The pids `sleepy_action` wrote: its own and its `sleep`'s.
async fn sleepy_pids(path: &Path) -> (i32, i32) {
    let text = wait_for_file(path).await;
    let mut pids = text.split_whitespace().map(|p| p.parse().unwrap());
    (pids.next().unwrap(), pids.next().unwrap())
}

enum Entry<'a> {
    File(&'a [u8]),
    Link(&'a str),
}

fn zip_of(entries: &[(&str, Entry<'_>)]) -> String {
    let mut buffer = std::io::Cursor::new(Vec::new());
    {
        let mut zip = zip::ZipWriter::new(&mut buffer);
        let options = zip::write::SimpleFileOptions::default().unix_permissions(0o755);
        for (name, entry) in entries {
            match entry {
                Entry::File(bytes) => {
                    zip.start_file(*name, options).unwrap();
                    zip.write_all(bytes).unwrap();
                }
                Entry::Link(target) => zip.add_symlink(*name, *target, options).unwrap(),
            }
        }
        zip.finish().unwrap();
    }
    base64_simd::STANDARD.encode_to_string(buffer.into_inner())
}

/// Answers every activation with the path it runs from (`$0`).
const WHERE_AM_I: &str =
    "#!/bin/sh\nwhile read -r line; do echo \"{\\\"exec\\\": \\\"$0\\\"}\" >&3; done\n";

fn names(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort();
    names
}

fn mode(path: &Path) -> u32 {
    use std::os::unix::fs::PermissionsExt;
    std::fs::symlink_metadata(path)
        .unwrap()
        .permissions()
        .mode()
        & 0o7777
}

/// A file the action must never touch, and its mode.
fn victim(dir: &Path) -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let victim = dir.join("victim");
    std::fs::write(&victim, "do not touch\n").unwrap();
    std::fs::set_permissions(&victim, std::fs::Permissions::from_mode(0o600)).unwrap();
    victim
}

fn untouched(victim: &Path) {
    assert_eq!(
        std::fs::read_to_string(victim).unwrap(),
        "do not touch\n",
        "the action overwrote a file outside its directory"
    );
    assert_eq!(mode(victim), 0o600, "the action changed a file's mode");
}

#[tokio::test]
async fn a_directory_planted_at_the_old_predictable_path_is_never_used() {
    use std::os::unix::fs::MetadataExt;
    let tmp = Scratch::new("actionloop-planted");
    let victim = victim(tmp.path());
    // The shell plants `$TMPDIR/ferry-actionloop-<pid>/exec -> victim` and then becomes the
    // host with that same pid.
    let mut command = Command::new("/bin/sh");
    command
        .arg("-c")
        .arg(
            r#"mkdir "$TMPDIR/ferry-actionloop-$$" && ln -s "$1" "$TMPDIR/ferry-actionloop-$$/exec" && exec "$0" actionloop-host --listen 127.0.0.1:0 --copies 1"#,
        )
        .arg(env!("CARGO_BIN_EXE_ferry"))
        .arg(&victim)
        .env("TMPDIR", tmp.path())
        .env_remove("__OW_WAIT_FOR_ACK");
    let mut host = Host::launch(command, None);
    let planted = format!("ferry-actionloop-{}", host.pid());
    let fresh: Vec<String> = names(tmp.path())
        .into_iter()
        .filter(|n| n.starts_with("ferry-actionloop-") && *n != planted)
        .collect();
    assert_eq!(
        names(tmp.path()).len(),
        3,
        "the victim, the planted dir and the host's own: {:?}",
        names(tmp.path())
    );
    assert_eq!(fresh.len(), 1, "{fresh:?}");
    let workdir = tmp.path().join(&fresh[0]);
    let meta = std::fs::symlink_metadata(&workdir).unwrap();
    assert!(meta.is_dir());
    assert_eq!(mode(&workdir), 0o700);
    // SAFETY: geteuid cannot fail.
    assert_eq!(meta.uid(), unsafe { libc::geteuid() });

    let init = json!({"value": {"code": WHERE_AM_I}});
    assert_eq!(host.post("/init", init).await, (200, json!({"ok": true})));
    let (status, body) = host.run(json!({})).await;
    assert_eq!(status, 200, "{body}");
    let exec = PathBuf::from(body["exec"].as_str().unwrap());
    assert!(exec.starts_with(&workdir), "{exec:?} is not in {workdir:?}");
    untouched(&victim);
    let link = tmp.path().join(&planted).join("exec");
    assert_eq!(std::fs::read_link(&link).unwrap(), victim);

    host.signal(libc::SIGTERM);
    assert_eq!(host.exit_within(Duration::from_secs(10)).code(), Some(0));
    assert!(!workdir.exists(), "the work dir outlived the host");
    assert!(
        tmp.path().join(&planted).exists(),
        "the host removed a dir it did not make"
    );
    untouched(&victim);
}

#[tokio::test]
async fn zips_with_links_or_paths_outside_the_action_are_refused() {
    let tmp = Scratch::new("actionloop-zip");
    let victim = victim(tmp.path());
    let mut command = host_command(1, false);
    command.env("TMPDIR", tmp.path());
    let host = Host::launch(command, None);
    let exec = WHERE_AM_I.as_bytes();
    let target = victim.to_str().unwrap();
    let escape = tmp.path().join("escaped");
    let absolute = escape.to_str().unwrap();
    let refused = [
        (
            vec![("exec", Entry::File(exec)), ("data", Entry::Link(target))],
            "the action zip's entry `data` is a symbolic link, which is not allowed",
        ),
        (
            vec![("exec", Entry::Link(target))],
            "the action zip's entry `exec` is a symbolic link, which is not allowed",
        ),
        (
            vec![
                ("exec", Entry::File(exec)),
                ("../../escaped", Entry::File(b"x")),
            ],
            "the action zip's entry `../../escaped` points outside the action directory",
        ),
        (
            vec![("exec", Entry::File(exec)), (absolute, Entry::File(b"x"))],
            "points outside the action directory",
        ),
    ];
    for (entries, error) in refused {
        let init = json!({"value": {"code": zip_of(&entries), "binary": true}});
        let (status, body) = host.post("/init", init).await;
        assert_eq!(status, 502, "{body}");
        let message = body["error"].as_str().unwrap_or_default();
        assert!(message.ends_with(error), "{message}");
    }
    untouched(&victim);
    assert!(!escape.exists());
    let workdirs: Vec<String> = names(tmp.path())
        .into_iter()
        .filter(|n| n.starts_with("ferry-actionloop-"))
        .collect();
    assert_eq!(
        names(tmp.path()).len(),
        2,
        "only the victim and the work dir: {:?}",
        names(tmp.path())
    );
    let workdir = tmp.path().join(&workdirs[0]);
    assert_eq!(
        names(&workdir),
        Vec::<String>::new(),
        "refused actions left files"
    );
    // A refused /init leaves the host free to take a good action.
    let good = zip_of(&[
        ("exec", Entry::File(exec)),
        ("lib/data.txt", Entry::File(b"x")),
    ]);
    let init = json!({"value": {"code": good, "binary": true}});
    assert_eq!(host.post("/init", init).await, (200, json!({"ok": true})));
    let (status, body) = host.run(json!({})).await;
    assert_eq!(status, 200, "{body}");
    let exec = PathBuf::from(body["exec"].as_str().unwrap());
    assert!(exec.starts_with(&workdir), "{exec:?}");
    assert_eq!(mode(&exec), 0o755);
}

#[tokio::test]
async fn an_explicit_workdir_is_never_written_through_what_it_holds() {
    use std::os::unix::fs::PermissionsExt;
    let tmp = Scratch::new("actionloop-explicit");
    let victim = victim(tmp.path());
    let dir = tmp.path().join("work");
    let elsewhere = tmp.path().join("elsewhere");
    std::fs::create_dir(&elsewhere).unwrap();

    // Writable by others: refused before serving.
    std::fs::create_dir(&dir).unwrap();
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o777)).unwrap();
    let mut refused = host_command(1, false)
        .arg("--workdir")
        .arg(&dir)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    let status = loop {
        if let Some(status) = refused.try_wait().unwrap() {
            break status;
        }
        if Instant::now() > deadline {
            let _ = refused.kill();
            let _ = refused.wait();
            panic!("the host served from a directory others can write");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let mut stderr = String::new();
    std::io::Read::read_to_string(&mut refused.stderr.take().unwrap(), &mut stderr).unwrap();
    assert_eq!(status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("must belong to this user and be writable by no one else"),
        "{stderr}"
    );

    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700)).unwrap();
    // Where the host used to write its `exec`, and where it would put its first action.
    std::os::unix::fs::symlink(&victim, dir.join("exec")).unwrap();
    std::os::unix::fs::symlink(&elsewhere, dir.join("1")).unwrap();
    let mut command = host_command(1, false);
    command.arg("--workdir").arg(&dir);
    let mut host = Host::launch(command, None);
    let init = json!({"value": {"code": WHERE_AM_I}});
    assert_eq!(host.post("/init", init).await, (200, json!({"ok": true})));
    let (status, body) = host.run(json!({})).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["exec"], json!(dir.join("2").join("exec")));
    assert_eq!(names(&elsewhere), Vec::<String>::new());
    untouched(&victim);
    host.signal(libc::SIGTERM);
    assert_eq!(host.exit_within(Duration::from_secs(10)).code(), Some(0));
    // What the host made is gone; what it found stays.
    assert_eq!(names(&dir), vec!["1".to_owned(), "exec".to_owned()]);
    assert_eq!(std::fs::read_link(dir.join("1")).unwrap(), elsewhere);
}

#[tokio::test]
async fn sigterm_lets_the_run_in_flight_finish_then_stops_every_copy() {
    let scratch = Scratch::new("actionloop-drain");
    let pids = scratch.path().join("pids");
    let mut host = Host::start(2, false);
    let workdir = host.cleanup.clone().unwrap();
    let init = json!({"value": {"code": sleepy_action(), "env": {"PIDS": pids, "NAP": "1"}}});
    assert_eq!(host.post("/init", init).await, (200, json!({"ok": true})));
    let (copy, child) = sleepy_pids(&pids).await;
    let _cleanup = Pids(vec![copy, child]);
    assert!(alive(copy) && alive(child));
    let signal = async {
        // Once the copy has the activation.
        wait_for_file(&scratch.path().join("pids.run")).await;
        host.signal(libc::SIGTERM);
        Instant::now()
    };
    let ((status, body), signalled) = tokio::join!(host.run(json!({"slow": true})), signal);
    assert_eq!((status, &body["pid"]), (200, &json!(copy)), "{body}");
    assert_eq!(host.exit_within(Duration::from_secs(10)).code(), Some(0));
    assert!(signalled.elapsed() < Duration::from_secs(10));
    assert!(
        gone_within(copy, Duration::from_secs(5)),
        "the copy outlived the host"
    );
    assert!(
        gone_within(child, Duration::from_secs(5)),
        "a process the copy started outlived the host"
    );
    assert!(!workdir.exists(), "the work dir outlived the host");
}

#[tokio::test]
async fn the_drain_is_bounded_by_drain_timeout() {
    let scratch = Scratch::new("actionloop-drain-bound");
    let pids = scratch.path().join("pids");
    let workdir = scratch.path().join("work");
    let mut command = host_command(1, false);
    command
        .args(["--drain-timeout", "0.5", "--workdir"])
        .arg(&workdir);
    let mut host = Host::launch(command, None);
    let init = json!({"value": {"code": sleepy_action(), "env": {"PIDS": pids, "NAP": "1000"}}});
    assert_eq!(host.post("/init", init).await, (200, json!({"ok": true})));
    let (copy, child) = sleepy_pids(&pids).await;
    let _cleanup = Pids(vec![copy, child]);
    let signal = async {
        wait_for_file(&scratch.path().join("pids.run")).await;
        host.signal(libc::SIGINT);
        Instant::now()
    };
    let (answer, signalled) = tokio::join!(host.run(json!({"forever": true})), signal);
    assert_eq!(answer, (400, json!({"error": "command exited"})));
    assert_eq!(host.exit_within(Duration::from_secs(10)).code(), Some(0));
    let took = signalled.elapsed();
    assert!(
        took >= Duration::from_millis(500) && took < Duration::from_secs(5),
        "{took:?}"
    );
    assert!(gone_within(copy, Duration::from_secs(5)));
    assert!(gone_within(child, Duration::from_secs(5)));
    assert!(!workdir.exists());
}

#[tokio::test]
async fn init_fails_when_the_exec_exits_at_once() {
    let exits = json!({"value": {"code": "#!/bin/sh\nexit 3\n"}});
    let host = Host::start(1, false);
    assert_eq!(
        host.post("/init", exits.clone()).await,
        (502, json!({"error": "cannot start action: command exited"}))
    );
    // As with the Go proxy, a failed /init may be followed by a good one.
    let good = json!({"value": {"code": zipped_exec(python_action().as_bytes()), "binary": true}});
    assert_eq!(host.post("/init", good).await, (200, json!({"ok": true})));
    let (status, body) = host.run(json!({"n": 2})).await;
    assert_eq!((status, &body["echo"]), (200, &json!({"n": 2})), "{body}");

    let host = Host::start(1, true);
    assert_eq!(
        host.post("/init", exits).await,
        (
            502,
            json!({"error": "cannot start action: Command exited abruptly during initialization."})
        )
    );
}

#[tokio::test]
async fn blank_or_non_utf8_run_bodies_get_one_answer_each() {
    let host = Host::start(1, true);
    let init = json!({"value": {"code": zipped_exec(python_action().as_bytes()), "binary": true}});
    assert_eq!(host.post("/init", init).await.0, 200);
    for blank in [&b""[..], b"  \n\t "] {
        let (status, body) = host.post_bytes("/run", blank.to_vec()).await;
        assert_eq!(status, 400, "{body}");
        assert!(
            body["error"]
                .as_str()
                .unwrap()
                .starts_with("invalid /run body: ")
        );
    }
    let (status, body) = host
        .post_bytes("/run", b"{\"value\": {\"s\": \"\xff\xfe\"}}".to_vec())
        .await;
    assert_eq!(
        (status, body),
        (400, json!({"error": "invalid /run body: not UTF-8"}))
    );
    // Every caller still gets its own answer.
    for n in 0..3 {
        let (status, body) = host.run(json!({"n": n})).await;
        assert_eq!((status, &body["echo"]), (200, &json!({"n": n})), "{body}");
    }
}

#[tokio::test]
async fn a_copy_that_answers_twice_never_answers_the_next_caller() {
    // One answer, then a stray line the next activation must not take for its own.
    let chatty = "#!/bin/sh\nwhile read -r line; do\n  echo \"{\\\"got\\\": $line}\" >&3\n  echo '{\"stray\": true}' >&3\ndone\n";
    let host = Host::start(1, false);
    let init = json!({"value": {"code": chatty}});
    assert_eq!(host.post("/init", init).await, (200, json!({"ok": true})));
    for n in 0..3 {
        let (status, body) = host.run(json!({"n": n})).await;
        assert_eq!(status, 200, "{body}");
        assert_eq!(body["got"]["value"], json!({"n": n}), "{body}");
        // Time for the stray line to arrive before the next caller.
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}
