//! The accounts service answers byte-identically — status, content type, body — as a plain
//! server, behind Lambda HTTP API v2 events (through `cargo lambda watch`) and as an OpenWhisk web
//! action, in JSON and in Protocol Buffers (issue #3).

mod common;

use common::{Emulator, Server};
use serde_json::{Value, json};

const SERVICE: &str = env!("CARGO_BIN_EXE_accounts-service");
const CASES: &[(&str, &str)] = &[
    ("/account/1", "application/json"),
    ("/account/1", "application/x-protobuf"),
    ("/accountList", "application/json"),
    ("/accountList", "application/octet-stream"),
    ("/account/nope", "application/json"),
];

/// What a client sees.
type Answer = (u16, String, Vec<u8>);

fn decode(body: &str, base64: bool) -> Vec<u8> {
    if base64 {
        base64_simd::STANDARD
            .decode_to_vec(body)
            .expect("base64 body")
    } else {
        body.as_bytes().to_vec()
    }
}

async fn plain(base: &str, path: &str, accept: &str) -> Answer {
    let response = reqwest::Client::new()
        .get(format!("{base}{path}"))
        .header("accept", accept)
        .send()
        .await
        .unwrap();
    let status = response.status().as_u16();
    let content_type = response.headers()["content-type"]
        .to_str()
        .unwrap()
        .to_owned();
    (
        status,
        content_type,
        response.bytes().await.unwrap().to_vec(),
    )
}

async fn lambda(emulator: &Emulator, path: &str, accept: &str) -> Answer {
    let event = json!({
        "version": "2.0",
        "rawPath": path,
        "rawQueryString": "",
        "headers": {"accept": accept},
        "requestContext": {"http": {"method": "GET", "path": path}},
        "isBase64Encoded": false,
    });
    let (status, _, body) = emulator.invoke(&event).await;
    assert_eq!(status, 200, "{body}");
    let response: Value = serde_json::from_str(&body).unwrap();
    (
        response["statusCode"].as_u64().unwrap() as u16,
        response["headers"]["content-type"]
            .as_str()
            .unwrap()
            .to_owned(),
        decode(
            response["body"].as_str().unwrap(),
            response["isBase64Encoded"] == true,
        ),
    )
}

async fn web_action(base: &str, path: &str, accept: &str) -> Answer {
    let run = json!({"value": {"__ow_method": "get", "__ow_path": path, "__ow_headers": {"accept": accept}}});
    let response: Value = reqwest::Client::new()
        .post(format!("{base}/run"))
        .json(&run)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let content_type = response["headers"]["content-type"]
        .as_str()
        .unwrap()
        .to_owned();
    // OpenWhisk's controller decodes binary bodies from base64, and JSON ones that are base64,
    // as ferry sends them (a JSON text that merely looks like base64 would be decoded too).
    let base64 = !content_type.starts_with("text/");
    (
        response["statusCode"].as_u64().unwrap() as u16,
        content_type,
        decode(response["body"].as_str().unwrap(), base64),
    )
}

#[tokio::test]
async fn the_three_modes_answer_byte_identically() {
    let server = Server::start(SERVICE, None);
    let whisk = Server::start(SERVICE, Some("openwhisk"));
    reqwest::Client::new()
        .post(format!("{}/init", whisk.base))
        .json(&json!({"value": {}}))
        .send()
        .await
        .unwrap();
    let emulator = Emulator::start();
    let _bootstrap = emulator.bootstrap(SERVICE, "", &[]);

    for (path, accept) in CASES {
        let reference = plain(&server.base, path, accept).await;
        assert!(!reference.2.is_empty(), "{path} {accept}");
        let on_lambda = lambda(&emulator, path, accept).await;
        let on_whisk = web_action(&whisk.base, path, accept).await;
        for (mode, answer) in [("lambda", &on_lambda), ("openwhisk", &on_whisk)] {
            assert_eq!(
                (answer.0, &answer.1),
                (reference.0, &reference.1),
                "{mode} {path} {accept}"
            );
            assert!(
                answer.2 == reference.2,
                "{mode} {path} {accept}: bodies differ ({} vs {} bytes)",
                answer.2.len(),
                reference.2.len()
            );
        }
    }
}
