//! The program as an ActionLoop executable, driven as OpenWhisk's Go proxy drives `exec`
//! (`openwhisk-runtime-go` `executor.go`): a cleared environment, one JSON line per activation on
//! stdin, one result line read from the pipe on fd 3, the ack only when `__OW_WAIT_FOR_ACK` is set.

mod common;

use std::fs::File;
use std::io::{BufRead, BufReader, Write};
use std::os::fd::{FromRawFd, RawFd};
use std::os::unix::process::CommandExt;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use serde_json::{Value, json};

struct Exec {
    child: Child,
    stdin: ChildStdin,
    results: mpsc::Receiver<String>,
}

impl Exec {
    fn start(env: &[(&str, &str)]) -> Self {
        Self::start_program(env!("CARGO_BIN_EXE_ferry-fixture"), env)
    }

    fn start_program(program: &str, env: &[(&str, &str)]) -> Self {
        let mut fds = [0 as RawFd; 2];
        // Close-on-exec, so children of tests running alongside do not inherit either end.
        // SAFETY: pipe2 writes two descriptors into the array.
        assert_eq!(unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) }, 0);
        let (read_end, write_end) = (fds[0], fds[1]);
        let mut command = Command::new(program);
        command
            .env_clear()
            .envs(env.iter().copied())
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        // SAFETY: only dup2 or fcntl between fork and exec.
        unsafe {
            command.pre_exec(move || {
                // The write end becomes fd 3 without close-on-exec; the read end closes on exec
                // (and if it was fd 3, dup2 replaced it).
                let placed = if write_end == 3 {
                    libc::fcntl(3, libc::F_SETFD, 0)
                } else {
                    libc::dup2(write_end, 3)
                };
                if placed < 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        let mut child = command.spawn().expect("start exec");
        // SAFETY: the write end now lives in the child; the read end is ours alone.
        unsafe { libc::close(write_end) };
        let results_pipe = unsafe { File::from_raw_fd(read_end) };
        let (sender, results) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(results_pipe).lines().map_while(Result::ok) {
                if sender.send(line).is_err() {
                    break;
                }
            }
        });
        let stdin = child.stdin.take().unwrap();
        Self {
            child,
            stdin,
            results,
        }
    }

    fn next_line(&self) -> Value {
        let line = self
            .results
            .recv_timeout(Duration::from_secs(20))
            .expect("no result line on fd 3");
        serde_json::from_str(&line).expect("a json result line")
    }

    fn activate(&mut self, activation: Value) -> Value {
        writeln!(self.stdin, "{activation}").unwrap();
        self.stdin.flush().unwrap();
        self.next_line()
    }
}

impl Drop for Exec {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn acknowledges_then_answers_each_activation_on_fd_3() {
    let mut exec = Exec::start(&[("__OW_WAIT_FOR_ACK", "1"), ("__OW_EXECUTION_ENV", "ferry")]);
    assert_eq!(exec.next_line(), json!({"ok": true}));
    assert_eq!(
        exec.activate(json!({"value": {"a": 40, "b": 2}, "action_name": "/guest/add"})),
        json!({"result": 42})
    );
    let odd = exec.activate(json!({"value": {"n": 7}, "action_name": "/guest/require_even"}));
    assert_eq!(odd["error"], "7 is odd", "{odd}");
    assert_eq!(odd["ferry"]["kind"], "user", "{odd}");
    let panic =
        exec.activate(json!({"value": {"message": "loop boom"}, "action_name": "/guest/explode"}));
    assert!(
        panic["error"]
            .as_str()
            .unwrap()
            .contains("panicked: loop boom"),
        "{panic}"
    );
    // No value at all runs a function without parameters.
    assert_eq!(
        exec.activate(json!({"action_name": "/guest/hello"})),
        json!({"result": "hello from a worker"})
    );
    // The process is still the same warm executable.
    assert!(exec.child.try_wait().unwrap().is_none());
}

#[test]
fn no_ack_unless_asked_and_the_context_is_metadata_not_environment() {
    // The role is given explicitly here; `FERRY_FUNCTION` picks the function.
    let mut exec = Exec::start(&[
        ("FERRY_ROLE", "actionloop"),
        ("FERRY_FUNCTION", "activation"),
    ]);
    let answer =
        exec.activate(json!({"value": {}, "activation_id": "act-9", "namespace": "guest"}));
    assert_eq!(answer["__OW_ACTIVATION_ID"], "act-9", "{answer}");
    assert!(answer.get("env:__OW_ACTIVATION_ID").is_none(), "{answer}");
}

#[test]
fn bad_lines_and_unknown_functions_are_errors_not_exits() {
    let mut exec = Exec::start(&[("__OW_WAIT_FOR_ACK", "1")]);
    assert_eq!(exec.next_line(), json!({"ok": true}));
    writeln!(exec.stdin, "this is not json").unwrap();
    let answer = exec.next_line();
    assert!(
        answer["error"]
            .as_str()
            .unwrap()
            .contains("invalid activation"),
        "{answer}"
    );
    let answer = exec.activate(json!({"value": {}, "action_name": "/guest/nothing_like_this"}));
    assert!(
        answer["error"].as_str().unwrap().contains("FERRY_FUNCTION"),
        "{answer}"
    );
    let answer = exec.activate(json!({"value": {"a": 1, "b": "x"}, "action_name": "add"}));
    assert!(
        answer["error"].as_str().unwrap().contains("at `b`"),
        "{answer}"
    );
}

/// Every line gets exactly one answer, in order: an empty or blank line once got none, so the
/// proxy handed every later answer to the previous caller; a line that is not UTF-8 once ended
/// the executable. Keys the environment cannot hold are metadata like any other.
#[test]
fn every_line_gets_one_answer_in_order_whatever_it_holds() {
    let mut exec = Exec::start(&[("__OW_WAIT_FOR_ACK", "1")]);
    assert_eq!(exec.next_line(), json!({"ok": true}));
    exec.stdin.write_all(b"\n   \n\xff\xfe{}\n").unwrap();
    exec.stdin.flush().unwrap();
    for expected in [
        "the activation is empty",
        "the activation is empty",
        "not utf-8",
    ] {
        let answer = exec.next_line();
        assert!(
            answer["error"].as_str().unwrap().contains(expected),
            "{expected}: {answer}"
        );
    }
    let answer = exec.activate(
        json!({"value": {"a": 2, "b": 3}, "action_name": "add", "we=ird": "1", "nu\u{0}l": "2"}),
    );
    assert_eq!(answer, json!({"result": 5}));
    assert!(
        exec.child.try_wait().unwrap().is_none(),
        "the executable exited"
    );
}

#[test]
fn the_deadline_of_each_activation_is_enforced() {
    let mut exec = Exec::start(&[("FERRY_ROLE", "actionloop")]);
    let deadline = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis()
        + 100;
    let started = std::time::Instant::now();
    let answer = exec.activate(json!({"value": {"ms": 5000}, "action_name": "sleep_async", "deadline": deadline.to_string()}));
    assert!(
        answer["error"].as_str().unwrap().contains("timed out"),
        "{answer}"
    );
    assert!(started.elapsed() < Duration::from_secs(2));
    assert_eq!(
        exec.activate(json!({"value": {"ms": 1}, "action_name": "sleep_async"})),
        json!({"result": 1})
    );
}

/// A web program (`ferry::web::serve`) deployed by `ferry deploy` is the web action and each of
/// its functions' actions: an activation of a function's action runs the function, any other is a
/// raw web action activation of the router.
#[test]
fn a_web_program_serves_its_router_and_its_functions() {
    let mut exec = Exec::start_program(
        env!("CARGO_BIN_EXE_web-fixture"),
        &[
            ("__OW_WAIT_FOR_ACK", "1"),
            ("__OW_API_HOST", "http://127.0.0.1:9"),
        ],
    );
    assert_eq!(exec.next_line(), json!({"ok": true}));
    let page = exec.activate(json!({
        "value": {"__ow_method": "get", "__ow_path": "/hello/loop", "__ow_query": "mark=!",
            "__ow_headers": {"accept": "*/*"}, "__ow_body": ""},
        "action_name": "/guest/web-fixture-web-5142fd6d",
        "activation_id": "act-1",
    }));
    assert_eq!(page["statusCode"], 200, "{page}");
    assert_eq!(page["body"], "hello loop!", "{page}");
    assert_eq!(page["headers"]["content-type"], "text/plain; charset=utf-8");
    // The activation's context reaches the handler's `ctx`, not the process environment.
    let seen = exec.activate(json!({
        "value": {"__ow_method": "get", "__ow_path": "/activation", "__ow_headers": {}},
        "action_name": "/guest/web-fixture-web-5142fd6d",
        "activation_id": "act-2",
    }));
    assert_eq!(seen["body"], r#"Some("act-2") None"#, "{seen}");
    // Without a ferry backend the handler's context runs functions in this process.
    let sum = exec.activate(json!({
        "value": {"__ow_method": "get", "__ow_path": "/add/40/2", "__ow_headers": {}},
        "action_name": "/guest/web-fixture-web-5142fd6d",
    }));
    assert_eq!(sum["body"], "42", "{sum}");
    // A JSON body arrives base64'd, as the controller sends it, and leaves base64'd.
    let echo = exec.activate(json!({
        "value": {"__ow_method": "post", "__ow_path": "/echo",
            "__ow_headers": {"content-type": "application/json"}, "__ow_body": "eyJhIjoxfQ=="},
        "action_name": "/guest/web-fixture-web-5142fd6d",
    }));
    assert_eq!(echo["body"], "eyJhIjoxfQ==", "{echo}");
    assert_eq!(echo["headers"]["content-type"], "application/json");
    // The action of a function: the function, not the router.
    assert_eq!(
        exec.activate(json!({"value": {"a": 40, "b": 2}, "action_name": "/guest/add"})),
        json!({"result": 42})
    );
    assert!(exec.child.try_wait().unwrap().is_none());

    // With `FERRY_FUNCTION`, as `ferry deploy` names an action's function, every activation runs it.
    let mut function = Exec::start_program(
        env!("CARGO_BIN_EXE_web-fixture"),
        &[
            ("FERRY_FUNCTION", "add"),
            ("__OW_API_HOST", "http://127.0.0.1:9"),
        ],
    );
    assert_eq!(
        function.activate(
            json!({"value": {"a": 1, "b": 2}, "action_name": "/guest/web-fixture-add-6a2b1ba4"})
        ),
        json!({"result": 3})
    );
}

#[test]
fn a_stuck_sync_body_retires_the_executable() {
    let mut exec = Exec::start(&[("FERRY_ROLE", "actionloop")]);
    let answer = exec.activate(json!({"value": {}, "action_name": "/guest/spin_forever"}));
    assert_eq!(answer["ferry"]["kind"], "timeout", "{answer}");
    // It answers, then exits rather than serve on with a thread it cannot stop.
    let status = common::exit_within(
        &mut exec.child,
        Duration::from_secs(10),
        "the executable kept running with a stuck thread",
    );
    assert_eq!(status.code(), Some(2));
}
