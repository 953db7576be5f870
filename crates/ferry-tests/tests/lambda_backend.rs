//! The `lambda` backend: SigV4-signed Invoke API calls against `cargo lambda watch` (its Invoke
//! API in front of the fixture program running as Lambda `bootstrap`s), and against a loopback
//! Invoke endpoint that throttles and fails on purpose.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};

use axum::extract::Path;
use axum::http::{HeaderMap, StatusCode};
use ferry::{Codec, Context, ErrorKind, LambdaCodec, LambdaConfig, LambdaHttp, RetryPolicy};
use ferry_tests::*;

mod common;
use common::{Emulator, aws, both_modes_agree, bounded, fast_retries, numbers};

const PROGRAM: &str = env!("CARGO_BIN_EXE_ferry-fixture");

#[tokio::test]
async fn one_bootstrap_with_many_loops_serves_a_fan_out() {
    let emulator = Emulator::start();
    let _add =
        emulator.bootstrap_function("_", PROGRAM, "add", &[("AWS_LAMBDA_MAX_CONCURRENCY", "8")]);
    let ctx = Context::lambda(
        LambdaConfig::new(aws(&emulator.endpoint()))
            .functions("_")
            .retry(fast_retries()),
    )
    .unwrap();
    let sums = bounded(ctx.map((0..40).map(|i| Add { a: i, b: 1 })))
        .await
        .unwrap();
    assert!(sums.iter().enumerate().all(|(i, &s)| s == i as i64 + 1));
    assert_eq!(ctx.stats().invocations, 40);
}

/// Between ferry programs, calls may travel in the binary codec inside Lambda's JSON events
/// (`{"__ferry_binary": "<base64>"}`), answered the same way; errors keep their kind; a flow's
/// route travels beside the arguments.
#[tokio::test]
async fn binary_in_json_calls_round_trip_through_the_emulator() {
    let emulator = Emulator::start();
    let _bytes = emulator.bootstrap_function("_", PROGRAM, "byte_len", &[]);
    let _even = emulator.bootstrap_function("ferry-fixture", PROGRAM, "require_even", &[]);
    let ctx = Context::lambda(
        LambdaConfig::new(aws(&emulator.endpoint()))
            .route("byte_len", "_")
            .route("require_even", "ferry-fixture")
            .codec(LambdaCodec::BinaryInJson)
            .retry(fast_retries()),
    )
    .unwrap();
    let data: Vec<u8> = (0..=255).cycle().take(100_000).collect();
    assert_eq!(bounded(ctx.call(ByteLen { data })).await.unwrap(), 100_000);
    assert_eq!(bounded(ctx.call(RequireEven { n: 4 })).await.unwrap(), 2);
    let odd = bounded(ctx.call(RequireEven { n: 3 })).await.unwrap_err();
    assert!(
        matches!(odd.kind(), ErrorKind::User { message, .. } if message == "3 is odd"),
        "{odd}"
    );
    // A JSON caller of the same functions is answered in JSON.
    let json = Context::lambda(
        LambdaConfig::new(aws(&emulator.endpoint()))
            .route("byte_len", "_")
            .retry(fast_retries()),
    )
    .unwrap();
    assert_eq!(
        bounded(json.call(ByteLen {
            data: vec![1, 2, 3]
        }))
        .await
        .unwrap(),
        3
    );
}

/// Each stage is a Lambda function of its own whose runtime invokes the next stage through the
/// Invoke API (`FERRY_BACKEND=lambda` with routes): function to function, point to point.
#[tokio::test]
async fn flows_chain_function_to_function() {
    let emulator = Emulator::start();
    // The emulator knows the default function `_` and one per binary of the package.
    let (_bootstraps, ctx) = common::lambda_app(
        &emulator,
        &[
            ("parse_number", "_"),
            ("double", "ferry-fixture"),
            ("at_most_thousand", "web-fixture"),
            ("describe", "accounts-service"),
        ],
    );
    both_modes_agree(&ctx).await;
    let before = ctx.stats().invocations;
    bounded(numbers().run(&ctx, "7".into())).await.unwrap();
    assert_eq!(ctx.stats().invocations - before, 1, "the host invokes once");
}

/// A loopback Invoke endpoint: answers `failures` first (status, error type), then `42`, and
/// checks that every request is signed. The second value counts requests, the third names the
/// functions invoked.
async fn scripted_endpoint(
    failures: Vec<(StatusCode, &'static str)>,
) -> (String, Arc<AtomicU32>, Arc<Mutex<Vec<String>>>) {
    let seen = Arc::new(AtomicU32::new(0));
    let names = Arc::new(Mutex::new(Vec::new()));
    let (counter, invoked) = (seen.clone(), names.clone());
    let failures = Arc::new(failures);
    let app = axum::Router::new().route(
        "/2015-03-31/functions/{name}/invocations",
        axum::routing::post(move |Path(name): Path<String>, headers: HeaderMap| {
            let counter = counter.clone();
            let failures = failures.clone();
            invoked.lock().unwrap().push(name);
            async move {
                let authorization = headers
                    .get("authorization")
                    .and_then(|v| v.to_str().ok())
                    .unwrap_or_default();
                assert!(
                    authorization.starts_with("AWS4-HMAC-SHA256 Credential=AKIDFERRYTEST/")
                        && authorization.contains("/eu-west-1/lambda/aws4_request"),
                    "unsigned: {authorization:?}"
                );
                assert!(headers.contains_key("x-amz-date"));
                let n = counter.fetch_add(1, Ordering::SeqCst) as usize;
                match failures.get(n) {
                    Some(&(status, error_type)) => (
                        status,
                        [("x-amzn-errortype", error_type)],
                        format!(r#"{{"Type": "User", "message": "scripted {error_type}"}}"#),
                    ),
                    None => (
                        StatusCode::OK,
                        [("content-type", "application/json")],
                        "42".to_owned(),
                    ),
                }
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let endpoint = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await });
    (endpoint, seen, names)
}

#[tokio::test]
async fn throttling_and_service_failures_are_retried() {
    let (endpoint, seen, _) = scripted_endpoint(vec![
        (StatusCode::TOO_MANY_REQUESTS, "TooManyRequestsException"),
        (StatusCode::SERVICE_UNAVAILABLE, "ServiceException"),
    ])
    .await;
    for http in [LambdaHttp::Http1, LambdaHttp::H2c] {
        seen.store(0, Ordering::SeqCst);
        let ctx = Context::lambda(
            LambdaConfig::new(aws(&endpoint))
                .http(http)
                .retry(fast_retries()),
        )
        .unwrap();
        assert_eq!(ctx.call(Add { a: 40, b: 2 }).await.unwrap(), 42, "{http:?}");
        assert_eq!(seen.load(Ordering::SeqCst), 3, "{http:?}");
    }

    let ctx = Context::lambda(LambdaConfig::new(aws(&endpoint)).retry(RetryPolicy::NEVER)).unwrap();
    seen.store(0, Ordering::SeqCst);
    let error = ctx.call(Add { a: 1, b: 1 }).await.unwrap_err();
    assert!(
        matches!(error.kind(), ErrorKind::Throttled { message } if message.contains("TooManyRequestsException")),
        "{error}"
    );
    let error = ctx.call(Add { a: 1, b: 1 }).await.unwrap_err();
    assert!(
        matches!(error.kind(), ErrorKind::Unavailable { message } if message.contains("503")),
        "{error}"
    );
}

#[tokio::test]
async fn service_refusals_are_not_retried() {
    let (endpoint, seen, _) = scripted_endpoint(vec![
        (StatusCode::NOT_FOUND, "ResourceNotFoundException"),
        (StatusCode::FORBIDDEN, "InvalidSignatureException"),
        (
            StatusCode::PAYLOAD_TOO_LARGE,
            "RequestEntityTooLargeException",
        ),
    ])
    .await;
    let ctx = Context::lambda(LambdaConfig::new(aws(&endpoint)).retry(fast_retries())).unwrap();
    let error = ctx.call(Add { a: 1, b: 1 }).await.unwrap_err();
    assert!(
        matches!(error.kind(), ErrorKind::UnknownFunction { id } if id == "add"),
        "{error}"
    );
    let error = ctx.call(Add { a: 1, b: 1 }).await.unwrap_err();
    assert!(
        matches!(error.kind(), ErrorKind::Config { message } if message.contains("InvalidSignatureException")),
        "{error}"
    );
    let error = ctx.call(Add { a: 1, b: 1 }).await.unwrap_err();
    assert!(
        matches!(error.kind(), ErrorKind::PayloadTooLarge { .. }),
        "{error}"
    );
    assert_eq!(seen.load(Ordering::SeqCst), 3, "one request each");
}

#[tokio::test]
async fn functions_are_found_by_template_route_or_deployed_name() {
    let (endpoint, _, names) = scripted_endpoint(Vec::new()).await;
    let templated =
        Context::lambda(LambdaConfig::new(aws(&endpoint)).functions("shop-{name}")).unwrap();
    templated.call(Add { a: 1, b: 2 }).await.unwrap();
    let routed = Context::lambda(
        LambdaConfig::new(aws(&endpoint))
            .functions("shop-{name}")
            .route("add", "adder"),
    )
    .unwrap();
    routed.call(Add { a: 1, b: 2 }).await.unwrap();
    // With an app, the name `ferry deploy --app shop` gave the function.
    let deployed = Context::lambda(LambdaConfig::new(aws(&endpoint)).app("shop")).unwrap();
    deployed.call(Add { a: 1, b: 2 }).await.unwrap();
    let descriptor = <Add as ferry::Function>::DESCRIPTOR;
    let expected = ferry::naming::deployed_name(
        "shop",
        "add",
        &ferry::naming::config_hash(&descriptor.config, "add"),
    )
    .unwrap();
    assert_eq!(
        *names.lock().unwrap(),
        ["shop-add".to_owned(), "adder".to_owned(), expected]
    );
    let error = deployed
        .invoke("not_here", Codec::Json, "{}")
        .await
        .unwrap_err();
    assert!(
        matches!(error.kind(), ErrorKind::Config { message } if message.contains("not a function of this program")),
        "{error}"
    );
}
