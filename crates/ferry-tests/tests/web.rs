//! One axum router served unchanged three ways (issue #3, web apps): a plain HTTP server, behind
//! Lambda Function URL / HTTP API v2 events and REST API v1 events (through `cargo lambda
//! watch`), and as an OpenWhisk web action.

mod common;

use std::time::Duration;

use common::{Emulator, Server};
use serde_json::{Value, json};

const WEB: &str = env!("CARGO_BIN_EXE_web-fixture");

#[tokio::test]
async fn as_a_plain_server() {
    let server = Server::start(WEB, None);
    let http = reqwest::Client::new();
    let text = http
        .get(format!("{}/hello/ferry?mark=!", server.base))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert_eq!(text, "hello ferry!");
    let bytes = http
        .get(format!("{}/bytes", server.base))
        .send()
        .await
        .unwrap()
        .bytes()
        .await
        .unwrap();
    assert_eq!(&bytes[..], [0u8, 159, 146, 150]);
    let response = http
        .get(format!("{}/cookies", server.base))
        .header("cookie", "a=1; b=2")
        .send()
        .await
        .unwrap();
    assert_eq!(response.headers().get_all("set-cookie").iter().count(), 2);
    assert_eq!(response.text().await.unwrap(), "a=1; b=2");
}

fn v2_event(
    method: &str,
    path: &str,
    query: &str,
    body: Option<(&str, bool)>,
    cookies: &[&str],
) -> Value {
    json!({
        "version": "2.0",
        "routeKey": "$default",
        "rawPath": path,
        "rawQueryString": query,
        "cookies": cookies,
        "headers": {"content-type": "application/octet-stream", "x-forwarded-proto": "https"},
        "requestContext": {"http": {"method": method, "path": path, "sourceIp": "127.0.0.1"}},
        "body": body.map(|(b, _)| b),
        "isBase64Encoded": body.is_some_and(|(_, base64)| base64),
    })
}

#[tokio::test]
async fn behind_lambda_http_api_v2_events() {
    let emulator = Emulator::start();
    let _runtime = emulator.bootstrap(WEB, "", &[]);
    let invoke = |event: Value| {
        let emulator = &emulator;
        async move {
            let (status, _, body) =
                tokio::time::timeout(Duration::from_secs(30), emulator.invoke(&event))
                    .await
                    .unwrap();
            assert_eq!(status, 200, "{body}");
            serde_json::from_str::<Value>(&body).expect("an http api response")
        }
    };
    let response = invoke(v2_event("GET", "/hello/lambda", "mark=?", None, &[])).await;
    assert_eq!(response["statusCode"], 200);
    assert_eq!(response["body"], "hello lambda?");
    assert_eq!(response["isBase64Encoded"], false);

    let response = invoke(v2_event("GET", "/bytes", "", None, &[])).await;
    assert_eq!(response["isBase64Encoded"], true);
    assert_eq!(response["body"], "AJ+Slg==");
    assert_eq!(
        response["headers"]["content-type"],
        "application/octet-stream"
    );

    // A binary request body arrives base64'd and leaves the same way.
    let response = invoke(v2_event("POST", "/echo", "", Some(("AJ+Slg==", true)), &[])).await;
    assert_eq!(
        (
            response["body"].as_str(),
            response["isBase64Encoded"].as_bool()
        ),
        (Some("AJ+Slg=="), Some(true))
    );

    let response = invoke(v2_event("GET", "/cookies", "", None, &["a=1", "b=2"])).await;
    assert_eq!(response["body"], "a=1; b=2");
    assert_eq!(response["cookies"], json!(["session=abc", "theme=dark"]));

    let response = invoke(v2_event("GET", "/nowhere", "", None, &[])).await;
    assert_eq!(response["statusCode"], 404);
}

/// An API Gateway REST API event (payload 1.0): decoded query values, single- and multi-value
/// maps, and no `version` (an HTTP API configured for 1.0 sends `"1.0"`).
fn v1_event(method: &str, path: &str, extra: Value) -> Value {
    let mut event = json!({
        "resource": "/{proxy+}",
        "path": path,
        "httpMethod": method,
        "headers": null,
        "multiValueHeaders": null,
        "queryStringParameters": null,
        "multiValueQueryStringParameters": null,
        "pathParameters": {"proxy": path.trim_start_matches('/')},
        "stageVariables": null,
        "requestContext": {
            "resourcePath": "/{proxy+}",
            "httpMethod": method,
            "path": format!("/staging{path}"),
            "stage": "staging",
            "requestId": "c6af9ac6-7b61-11e6-9a41-93e8deadbeef",
            "identity": {"sourceIp": "127.0.0.1"},
        },
        "body": null,
        "isBase64Encoded": false,
    });
    for (name, value) in extra.as_object().unwrap() {
        event[name] = value.clone();
    }
    event
}

/// Users behind an API Gateway REST API send payload 1.0 events and read payload 1.0 answers:
/// `multiValueHeaders` for several cookies, the query string rebuilt from decoded values.
#[tokio::test]
async fn behind_lambda_rest_api_v1_events() {
    let emulator = Emulator::start();
    let _runtime = emulator.bootstrap(WEB, "", &[]);
    let invoke = |event: Value| {
        let emulator = &emulator;
        async move {
            let (status, error, body) =
                tokio::time::timeout(Duration::from_secs(30), emulator.invoke(&event))
                    .await
                    .unwrap();
            (
                status,
                error,
                serde_json::from_str::<Value>(&body).unwrap_or(Value::String(body)),
            )
        }
    };
    // Multi-value parameters, the last of which the route reads, with characters to encode.
    let (status, _, response) = invoke(v1_event(
        "GET",
        "/hello/rest",
        json!({
            "queryStringParameters": {"mark": "&=?!", "other": "x y"},
            "multiValueQueryStringParameters": {"mark": ["first", "&=?!"], "other": ["x y"]},
            "headers": {"accept": "text/plain", "cookie": "b=2"},
        }),
    ))
    .await;
    assert_eq!(status, 200, "{response}");
    assert_eq!(response["statusCode"], 200, "{response}");
    assert_eq!(response["body"], "hello rest&=?!");
    assert_eq!(response["isBase64Encoded"], false);
    assert!(response.get("cookies").is_none(), "{response}");

    // Several values of one header (two `Cookie` lines) reach the router, and the two
    // `Set-Cookie` of the answer go to `multiValueHeaders`.
    let (_, _, response) = invoke(v1_event(
        "GET",
        "/cookies",
        json!({
            "headers": {"cookie": "b=2", "x-forwarded-proto": "https"},
            "multiValueHeaders": {"cookie": ["a=1", "b=2"], "x-forwarded-proto": ["https"]},
        }),
    ))
    .await;
    assert_eq!(response["body"], "a=1; b=2", "{response}");
    assert_eq!(
        response["multiValueHeaders"]["set-cookie"],
        json!(["session=abc", "theme=dark"])
    );
    assert!(
        response["headers"].get("set-cookie").is_none(),
        "{response}"
    );

    // A binary body arrives base64'd, with its content type from `headers` alone, and leaves
    // base64'd.
    let (_, _, response) = invoke(v1_event(
        "POST",
        "/echo",
        json!({
            "version": "1.0",
            "headers": {"content-type": "application/octet-stream"},
            "body": "AJ+Slg==",
            "isBase64Encoded": true,
        }),
    ))
    .await;
    assert_eq!(
        (
            response["body"].as_str(),
            response["isBase64Encoded"].as_bool(),
            response["headers"]["content-type"].as_str()
        ),
        (
            Some("AJ+Slg=="),
            Some(true),
            Some("application/octet-stream")
        ),
        "{response}"
    );

    let (_, _, response) = invoke(v1_event("GET", "/nowhere", json!({}))).await;
    assert_eq!(response["statusCode"], 404);

    // Neither a 2.0 event nor a 1.0 one: a bad-input error that says what was expected.
    let (status, _, response) = invoke(json!({"version": "3.0", "rawPath": "/"})).await;
    assert_eq!(
        response["errorType"], "ferry.BadInput",
        "{status} {response}"
    );
    let message = response["errorMessage"].as_str().unwrap_or_default();
    assert!(
        message.contains("httpMethod") && message.contains("2.0"),
        "{message}"
    );
    // The runtime goes on serving.
    let (_, _, response) = invoke(v1_event("GET", "/hello/again", json!({}))).await;
    assert_eq!(response["body"], "hello again");
}

/// `ferry deploy` runs a web program's binary as its web app (`_HANDLER=web`) and as each of its
/// functions: a `_HANDLER` naming a function serves that function, not the router.
#[tokio::test]
async fn on_lambda_a_handler_naming_a_function_serves_it() {
    let emulator = Emulator::start();
    let _runtime = emulator.bootstrap(WEB, "add", &[]);
    let (status, error, body) = tokio::time::timeout(
        Duration::from_secs(30),
        emulator.invoke(&json!({"a": 40, "b": 2})),
    )
    .await
    .unwrap();
    assert_eq!((status, error, body.as_str()), (200, None, "42"));
}

#[tokio::test]
async fn as_an_openwhisk_web_action() {
    let server = Server::start(WEB, Some("openwhisk"));
    let http = reqwest::Client::new();
    let post = |route: &'static str, body: Value| {
        let http = http.clone();
        let url = format!("{}{route}", server.base);
        async move {
            let response = http.post(url).json(&body).send().await.unwrap();
            (
                response.status().as_u16(),
                response.json::<Value>().await.unwrap(),
            )
        }
    };
    assert_eq!(post("/init", json!({"value": {}})).await.0, 200);
    assert_eq!(post("/init", json!({"value": {}})).await.0, 403);

    let (status, response) = post(
        "/run",
        json!({"value": {"__ow_method": "get", "__ow_path": "/hello/whisk", "__ow_query": "mark=.", "__ow_headers": {}}}),
    )
    .await;
    assert_eq!(status, 200);
    assert_eq!(response["statusCode"], 200);
    assert_eq!(response["body"], "hello whisk.");

    let (_, response) = post(
        "/run",
        json!({"value": {"__ow_method": "post", "__ow_path": "/echo",
            "__ow_headers": {"content-type": "application/octet-stream"}, "__ow_body": "AJ+Slg=="}}),
    )
    .await;
    assert_eq!(response["body"], "AJ+Slg==", "{response}");
    assert_eq!(
        response["headers"]["content-type"],
        "application/octet-stream"
    );

    let (_, response) = post(
        "/run",
        json!({"value": {"__ow_method": "get", "__ow_path": "/cookies", "__ow_headers": {"cookie": "a=1"}}}),
    )
    .await;
    assert_eq!(response["body"], "a=1");
    assert_eq!(
        response["headers"]["set-cookie"],
        json!(["session=abc", "theme=dark"])
    );
}
