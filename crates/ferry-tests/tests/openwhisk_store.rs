//! What OpenWhisk's 1 MiB limit on parameters and results cannot carry goes through an S3 store
//! (`FERRY_STORE`): arguments and outputs over the limit by reference, and shared values once
//! each. Against the loopback controller (`ferry_tests::controller`, which enforces the limit
//! both ways) running ferry's OpenWhisk runtime, with moto's S3 on loopback as the store.

use std::time::Duration;

use ferry::aws::{AwsConfig, Credentials};
use ferry::store::StoreLocation;
use ferry::{Codec, Context, ErrorKind, OpenWhiskConfig, RetryPolicy, Shared};
use ferry_tests::controller::Controller;
use ferry_tests::moto::Moto;
use ferry_tests::*;

mod common;
use common::bounded;

const PROGRAM: &str = env!("CARGO_BIN_EXE_ferry-fixture");
const REGION: &str = "eu-west-1";
const BUCKET: &str = "ferry-openwhisk-store";
const PREFIX: &str = "runs/ow";
const LIMIT: u64 = 1 << 20;

/// A controller whose containers have moto's S3 as their store (`with_store`) or no store.
async fn start_controller(moto: &Moto, with_store: bool) -> Controller {
    let mut builder = Controller::builder(PROGRAM).intra_concurrency(64);
    if with_store {
        for (key, value) in [
            ("FERRY_STORE", format!("s3://{BUCKET}/{PREFIX}")),
            ("AWS_ENDPOINT_URL_S3", moto.url.clone()),
            ("AWS_REGION", REGION.to_owned()),
            ("AWS_ACCESS_KEY_ID", "test".to_owned()),
            ("AWS_SECRET_ACCESS_KEY", "test".to_owned()),
            ("AWS_EC2_METADATA_DISABLED", "true".to_owned()),
        ] {
            builder = builder.container_env(key, &value);
        }
    }
    let controller = builder.start().await;
    for (action, concurrency) in [("byte_len", 8), ("repeat_text", 4), ("sum_shared", 8)] {
        controller.put_action(action, action, concurrency, 60_000);
    }
    controller
}

/// A caller in the binary codec, with the store or without.
fn context(controller: &Controller, moto: &Moto, with_store: bool) -> Context {
    let mut config = OpenWhiskConfig::new(&controller.api_host, &controller.auth)
        .codec(Codec::BinaryInJson)
        .retry(RetryPolicy::default().base_delay(Duration::from_millis(5)));
    if with_store {
        let aws = AwsConfig::new(REGION, Credentials::new("test", "test", None))
            .with_s3_endpoint(&moto.url)
            .unwrap();
        let store = format!("s3://{BUCKET}/{PREFIX}").parse::<StoreLocation>();
        config = config.store(store.unwrap()).aws(aws);
    }
    Context::openwhisk(config).unwrap()
}

/// A 3 MB argument and a 3 MB result, past the 1 MiB limit both ways, travel through the store
/// and arrive whole; the caller deletes both once the call has ended. Without the caller's store
/// the argument is refused before sending; an action without a store of its own meets the
/// controller's limit on results, which the caller hears as `PayloadTooLarge`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn parameters_and_results_over_the_limit_travel_through_the_store() {
    let moto = Moto::start();
    moto.create_versioned_bucket(REGION, BUCKET);
    let controller = start_controller(&moto, true).await;
    let ctx = context(&controller, &moto, true);

    let data: Vec<u8> = (0..=255u8).cycle().take(3_000_000).collect();
    let len = bounded(ctx.call(ByteLen { data: data.clone() }))
        .await
        .unwrap();
    assert_eq!(len, 3_000_000);
    let text = bounded(ctx.call(RepeatText { len: 3_000_000 }))
        .await
        .unwrap();
    assert_eq!(text.len(), 3_000_000);
    assert!(text.bytes().all(|b| b == b'x'), "the text came back whole");
    // Under the limit nothing goes through the store.
    assert_eq!(
        bounded(ctx.call(RepeatText { len: 10 }))
            .await
            .unwrap()
            .len(),
        10
    );

    let written = moto.object_versions(REGION, BUCKET, &format!("{PREFIX}/payloads/"));
    assert_eq!(written.len(), 2, "one argument and one result: {written:?}");
    assert_eq!(
        moto.keys_left(REGION, BUCKET, &format!("{PREFIX}/payloads/")),
        Vec::<String>::new()
    );

    let sent = controller.invocations();
    let without = context(&controller, &moto, false);
    let refused = bounded(without.call(ByteLen { data })).await.unwrap_err();
    assert!(
        matches!(refused.kind(), ErrorKind::PayloadTooLarge { limit, .. } if *limit == LIMIT),
        "{refused}"
    );
    assert_eq!(controller.invocations(), sent, "refused before sending");

    let bare = start_controller(&moto, false).await;
    let ctx = context(&bare, &moto, true);
    let too_large = bounded(ctx.call(RepeatText { len: 3_000_000 }))
        .await
        .unwrap_err();
    assert!(
        matches!(too_large.kind(), ErrorKind::PayloadTooLarge { size, limit } if *limit == LIMIT && *size > LIMIT),
        "{too_large}"
    );
}

/// A shared value given to a fan-out of 64 tasks is uploaded to the store once (the bucket is
/// versioned: every write of a key is a version), the action's container fetches and decodes it
/// once, and no call carried it: 8 MB in every call would be over the limit, as a caller without
/// the store finds.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_shared_value_goes_to_the_store_once() {
    let moto = Moto::start();
    moto.create_versioned_bucket(REGION, BUCKET);
    let controller = start_controller(&moto, true).await;
    let ctx = context(&controller, &moto, true);

    let numbers: Vec<u64> = (0..1_000_000).collect();
    let expected: u64 = numbers.iter().sum();
    let numbers = Shared::new(numbers);
    let parts = 64;
    let step = 1_000_000 / parts;
    let tasks = |numbers: &Shared<Vec<u64>>| {
        let numbers = numbers.clone();
        (0..parts).map(move |i| SumShared {
            numbers: numbers.clone(),
            from: i * step,
            to: (i + 1) * step,
        })
    };
    let reports = bounded(ctx.map(tasks(&numbers))).await.unwrap();
    assert_eq!(reports.iter().map(|r| r.sum).sum::<u64>(), expected);

    let shared = moto.object_versions(REGION, BUCKET, &format!("{PREFIX}/shared/"));
    assert_eq!(shared.len(), 1, "one upload: {shared:?}");
    assert_eq!(ferry::shared::stats().encodes, 1);
    let pids: std::collections::BTreeSet<u32> = reports.iter().map(|r| r.pid).collect();
    assert_eq!(pids.len(), 1, "one container ran them all: {pids:?}");
    let last = reports
        .iter()
        .map(|r| &r.stats)
        .max_by_key(|s| s.cache_hits)
        .unwrap();
    assert_eq!((last.fetches, last.decodes), (1, 1), "{last:?}");
    let payloads = moto.object_versions(REGION, BUCKET, &format!("{PREFIX}/payloads/"));
    assert!(
        payloads.is_empty(),
        "no call went as a payload: {payloads:?}"
    );

    let without = context(&controller, &moto, false);
    let refused = bounded(without.map(tasks(&numbers))).await.unwrap_err();
    assert!(
        matches!(refused.kind(), ErrorKind::PayloadTooLarge { limit, .. } if *limit == LIMIT),
        "{refused}"
    );
}
