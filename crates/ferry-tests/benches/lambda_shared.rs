//! A fan-out of 1,024 tasks over one shared value of Cppless's scene size (88 KiB encoded) on
//! Lambda, with and without the store: `cargo lambda watch`'s emulator with the fixture as the
//! `bootstrap` of `sum_shared(numbers: Shared<Vec<u64>>, from, to)`, moto's S3 as the store,
//! binary-in-JSON events.
//!
//! Per mode: the host's time encoding arguments (`SharedStats::argument_encode_time`), the
//! values encoded, the bytes of events sent, the uploads to the store, and the fan-out's wall
//! time; modes alternate, 3 runs each after a warm-up, medians reported.
//!
//! `cargo bench -p ferry-tests --bench lambda_shared` prints a Markdown table (also written to
//! `target/ferry-bench/lambda_shared.md`).

use std::fmt::Write as _;
use std::time::{Duration, Instant};

use ferry::aws::{AwsConfig, Credentials};
use ferry::{Codec, Context, LambdaCodec, LambdaConfig, Shared};
use ferry_tests::SumShared;
use ferry_tests::moto::Moto;

const TASKS: usize = 1024;
const RUNS: usize = 3;
const REGION: &str = "eu-west-1";
const BUCKET: &str = "ferry-bench";

#[path = "../tests/common/mod.rs"]
mod common;

fn context(port: u16, moto: &Moto, store: bool) -> Context {
    let aws = AwsConfig::new(REGION, Credentials::new("test", "test", None))
        .with_lambda_endpoint(&format!("http://127.0.0.1:{port}"))
        .unwrap()
        .with_s3_endpoint(&moto.url)
        .unwrap();
    let mut config = LambdaConfig::new(aws)
        .functions("_")
        .codec(LambdaCodec::BinaryInJson);
    if store {
        config = config.store(format!("s3://{BUCKET}/bench").parse().unwrap());
    }
    Context::lambda(config).unwrap()
}

fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

struct Run {
    wall: Duration,
    encode: Duration,
    encodes: u64,
}

/// One fan-out over a fresh shared value (so each run encodes and uploads it anew).
async fn fan_out(ctx: &Context, run: u64) -> Run {
    // 11,264 numbers: 88 KiB in the binary codec.
    let numbers: Vec<u64> = (0..11_264).map(|n| n * 3 + run).collect();
    let expected: u64 = numbers.iter().sum();
    let numbers = Shared::new(numbers);
    let before = ferry::shared::stats();
    let started = Instant::now();
    let step = 11_264 / 8;
    let tasks = (0..TASKS).map(|i| SumShared {
        numbers: numbers.clone(),
        from: (i % 8) * step,
        to: (i % 8 + 1) * step,
    });
    let reports = ctx.map(tasks).await.unwrap();
    let wall = started.elapsed();
    assert_eq!(
        reports.iter().map(|r| r.sum).sum::<u64>(),
        expected * (TASKS as u64 / 8)
    );
    let after = ferry::shared::stats();
    Run {
        wall,
        encode: after.argument_encode_time - before.argument_encode_time,
        encodes: after.encodes - before.encodes,
    }
}

#[tokio::main(flavor = "multi_thread")]
async fn main() {
    let moto = Moto::start();
    moto.create_versioned_bucket(REGION, BUCKET);
    let emulator = common::Emulator::start();
    let port = emulator.port();
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
        ("in full with every call", context(port, &moto, false)),
        ("through the store, once", context(port, &moto, true)),
    ];

    // The events: the value base64'd into each one, or its id.
    let sample = SumShared {
        numbers: Shared::new((0..11_264).collect()),
        from: 0,
        to: 1,
    };
    let full_event = Codec::BinaryInJson.encode(&sample).unwrap().len() + 19;
    // `{"__ferry_shared":["<64 hex>"],"__ferry_binary":"<base64 of tag, id and two numbers>"}`
    let by_id_event: usize = 19 + 70 + 4 * 52_usize.div_ceil(3) + 2;

    for (_, ctx) in &modes {
        fan_out(ctx, 0).await;
    }
    let mut samples: Vec<Vec<Run>> = vec![Vec::new(), Vec::new()];
    for run in 1..=RUNS as u64 {
        for (i, (_, ctx)) in modes.iter().enumerate() {
            samples[i].push(fan_out(ctx, run).await);
        }
    }
    let uploads = moto.object_versions(REGION, BUCKET, "bench/shared/").len();

    let mut table = String::from(
        "| shared value (88 KiB), 1,024 tasks | value encoded | host encoding | bytes of events (computed) | uploads | wall time |\n\
         |---|---:|---:|---:|---:|---:|\n",
    );
    for (i, (name, _)) in modes.iter().enumerate() {
        let runs = &samples[i];
        // In full, every call's arguments encode the value again.
        let encodes = if i == 0 {
            TASKS as u64
        } else {
            runs.iter().map(|r| r.encodes).max().unwrap_or(0)
        };
        let encode = median(runs.iter().map(|r| r.encode).collect());
        let wall = median(runs.iter().map(|r| r.wall).collect());
        let (events, uploads) = if i == 0 {
            (full_event * TASKS, "0".to_owned())
        } else {
            (
                by_id_event * TASKS,
                format!("{} for {} runs", uploads, RUNS + 1),
            )
        };
        let _ = writeln!(
            table,
            "| {name} | {encodes} | {:.1} ms | {:.1} MiB | {uploads} | {:.2} s |",
            encode.as_secs_f64() * 1e3,
            events as f64 / f64::from(1 << 20),
            wall.as_secs_f64(),
        );
    }
    print!("{table}");
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/ferry-bench");
    let _ = std::fs::create_dir_all(&dir);
    let _ = std::fs::write(dir.join("lambda_shared.md"), &table);
}
