//! A fan-out of 1,024 tasks over one shared value of Cppless's scene size (88 KiB encoded) on
//! Lambda, with and without the store: `cargo lambda watch`'s emulator with the fixture as the
//! `bootstrap` of `sum_shared(numbers: Shared<Vec<u64>>, from, to)`, moto's S3 as the store,
//! binary-in-JSON events.
//!
//! Per mode: the host's time encoding arguments (`SharedStats::argument_encode_time`), how often
//! the value was encoded, the bytes the host sent (counted by a relay on loopback in front of
//! the emulator and one in front of moto: Invoke requests and S3 uploads, headers included),
//! the uploads to the store, and the fan-out's wall time; modes alternate, 3 runs each after a
//! warm-up, medians reported.
//!
//! 64 invocations are in flight at a time: `cargo lambda watch` (1.9) stops answering once
//! about 128 invocations wait in it, whichever runtime serves them.
//!
//! `cargo bench -p ferry-tests --bench lambda_shared` prints a Markdown table (also written to
//! `target/ferry-bench/lambda_shared.md`, or `FERRY_BENCH_OUT`: benches/report/mod.rs).
//! `-- --quick`: 1 run per mode after the warm-up instead of 3.

use std::fmt::Write as _;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use ferry::aws::{AwsConfig, Credentials};
use ferry::{Context, LambdaCodec, LambdaConfig, Shared};
use ferry_tests::SumShared;
use ferry_tests::moto::Moto;

const TASKS: usize = 1024;
const IN_FLIGHT: usize = 64;
const REGION: &str = "eu-west-1";
const BUCKET: &str = "ferry-bench";

#[path = "../tests/common/mod.rs"]
mod common;
mod report;

/// A TCP relay on loopback to `upstream` that counts the bytes clients send through it.
struct Relay {
    port: u16,
    sent: Arc<AtomicU64>,
}

impl Relay {
    async fn start(upstream: u16) -> Self {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let sent = Arc::new(AtomicU64::new(0));
        let counter = sent.clone();
        tokio::spawn(async move {
            while let Ok((mut client, _)) = listener.accept().await {
                let counter = counter.clone();
                tokio::spawn(async move {
                    let Ok(mut server) =
                        tokio::net::TcpStream::connect(("127.0.0.1", upstream)).await
                    else {
                        return;
                    };
                    let (mut client_read, mut client_write) = client.split();
                    let (mut server_read, mut server_write) = server.split();
                    // Counted as they pass: pooled connections stay open across runs.
                    let up = async {
                        use tokio::io::{AsyncReadExt, AsyncWriteExt};
                        let mut buffer = vec![0u8; 64 * 1024];
                        while let Ok(n @ 1..) = client_read.read(&mut buffer).await {
                            counter.fetch_add(n as u64, Ordering::Relaxed);
                            if server_write.write_all(&buffer[..n]).await.is_err() {
                                break;
                            }
                        }
                        let _ = server_write.shutdown().await;
                    };
                    let down = tokio::io::copy(&mut server_read, &mut client_write);
                    let _ = tokio::join!(up, down);
                });
            }
        });
        Self { port, sent }
    }

    fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    fn sent(&self) -> u64 {
        self.sent.load(Ordering::Relaxed)
    }
}

fn context(lambda: &Relay, s3: &Relay, store: bool) -> Context {
    let aws = AwsConfig::new(REGION, Credentials::new("test", "test", None))
        .with_lambda_endpoint(&lambda.url())
        .unwrap()
        .with_s3_endpoint(&s3.url())
        .unwrap();
    let mut config = LambdaConfig::new(aws)
        .functions("_")
        .codec(LambdaCodec::BinaryInJson)
        // Fresh connections per run would count their handshakes only once: the pool is small
        // and kept.
        .connections(4);
    if store {
        config = config.store(format!("s3://{BUCKET}/bench").parse().unwrap());
    }
    Context::lambda(config).unwrap()
}

fn median<T: Ord + Copy>(mut samples: Vec<T>) -> T {
    samples.sort();
    samples[samples.len() / 2]
}

struct Run {
    wall: Duration,
    encode: Duration,
    /// Times the shared value was encoded: in every call's arguments, or once as a blob.
    value_encodes: u64,
    sent: u64,
}

/// One fan-out over a fresh shared value (so each run encodes and uploads it anew).
async fn fan_out(ctx: &Context, store: bool, relays: [&Relay; 2], run: u64) -> Run {
    // 11,264 numbers: 88 KiB in the binary codec.
    let numbers: Vec<u64> = (0..11_264).map(|n| n * 3 + run).collect();
    let expected: u64 = numbers.iter().sum();
    let numbers = Shared::new(numbers);
    let before = ferry::shared::stats();
    let sent_before: u64 = relays.iter().map(|r| r.sent()).sum();
    let started = Instant::now();
    let step = 11_264 / 8;
    let tasks = (0..TASKS).map(|i| SumShared {
        numbers: numbers.clone(),
        from: (i % 8) * step,
        to: (i % 8 + 1) * step,
    });
    let reports = tokio::time::timeout(
        Duration::from_secs(600),
        ctx.map(tasks).concurrency(IN_FLIGHT),
    )
    .await
    .expect("the fan-out ended")
    .unwrap();
    let wall = started.elapsed();
    assert_eq!(
        reports.iter().map(|r| r.sum).sum::<u64>(),
        expected * (TASKS as u64 / 8)
    );
    let after = ferry::shared::stats();
    // Connections finish their writes before the answers arrive: the count is complete.
    let sent = relays.iter().map(|r| r.sent()).sum::<u64>() - sent_before;
    Run {
        wall,
        encode: after.argument_encode_time - before.argument_encode_time,
        value_encodes: if store {
            after.encodes - before.encodes
        } else {
            after.argument_encodes - before.argument_encodes
        },
        sent,
    }
}

#[tokio::main(flavor = "multi_thread")]
async fn main() {
    let moto = Moto::start();
    moto.create_versioned_bucket(REGION, BUCKET);
    let emulator = common::Emulator::start();
    let moto_port: u16 = moto.url.rsplit(':').next().unwrap().parse().unwrap();
    let lambda = Relay::start(emulator.port()).await;
    let s3 = Relay::start(moto_port).await;
    let store_env = [
        ("FERRY_STORE", format!("s3://{BUCKET}/bench")),
        ("AWS_ENDPOINT_URL_S3", moto.url.clone()),
        ("AWS_REGION", REGION.to_owned()),
        ("AWS_ACCESS_KEY_ID", "test".to_owned()),
        ("AWS_SECRET_ACCESS_KEY", "test".to_owned()),
        ("AWS_EC2_METADATA_DISABLED", "true".to_owned()),
        // Several bootstraps' worth of polls, as Lambda would scale out.
        ("AWS_LAMBDA_MAX_CONCURRENCY", "8".to_owned()),
    ];
    let env: Vec<(&str, &str)> = store_env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let _bootstrap = emulator.bootstrap(env!("CARGO_BIN_EXE_ferry-fixture"), "sum_shared", &env);
    let modes = [
        (
            "in full with every call",
            false,
            context(&lambda, &s3, false),
        ),
        ("through the store, once", true, context(&lambda, &s3, true)),
    ];

    for (_, store, ctx) in &modes {
        fan_out(ctx, *store, [&lambda, &s3], 0).await;
    }
    let mut samples: Vec<Vec<Run>> = vec![Vec::new(), Vec::new()];
    let measured = if report::quick() { 1 } else { 3 };
    for run in 1..=measured as u64 {
        for (i, (_, store, ctx)) in modes.iter().enumerate() {
            samples[i].push(fan_out(ctx, *store, [&lambda, &s3], run).await);
        }
    }
    let uploads = moto.object_versions(REGION, BUCKET, "bench/shared/").len();

    let mut table = String::from(
        "| shared value (88 KiB), 1,024 tasks | value encoded | host encoding | bytes sent by the host | uploads | wall time |\n\
         |---|---:|---:|---:|---:|---:|\n",
    );
    for (i, (name, store, _)) in modes.iter().enumerate() {
        let runs = &samples[i];
        let encodes = median(runs.iter().map(|r| r.value_encodes).collect());
        let encode = median(runs.iter().map(|r| r.encode).collect());
        let sent = median(runs.iter().map(|r| r.sent).collect());
        let wall = median(runs.iter().map(|r| r.wall).collect());
        let uploads = if *store {
            format!("{uploads} in {} runs", measured + 1)
        } else {
            "0".to_owned()
        };
        let _ = writeln!(
            table,
            "| {name} | {encodes} | {:.1} ms | {:.1} MiB | {uploads} | {:.2} s |",
            encode.as_secs_f64() * 1e3,
            sent as f64 / f64::from(1 << 20),
            wall.as_secs_f64(),
        );
    }
    report::write("lambda_shared", &table);
}
