//! The `openwhisk` backend against a controller on loopback that speaks OpenWhisk's REST API and
//! runs every action in a real ferry runtime container (`ferry_tests::controller`).

use std::time::Duration;

use ferry::{Codec, Context, ErrorKind, OpenWhiskConfig, RetryPolicy};
use ferry_tests::controller::Controller;
use ferry_tests::registry::{Image, Registry, host_platform};
use ferry_tests::*;

mod common;
use common::{both_modes_agree, bounded, numbers};

/// A controller whose operator enabled intra-container concurrency up to the 100 these actions
/// ask for (OpenWhisk allows 1 by default).
async fn controller() -> Controller {
    let controller = Controller::builder(env!("CARGO_BIN_EXE_ferry-fixture"))
        .intra_concurrency(100)
        .start()
        .await;
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

/// Between ferry programs, typed calls may travel in the binary codec inside the parameters
/// (`{"__ferry_binary": "<base64>"}`), answered the same way: 600,000 bytes that are 1.2 MB of
/// JSON fit under the 1 MiB limit as 0.8 MB of base64; errors keep their kinds and chained flows
/// their route.
#[tokio::test]
async fn binary_in_json_carries_typed_calls_between_ferry_programs() {
    let controller = controller().await;
    let ctx = Context::openwhisk(config(&controller).codec(Codec::BinaryInJson)).unwrap();
    let len = bounded(ctx.call(ByteLen {
        data: vec![7; 600_000],
    }))
    .await
    .unwrap();
    assert_eq!(len, 600_000);
    let greeting = Greeting {
        name: "whisk".into(),
        times: 1,
    };
    assert_eq!(
        bounded(ctx.call(Greet {
            greeting,
            punctuation: '?'
        }))
        .await
        .unwrap(),
        "hello whisk?"
    );
    let odd = bounded(ctx.call(RequireEven { n: 7 })).await.unwrap_err();
    assert!(matches!(odd.kind(), ErrorKind::User { .. }), "{odd}");
    bounded(numbers().run(&ctx, "7".into())).await.unwrap();
    // The same argument as JSON parameters is over the limit.
    let json = Context::openwhisk(config(&controller)).unwrap();
    let error = json
        .call(ByteLen {
            data: vec![7; 600_000],
        })
        .await
        .unwrap_err();
    assert!(
        matches!(error.kind(), ErrorKind::PayloadTooLarge { .. }),
        "{error}"
    );
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

// ---- The controller's limits, its info document and actions that are images ----

/// `method path` with the controller's credentials and `body`: the status and the JSON answer.
async fn request(
    controller: &Controller,
    method: reqwest::Method,
    path: &str,
    body: Option<serde_json::Value>,
) -> (u16, serde_json::Value) {
    let (user, key) = controller.auth.split_once(':').unwrap();
    let mut request = reqwest::Client::new()
        .request(method, format!("{}{path}", controller.api_host))
        .basic_auth(user, Some(key));
    if let Some(body) = body {
        request = request.json(&body);
    }
    let response = request.send().await.unwrap();
    let status = response.status().as_u16();
    (status, response.json().await.unwrap_or_default())
}

/// `PUT` an action (over any existing one).
async fn put(
    controller: &Controller,
    name: &str,
    action: serde_json::Value,
) -> (u16, serde_json::Value) {
    let path = format!("/api/v1/namespaces/_/actions/{name}?overwrite=true");
    request(controller, reqwest::Method::PUT, &path, Some(action)).await
}

/// The action ferry deploys for a function built into an image: a blackbox action with no code.
fn image_action(image: &str, concurrency: u64) -> serde_json::Value {
    serde_json::json!({
        "exec": {"kind": "blackbox", "image": image, "binary": false},
        "limits": {"concurrency": concurrency},
    })
}

#[tokio::test]
async fn limits_outside_the_controllers_are_refused_with_its_messages() {
    let controller = Controller::start(env!("CARGO_BIN_EXE_ferry-fixture")).await;
    let exec = serde_json::json!({"kind": "blackbox", "image": "openwhisk/dockerskeleton"});
    for (limits, message) in [
        (
            serde_json::json!({"concurrency": 8}),
            "concurrency 8 exceeds allowed threshold of 1",
        ),
        (
            serde_json::json!({"memory": 1024}),
            "memory size 1024 MB exceeds allowed threshold of 512 MB",
        ),
        (
            serde_json::json!({"memory": 64}),
            "memory size 64 MB below allowed threshold of 128 MB",
        ),
        (
            serde_json::json!({"timeout": 300_001}),
            "duration 300001 milliseconds exceeds allowed threshold of 300000 milliseconds",
        ),
        (
            serde_json::json!({"timeout": 50}),
            "duration 50 milliseconds below allowed threshold of 100 milliseconds",
        ),
        (
            serde_json::json!({"logs": 11}),
            "log size 11 MB exceeds allowed threshold of 10 MB",
        ),
        (
            serde_json::json!({"memory": "big"}),
            "The request content was malformed:\nmemory limit malformed",
        ),
    ] {
        let (status, body) = put(
            &controller,
            "refused",
            serde_json::json!({"exec": exec, "limits": limits}),
        )
        .await;
        assert_eq!((status, body["error"].as_str()), (400, Some(message)));
        assert!(body["code"].is_string(), "{body}");
    }
    assert!(controller.action("refused").is_none());
    // Limits it does not set are the standard ones.
    let (status, body) = put(&controller, "standard", serde_json::json!({"exec": exec})).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        body["limits"],
        serde_json::json!({"timeout": 60_000, "memory": 256, "logs": 10, "concurrency": 1})
    );
    let (status, body) = put(&controller, "no-exec", serde_json::json!({})).await;
    assert_eq!(
        (status, body["error"].as_str()),
        (400, Some("exec undefined"))
    );

    // An operator who allows a concurrency of 500.
    let limits = ferry_tests::controller::ControllerLimits::default().with_max_concurrency(500);
    let controller = Controller::builder(env!("CARGO_BIN_EXE_ferry-fixture"))
        .limits(limits)
        .start()
        .await;
    let (status, body) = put(
        &controller,
        "wide",
        serde_json::json!({"exec": exec, "limits": {"concurrency": 500, "memory": 512}}),
    )
    .await;
    assert_eq!((status, &body["limits"]["concurrency"]), (200, &500.into()));
    let (status, body) = put(
        &controller,
        "wide",
        serde_json::json!({"exec": exec, "limits": {"concurrency": 501}}),
    )
    .await;
    assert_eq!(
        (status, body["error"].as_str()),
        (
            400,
            Some("concurrency 501 exceeds allowed threshold of 500")
        )
    );
    // An update keeps the limits it does not set, and the exec when it sets none.
    let (status, body) = put(
        &controller,
        "wide",
        serde_json::json!({"limits": {"timeout": 1_000}}),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        body["limits"],
        serde_json::json!({"timeout": 1_000, "memory": 512, "logs": 10, "concurrency": 500})
    );
    assert_eq!(body["exec"]["image"], "openwhisk/dockerskeleton");
    assert_eq!(body["version"], "0.0.2");
}

#[tokio::test]
async fn the_info_document_holds_the_limits_in_force() {
    let http = reqwest::Client::new();
    let info = |controller: &Controller| {
        let request = http.get(format!("{}/", controller.api_host));
        async move {
            request
                .send()
                .await
                .unwrap()
                .json::<serde_json::Value>()
                .await
                .unwrap()
        }
    };
    let controller = Controller::start(env!("CARGO_BIN_EXE_ferry-fixture")).await;
    let document = info(&controller).await;
    assert_eq!(document["description"], "OpenWhisk");
    assert_eq!(document["api_paths"], serde_json::json!(["/api/v1"]));
    const MB: u64 = 1 << 20;
    assert_eq!(
        document["limits"],
        serde_json::json!({
            "actions_per_minute": 60,
            "triggers_per_minute": 60,
            "concurrent_actions": 30,
            "sequence_length": 50,
            "default_min_action_duration": 100,
            "default_max_action_duration": 300_000,
            "default_min_action_memory": 128 * MB,
            "default_max_action_memory": 512 * MB,
            "default_min_action_logs": 0,
            "default_max_action_logs": 10 * MB,
            "min_action_duration": 100,
            "max_action_duration": 300_000,
            "min_action_memory": 128 * MB,
            "max_action_memory": 512 * MB,
            "min_action_logs": 0,
            "max_action_logs": 10 * MB,
        })
    );
    // `/api/v1` describes the API, not the limits.
    let api = http
        .get(format!("{}/api/v1", controller.api_host))
        .send()
        .await
        .unwrap()
        .json::<serde_json::Value>()
        .await
        .unwrap();
    assert_eq!(
        (api["description"].as_str(), api.get("limits")),
        (Some("OpenWhisk API"), None)
    );

    let mut limits = ferry_tests::controller::ControllerLimits::default();
    limits.memory_mb.max = 2048;
    limits.timeout_ms.max = 600_000;
    let controller = Controller::builder(env!("CARGO_BIN_EXE_ferry-fixture"))
        .limits(limits)
        .start()
        .await;
    let document = info(&controller).await;
    assert_eq!(document["limits"]["max_action_memory"], 2048 * MB);
    assert_eq!(document["limits"]["default_max_action_memory"], 2048 * MB);
    assert_eq!(document["limits"]["max_action_duration"], 600_000);
}

/// The fixture program as ferry would ship it in an image.
fn fixture_image() -> Image {
    Image::new()
        .executable("/app/ferry-fixture", env!("CARGO_BIN_EXE_ferry-fixture"))
        .entrypoint(&["/app/ferry-fixture"])
        .env("FERRY_ROLE", "openwhisk")
}

/// An architecture that is not this host's.
fn other_architecture() -> &'static str {
    if host_platform().1 == "amd64" {
        "arm64"
    } else {
        "amd64"
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn image_actions_run_their_pulled_image_with_intra_container_concurrency() {
    let registry = Registry::start();
    // An index: this host's platform has the fixture, the other an image that cannot start.
    let broken = Image::new()
        .file("/app/readme", "no program here", 0o644)
        .entrypoint(&["/app/ferry-fixture"]);
    let image = registry.push_platforms(
        &[
            (other_architecture(), &broken),
            (host_platform().1.as_str(), &fixture_image()),
        ],
        "ferry/fixture:1",
    );
    let controller = Controller::builder(env!("CARGO_BIN_EXE_ferry-fixture"))
        .intra_concurrency(8)
        .start()
        .await;
    for name in ["wait_50ms", "add"] {
        let (status, body) = put(&controller, name, image_action(&image, 8)).await;
        assert_eq!(status, 200, "{body}");
        assert_eq!(
            body["exec"],
            serde_json::json!({"kind": "blackbox", "image": image, "binary": false})
        );
        assert_eq!(
            body["limits"],
            serde_json::json!({"timeout": 60_000, "memory": 256, "logs": 10, "concurrency": 8})
        );
    }
    let ctx = Context::openwhisk(config(&controller)).unwrap();
    // Runs overlap in the one container, up to the action's concurrency.
    let waits = bounded(ctx.map((0..16).map(|_| Wait50ms {})))
        .await
        .unwrap();
    assert_eq!(waits.len(), 16);
    let peak = controller.peak_runs("wait_50ms");
    assert!((2..=8).contains(&peak), "{peak} runs at once");
    // Each caller gets its own answer.
    let sums = bounded(ctx.map((0..32).map(|i| Add { a: i, b: 1_000 })))
        .await
        .unwrap();
    assert_eq!(sums, (0..32).map(|i| i + 1_000).collect::<Vec<i64>>());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_image_that_cannot_be_pulled_or_started_fails_its_activation() {
    let registry = Registry::start();
    let plain = registry.push(&fixture_image(), "plain:1");
    let no_program = registry.push(
        &Image::new()
            .entrypoint(&["ferry-fixture"])
            .env("PATH", "/app"),
        "no-program:1",
    );
    let missing = format!("{}/missing:1", registry.host());
    let unreachable = "127.0.0.1:1/fixture:1";
    let controller = Controller::start(env!("CARGO_BIN_EXE_ferry-fixture")).await;
    // A single-platform image runs.
    put(&controller, "add", image_action(&plain, 1)).await;
    let ctx = Context::openwhisk(config(&controller)).unwrap();
    assert_eq!(ctx.call(Add { a: 1, b: 2 }).await.unwrap(), 3);
    for (image, error) in [
        (
            missing.as_str(),
            format!("Failed to pull container image '{missing}'."),
        ),
        (
            unreachable,
            format!("Failed to pull container image '{unreachable}'."),
        ),
        (
            no_program.as_str(),
            format!("executable file not found in image {no_program}"),
        ),
    ] {
        let (status, _) = put(&controller, "broken", image_action(image, 1)).await;
        assert_eq!(status, 200);
        let (status, record) = request(
            &controller,
            reqwest::Method::POST,
            "/api/v1/namespaces/_/actions/broken?blocking=true",
            Some(serde_json::json!({})),
        )
        .await;
        assert_eq!(status, 502, "{record}");
        assert_eq!(record["response"]["status"], "action developer error");
        assert_eq!(
            record["response"]["result"],
            serde_json::json!({ "error": error })
        );
    }
    drop(registry);
    // Pulled again for a new container: the registry is gone.
    put(&controller, "add", image_action(&plain, 1)).await;
    let error = ctx.call(Add { a: 1, b: 2 }).await.unwrap_err();
    assert!(
        error
            .to_string()
            .contains(&format!("Failed to pull container image '{plain}'.")),
        "{error}"
    );
}

/// OpenWhisk tells a container nothing of its action's concurrency: the invoker only sends it
/// that many activations at once. Its environment is the image's, then `__OW_API_HOST` and the
/// operator's variables, so a ferry image that sets `__OW_ALLOW_CONCURRENT=true` itself runs
/// them side by side where the operator only raised the limit.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_image_allows_concurrent_runs_by_its_own_environment() {
    let registry = Registry::start();
    let silent = registry.push(&fixture_image(), "silent:1");
    let allowing = registry.push(
        &fixture_image().env("__OW_ALLOW_CONCURRENT", "true"),
        "allowing:1",
    );
    let limits = ferry_tests::controller::ControllerLimits::default().with_max_concurrency(8);
    let controller = Controller::builder(env!("CARGO_BIN_EXE_ferry-fixture"))
        .limits(limits)
        .start()
        .await;
    let ctx = Context::openwhisk(config(&controller).retry(RetryPolicy::NEVER)).unwrap();
    put(&controller, "wait_50ms", image_action(&silent, 8)).await;
    let refused = bounded(ctx.map((0..16).map(|_| Wait50ms {}))).await;
    assert!(
        refused
            .unwrap_err()
            .to_string()
            .contains("System not ready, status is running."),
        "the runtime refuses a second run at once"
    );
    put(&controller, "wait_50ms", image_action(&allowing, 8)).await;
    let waits = bounded(ctx.map((0..16).map(|_| Wait50ms {})))
        .await
        .unwrap();
    assert_eq!(waits.len(), 16);
    assert!(controller.peak_runs("wait_50ms") >= 2);
}
