//! The Lambda custom runtime's own costs, against a Runtime API served by this benchmark (a load
//! generator standing in for Lambda):
//!
//! - ready time: from spawning the `bootstrap` to its first `/runtime/invocation/next`;
//! - per-invocation cost: sequential no-op invocations through ferry's loop, against a bare loop
//!   (in this process) that answers each `/next` with an empty `/response`.
//!
//! `cargo bench -p ferry-tests --bench lambda` prints a Markdown table (also written to
//! `target/ferry-bench/lambda.md`, or `FERRY_BENCH_OUT`: benches/report/mod.rs). `-- --quick`:
//! 500 invocations per loop instead of 5,000.

use std::fmt::Write as _;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::Instant;

use axum::extract::{Path, State};
use axum::http::HeaderMap;
use axum::routing::{get, post};
use tokio::sync::{Mutex, mpsc, oneshot};

mod report;

/// Sequential invocations measured per loop: 5,000, or 500 with `--quick`.
fn invocations() -> u32 {
    if report::quick() { 500 } else { 5_000 }
}

/// A Runtime API: events are handed out on `/next`, answers reported on `answers`.
struct Api {
    events: Mutex<mpsc::Receiver<(u64, Vec<u8>)>>,
    first_next: Mutex<Option<oneshot::Sender<Instant>>>,
    answers: mpsc::UnboundedSender<u64>,
}

async fn next(State(api): State<Arc<Api>>) -> Result<(HeaderMap, Vec<u8>), axum::http::StatusCode> {
    if let Some(first) = api.first_next.lock().await.take() {
        let _ = first.send(Instant::now());
    }
    // After a measurement the queue closes; a runtime still polling gets an error, not an event.
    let (id, event) = api
        .events
        .lock()
        .await
        .recv()
        .await
        .ok_or(axum::http::StatusCode::GONE)?;
    let mut headers = HeaderMap::new();
    headers.insert(
        "lambda-runtime-aws-request-id",
        id.to_string().parse().unwrap(),
    );
    let deadline = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis()
        + 60_000;
    headers.insert(
        "lambda-runtime-deadline-ms",
        deadline.to_string().parse().unwrap(),
    );
    headers.insert(
        "lambda-runtime-invoked-function-arn",
        "arn:aws:lambda:eu-west-1:000000000000:function:bench"
            .parse()
            .unwrap(),
    );
    Ok((headers, event))
}

async fn answered(State(api): State<Arc<Api>>, Path(id): Path<u64>) -> &'static str {
    let _ = api.answers.send(id);
    ""
}

struct Harness {
    events: mpsc::Sender<(u64, Vec<u8>)>,
    answers: mpsc::UnboundedReceiver<u64>,
    first_next: oneshot::Receiver<Instant>,
    address: String,
}

async fn serve_api() -> Harness {
    let (events, queued) = mpsc::channel(16);
    let (answers, answered_rx) = mpsc::unbounded_channel();
    let (first_tx, first_next) = oneshot::channel();
    let api = Arc::new(Api {
        events: Mutex::new(queued),
        first_next: Mutex::new(Some(first_tx)),
        answers,
    });
    let app = axum::Router::new()
        .route("/2018-06-01/runtime/invocation/next", get(next))
        .route(
            "/2018-06-01/runtime/invocation/{id}/response",
            post(answered),
        )
        .route("/2018-06-01/runtime/invocation/{id}/error", post(answered))
        .with_state(api);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap().to_string();
    tokio::spawn(async move { axum::serve(listener, app).await });
    Harness {
        events,
        answers: answered_rx,
        first_next,
        address,
    }
}

/// Mean microseconds per sequential invocation.
async fn sequential(harness: &mut Harness) -> f64 {
    for id in 0..200u64 {
        harness.events.send((id, b"{}".to_vec())).await.unwrap();
        harness.answers.recv().await.unwrap();
    }
    let invocations = invocations();
    let started = Instant::now();
    for id in 1_000..1_000 + u64::from(invocations) {
        harness.events.send((id, b"{}".to_vec())).await.unwrap();
        assert_eq!(harness.answers.recv().await.unwrap(), id);
    }
    started.elapsed().as_secs_f64() * 1e6 / f64::from(invocations)
}

async fn ferry_runtime() -> (f64, f64) {
    let mut harness = serve_api().await;
    let spawned = Instant::now();
    let mut child = Command::new(env!("CARGO_BIN_EXE_ferry-fixture"))
        .env_remove("FERRY_ROLE")
        .env("AWS_LAMBDA_RUNTIME_API", &harness.address)
        .env("_HANDLER", "noop")
        .stdout(Stdio::null())
        .spawn()
        .expect("bootstrap");
    let first = (&mut harness.first_next).await.expect("a first /next");
    let ready_ms = first.duration_since(spawned).as_secs_f64() * 1e3;
    let per_invocation = sequential(&mut harness).await;
    let _ = child.kill();
    let _ = child.wait();
    (ready_ms, per_invocation)
}

/// The same loop with no function behind it, in its own process like the bootstrap: this
/// benchmark binary started again with `BARE_LOOP_API` set.
async fn bare_loop() -> f64 {
    let mut harness = serve_api().await;
    let mut child = Command::new(std::env::current_exe().unwrap())
        .env("BARE_LOOP_API", &harness.address)
        .stdout(Stdio::null())
        .spawn()
        .expect("bare loop");
    let micros = sequential(&mut harness).await;
    let _ = child.kill();
    let _ = child.wait();
    micros
}

async fn run_bare_loop(address: String) {
    let base = format!("http://{address}/2018-06-01");
    let http = reqwest::Client::new();
    while let Ok(next) = http
        .get(format!("{base}/runtime/invocation/next"))
        .send()
        .await
    {
        let Some(id) = next.headers().get("lambda-runtime-aws-request-id").cloned() else {
            return;
        };
        let _ = next.bytes().await;
        let id = id.to_str().unwrap_or_default().to_owned();
        let _ = http
            .post(format!("{base}/runtime/invocation/{id}/response"))
            .body("null")
            .send()
            .await;
    }
}

async fn measure() -> String {
    let mut ready = Vec::new();
    let mut ferry = Vec::new();
    for _ in 0..3 {
        let (ready_ms, micros) = ferry_runtime().await;
        ready.push(ready_ms);
        ferry.push(micros);
    }
    ready.sort_by(f64::total_cmp);
    ferry.sort_by(f64::total_cmp);
    let bare = bare_loop().await;
    let (ready, ferry) = (ready[1], ferry[1]);
    eprintln!("ready {ready:.1} ms, ferry {ferry:.1} µs, bare {bare:.1} µs");
    let mut report = String::from("| measurement | value |\n|---|---|\n");
    let _ = writeln!(
        report,
        "| bootstrap ready (spawn to first `/next`), median of 3 | {ready:.1} ms (target ≤ 20 ms: {}) |",
        met(ready <= 20.0)
    );
    let _ = writeln!(
        report,
        "| no-op invocation through ferry's loop, sequential | {ferry:.1} µs |"
    );
    let _ = writeln!(
        report,
        "| bare `/next` → `/response` loop in its own process, same API | {bare:.1} µs |"
    );
    let _ = writeln!(
        report,
        "| ferry's cost per invocation | {:.1} µs (target ≤ 100 µs: {}) |",
        ferry - bare,
        met(ferry - bare <= 100.0)
    );
    report
}

fn met(met: bool) -> &'static str {
    if met { "met" } else { "not met" }
}

fn main() {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    if let Ok(address) = std::env::var("BARE_LOOP_API") {
        runtime.block_on(async { tokio::spawn(run_bare_loop(address)).await.ok() });
        return;
    }
    let report = runtime
        .block_on(async { tokio::spawn(measure()).await })
        .expect("measurement");
    report::write("lambda", &report);
}
