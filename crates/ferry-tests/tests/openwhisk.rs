//! The OpenWhisk Action Interface over real HTTP on loopback, driven as the invoker drives a
//! runtime container: `/init` once, then `/run` per activation (platform contract: OpenWhisk
//! `docs/actions-new.md`, `docs/intra-concurrency.md`, the Go proxy's `initHandler.go`).

mod common;

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

const SENTINEL: &str = "XXX_THE_END_OF_A_WHISK_ACTIVATION_XXX";

/// A fixture program serving the action interface, with its stdout and stderr captured.
struct Container {
    child: Child,
    base: String,
    stdout: Arc<Mutex<Vec<String>>>,
    stderr: Arc<Mutex<Vec<String>>>,
    http: reqwest::Client,
}

impl Container {
    fn start() -> Self {
        Self::start_with(&[])
    }

    fn start_with(env: &[(&str, &str)]) -> Self {
        let mut child = Command::new(env!("CARGO_BIN_EXE_ferry-fixture"))
            .env("FERRY_ROLE", "openwhisk")
            .env("FERRY_LISTEN", "127.0.0.1:0")
            .env_remove("__OW_ALLOW_CONCURRENT")
            .envs(env.iter().copied())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start the action container");
        let stdout = capture(child.stdout.take().unwrap());
        let stderr = capture(child.stderr.take().unwrap());
        let started = Instant::now();
        let base = loop {
            let announced = stderr
                .lock()
                .unwrap()
                .iter()
                .find_map(|line| line.strip_prefix("ferry: listening on ").map(str::to_owned));
            if let Some(base) = announced {
                break base;
            }
            assert!(
                started.elapsed() < Duration::from_secs(10),
                "the container never listened"
            );
            std::thread::sleep(Duration::from_millis(5));
        };
        Self {
            child,
            base,
            stdout,
            stderr,
            http: reqwest::Client::new(),
        }
    }

    async fn post(&self, route: &str, body: &Value) -> (u16, Value) {
        let response = tokio::time::timeout(
            Duration::from_secs(30),
            self.http
                .post(format!("{}{route}", self.base))
                .json(body)
                .send(),
        )
        .await
        .expect("the container hung")
        .expect("request");
        let status = response.status().as_u16();
        (status, response.json().await.expect("a json body"))
    }

    async fn init(&self, main: &str) -> (u16, Value) {
        self.post(
            "/init",
            &json!({"value": {"name": "test-action", "main": main, "code": "", "binary": false}}),
        )
        .await
    }

    async fn run(&self, value: Value) -> (u16, Value) {
        self.post("/run", &json!({"value": value, "activation_id": "a1"}))
            .await
    }

    /// Waits until `stream` holds `count` sentinel lines and returns its lines.
    fn lines_after_sentinels(stream: &Arc<Mutex<Vec<String>>>, count: usize) -> Vec<String> {
        let started = Instant::now();
        loop {
            let lines = stream.lock().unwrap().clone();
            if lines.iter().filter(|l| *l == SENTINEL).count() >= count {
                return lines;
            }
            assert!(
                started.elapsed() < Duration::from_secs(10),
                "sentinels missing: {lines:?}"
            );
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

impl Drop for Container {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn capture(stream: impl std::io::Read + Send + 'static) -> Arc<Mutex<Vec<String>>> {
    let lines = Arc::new(Mutex::new(Vec::new()));
    let sink = lines.clone();
    std::thread::spawn(move || {
        for line in BufReader::new(stream).lines().map_while(Result::ok) {
            sink.lock().unwrap().push(line);
        }
    });
    lines
}

#[tokio::test]
async fn init_once_then_run() {
    let container = Container::start();
    let (status, body) = container.run(json!({"a": 1, "b": 2})).await;
    assert_eq!(status, 403, "/run before /init: {body}");

    assert_eq!(container.init("add").await, (200, json!({"ok": true})));
    assert_eq!(
        container.run(json!({"a": 40, "b": 2})).await,
        (200, json!({"result": 42}))
    );
    assert_eq!(
        container.init("add").await,
        (
            403,
            json!({"error": "Cannot initialize the action more than once."})
        )
    );
    assert_eq!(
        container.run(json!({"a": 1, "b": 1})).await,
        (200, json!({"result": 2}))
    );
}

#[tokio::test]
async fn the_action_name_or_the_only_candidate_selects_the_function() {
    let container = Container::start();
    let (status, _) = container
        .post(
            "/init",
            &json!({"value": {"name": "/guest/demo/greet", "main": "main"}}),
        )
        .await;
    assert_eq!(status, 200);
    let (status, body) = container
        .run(json!({"greeting": {"name": "whisk", "times": 1}, "punctuation": "!"}))
        .await;
    assert_eq!((status, body), (200, json!({"result": "hello whisk!"})));

    let container = Container::start();
    let (status, body) = container.init("no_such_function").await;
    assert_eq!(status, 502, "{body}");
    assert!(
        body["error"].as_str().unwrap().contains("no_such_function"),
        "{body}"
    );
}

#[tokio::test]
async fn empty_or_missing_value_runs_a_zero_parameter_function() {
    let container = Container::start();
    container.init("hello").await;
    let expected = (200, json!({"result": "hello from a worker"}));
    assert_eq!(container.run(json!({})).await, expected);
    assert_eq!(
        container
            .post("/run", &json!({"activation_id": "a2"}))
            .await,
        expected
    );
    assert_eq!(
        container.post("/run", &json!({"value": null})).await,
        expected
    );
}

#[tokio::test]
async fn object_outputs_pass_through_and_context_is_metadata_not_environment() {
    let container = Container::start();
    container.init("activation").await;
    let (status, body) = container
        .post(
            "/run",
            &json!({"value": {}, "activation_id": "act-7", "namespace": "guest", "deadline": "99999999999999"}),
        )
        .await;
    assert_eq!(status, 200);
    assert_eq!(body["__OW_ACTIVATION_ID"], "act-7", "{body}");
    assert_eq!(body["__OW_NAMESPACE"], "guest");
    // Activations may overlap and share the environment: it is not theirs to write.
    assert!(body.get("env:__OW_ACTIVATION_ID").is_none(), "{body}");
}

/// `/init`'s `env` is exported once; a key or value the environment cannot hold (`=` or NUL in
/// a key, NUL in a value) is skipped rather than aborting the container, and activation keys
/// like that are metadata, never environment.
#[tokio::test]
async fn keys_the_environment_cannot_hold_are_skipped_not_fatal() {
    let container = Container::start();
    let env =
        json!({"FERRY_TEST_GOOD": "1", "A=B": "x", "NU\u{0}L": "y", "FERRY_TEST_NUL": "a\u{0}b"});
    let (status, body) = container
        .post(
            "/init",
            &json!({"value": {"name": "a", "main": "env_var", "code": "", "binary": false, "env": env}}),
        )
        .await;
    assert_eq!((status, body), (200, json!({"ok": true})));
    assert_eq!(
        container.run(json!({"name": "FERRY_TEST_GOOD"})).await,
        (200, json!({"result": "1"}))
    );
    assert_eq!(
        container.run(json!({"name": "FERRY_TEST_NUL"})).await,
        (200, json!({"result": null}))
    );
    let (status, body) = container
        .post(
            "/run",
            &json!({"value": {"name": "FERRY_TEST_GOOD"}, "we=ird": "1", "nu\u{0}l": "2"}),
        )
        .await;
    assert_eq!((status, body), (200, json!({"result": "1"})));
}

/// A `__ferry_flow` parameter of thousands of stages once overflowed the container's stack: it is
/// bad input now, and the container keeps serving.
#[tokio::test]
async fn a_flow_route_longer_than_the_limit_is_refused_and_the_container_lives() {
    let container = Container::start();
    container.init("shout").await;
    let steps = vec![json!({"function": "shout"}); 3_000];
    let (status, body) = container
        .run(json!({"text": "hi", "__ferry_flow": {"stage": 0, "next": steps}}))
        .await;
    assert_eq!(status, 400, "{body}");
    assert!(
        body["error"]
            .as_str()
            .unwrap()
            .contains("at most 64 stages"),
        "{body}"
    );
    assert_eq!(
        container.run(json!({"text": "still here"})).await,
        (200, json!({"result": "still here"}))
    );
}

#[tokio::test]
async fn errors_map_to_application_and_developer_errors() {
    let container = Container::start();
    container.init("add").await;
    let (status, body) = container.run(json!({"a": 1, "b": "two"})).await;
    assert_eq!(status, 400, "{body}");
    assert!(body["error"].as_str().unwrap().contains("at `b`"), "{body}");

    let container = Container::start();
    container.init("require_even").await;
    let (status, body) = container.run(json!({"n": 7})).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["error"], "7 is odd", "an application error");
    assert_eq!(body["ferry"]["kind"], "user", "the ferry error rides along");
    assert_eq!(
        container.run(json!({"n": 8})).await,
        (200, json!({"result": 4}))
    );

    let container = Container::start();
    container.init("explode").await;
    let (status, body) = container.run(json!({"message": "whisk boom"})).await;
    assert_eq!(status, 502, "{body}");
    assert!(
        body["error"]
            .as_str()
            .unwrap()
            .contains("panicked: whisk boom"),
        "{body}"
    );
}

#[tokio::test]
async fn the_deadline_is_enforced() {
    let container = Container::start();
    container.init("sleep_async").await;
    let deadline = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis()
        + 100;
    let started = Instant::now();
    let (status, body) = container
        .post(
            "/run",
            &json!({"value": {"ms": 5000}, "deadline": deadline.to_string()}),
        )
        .await;
    assert_eq!(status, 502, "{body}");
    assert!(
        body["error"].as_str().unwrap().contains("timed out"),
        "{body}"
    );
    assert!(started.elapsed() < Duration::from_secs(2));
}

#[tokio::test]
async fn sentinels_follow_each_activation_on_both_streams() {
    let container = Container::start();
    container.init("shout").await;
    container.run(json!({"text": "first"})).await;
    container.run(json!({"text": "second"})).await;
    for stream in [&container.stdout, &container.stderr] {
        let lines = Container::lines_after_sentinels(stream, 2);
        let relevant: Vec<&str> = lines
            .iter()
            .map(String::as_str)
            .filter(|l| *l == SENTINEL || *l == "first" || *l == "second")
            .collect();
        assert_eq!(relevant, ["first", SENTINEL, "second", SENTINEL]);
    }
}

#[tokio::test]
async fn without_intra_concurrency_a_busy_container_refuses() {
    let container = Container::start();
    container.init("sleep_async").await;
    let busy = container.run(json!({"ms": 250}));
    let second = async {
        tokio::time::sleep(Duration::from_millis(50)).await;
        container.run(json!({"ms": 1})).await
    };
    let (first, second) = tokio::join!(busy, second);
    assert_eq!(first, (200, json!({"result": 250})));
    assert_eq!(
        second,
        (
            403,
            json!({"error": "System not ready, status is running."})
        )
    );
}

#[tokio::test]
async fn intra_concurrency_overlaps_runs_up_to_the_functions_concurrency() {
    let container = Container::start();
    let (status, _) = container
        .post(
            "/init",
            &json!({"value": {"main": "overlap", "env": {"__OW_ALLOW_CONCURRENT": "true"}}}),
        )
        .await;
    assert_eq!(status, 200);
    let runs = (0..6).map(|_| container.run(json!({"ms": 80})));
    let results = futures::future::join_all(runs).await;
    // `overlap` allows 2 at once: every run succeeded, and two did overlap, never three.
    let peaks: Vec<u64> = results
        .iter()
        .map(|(status, body)| {
            assert_eq!(*status, 200, "{body}");
            body["result"].as_u64().unwrap()
        })
        .collect();
    assert_eq!(peaks.iter().max(), Some(&2), "{peaks:?}");
}

#[tokio::test]
async fn a_stuck_sync_body_retires_the_container() {
    let mut container = Container::start();
    container.init("spin_forever").await;
    let (status, body) = container.run(json!({})).await;
    assert_eq!(status, 502, "{body}");
    assert_eq!(body["ferry"]["kind"], "timeout", "{body}");
    // The container takes no more activations and exits, so the invoker replaces it.
    let status = common::exit_within(
        &mut container.child,
        Duration::from_secs(10),
        "the container kept running with a stuck thread",
    );
    assert_eq!(status.code(), Some(2));
    let stderr = container.stderr.lock().unwrap().join("\n");
    assert!(stderr.contains("retired"), "{stderr}");
}

/// A thousand concurrent activations of a body that never ends, in a container that allows
/// concurrent activations: one runs and times out, the rest are refused rather than each leaving
/// a spinning thread, and the container exits so the invoker replaces it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_thousand_stuck_activations_leave_the_container_replaceable() {
    let mut container = Container::start_with(&[("__OW_ALLOW_CONCURRENT", "true")]);
    container.init("spin_forever").await;
    let http = reqwest::Client::new();
    let answers = common::all_at_once(1_000, || {
        http.post(format!("{}/run", container.base))
            .json(&json!({"value": {}}))
    })
    .await;
    let status = common::exit_within(
        &mut container.child,
        Duration::from_secs(10),
        "the container kept running with stuck threads",
    );
    assert_eq!(status.code(), Some(2));
    let ran = common::count_kind(&answers, "timeout");
    assert!(
        answers.iter().flatten().all(|(status, kind)| *status >= 500
            && matches!(kind.as_deref(), Some("timeout" | "unavailable"))),
        "{answers:?}"
    );
    assert!((1..=4).contains(&ran), "{ran} bodies ran");
}

/// The invoker pauses a container between activations (`docker pause`: its processes are
/// frozen) and keeps its connection to it; after resuming it, it sends `/run` on that
/// connection. A frozen runtime's timers fire the moment it resumes, so an idle timeout shorter
/// than the pause would close the connection just before the `/run` arrives: the runtime keeps
/// idle connections for ever (the invoker is its only client), whatever the header timeout.
#[tokio::test]
async fn a_connection_kept_across_a_pause_longer_than_the_header_timeout_takes_the_next_run() {
    let container = Container::start_with(&[("FERRY_HTTP_HEADER_TIMEOUT_MS", "300")]);
    let mut connection =
        tokio::net::TcpStream::connect(container.base.trim_start_matches("http://"))
            .await
            .expect("connect");
    async fn exchange(connection: &mut tokio::net::TcpStream, route: &str, body: &Value) -> String {
        let body = body.to_string();
        let request = format!(
            "POST {route} HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{body}",
            body.len()
        );
        common::exchange(connection, request.as_bytes(), b"}").await
    }
    let init =
        json!({"value": {"name": "test-action", "main": "add", "code": "", "binary": false}});
    let said = exchange(&mut connection, "/init", &init).await;
    assert!(said.starts_with("HTTP/1.1 200"), "{said}");

    let signal = |name: &str| {
        let status = Command::new("kill")
            .args([name, &container.child.id().to_string()])
            .status()
            .expect("kill");
        assert!(status.success(), "kill {name}");
    };
    signal("-STOP");
    tokio::time::sleep(Duration::from_millis(1000)).await;
    signal("-CONT");
    // The invoker hears that the container resumed, then sends.
    tokio::time::sleep(Duration::from_millis(100)).await;
    let run = json!({"value": {"a": 40, "b": 2}, "activation_id": "a1"});
    let said = exchange(&mut connection, "/run", &run).await;
    assert!(said.starts_with("HTTP/1.1 200"), "{said}");
    assert!(said.ends_with(r#"{"result":42}"#), "{said}");
}
