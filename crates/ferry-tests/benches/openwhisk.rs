//! The OpenWhisk Action Interface under load on loopback:
//!
//! - a function that waits 50 ms, `/run` from 1 client on a container without intra-concurrency
//!   against 8 clients on one with `__OW_ALLOW_CONCURRENT=true` (the function allows 8);
//! - the runtime's own cost per activation: sequential `/run`s of a no-op against the same
//!   requests to a bare axum handler that answers `{}`.
//!
//! `cargo bench -p ferry-tests --bench openwhisk` prints a Markdown table (also written to
//! `target/ferry-bench/openwhisk.md`, or `FERRY_BENCH_OUT`: benches/report/mod.rs). `-- --quick`
//! runs each row for 0.5 s instead of 3 s.

use std::fmt::Write as _;
use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

mod report;

/// How long each row runs: 3 s, or 0.5 s with `--quick`.
fn run_for() -> Duration {
    if report::quick() {
        Duration::from_millis(500)
    } else {
        Duration::from_secs(3)
    }
}

struct Container {
    child: Child,
    base: String,
}

impl Container {
    fn start() -> Self {
        let mut child = Command::new(env!("CARGO_BIN_EXE_ferry-fixture"))
            .env("FERRY_ROLE", "openwhisk")
            .env("FERRY_LISTEN", "127.0.0.1:0")
            .env_remove("__OW_ALLOW_CONCURRENT")
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start the action container");
        let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
        let base = lines
            .by_ref()
            .map_while(Result::ok)
            .find_map(|line| line.strip_prefix("ferry: listening on ").map(str::to_owned))
            .expect("the container announces its address");
        std::thread::spawn(move || lines.for_each(drop));
        Self { child, base }
    }
}

impl Drop for Container {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Activations per second with `clients` keep-alive clients, each running `/run`s back to back.
async fn throughput(base: &str, clients: usize, value: &Value) -> f64 {
    let started = Instant::now();
    let run_for = run_for();
    let mut tasks = Vec::new();
    for _ in 0..clients {
        let url = format!("{base}/run");
        let body = json!({"value": value, "activation_id": "bench"});
        tasks.push(tokio::spawn(async move {
            let http = reqwest::Client::new();
            let mut done = 0u64;
            while started.elapsed() < run_for {
                let response = http.post(&url).json(&body).send().await.expect("run");
                assert_eq!(response.status(), 200, "{:?}", response.text().await);
                let _ = response.bytes().await;
                done += 1;
            }
            done
        }));
    }
    let mut total = 0;
    for task in tasks {
        total += task.await.expect("client");
    }
    total as f64 / started.elapsed().as_secs_f64()
}

async fn init(base: &str, body: Value) {
    let response = reqwest::Client::new()
        .post(format!("{base}/init"))
        .json(&body)
        .send()
        .await
        .expect("init");
    assert_eq!(response.status(), 200);
}

/// Mean time of one sequential activation, in microseconds.
async fn sequential_micros(base: &str) -> f64 {
    let rate = throughput(base, 1, &json!({})).await;
    1e6 / rate
}

/// A bare axum handler answering `{}`, in its own process like the runtime: this benchmark
/// binary started again with `BARE_HANDLER` set. Returns its base URL and the process.
fn bare_handler() -> (String, Child) {
    let mut child = Command::new(std::env::current_exe().unwrap())
        .env("BARE_HANDLER", "1")
        .stderr(Stdio::piped())
        .spawn()
        .expect("bare handler");
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let base = lines
        .by_ref()
        .map_while(Result::ok)
        .find_map(|line| line.strip_prefix("listening on ").map(str::to_owned))
        .expect("the bare handler announces its address");
    (base, child)
}

async fn serve_bare_handler() {
    use axum::routing::post;
    let app = axum::Router::new().route("/run", post(|| async { axum::Json(json!({})) }));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    eprintln!("listening on http://{}", listener.local_addr().unwrap());
    let _ = axum::serve(listener, app).await;
}

async fn measure() -> String {
    let serial = Container::start();
    init(&serial.base, json!({"value": {"main": "wait_50ms"}})).await;
    let one = throughput(&serial.base, 1, &json!({})).await;

    let concurrent = Container::start();
    init(
        &concurrent.base,
        json!({"value": {"main": "wait_50ms", "env": {"__OW_ALLOW_CONCURRENT": "true"}}}),
    )
    .await;
    let eight = throughput(&concurrent.base, 8, &json!({})).await;
    eprintln!("wait 50 ms: 1 client {one:.1}/s, 8 clients {eight:.1}/s");

    let noop = Container::start();
    init(&noop.base, json!({"value": {"main": "noop"}})).await;
    let runtime = sequential_micros(&noop.base).await;
    let (bare_base, mut bare_process) = bare_handler();
    let bare = sequential_micros(&bare_base).await;
    let _ = bare_process.kill();
    let _ = bare_process.wait();
    eprintln!("no-op /run: ferry {runtime:.1} µs, bare handler {bare:.1} µs");

    let mut report = String::new();
    let _ = writeln!(report, "| measurement | value |\n|---|---|");
    let _ = writeln!(
        report,
        "| wait 50 ms, concurrency 1, 1 client | {one:.1} activations/s |"
    );
    let _ = writeln!(
        report,
        "| wait 50 ms, concurrency 8, 8 clients | {eight:.1} activations/s |"
    );
    let ratio = eight / one;
    let _ = writeln!(
        report,
        "| ratio | {ratio:.2}x (target ≥ 7x: {}) |",
        met(ratio >= 7.0)
    );
    let _ = writeln!(
        report,
        "| no-op `/run`, sequential, ferry runtime | {runtime:.1} µs |"
    );
    let _ = writeln!(
        report,
        "| same requests to a bare axum handler in its own process | {bare:.1} µs |"
    );
    let _ = writeln!(
        report,
        "| runtime overhead per activation | {:.1} µs (target ≤ 100 µs: {}) |",
        runtime - bare,
        met(runtime - bare <= 100.0)
    );
    report
}

fn met(met: bool) -> &'static str {
    if met { "met" } else { "not met" }
}

fn main() {
    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    if std::env::var_os("BARE_HANDLER").is_some() {
        runtime.block_on(async { tokio::spawn(serve_bare_handler()).await.ok() });
        return;
    }
    let report = runtime
        .block_on(async { tokio::spawn(measure()).await })
        .expect("measurement");
    report::write("openwhisk", &report);
}
