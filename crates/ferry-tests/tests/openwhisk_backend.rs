//! The `openwhisk` backend against a controller on loopback that speaks OpenWhisk's REST API and
//! runs every action in a real ferry runtime container (`ferry_tests::controller`).

use std::time::Duration;

use ferry::{Codec, Context, ErrorKind, OpenWhiskConfig, RetryPolicy};
use ferry_tests::controller::Controller;
use ferry_tests::*;

mod common;
use common::{both_modes_agree, bounded, numbers};

async fn controller() -> Controller {
    let controller = Controller::start(env!("CARGO_BIN_EXE_ferry-fixture")).await;
    for (action, main, concurrency, timeout_ms) in [
        ("add", "add", 64, 60_000),
        ("greet", "greet", 8, 60_000),
        ("require_even", "require_even", 8, 60_000),
        ("explode", "explode", 8, 60_000),
        ("byte_len", "byte_len", 64, 60_000),
        ("sleep_async", "sleep_async", 100, 60_000),
        ("wait_50ms", "wait_50ms", 8, 60_000),
        ("tight-sleep", "sleep_async", 8, 100),
        ("parse_number", "parse_number", 8, 60_000),
        ("double", "double", 8, 60_000),
        ("at_most_thousand", "at_most_thousand", 8, 60_000),
        ("describe", "describe", 8, 60_000),
    ] {
        controller.put_action(action, main, concurrency, timeout_ms);
    }
    controller
}

fn config(controller: &Controller) -> OpenWhiskConfig {
    OpenWhiskConfig::new(&controller.api_host, &controller.auth)
        .retry(RetryPolicy::default().base_delay(Duration::from_millis(5)))
}

#[tokio::test]
async fn call_map_and_invoke_through_the_rest_api() {
    let controller = controller().await;
    let ctx = Context::openwhisk(config(&controller)).unwrap();
    assert_eq!(bounded(ctx.call(Add { a: 40, b: 2 })).await.unwrap(), 42);
    let greeting = Greeting {
        name: "whisk".into(),
        times: 2,
    };
    assert_eq!(
        bounded(ctx.call(Greet {
            greeting,
            punctuation: '!'
        }))
        .await
        .unwrap(),
        "hello whisk! hello whisk!"
    );
    // Overlapping runs in one container, up to the action's concurrency.
    let sums = bounded(ctx.map((0..100).map(|i| Add { a: i, b: 1 })))
        .await
        .unwrap();
    assert!(sums.iter().enumerate().all(|(i, &s)| s == i as i64 + 1));
    // The raw output is the function's, out of the `{"result": …}` the runtime put it in.
    let output = ctx
        .invoke("add", Codec::Json, r#"{"a": 1, "b": 2}"#)
        .await
        .unwrap();
    assert_eq!(&output[..], b"3");
    assert_eq!(ctx.stats().invocations, 103);
    assert_eq!(controller.invocations(), 103);
}

/// The route rides in the parameters; the action that ran a stage runs the rest in its own
/// container (its functions invoke functions there), so the controller sees one activation per
/// chained run.
#[tokio::test]
async fn flows_run_chained_and_orchestrated() {
    let controller = controller().await;
    let ctx = Context::openwhisk(config(&controller)).unwrap();
    both_modes_agree(&ctx).await;
    let before = controller.invocations();
    bounded(numbers().run(&ctx, "7".into())).await.unwrap();
    assert_eq!(controller.invocations() - before, 1);
}

#[tokio::test]
async fn action_names_follow_the_template() {
    let controller = controller().await;
    controller.put_action("shop-add", "add", 4, 60_000);
    let ctx = Context::openwhisk(config(&controller).actions("shop-{name}")).unwrap();
    assert_eq!(ctx.call(Add { a: 1, b: 2 }).await.unwrap(), 3);
    let error = ctx.call(ByteLen { data: vec![1] }).await.unwrap_err();
    assert!(
        matches!(error.kind(), ErrorKind::UnknownFunction { id } if id == "shop-byte_len"),
        "{error}"
    );
}

#[tokio::test]
async fn the_actions_limit_and_the_json_codec_hold() {
    let controller = controller().await;
    let ctx = Context::openwhisk(config(&controller)).unwrap();
    // The action's 100 ms limit reaches the runtime as the activation's deadline.
    let error = ctx
        .invoke("tight-sleep", Codec::Json, r#"{"ms": 250}"#)
        .await
        .unwrap_err();
    assert!(
        matches!(error.kind(), ErrorKind::Timeout { limit_ms } if *limit_ms <= 100),
        "{error}"
    );
    let error = ctx
        .invoke(
            "add",
            Codec::Binary,
            Codec::Binary.encode(&(1i64, 2i64)).unwrap(),
        )
        .await
        .unwrap_err();
    assert!(matches!(error.kind(), ErrorKind::Config { .. }), "{error}");
}

#[tokio::test]
async fn throttling_is_retried_then_reported() {
    let controller = controller().await;
    let ctx = Context::openwhisk(config(&controller)).unwrap();
    controller.throttle_next(2);
    assert_eq!(ctx.call(Add { a: 2, b: 3 }).await.unwrap(), 5);
    assert_eq!(controller.invocations(), 3, "two 429s, then the run");

    let never = Context::openwhisk(config(&controller).retry(RetryPolicy::NEVER)).unwrap();
    controller.throttle_next(1);
    let error = never.call(Add { a: 1, b: 1 }).await.unwrap_err();
    assert!(
        matches!(error.kind(), ErrorKind::Throttled { message } if message.contains("Too many requests")),
        "{error}"
    );
}

#[tokio::test]
async fn oversized_parameters_are_refused() {
    let controller = controller().await;
    let ctx = Context::openwhisk(config(&controller)).unwrap();
    // 600,000 bytes are 1.2 MB of JSON parameters.
    let big = || ByteLen {
        data: vec![7; 600_000],
    };
    let error = ctx.call(big()).await.unwrap_err();
    assert!(
        matches!(error.kind(), ErrorKind::PayloadTooLarge { limit, size } if *limit == (1 << 20) && *size > (1 << 20)),
        "{error}"
    );
    assert_eq!(controller.invocations(), 0, "refused before sending");
    // A client allowed more than the platform takes hears the platform's 413.
    let lenient = Context::openwhisk(config(&controller).max_payload(8 << 20)).unwrap();
    let error = lenient.call(big()).await.unwrap_err();
    assert!(
        matches!(error.kind(), ErrorKind::PayloadTooLarge { .. }),
        "{error}"
    );
    assert_eq!(controller.invocations(), 1);
}

#[tokio::test]
async fn wrong_credentials_are_a_configuration_error() {
    let controller = controller().await;
    let ctx =
        Context::openwhisk(OpenWhiskConfig::new(&controller.api_host, "guest:wrong")).unwrap();
    let error = ctx.call(Add { a: 1, b: 1 }).await.unwrap_err();
    assert!(
        matches!(error.kind(), ErrorKind::Config { message } if message.contains("credentials")),
        "{error}"
    );
}

#[tokio::test]
async fn a_blocking_call_past_the_controllers_wait_is_polled() {
    let controller = controller().await;
    controller.set_blocking_limit(Duration::from_millis(5));
    let ctx = Context::openwhisk(config(&controller)).unwrap();
    bounded(ctx.call(Wait50ms {})).await.unwrap();
    assert_eq!(controller.accepted(), 1, "answered 202, then polled");
    let error = bounded(ctx.call(RequireEven { n: 5 })).await;
    // Fast enough to finish within 5 ms or not: either way the kind survives.
    assert!(
        matches!(error.unwrap_err().kind(), ErrorKind::User { message, .. } if message == "5 is odd")
    );
    let results = bounded(ctx.map((0..20).map(|_| Wait50ms {})))
        .await
        .unwrap();
    assert_eq!(results.len(), 20);
    assert!(controller.accepted() >= 21);
}
