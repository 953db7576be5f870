//! One conformance suite, run on every backend against real components: `inline`, `local`
//! (worker processes), `http` (the HTTP service, over HTTP/1.1 and h2c), `openwhisk` (the
//! loopback controller running ferry's OpenWhisk runtime) and `lambda` (the fixture as
//! `bootstrap`s behind cargo-lambda's emulator). Each backend must give the same outputs and the
//! same error kinds: a user error, a panic (in the body or while encoding the output), bad input, an unknown function, a deadline, its
//! payload limit, shared values and chained and orchestrated flows.

mod common;

use std::any::Any;
use std::time::Duration;

use common::{Emulator, both_modes_agree, bounded};
use ferry::{BackendKind, Codec, Context, ErrorKind, HttpConfig, OpenWhiskConfig, Shared};
use ferry_tests::controller::Controller;
use ferry_tests::*;

const PROGRAM: &str = env!("CARGO_BIN_EXE_ferry-fixture");

/// A backend under test.
struct Platform {
    ctx: Context,
    /// The largest arguments the platform takes, when it has a limit of its own.
    payload_limit: Option<u64>,
    /// Servers, emulators and controllers, stopped when the test ends.
    _running: Vec<Box<dyn Any>>,
}

/// Every check, on one backend.
async fn conforms(platform: Platform) {
    let ctx = &platform.ctx;
    let backend = ctx.backend_kind();

    // Outputs: a typed call, a fan-out in order, and raw JSON.
    assert_eq!(bounded(ctx.call(Add { a: 40, b: 2 })).await.unwrap(), 42);
    let sums = bounded(ctx.map((0..50).map(|i| Add { a: i, b: 1 })))
        .await
        .unwrap();
    assert!(
        sums.iter().enumerate().all(|(i, &s)| s == i as i64 + 1),
        "{backend}: {sums:?}"
    );
    let output = bounded(ctx.invoke("add", Codec::Json, r#"{"a": 1, "b": 2}"#))
        .await
        .unwrap();
    assert_eq!(&output[..], b"3", "{backend}");

    // A user error, with its message; the same function succeeds on good input.
    let error = bounded(ctx.call(RequireEven { n: 3 })).await.unwrap_err();
    assert!(
        matches!(error.kind(), ErrorKind::User { message, .. } if message == "3 is odd"),
        "{backend}: {error}"
    );
    assert_eq!(bounded(ctx.call(RequireEven { n: 4 })).await.unwrap(), 2);

    // A panic, with its message.
    let error = bounded(ctx.call(Explode {
        message: "conformance boom".into(),
    }))
    .await
    .unwrap_err();
    assert!(
        matches!(error.kind(), ErrorKind::Panic { message } if message == "conformance boom"),
        "{backend}: {error}"
    );

    // A panic while the output is encoded ends that invocation, not the instance: the same
    // instance answers the next call. (It once dropped connections on HTTP and OpenWhisk, and
    // ended the ActionLoop executable and the Lambda runtime.) Inline outputs are never encoded.
    let encoded = bounded(ctx.call(PanicInOutput {})).await;
    if backend == BackendKind::Inline {
        assert!(encoded.is_ok(), "{backend}");
    } else {
        let error = encoded.unwrap_err();
        assert!(
            matches!(error.kind(), ErrorKind::Panic { message } if message.contains("refuses to be serialized")),
            "{backend}: {error}"
        );
    }
    assert_eq!(bounded(ctx.call(Add { a: 1, b: 1 })).await.unwrap(), 2);

    // Bad input names the field.
    let error = bounded(ctx.invoke("add", Codec::Json, r#"{"a": 1, "b": true}"#))
        .await
        .unwrap_err();
    assert!(
        matches!(error.kind(), ErrorKind::BadInput { path, .. } if path == "b"),
        "{backend}: {error}"
    );

    // An unknown function.
    let error = bounded(ctx.invoke("nothing_here", Codec::Json, "{}"))
        .await
        .unwrap_err();
    assert!(
        matches!(error.kind(), ErrorKind::UnknownFunction { .. }),
        "{backend}: {error}"
    );

    // The function's own deadline (300 ms).
    let error = bounded(ctx.call(SleepAsync { ms: 5_000 }))
        .await
        .unwrap_err();
    assert!(
        matches!(error.kind(), ErrorKind::Timeout { limit_ms: 300 }),
        "{backend}: {error}"
    );
    assert_eq!(bounded(ctx.call(SleepAsync { ms: 5 })).await.unwrap(), 5);

    // The platform's payload limit, whichever codec it speaks (a byte is at least one byte
    // encoded).
    if let Some(limit) = platform.payload_limit {
        let error = bounded(ctx.call(ByteLen {
            data: vec![7; usize::try_from(limit).unwrap() + 1],
        }))
        .await
        .unwrap_err();
        assert!(
            matches!(error.kind(), ErrorKind::PayloadTooLarge { limit: l, .. } if *l == limit),
            "{backend}: {error}"
        );
        assert_eq!(
            bounded(ctx.call(ByteLen { data: vec![7; 100] }))
                .await
                .unwrap(),
            100
        );
    }

    // A shared value reaches every task.
    let numbers = Shared::new((0..10_000u64).collect::<Vec<_>>());
    let reports = bounded(ctx.map((0..10).map(|i| SumShared {
        numbers: numbers.clone(),
        from: i * 1_000,
        to: (i + 1) * 1_000,
    })))
    .await
    .unwrap();
    let total: u64 = reports.iter().map(|r| r.sum).sum();
    assert_eq!(total, (0..10_000u64).sum::<u64>(), "{backend}");

    // Flows, chained and orchestrated, agree and name their failing stage.
    both_modes_agree(ctx).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn inline_conforms() {
    conforms(Platform {
        ctx: Context::inline(),
        payload_limit: None,
        _running: Vec::new(),
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn local_conforms() {
    conforms(Platform {
        ctx: common::local(2),
        payload_limit: None,
        _running: Vec::new(),
    })
    .await;
}

/// The HTTP service with a 1 MiB body limit.
fn http_service() -> common::Server {
    common::Server::start_with(PROGRAM, Some("http"), &[("FERRY_HTTP_MAX_BODY", "1048576")])
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_conforms() {
    let service = http_service();
    conforms(Platform {
        ctx: Context::http(HttpConfig::new(&service.base)).unwrap(),
        payload_limit: Some(1 << 20),
        _running: vec![Box::new(service)],
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_over_h2c_conforms() {
    let service = http_service();
    conforms(Platform {
        ctx: Context::http(HttpConfig::new(&service.base).h2c(true)).unwrap(),
        payload_limit: Some(1 << 20),
        _running: vec![Box::new(service)],
    })
    .await;
}

/// The fixture's functions this suite calls.
const FUNCTIONS: &[&str] = &[
    "add",
    "require_even",
    "explode",
    "panic_in_output",
    "sleep_async",
    "byte_len",
    "sum_shared",
    "parse_number",
    "double",
    "at_most_thousand",
    "describe",
];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn openwhisk_conforms() {
    // Its operator enabled intra-container concurrency (OpenWhisk allows 1 by default).
    let controller = Controller::builder(PROGRAM)
        .intra_concurrency(16)
        .start()
        .await;
    for function in FUNCTIONS {
        controller.put_action(function, function, 16, 60_000);
    }
    let ctx =
        Context::openwhisk(OpenWhiskConfig::new(&controller.api_host, &controller.auth)).unwrap();
    conforms(Platform {
        ctx,
        payload_limit: Some(1 << 20),
        _running: vec![Box::new(controller)],
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lambda_conforms() {
    let emulator = Emulator::start();
    // The emulator serves the default function `_` and one per binary of the workspace: each
    // ferry function is deployed under one of those names.
    let names = [
        "_",
        "ferry-fixture",
        "web-fixture",
        "accounts-service",
        "fanout-host",
        "misuse-tokio-main",
        "duplicate-ids",
        "pi",
        "fib",
        "nqueens",
        "knapsack",
    ];
    let deployed: Vec<_> = FUNCTIONS.iter().copied().zip(names).collect();
    let (bootstraps, ctx) = common::lambda_app(&emulator, &deployed);
    conforms(Platform {
        ctx,
        payload_limit: Some(6 * 1024 * 1024),
        _running: vec![Box::new(bootstraps), Box::new(emulator)],
    })
    .await;
}

/// Every remote backend retries a platform it cannot reach a bounded number of times, then
/// reports it unavailable.
#[tokio::test]
async fn an_unreachable_platform_is_unavailable_after_bounded_retries() {
    let nowhere = "http://127.0.0.1:1";
    for ctx in [
        Context::http(HttpConfig::new(nowhere).retry(common::fast_retries())).unwrap(),
        Context::openwhisk(OpenWhiskConfig::new(nowhere, "u:k").retry(common::fast_retries()))
            .unwrap(),
        Context::lambda(
            ferry::LambdaConfig::new(common::aws(nowhere)).retry(common::fast_retries()),
        )
        .unwrap(),
    ] {
        let started = std::time::Instant::now();
        let error = ctx.call(Add { a: 1, b: 1 }).await.unwrap_err();
        assert!(
            matches!(error.kind(), ErrorKind::Unavailable { message } if message.contains("cannot reach")),
            "{}: {error}",
            ctx.backend_kind()
        );
        assert!(started.elapsed() < Duration::from_secs(5));
    }
}
