//! The AWS Lambda custom runtime against a real emulator of the Runtime API and the Invoke API:
//! `cargo lambda watch --only-lambda-apis` (crates.io / PyPI `cargo-lambda`; `scripts/test.sh`
//! installs it). The fixture program is the `bootstrap`, started with the variables Lambda sets.

mod common;

use std::io::{BufRead, BufReader};
use std::time::{Duration, Instant};

use common::Emulator;

use serde_json::{Value, json};

#[tokio::test]
async fn invocations_are_answered_by_a_warm_bootstrap() {
    let emulator = Emulator::start();
    let mut runtime = emulator.bootstrap(env!("CARGO_BIN_EXE_ferry-fixture"), "add", &[]);
    for i in 0..3 {
        let (status, _, body) = emulator.invoke(&json!({"a": 40, "b": i})).await;
        assert_eq!((status, body), (200, (40 + i).to_string()));
    }
    assert!(
        runtime.0.try_wait().unwrap().is_none(),
        "the bootstrap must stay warm"
    );
}

#[tokio::test]
async fn failures_are_posted_as_errors_with_their_kind() {
    let emulator = Emulator::start();
    let _runtime = emulator.bootstrap(env!("CARGO_BIN_EXE_ferry-fixture"), "require_even", &[]);
    let (_, function_error, body) = emulator.invoke(&json!({"n": 7})).await;
    let body: Value = serde_json::from_str(&body).expect("an error document");
    assert_eq!(body["errorType"], "ferry.User", "{body} {function_error:?}");
    assert!(
        body["errorMessage"].as_str().unwrap().contains("7 is odd"),
        "{body}"
    );
    assert_eq!(body["ferry"]["kind"], "user");
    let (_, _, body) = emulator.invoke(&json!({"n": "seven"})).await;
    let body: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(body["errorType"], "ferry.BadInput", "{body}");
    assert!(
        body["errorMessage"].as_str().unwrap().contains("at `n`"),
        "{body}"
    );
}

#[tokio::test]
async fn context_comes_from_the_headers_and_the_deadline_holds() {
    let emulator = Emulator::start();
    let _runtime = emulator.bootstrap(env!("CARGO_BIN_EXE_ferry-fixture"), "activation", &[]);
    let (status, _, body) = emulator.invoke(&json!({})).await;
    assert_eq!(status, 200, "{body}");
    let metadata: Value = serde_json::from_str(&body).unwrap();
    assert!(
        metadata["aws_request_id"]
            .as_str()
            .is_some_and(|id| !id.is_empty()),
        "{metadata}"
    );
    assert!(metadata["invoked_function_arn"].is_string(), "{metadata}");
    assert!(
        metadata["_X_AMZN_TRACE_ID"]
            .as_str()
            .unwrap_or_default()
            .starts_with("Root="),
        "{metadata}"
    );

    // The emulator sends the time left rather than an epoch deadline; both must work.
    let emulator = Emulator::start();
    let _runtime = emulator.bootstrap(env!("CARGO_BIN_EXE_ferry-fixture"), "sleep_async", &[]);
    assert_eq!(emulator.invoke(&json!({"ms": 20})).await.2, "20");
}

#[tokio::test]
async fn a_null_event_runs_a_function_without_parameters() {
    let emulator = Emulator::start();
    let _runtime = emulator.bootstrap(env!("CARGO_BIN_EXE_ferry-fixture"), "hello", &[]);
    assert_eq!(
        emulator.invoke(&Value::Null).await.2,
        r#""hello from a worker""#
    );
    assert_eq!(
        emulator.invoke(&json!({})).await.2,
        r#""hello from a worker""#
    );
}

#[tokio::test]
async fn an_unknown_handler_is_an_init_error() {
    let emulator = Emulator::start();
    let mut runtime =
        emulator.bootstrap(env!("CARGO_BIN_EXE_ferry-fixture"), "no_such_handler", &[]);
    let status = common::exit_within(
        &mut runtime.0,
        Duration::from_secs(10),
        "the runtime did not exit",
    );
    assert_eq!(status.code(), Some(2));
    let stderr = BufReader::new(runtime.0.stderr.take().unwrap())
        .lines()
        .map_while(Result::ok)
        .collect::<Vec<_>>()
        .join("\n");
    assert!(stderr.contains("_HANDLER"), "{stderr}");
}

#[tokio::test]
async fn responses_over_six_megabytes_are_a_clear_error() {
    let emulator = Emulator::start();
    let _runtime = emulator.bootstrap(env!("CARGO_BIN_EXE_ferry-fixture"), "repeat_text", &[]);
    let (_, _, body) = emulator.invoke(&json!({"len": 7_000_000})).await;
    let body: Value = serde_json::from_str(&body).expect("an error document");
    assert_eq!(body["errorType"], "Function.ResponseSizeTooLarge", "{body}");
    assert_eq!(emulator.invoke(&json!({"len": 3})).await.2, r#""xxx""#);
}

#[tokio::test]
async fn max_concurrency_runs_loops_side_by_side() {
    let emulator = Emulator::start();
    let _runtime = emulator.bootstrap(
        env!("CARGO_BIN_EXE_ferry-fixture"),
        "overlap",
        &[("AWS_LAMBDA_MAX_CONCURRENCY", "8")],
    );
    let event = json!({"ms": 150});
    let invocations = (0..6).map(|_| emulator.invoke(&event));
    let peaks: Vec<u64> = futures::future::join_all(invocations)
        .await
        .into_iter()
        .map(|(status, _, body)| {
            assert_eq!(status, 200, "{body}");
            body.parse().unwrap()
        })
        .collect();
    // `overlap` allows 2 at once: two invocations overlapped, never three.
    assert_eq!(peaks.iter().max(), Some(&2), "{peaks:?}");
}

/// An emulator may end a `/next` long poll that found no work (cargo lambda's `--timeout` answers
/// it 408): the runtime polls again rather than exit.
#[tokio::test]
async fn an_idle_poll_that_times_out_is_polled_again() {
    let emulator = Emulator::start_with(&["--timeout", "1"]);
    let mut runtime = emulator.bootstrap(env!("CARGO_BIN_EXE_ferry-fixture"), "add", &[]);
    tokio::time::sleep(Duration::from_millis(2500)).await;
    assert!(
        runtime.0.try_wait().unwrap().is_none(),
        "the runtime exited when a poll timed out"
    );
    let (status, _, body) = emulator.invoke(&json!({"a": 2, "b": 3})).await;
    assert_eq!((status, body.as_str()), (200, "5"));
}

/// Lambda Managed Instances hand an environment up to `AWS_LAMBDA_MAX_CONCURRENCY` invocations
/// and refuse the rest (`Runtime.Unavailable`) when fewer `/next` polls wait, whatever the
/// function's own concurrency: the runtime keeps that many polls open.
#[tokio::test]
async fn the_runtime_keeps_max_concurrency_polls_open() {
    let emulator = Emulator::start();
    let runtime = emulator.bootstrap(
        env!("CARGO_BIN_EXE_ferry-fixture"),
        "overlap",
        &[("AWS_LAMBDA_MAX_CONCURRENCY", "8")],
    );
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let polls = connections_to(runtime.pid(), emulator.port());
        if polls == 8 {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "{polls} polls open, not AWS_LAMBDA_MAX_CONCURRENCY's 8"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Established TCP connections of process `pid` to `port` on loopback, from `/proc`.
fn connections_to(pid: u32, port: u16) -> usize {
    let sockets: std::collections::HashSet<String> = std::fs::read_dir(format!("/proc/{pid}/fd"))
        .unwrap()
        .filter_map(|fd| std::fs::read_link(fd.ok()?.path()).ok())
        .filter_map(|target| {
            let target = target.to_str()?.strip_prefix("socket:[")?;
            Some(target.trim_end_matches(']').to_owned())
        })
        .collect();
    let table = std::fs::read_to_string(format!("/proc/{pid}/net/tcp")).unwrap();
    table
        .lines()
        .skip(1)
        .filter(|line| {
            let fields: Vec<&str> = line.split_whitespace().collect();
            // remote address `HEX_IP:HEX_PORT`, state `01` (established), inode.
            fields.len() > 9
                && fields[2].ends_with(&format!(":{port:04X}"))
                && fields[3] == "01"
                && sockets.contains(fields[9])
        })
        .count()
}

#[tokio::test]
async fn panics_and_timeouts_are_errors_and_the_loop_goes_on() {
    let emulator = Emulator::start();
    let _panicking = emulator.bootstrap(env!("CARGO_BIN_EXE_ferry-fixture"), "explode", &[]);
    let (_, _, body) = emulator.invoke(&json!({"message": "lambda boom"})).await;
    let body: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(body["errorType"], "ferry.Panic", "{body}");
    assert!(
        body["errorMessage"]
            .as_str()
            .unwrap()
            .contains("lambda boom")
    );

    let emulator = Emulator::start();
    let _sleeping = emulator.bootstrap(env!("CARGO_BIN_EXE_ferry-fixture"), "sleep_async", &[]);
    let started = Instant::now();
    let (_, _, body) = emulator.invoke(&json!({"ms": 5000})).await;
    let body: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(body["errorType"], "ferry.Timeout", "{body}");
    assert!(started.elapsed() < Duration::from_secs(3));
    // The same warm loop serves the next invocation.
    assert_eq!(emulator.invoke(&json!({"ms": 5})).await.2, "5");
}

#[tokio::test]
async fn invocation_context_is_metadata_and_never_process_environment() {
    let emulator = Emulator::start();
    let _runtime = emulator.bootstrap(env!("CARGO_BIN_EXE_ferry-fixture"), "activation", &[]);
    let mut traces = Vec::new();
    for _ in 0..2 {
        let (status, _, body) = emulator.invoke(&json!({})).await;
        assert_eq!(status, 200, "{body}");
        let seen: Value = serde_json::from_str(&body).unwrap();
        assert!(
            seen.get("env:_X_AMZN_TRACE_ID").is_none(),
            "a per-invocation variable reached the process environment: {seen}"
        );
        traces.push(seen["_X_AMZN_TRACE_ID"].as_str().unwrap().to_owned());
    }
    assert_ne!(traces[0], traces[1]);
}

/// cargo-lambda's emulator invents a trace id for every invocation, so an invocation without
/// one comes from a scripted Runtime API on loopback: two events, the first traced.
#[tokio::test]
async fn an_invocation_without_a_trace_id_does_not_inherit_the_previous_one() {
    use axum::extract::{Path, State};
    use axum::http::HeaderMap;
    use std::sync::{Arc, Mutex};

    type Script = Arc<Mutex<Vec<(&'static str, Option<&'static str>)>>>;
    // Popped from the end. The RIE's managed mode sends an empty trace id for none.
    let script: Script = Arc::new(Mutex::new(vec![
        ("third", Some("")),
        ("second", None),
        (
            "first",
            Some("Root=1-00000001-000000000000000000000001;Sampled=1"),
        ),
    ]));
    let (responses, mut answered) = tokio::sync::mpsc::unbounded_channel::<(String, Value)>();
    let next = |State(script): State<Script>| async move {
        let Some((id, trace)) = script.lock().unwrap().pop() else {
            return std::future::pending().await;
        };
        let mut headers = HeaderMap::new();
        headers.insert("lambda-runtime-aws-request-id", id.parse().unwrap());
        headers.insert("lambda-runtime-deadline-ms", "600000".parse().unwrap());
        if let Some(trace) = trace {
            headers.insert("lambda-runtime-trace-id", trace.parse().unwrap());
        }
        (headers, "{}")
    };
    let respond = move |Path(id): Path<String>, body: axum::body::Bytes| async move {
        let _ = responses.send((id, serde_json::from_slice(&body).unwrap()));
        axum::http::StatusCode::ACCEPTED
    };
    let api = axum::Router::new()
        .route(
            "/2018-06-01/runtime/invocation/next",
            axum::routing::get(next),
        )
        .route(
            "/2018-06-01/runtime/invocation/{id}/response",
            axum::routing::post(respond),
        )
        .with_state(script);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, api).await });

    let _runtime = common::Bootstrap(
        std::process::Command::new(env!("CARGO_BIN_EXE_ferry-fixture"))
            .env_remove("FERRY_ROLE")
            .env("AWS_LAMBDA_RUNTIME_API", address.to_string())
            .env("_HANDLER", "activation")
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap(),
    );
    let mut seen = std::collections::BTreeMap::new();
    while seen.len() < 3 {
        let (id, body) = tokio::time::timeout(Duration::from_secs(30), answered.recv())
            .await
            .expect("the runtime answered")
            .unwrap();
        seen.insert(id, body);
    }
    assert_eq!(
        seen["first"]["_X_AMZN_TRACE_ID"],
        "Root=1-00000001-000000000000000000000001;Sampled=1"
    );
    assert!(
        seen["second"].get("_X_AMZN_TRACE_ID").is_none()
            && seen["second"].get("env:_X_AMZN_TRACE_ID").is_none(),
        "the untraced invocation inherited a trace id: {}",
        seen["second"]
    );
    assert!(
        seen["third"].get("_X_AMZN_TRACE_ID").is_none(),
        "an empty trace id is none: {}",
        seen["third"]
    );
}

#[tokio::test]
async fn a_stuck_sync_body_retires_the_runtime_so_lambda_replaces_it() {
    let emulator = Emulator::start();
    let mut runtime = emulator.bootstrap(env!("CARGO_BIN_EXE_ferry-fixture"), "spin_forever", &[]);
    let (_, _, body) = emulator.invoke(&json!({})).await;
    let body: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(body["errorType"], "ferry.Timeout", "{body}");
    // Its thread spins on; the runtime stops polling and exits, rather than serving on with a
    // core lost to each stuck invocation.
    let status = common::exit_within(
        &mut runtime.0,
        Duration::from_secs(10),
        "the runtime kept serving with a stuck thread",
    );
    assert_eq!(status.code(), Some(2));
    let mut stderr = String::new();
    std::io::Read::read_to_string(runtime.0.stderr.as_mut().unwrap(), &mut stderr).unwrap();
    assert!(stderr.contains("retired"), "{stderr}");
}
