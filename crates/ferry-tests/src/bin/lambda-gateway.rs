//! Test scaffolding for the Hexaville experiment (`scripts/reproduce.sh hexaville`): a small
//! stand-in for API Gateway in front of a Lambda emulator, so that `wrk` can load a web app on the
//! Lambda runtime.
//!
//! - `lambda-gateway gateway --app BIN --payload 1.0|2.0 [--per-invocation] [--rie PATH]` starts
//!   the emulator (the AWS Runtime Interface Emulator at `--rie`, else `cargo lambda watch`) with
//!   `BIN` as its `bootstrap`, prints `listening on http://…` and turns each HTTP request into a
//!   payload 1.0 (REST API) or 2.0 (HTTP API) event, POSTs it to the emulator's invoke endpoint
//!   and its answer back into an HTTP response. One invocation at a time: one Lambda instance.
//! - `lambda-gateway shim --app BIN` is a `bootstrap` that starts `BIN` afresh for every
//!   invocation against a one-invocation Runtime API of its own and posts its answer back, as
//!   Hexaville's Node.js shim spawned its Swift binary per request.

use std::net::{SocketAddr, TcpListener as StdListener};
use std::path::PathBuf;
use std::process::{ExitCode, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::{Path, Request, State};
use axum::http::{HeaderMap, HeaderName, HeaderValue, Response, StatusCode};
use axum::routing::{get, post};
use clap::{Parser, Subcommand};
use serde_json::{Map, Value, json};
use tokio::process::{Child, Command};
use tokio::sync::{Semaphore, oneshot};

#[derive(Parser)]
struct Cli {
    #[command(subcommand)]
    command: Mode,
}

#[derive(Subcommand)]
enum Mode {
    /// An API Gateway stand-in in front of an emulator running `--app`.
    Gateway {
        /// The web app's binary.
        #[arg(long)]
        app: PathBuf,
        /// The payload format of the events: `1.0` (REST API) or `2.0` (HTTP API).
        #[arg(long, default_value = "2.0")]
        payload: String,
        /// A process per invocation: the emulator's bootstrap is this program's `shim`.
        #[arg(long)]
        per_invocation: bool,
        /// The AWS Lambda Runtime Interface Emulator; `cargo lambda watch` without it.
        #[arg(long, env = "FERRY_RIE")]
        rie: Option<PathBuf>,
        #[arg(long, default_value = "127.0.0.1:0")]
        listen: SocketAddr,
    },
    /// A bootstrap that runs `--app` afresh for each invocation.
    Shim {
        #[arg(long)]
        app: PathBuf,
    },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let runtime = tokio::runtime::Runtime::new().expect("a tokio runtime");
    let result = runtime.block_on(async {
        match cli.command {
            Mode::Gateway {
                app,
                payload,
                per_invocation,
                rie,
                listen,
            } => gateway(app, &payload, per_invocation, rie, listen).await,
            Mode::Shim { app } => shim(app).await,
        }
    });
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("lambda-gateway: error: {error}");
            ExitCode::FAILURE
        }
    }
}

/// Dies with this process, even when it is killed before it can stop its children.
fn with_parent(command: &mut Command) -> &mut Command {
    // SAFETY: prctl is async-signal-safe and touches only the child's own settings.
    unsafe {
        command.pre_exec(|| {
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) == -1 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        })
    }
}

fn free_port() -> Result<u16, String> {
    StdListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .map_err(|e| format!("no free port: {e}"))
}

struct Gateway {
    http: reqwest::Client,
    invoke: String,
    v1: bool,
    instance: Semaphore,
}

async fn gateway(
    app: PathBuf,
    payload: &str,
    per_invocation: bool,
    rie: Option<PathBuf>,
    listen: SocketAddr,
) -> Result<(), String> {
    let v1 = match payload {
        "1.0" => true,
        "2.0" => false,
        other => return Err(format!("--payload is 1.0 or 2.0, not `{other}`")),
    };
    // Stopped at any time, the gateway stops its emulator and bootstrap first.
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
        .map_err(|e| format!("no SIGTERM handler: {e}"))?;
    let app = std::fs::canonicalize(&app).map_err(|e| format!("{}: {e}", app.display()))?;
    let me = std::env::current_exe().map_err(|e| e.to_string())?;
    // The bootstrap: the app itself, or the shim that starts it per invocation.
    let (program, args): (PathBuf, Vec<String>) = if per_invocation {
        (
            me,
            vec!["shim".into(), "--app".into(), app.display().to_string()],
        )
    } else {
        (app, Vec::new())
    };
    let port = free_port()?;
    let mut children: Vec<Child> = Vec::new();
    let bootstrap = |command: &mut Command| {
        command
            .env_remove("AWS_LAMBDA_MAX_CONCURRENCY")
            .env_remove("FERRY_ROLE")
            .env("_HANDLER", "web")
            .env("AWS_LAMBDA_FUNCTION_NAME", "function")
            .env("AWS_LAMBDA_FUNCTION_MEMORY_SIZE", "1769")
            .env("AWS_LAMBDA_FUNCTION_TIMEOUT", "30")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .kill_on_drop(true);
        with_parent(command);
    };
    if let Some(rie) = &rie {
        // The emulator starts the bootstrap itself and hands it its whole environment.
        let mut command = Command::new(rie);
        command
            .arg("--runtime-interface-emulator-address")
            .arg(format!("127.0.0.1:{port}"))
            .arg("--runtime-api-address")
            .arg(format!("127.0.0.1:{}", free_port()?))
            .arg(&program)
            .args(&args);
        bootstrap(&mut command);
        children.push(
            command
                .spawn()
                .map_err(|e| format!("cannot start {}: {e}", rie.display()))?,
        );
    } else {
        let mut command = Command::new("cargo");
        command.args([
            "lambda",
            "watch",
            "--only-lambda-apis",
            "-A",
            "127.0.0.1",
            "-P",
        ]);
        command
            .arg(port.to_string())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .kill_on_drop(true);
        with_parent(&mut command);
        children.push(command.spawn().map_err(|e| {
            format!("cannot start `cargo lambda watch` (pip install cargo-lambda): {e}")
        })?);
    }
    let started = Instant::now();
    while tokio::net::TcpStream::connect(("127.0.0.1", port))
        .await
        .is_err()
    {
        if started.elapsed() > Duration::from_secs(30) {
            return Err(format!("the emulator never listened on port {port}"));
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // The RIE's one function is `function`; cargo-lambda's default one `_` (another name would
    // be looked up among the crate's binaries until its runtime first polls).
    let function = if rie.is_some() { "function" } else { "_" };
    if rie.is_none() {
        let mut command = Command::new(&program);
        command.args(&args).env(
            "AWS_LAMBDA_RUNTIME_API",
            format!("http://127.0.0.1:{port}/.rt"),
        );
        bootstrap(&mut command);
        children.push(
            command
                .spawn()
                .map_err(|e| format!("cannot start {}: {e}", program.display()))?,
        );
    }
    let state = Arc::new(Gateway {
        http: reqwest::Client::builder()
            .no_proxy()
            .http1_only()
            .build()
            .map_err(|e| e.to_string())?,
        invoke: format!("http://127.0.0.1:{port}/2015-03-31/functions/{function}/invocations"),
        v1,
        instance: Semaphore::new(1),
    });
    let listener = tokio::net::TcpListener::bind(listen)
        .await
        .map_err(|e| format!("cannot listen on {listen}: {e}"))?;
    let address = listener.local_addr().map_err(|e| e.to_string())?;
    println!("listening on http://{address}");
    let router = Router::new().fallback(forward).with_state(state);
    let shutdown = async move {
        tokio::select! {
            _ = term.recv() => {}
            _ = tokio::signal::ctrl_c() => {}
        }
    };
    let served = axum::serve(listener, router)
        .with_graceful_shutdown(shutdown)
        .await
        .map_err(|e| e.to_string());
    for child in &mut children {
        let _ = child.kill().await;
    }
    served
}

/// One request through the emulator; 502 with the reason when no HTTP answer comes back.
async fn forward(State(gateway): State<Arc<Gateway>>, request: Request) -> Response<Body> {
    match try_forward(&gateway, request).await {
        Ok(response) => response,
        Err(error) => Response::builder()
            .status(StatusCode::BAD_GATEWAY)
            .body(Body::from(error))
            .expect("a response"),
    }
}

async fn try_forward(gateway: &Gateway, request: Request) -> Result<Response<Body>, String> {
    let (parts, body) = request.into_parts();
    let body = axum::body::to_bytes(body, 6 << 20)
        .await
        .map_err(|e| e.to_string())?;
    let event = if gateway.v1 {
        v1_event(&parts, &body)
    } else {
        v2_event(&parts, &body)
    };
    let answer = {
        let _instance = gateway
            .instance
            .acquire()
            .await
            .map_err(|e| e.to_string())?;
        let response = gateway
            .http
            .post(&gateway.invoke)
            .json(&event)
            .send()
            .await
            .map_err(|e| format!("invoke: {e}"))?;
        let status = response.status();
        let text = response.text().await.map_err(|e| e.to_string())?;
        if !status.is_success() {
            return Err(format!("invoke: {status}: {text}"));
        }
        text
    };
    let answer: Value =
        serde_json::from_str(&answer).map_err(|e| format!("not JSON ({e}): {answer}"))?;
    let status = answer["statusCode"]
        .as_u64()
        .ok_or_else(|| format!("no statusCode (a function error?): {answer}"))?;
    let mut response = Response::builder().status(status as u16);
    let mut add = |name: &str, value: &Value| {
        if let (Ok(name), Some(Ok(value))) = (
            HeaderName::try_from(name),
            value.as_str().map(HeaderValue::try_from),
        ) {
            response = std::mem::take(&mut response).header(name, value);
        }
    };
    let multi = answer["multiValueHeaders"].as_object();
    for (name, values) in multi.into_iter().flatten() {
        values
            .as_array()
            .into_iter()
            .flatten()
            .for_each(|v| add(name, v));
    }
    for (name, value) in answer["headers"].as_object().into_iter().flatten() {
        if !multi.is_some_and(|m| m.contains_key(name)) {
            add(name, value);
        }
    }
    for cookie in answer["cookies"].as_array().into_iter().flatten() {
        add("set-cookie", cookie);
    }
    let text = answer["body"].as_str().unwrap_or_default();
    let body = if answer["isBase64Encoded"] == true {
        base64_simd::STANDARD
            .decode_to_vec(text)
            .map_err(|e| e.to_string())?
    } else {
        text.as_bytes().to_vec()
    };
    response.body(Body::from(body)).map_err(|e| e.to_string())
}

fn encoded_body(body: &Bytes) -> (Value, bool) {
    if body.is_empty() {
        return (Value::Null, false);
    }
    match std::str::from_utf8(body) {
        Ok(text) => (Value::String(text.to_owned()), false),
        Err(_) => (
            Value::String(base64_simd::STANDARD.encode_to_string(body)),
            true,
        ),
    }
}

fn header_values(headers: &HeaderMap) -> Vec<(String, Vec<String>)> {
    headers
        .keys()
        .map(|name| {
            let values = headers.get_all(name).iter();
            let values = values.filter_map(|v| v.to_str().ok().map(str::to_owned));
            (name.as_str().to_owned(), values.collect())
        })
        .collect()
}

fn request_id() -> String {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    format!("00000000-0000-4000-8000-{n:012x}")
}

/// A Function URL / HTTP API event (payload 2.0).
fn v2_event(parts: &axum::http::request::Parts, body: &Bytes) -> Value {
    let mut headers = Map::new();
    let mut cookies = Vec::new();
    for (name, values) in header_values(&parts.headers) {
        if name == "cookie" {
            cookies.extend(values.iter().flat_map(|v| v.split("; ")).map(str::to_owned));
        } else {
            headers.insert(name, Value::String(values.join(",")));
        }
    }
    let (body, base64) = encoded_body(body);
    json!({
        "version": "2.0",
        "routeKey": "$default",
        "rawPath": parts.uri.path(),
        "rawQueryString": parts.uri.query().unwrap_or_default(),
        "cookies": cookies,
        "headers": headers,
        "requestContext": {
            "accountId": "123456789012",
            "apiId": "hexaville",
            "domainName": "hexaville.execute-api.us-east-1.amazonaws.com",
            "http": {
                "method": parts.method.as_str(),
                "path": parts.uri.path(),
                "protocol": "HTTP/1.1",
                "sourceIp": "127.0.0.1",
                "userAgent": parts.headers.get("user-agent").and_then(|v| v.to_str().ok()),
            },
            "requestId": request_id(),
            "routeKey": "$default",
            "stage": "$default",
        },
        "body": body,
        "isBase64Encoded": base64,
    })
}

/// An API Gateway REST API event (payload 1.0): decoded query values, each header and
/// parameter both by its last value and by all of them.
fn v1_event(parts: &axum::http::request::Parts, body: &Bytes) -> Value {
    let (mut headers, mut multi_headers) = (Map::new(), Map::new());
    for (name, values) in header_values(&parts.headers) {
        if let Some(last) = values.last() {
            headers.insert(name.clone(), Value::String(last.clone()));
        }
        multi_headers.insert(name, json!(values));
    }
    let (mut query, mut multi_query) = (Map::new(), Map::new());
    for pair in parts.uri.query().unwrap_or_default().split('&') {
        if pair.is_empty() {
            continue;
        }
        let (name, value) = pair.split_once('=').unwrap_or((pair, ""));
        let (name, value) = (decode(name), decode(value));
        query.insert(name.clone(), Value::String(value.clone()));
        let values = multi_query.entry(name).or_insert_with(|| json!([]));
        values
            .as_array_mut()
            .expect("an array")
            .push(Value::String(value));
    }
    let or_null = |map: Map<String, Value>| {
        if map.is_empty() {
            Value::Null
        } else {
            Value::Object(map)
        }
    };
    let (body, base64) = encoded_body(body);
    json!({
        "resource": "/{proxy+}",
        "path": parts.uri.path(),
        "httpMethod": parts.method.as_str(),
        "headers": headers,
        "multiValueHeaders": multi_headers,
        "queryStringParameters": or_null(query),
        "multiValueQueryStringParameters": or_null(multi_query),
        "pathParameters": {"proxy": parts.uri.path().trim_start_matches('/')},
        "stageVariables": null,
        "requestContext": {
            "accountId": "123456789012",
            "apiId": "hexaville",
            "resourcePath": "/{proxy+}",
            "httpMethod": parts.method.as_str(),
            "path": format!("/staging{}", parts.uri.path()),
            "protocol": "HTTP/1.1",
            "stage": "staging",
            "requestId": request_id(),
            "identity": {"sourceIp": "127.0.0.1"},
        },
        "body": body,
        "isBase64Encoded": base64,
    })
}

/// Percent-decoding of a query component (`+` is a space).
fn decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'+' => out.push(b' '),
            b'%' if i + 2 < bytes.len() => match u8::from_str_radix(&text[i + 1..i + 3], 16) {
                Ok(byte) => {
                    out.push(byte);
                    i += 2;
                }
                Err(_) => out.push(b'%'),
            },
            byte => out.push(byte),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The one invocation the shim's own Runtime API hands its app, and where the answer goes.
struct Slot {
    next: Option<(HeaderMap, Bytes)>,
    answer: Option<oneshot::Sender<(String, HeaderMap, Bytes)>>,
}

type Shared = Arc<Mutex<Slot>>;

async fn shim(app: PathBuf) -> Result<(), String> {
    let api = std::env::var("AWS_LAMBDA_RUNTIME_API")
        .map_err(|_| "the shim is a bootstrap: it needs AWS_LAMBDA_RUNTIME_API")?;
    let base = if api.starts_with("http") {
        format!("{api}/2018-06-01")
    } else {
        format!("http://{api}/2018-06-01")
    };
    let http = reqwest::Client::builder()
        .no_proxy()
        .http1_only()
        .build()
        .map_err(|e| e.to_string())?;
    let slot: Shared = Arc::new(Mutex::new(Slot {
        next: None,
        answer: None,
    }));
    let own = Router::new()
        .route("/2018-06-01/runtime/invocation/next", get(own_next))
        .route(
            "/2018-06-01/runtime/invocation/{id}/{kind}",
            post(own_answer),
        )
        .with_state(slot.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .map_err(|e| e.to_string())?;
    let own_api = listener.local_addr().map_err(|e| e.to_string())?;
    tokio::spawn(async move { axum::serve(listener, own).await });
    loop {
        let next = http
            .get(format!("{base}/runtime/invocation/next"))
            .send()
            .await
            .map_err(|e| format!("cannot reach the runtime api: {e}"))?;
        let headers = next.headers().clone();
        let id = headers
            .get("lambda-runtime-aws-request-id")
            .and_then(|v| v.to_str().ok())
            .ok_or("no request id from /next")?
            .to_owned();
        let event = next.bytes().await.map_err(|e| e.to_string())?;
        let (sender, receiver) = oneshot::channel();
        *slot.lock().expect("the slot") = Slot {
            next: Some((headers, event)),
            answer: Some(sender),
        };
        // A fresh process for this invocation, against the shim's one-invocation API.
        let mut child = with_parent(
            Command::new(&app)
                .env("AWS_LAMBDA_RUNTIME_API", own_api.to_string())
                .stdin(Stdio::null())
                .kill_on_drop(true),
        )
        .spawn()
        .map_err(|e| format!("cannot start {}: {e}", app.display()))?;
        let answer = tokio::select! {
            answer = receiver => answer.ok(),
            _ = child.wait() => None,
        };
        let _ = child.kill().await;
        let (kind, headers, body) = answer.unwrap_or_else(|| {
            let body = json!({"errorType": "Runtime.ExitError", "errorMessage": "the app exited without an answer"});
            ("error".into(), HeaderMap::new(), Bytes::from(body.to_string()))
        });
        let mut post = http
            .post(format!("{base}/runtime/invocation/{id}/{kind}"))
            .body(body);
        if let Some(error_type) = headers.get("lambda-runtime-function-error-type") {
            post = post.header("lambda-runtime-function-error-type", error_type.clone());
        }
        post.send()
            .await
            .map_err(|e| format!("cannot post the answer: {e}"))?;
    }
}

/// The invocation once; a second `/next` waits until the shim ends the process.
async fn own_next(State(slot): State<Shared>) -> Response<Body> {
    let next = slot.lock().expect("the slot").next.take();
    let Some((headers, event)) = next else {
        return std::future::pending().await;
    };
    let mut response = Response::builder().status(StatusCode::OK);
    for (name, value) in &headers {
        if name.as_str().starts_with("lambda-runtime-") {
            response = response.header(name, value);
        }
    }
    response.body(Body::from(event)).expect("a response")
}

async fn own_answer(
    State(slot): State<Shared>,
    Path((_, kind)): Path<(String, String)>,
    headers: HeaderMap,
    body: Bytes,
) -> StatusCode {
    let answer = slot.lock().expect("the slot").answer.take();
    if let Some(answer) = answer {
        let _ = answer.send((kind, headers, body));
    }
    StatusCode::ACCEPTED
}
