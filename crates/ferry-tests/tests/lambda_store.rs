//! What Lambda's limits cannot carry goes through an S3 store (`FERRY_STORE`): arguments and
//! outputs over the 6 MB payload limit, and shared values, uploaded once each. Against
//! `cargo lambda watch` (the Invoke and Runtime APIs) with moto's S3 on loopback as the store.

use ferry::store::StoreLocation;
use ferry::{Context, ErrorKind, LambdaCodec, LambdaConfig, Shared};
use ferry_tests::moto::Moto;
use ferry_tests::*;

mod common;
use common::{Emulator, bounded, fast_retries};

const PROGRAM: &str = env!("CARGO_BIN_EXE_ferry-fixture");
const REGION: &str = "eu-west-1";
const BUCKET: &str = "ferry-store-test";
const PREFIX: &str = "runs/one";

/// The environment of the functions' runtimes: moto's S3 as the store, with test credentials.
fn runtime_env(moto: &Moto) -> Vec<(&'static str, String)> {
    vec![
        ("FERRY_STORE", format!("s3://{BUCKET}/{PREFIX}")),
        ("AWS_ENDPOINT_URL_S3", moto.url.clone()),
        ("AWS_REGION", REGION.to_owned()),
        ("AWS_ACCESS_KEY_ID", "test".to_owned()),
        ("AWS_SECRET_ACCESS_KEY", "test".to_owned()),
        ("AWS_EC2_METADATA_DISABLED", "true".to_owned()),
    ]
}

/// A caller of the emulator's functions `routes` (ferry function → Lambda function), with the
/// store or without.
fn context(moto: &Moto, emulator: &Emulator, routes: &[(&str, &str)], store: bool) -> Context {
    let aws =
        ferry::aws::AwsConfig::new(REGION, ferry::aws::Credentials::new("test", "test", None))
            .with_lambda_endpoint(&emulator.endpoint())
            .unwrap()
            .with_s3_endpoint(&moto.url)
            .unwrap();
    let mut config = LambdaConfig::new(aws)
        .codec(LambdaCodec::BinaryInJson)
        .retry(fast_retries());
    for (function, lambda) in routes {
        config = config.route(*function, *lambda);
    }
    if store {
        config = config.store(
            format!("s3://{BUCKET}/{PREFIX}")
                .parse::<StoreLocation>()
                .unwrap(),
        );
    }
    Context::lambda(config).unwrap()
}

/// A 20 MB argument and a 20 MB result, past Lambda's 6 MB limit both ways, travel through the
/// store and arrive whole; the caller deletes both once the call has ended. Without a store
/// the same argument is refused before anything is sent.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn payloads_over_the_limit_travel_through_the_store() {
    let moto = Moto::start();
    moto.create_versioned_bucket(REGION, BUCKET);
    let emulator = Emulator::start();
    let env = runtime_env(&moto);
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    // The emulator knows the default function `_` and one per binary of the package.
    let _bytes = emulator.bootstrap_function("_", PROGRAM, "byte_len", &env);
    let _text = emulator.bootstrap_function("ferry-fixture", PROGRAM, "repeat_text", &env);
    let routes = [("byte_len", "_"), ("repeat_text", "ferry-fixture")];
    let ctx = context(&moto, &emulator, &routes, true);

    let data: Vec<u8> = (0..=255u8).cycle().take(20_000_000).collect();
    let len = bounded(ctx.call(ByteLen { data: data.clone() }))
        .await
        .unwrap();
    assert_eq!(len, 20_000_000);
    let text = bounded(ctx.call(RepeatText { len: 20_000_000 }))
        .await
        .unwrap();
    assert_eq!(text.len(), 20_000_000);
    assert!(text.bytes().all(|b| b == b'x'), "the text came back whole");

    // One argument and one output were written, and both are gone.
    let written = moto.object_versions(REGION, BUCKET, &format!("{PREFIX}/payloads/"));
    assert_eq!(written.len(), 2, "{written:?}");
    assert_eq!(
        moto.keys_left(REGION, BUCKET, &format!("{PREFIX}/payloads/")),
        Vec::<String>::new()
    );

    let without = context(&moto, &emulator, &routes, false);
    let refused = bounded(without.call(ByteLen { data })).await.unwrap_err();
    assert!(
        matches!(refused.kind(), ErrorKind::PayloadTooLarge { limit, .. } if *limit == 6 * 1024 * 1024),
        "{refused}"
    );
    // A function asked for an output past the limit without a store of its own says so.
    let _bare = emulator.bootstrap_function("web-fixture", PROGRAM, "repeat_text", &[]);
    let bare = context(&moto, &emulator, &[("repeat_text", "web-fixture")], true);
    let too_large = bounded(bare.call(RepeatText { len: 7_000_000 }))
        .await
        .unwrap_err();
    assert!(
        matches!(too_large.kind(), ErrorKind::PayloadTooLarge { .. }),
        "{too_large}"
    );
}

/// A shared value given to a fan-out of 64 tasks is uploaded to the store once (the bucket is
/// versioned: every write of a key is a version), every task sees it, and no call carried it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_shared_value_goes_to_the_store_once() {
    let moto = Moto::start();
    moto.create_versioned_bucket(REGION, BUCKET);
    let emulator = Emulator::start();
    let env = runtime_env(&moto);
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let _sum = emulator.bootstrap_function("_", PROGRAM, "sum_shared", &env);
    let ctx = context(&moto, &emulator, &[("sum_shared", "_")], true);

    // 8 MB encoded: past the payload limit, were it sent with every call.
    let numbers: Vec<u64> = (0..1_000_000).collect();
    let expected: u64 = numbers.iter().sum();
    let numbers = Shared::new(numbers);
    let parts = 64;
    let step = 1_000_000 / parts;
    let tasks = (0..parts).map(|i| SumShared {
        numbers: numbers.clone(),
        from: i * step,
        to: (i + 1) * step,
    });
    let reports = bounded(ctx.map(tasks)).await.unwrap();
    assert_eq!(reports.iter().map(|r| r.sum).sum::<u64>(), expected);

    let shared = moto.object_versions(REGION, BUCKET, &format!("{PREFIX}/shared/"));
    assert_eq!(shared.len(), 1, "one upload: {shared:?}");
    let stats = ferry::shared::stats();
    assert_eq!(stats.encodes, 1, "{stats:?}");
    // The runtime fetched and decoded it once, however many tasks it ran.
    let last = reports
        .iter()
        .map(|r| &r.stats)
        .max_by_key(|s| s.cache_hits)
        .unwrap();
    assert_eq!(last.fetches, 1, "{last:?}");
    assert_eq!(last.decodes, 1, "{last:?}");
    // No call carried the value, nor went through the store as a payload.
    let payloads = moto.object_versions(REGION, BUCKET, &format!("{PREFIX}/payloads/"));
    assert!(payloads.is_empty(), "{payloads:?}");

    // A second program run with an equal value finds it there and uploads nothing.
    drop(ctx);
    let again = context(&moto, &emulator, &[("sum_shared", "_")], true);
    let numbers = Shared::new((0..1_000_000).collect::<Vec<u64>>());
    let report = bounded(again.call(SumShared {
        numbers,
        from: 0,
        to: 10,
    }))
    .await
    .unwrap();
    assert_eq!(report.sum, 45);
    let shared = moto.object_versions(REGION, BUCKET, &format!("{PREFIX}/shared/"));
    assert_eq!(shared.len(), 1, "still one upload: {shared:?}");
}
