//! Shared set-up: a local platform whose workers are the `ferry-fixture` program.

#![allow(dead_code)]

use std::future::IntoFuture;
use std::io::{BufRead, BufReader};
use std::net::{TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use ferry::{Context, ErrorKind, Flow, FlowMode, LocalConfig};
use ferry_tests::{AtMostThousand, Describe, Double, ParseNumber};

/// A local platform of at most `workers` fixture workers.
pub fn local(workers: usize) -> Context {
    local_with(LocalConfig::default().max_workers(workers))
}

pub fn local_with(config: LocalConfig) -> Context {
    Context::local(config.worker_exe(env!("CARGO_BIN_EXE_ferry-fixture"))).expect("local platform")
}

/// Fails the test instead of hanging: every invocation must end.
pub async fn bounded<T>(future: impl IntoFuture<Output = T>) -> T {
    tokio::time::timeout(Duration::from_secs(30), future)
        .await
        .expect("an invocation hung")
}

/// `cargo lambda watch --only-lambda-apis`: Lambda's Runtime and Invoke APIs on loopback.
pub struct Emulator {
    child: Child,
    port: u16,
}

impl Emulator {
    pub fn start() -> Self {
        Self::start_with(&[])
    }

    /// The emulator with more `cargo lambda watch` options.
    pub fn start_with(options: &[&str]) -> Self {
        let port = TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("free port")
            .port();
        let child = Command::new("cargo")
            .args([
                "lambda",
                "watch",
                "--only-lambda-apis",
                "-A",
                "127.0.0.1",
                "-P",
                &port.to_string(),
            ])
            .args(options)
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect(
                "cargo-lambda is installed (`pip install cargo-lambda`; scripts/test.sh does it)",
            );
        let started = Instant::now();
        while TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(
                started.elapsed() < Duration::from_secs(30),
                "the emulator never listened"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        Self { child, port }
    }

    /// The port it listens on, loopback.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The Invoke API's endpoint.
    pub fn endpoint(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// Starts the fixture as the Lambda `bootstrap` for `handler`, the emulator's default
    /// function (`_`).
    pub fn bootstrap(&self, program: &str, handler: &str, extra: &[(&str, &str)]) -> Bootstrap {
        self.bootstrap_function("_", program, handler, extra)
    }

    /// Starts the fixture as the `bootstrap` of the Lambda function `function`.
    pub fn bootstrap_function(
        &self,
        function: &str,
        program: &str,
        handler: &str,
        extra: &[(&str, &str)],
    ) -> Bootstrap {
        let runtime_api = if function == "_" {
            format!("http://127.0.0.1:{}/.rt", self.port)
        } else {
            format!("http://127.0.0.1:{}/.rt/{function}", self.port)
        };
        let child = Command::new(program)
            .env_remove("FERRY_ROLE")
            .env("AWS_LAMBDA_RUNTIME_API", runtime_api)
            .env("AWS_LAMBDA_FUNCTION_NAME", function)
            .env("AWS_LAMBDA_FUNCTION_VERSION", "1")
            .env("AWS_LAMBDA_FUNCTION_MEMORY_SIZE", "256")
            .env("_HANDLER", handler)
            .envs(extra.iter().copied())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start the bootstrap");
        Bootstrap(child)
    }

    pub async fn invoke(&self, event: &Value) -> (u16, Option<String>, String) {
        let response = tokio::time::timeout(
            Duration::from_secs(30),
            reqwest::Client::new()
                .post(format!(
                    "http://127.0.0.1:{}/2015-03-31/functions/_/invocations",
                    self.port
                ))
                .json(event)
                .send(),
        )
        .await
        .expect("the invocation hung")
        .expect("invoke");
        let status = response.status().as_u16();
        let function_error = response
            .headers()
            .get("x-amz-function-error")
            .map(|v| v.to_str().unwrap().to_owned());
        (status, function_error, response.text().await.unwrap())
    }
}

impl Drop for Emulator {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A `bootstrap` process, killed when the test ends.
pub struct Bootstrap(pub Child);

impl Bootstrap {
    /// The process id of the runtime.
    pub fn pid(&self) -> u32 {
        self.0.id()
    }
}

impl Drop for Bootstrap {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The address a ferry server announces on stderr (`ferry: listening on …`); the rest of stderr
/// is drained in the background.
/// Sends `request` as it is on a connection a test drives by hand and reads the answer until it
/// ends with `last`, each read within 5 s: all the server said.
pub async fn exchange(stream: &mut tokio::net::TcpStream, request: &[u8], last: &[u8]) -> String {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    stream.write_all(request).await.unwrap();
    let mut said = Vec::new();
    let mut buffer = [0u8; 1024];
    while !said.ends_with(last) {
        let read = tokio::time::timeout(Duration::from_secs(5), stream.read(&mut buffer))
            .await
            .expect("an answer within 5 s")
            .unwrap();
        assert!(
            read > 0,
            "closed before answering: {}",
            String::from_utf8_lossy(&said)
        );
        said.extend_from_slice(&buffer[..read]);
    }
    String::from_utf8_lossy(&said).into_owned()
}

pub fn listening_on(stderr: std::process::ChildStderr) -> String {
    let mut lines = BufReader::new(stderr).lines();
    let base = lines
        .by_ref()
        .map_while(Result::ok)
        .find_map(|line| line.strip_prefix("ferry: listening on ").map(str::to_owned))
        .expect("the server announces where it listens");
    std::thread::spawn(move || lines.for_each(drop));
    base
}

/// A ferry program serving on a port of its own choosing, in `role` (or as a plain web app),
/// killed when the test ends.
pub struct Server {
    pub child: Child,
    pub base: String,
}

impl Server {
    pub fn start(program: &str, role: Option<&str>) -> Self {
        Self::start_with(program, role, &[])
    }

    /// As [`start`](Self::start), with extra environment variables.
    pub fn start_with(program: &str, role: Option<&str>, env: &[(&str, &str)]) -> Self {
        let mut command = Command::new(program);
        command.envs(env.iter().copied());
        command
            .env("FERRY_LISTEN", "127.0.0.1:0")
            .env_remove("AWS_LAMBDA_RUNTIME_API")
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        match role {
            Some(role) => command.env("FERRY_ROLE", role),
            None => command.env_remove("FERRY_ROLE"),
        };
        let mut child = command.spawn().expect("start the server");
        let base = listening_on(child.stderr.take().unwrap());
        Self { child, base }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Numbers, non-numbers (the flow ends early) and numbers whose double fails a stage.
const INPUTS: &[&str] = &["1", " 21", "x", "500", "501", "-3", "", "1000000"];

/// parse → double → at most 1,000 → describe.
pub fn numbers() -> Flow<String, String> {
    Flow::start::<ParseNumber>()
        .then::<Double>()
        .then::<AtMostThousand>()
        .then::<Describe>()
}

/// Runs every input through [`numbers`] in both modes: the outcomes agree, match what the stages
/// compute, and the failing middle stage is named.
pub async fn both_modes_agree(ctx: &Context) {
    let chained = numbers();
    let orchestrated = numbers().mode(FlowMode::Orchestrated);
    assert_eq!(chained.current_mode(), FlowMode::Chained);
    for input in INPUTS {
        let a = bounded(chained.run(ctx, (*input).to_owned())).await;
        let b = bounded(orchestrated.run(ctx, (*input).to_owned())).await;
        match (&a, &b) {
            (Ok(a), Ok(b)) => assert_eq!(a, b, "input {input:?}"),
            (Err(a), Err(b)) => {
                assert_eq!(a.kind(), b.kind(), "input {input:?}");
                assert_eq!(a.function(), b.function(), "input {input:?}");
                assert_eq!(a.flow_stage(), b.flow_stage(), "input {input:?}");
            }
            _ => panic!("input {input:?}: chained gave {a:?}, orchestrated {b:?}"),
        }
        let expected = match input.trim().parse::<i64>() {
            Err(_) => Some(None),
            Ok(n) if 2 * n > 1000 => None,
            Ok(n) => Some(Some(format!("n={}", 2 * n))),
        };
        match expected {
            Some(output) => assert_eq!(a.unwrap(), output, "input {input:?}"),
            None => {
                let error = a.unwrap_err();
                let n = 2 * input.trim().parse::<i64>().unwrap();
                assert!(
                    matches!(error.kind(), ErrorKind::User { message, .. }
                        if *message == format!("{n} is above 1000")),
                    "{error}"
                );
                assert_eq!(
                    error.function(),
                    Some(<AtMostThousand as ferry::Function>::DESCRIPTOR.id)
                );
                assert_eq!(error.flow_stage(), Some(2));
                let message = error.to_string();
                assert!(
                    message.contains("flow stage 2") && message.contains("at_most_thousand"),
                    "{message}"
                );
            }
        }
    }
}

/// How `child` ended, waiting up to `limit` for it to exit; `what` says why it should.
pub fn exit_within(child: &mut Child, limit: Duration, what: &str) -> std::process::ExitStatus {
    let started = Instant::now();
    loop {
        if let Some(status) = child.try_wait().expect("poll the child") {
            return status;
        }
        assert!(started.elapsed() < limit, "{what}: still running");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Test credentials and region for an emulated Lambda endpoint.
pub fn aws(endpoint: &str) -> ferry::aws::AwsConfig {
    ferry::aws::AwsConfig::new(
        "eu-west-1",
        ferry::aws::Credentials::new("AKIDFERRYTEST", "ferry-test-secret", None),
    )
    .with_lambda_endpoint(endpoint)
    .expect("a valid endpoint")
}

/// Retries that do not slow a test down.
pub fn fast_retries() -> ferry::RetryPolicy {
    ferry::RetryPolicy::default().base_delay(Duration::from_millis(5))
}

/// Deploys each ferry function of `deployed` (function, Lambda function name) as a `bootstrap`
/// of the fixture behind `emulator`, each able to invoke the others through the Invoke API (as
/// chained flow stages do), and a context that reaches them all.
pub fn lambda_app(emulator: &Emulator, deployed: &[(&str, &str)]) -> (Vec<Bootstrap>, Context) {
    let endpoint = emulator.endpoint();
    let routes = deployed
        .iter()
        .map(|(function, name)| format!("{function}={name}"))
        .collect::<Vec<_>>()
        .join(",");
    let peers = [
        ("FERRY_BACKEND", "lambda"),
        ("FERRY_LAMBDA_ROUTES", routes.as_str()),
        ("AWS_ENDPOINT_URL_LAMBDA", endpoint.as_str()),
        ("AWS_REGION", "eu-west-1"),
        ("AWS_ACCESS_KEY_ID", "AKIDFERRYTEST"),
        ("AWS_SECRET_ACCESS_KEY", "ferry-test-secret"),
    ];
    let program = env!("CARGO_BIN_EXE_ferry-fixture");
    let bootstraps = deployed
        .iter()
        .map(|(function, name)| emulator.bootstrap_function(name, program, function, &peers))
        .collect();
    let mut config = ferry::LambdaConfig::new(aws(&endpoint)).retry(fast_retries());
    for (function, name) in deployed {
        config = config.route(*function, *name);
    }
    (
        bootstraps,
        Context::lambda(config).expect("a lambda context"),
    )
}

/// Sends `n` requests made by `request` at once: each one's status and error kind (from ferry's
/// error JSON, bare or under `ferry`), or `None` where the connection was refused or dropped
/// (a listener that closed while it waited). Panics if one hangs past 30 s.
pub async fn all_at_once(
    n: usize,
    request: impl Fn() -> reqwest::RequestBuilder,
) -> Vec<Option<(u16, Option<String>)>> {
    let requests = (0..n).map(|_| {
        let sent = request().send();
        async move {
            match tokio::time::timeout(Duration::from_secs(30), sent).await {
                Ok(Ok(response)) => {
                    let status = response.status().as_u16();
                    let body: Value = response.json().await.unwrap_or_default();
                    let kind = body["kind"].as_str().or(body["ferry"]["kind"].as_str());
                    Some((status, kind.map(str::to_owned)))
                }
                Ok(Err(_)) => None,
                Err(_) => panic!("a request hung"),
            }
        }
    });
    futures::future::join_all(requests).await
}

/// `n` copies of the JSON POST of `body` to `path` on `address`, each on its own connection, all
/// held back by their last body byte until every copy is written, so that the server has read
/// them all before any can start: how long a loaded machine takes to open `n` connections does
/// not decide which of them the server sees. Each answer is its status and error kind (from
/// `X-Ferry-Error`, else the JSON body); `None` where the connection closed without an answer.
pub async fn all_read_at_once(
    n: usize,
    address: &str,
    path: &str,
    body: &str,
) -> Vec<Option<(u16, Option<String>)>> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    assert!(
        !body.is_empty(),
        "the last body byte holds each request back"
    );
    let (held, last) = body.split_at(body.len() - 1);
    let head = format!(
        "POST {path} HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\n\
         content-length: {}\r\nconnection: close\r\n\r\n{held}",
        body.len()
    );
    let mut streams = Vec::with_capacity(n);
    for _ in 0..n {
        let mut stream = tokio::net::TcpStream::connect(address)
            .await
            .expect("connect");
        stream.write_all(head.as_bytes()).await.expect("send");
        streams.push(stream);
    }
    for stream in &mut streams {
        stream.write_all(last.as_bytes()).await.expect("send");
    }
    let answers = streams.into_iter().map(|mut stream| async move {
        let mut said = Vec::new();
        let read = tokio::time::timeout(Duration::from_secs(30), stream.read_to_end(&mut said));
        read.await.expect("a request hung").ok()?;
        let said = String::from_utf8_lossy(&said);
        let (head, body) = said.split_once("\r\n\r\n")?;
        let status = head.split(' ').nth(1)?.parse().ok()?;
        let header_kind = head.lines().find_map(|line| {
            let (name, value) = line.split_once(':')?;
            name.eq_ignore_ascii_case("x-ferry-error")
                .then(|| value.trim().to_owned())
        });
        let body: Value = serde_json::from_str(body).unwrap_or_default();
        let body_kind = body["kind"].as_str().or(body["ferry"]["kind"].as_str());
        Some((status, header_kind.or(body_kind.map(str::to_owned))))
    });
    futures::future::join_all(answers).await
}

/// How many of `answers` failed with the error kind `kind`.
pub fn count_kind(answers: &[Option<(u16, Option<String>)>], kind: &str) -> usize {
    answers
        .iter()
        .flatten()
        .filter(|(_, k)| k.as_deref() == Some(kind))
        .count()
}
