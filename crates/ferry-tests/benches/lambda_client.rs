//! The `lambda` backend's client ceiling: no-op invocations with 1,000 in flight from one host
//! process, against a loopback Invoke endpoint (`POST /2015-03-31/functions/{name}/invocations`)
//! that answers `null` at once. Every request is SigV4-signed and JSON-encoded as against AWS.
//!
//! The endpoint runs in a child process (this benchmark re-executed), so client and server are
//! separate processes sharing the machine's cores.
//!
//! `cargo bench -p ferry-tests --bench lambda_client` prints a Markdown table (also written to
//! `target/ferry-bench/lambda_client.md`, or `FERRY_BENCH_OUT`: benches/report/mod.rs): the best
//! of 3 rounds of 100,000 invocations, or with `-- --quick` of 1 round of 10,000.

use std::fmt::Write as _;
use std::time::{Duration, Instant};

use ferry::aws::{AwsConfig, Credentials};
use ferry::{Context, LambdaConfig, LambdaHttp};
use ferry_tests::Noop;

mod instant_endpoint;
mod report;

const IN_FLIGHT: usize = 1_000;

async fn measure(
    endpoint: &str,
    http: LambdaHttp,
    connections: usize,
    (rounds, invocations): (usize, usize),
) -> f64 {
    let aws = AwsConfig::new(
        "eu-west-1",
        Credentials::new("AKIDFERRYBENCH", "ferry-bench-secret", None),
    )
    .with_lambda_endpoint(endpoint)
    .unwrap();
    let ctx = Context::lambda(LambdaConfig::new(aws).http(http).connections(connections)).unwrap();
    // Warm the connections.
    ctx.map((0..IN_FLIGHT).map(|_| Noop {}))
        .concurrency(IN_FLIGHT)
        .await
        .unwrap();
    let mut best = 0f64;
    for _ in 0..rounds {
        let started = Instant::now();
        let outputs = ctx
            .map((0..invocations).map(|_| Noop {}))
            .concurrency(IN_FLIGHT)
            .await
            .unwrap();
        assert_eq!(outputs.len(), invocations);
        best = best.max(invocations as f64 / started.elapsed().as_secs_f64());
    }
    best
}

fn main() {
    if instant_endpoint::serve_if_asked() {
        return;
    }
    let server = instant_endpoint::start();
    let endpoint = server.url.clone();

    let runtime = tokio::runtime::Runtime::new().unwrap();
    let (rounds, invocations) = if report::quick() {
        (1, 10_000)
    } else {
        (3, 100_000)
    };
    let mut report = format!(
        "| client | invocations/s, {IN_FLIGHT} in flight (best of {rounds} × {invocations}) |\n|---|---|\n"
    );
    for (label, http, connections) in [
        ("HTTP/2 (h2c), 16 connections", LambdaHttp::H2c, 16),
        ("HTTP/2 (h2c), 4 connections", LambdaHttp::H2c, 4),
        ("HTTP/1.1 keep-alive", LambdaHttp::Http1, 1),
    ] {
        let endpoint = endpoint.clone();
        let rate = runtime
            .block_on(async move {
                tokio::spawn(async move {
                    measure(&endpoint, http, connections, (rounds, invocations)).await
                })
                .await
            })
            .expect("measurement");
        println!("{label}: {rate:.0}/s");
        let _ = writeln!(report, "| {label} | {rate:.0} |");
        std::thread::sleep(Duration::from_millis(200));
    }
    drop(server);
    report::write("lambda_client", &report);
}
